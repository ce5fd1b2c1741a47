"""Reading command-line inputs: files or `-` for stdin, with clear errors (exit 2)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from kera_core.source import decode


class UsageError(Exception):
    """A problem with the command line or its inputs; the CLI prints it and exits 2."""


@dataclass
class Input:
    path: str  # display path; "<stdin>" for `-`
    text: str
    raw: bytes


def read_input(path: str) -> Input:
    if path == "-":
        raw = sys.stdin.buffer.read()
        return Input("<stdin>", decode(raw), raw)
    if os.path.isdir(path):
        raise UsageError(f"{path}: is a directory (give .kera files)")
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except PermissionError:
        raise UsageError(f"{path}: permission denied") from None
    except OSError as e:
        raise UsageError(f"{path}: cannot read: {e.strerror}") from None
    return Input(path, decode(raw), raw)


ISA_LEVELS = ("sse2", "avx2", "avx512")


def add_isa_flag(parser) -> None:
    parser.add_argument(
        "--isa",
        choices=ISA_LEVELS,
        help="x86_64 instruction-set level (default: the best this CPU has, from CPUID)",
    )


def apply_isa(args) -> None:
    """`--isa LEVEL`: the level the x86_64 target selects for (refused if this CPU lacks it)."""
    level = getattr(args, "isa", None)
    if level is None:
        return
    from kera_core import targets
    from kera_core.backends.x86_64.compile import isa_for

    try:
        isa_for(level)
    except ValueError as e:
        raise UsageError(f"--isa {level}: {e}") from None
    t = targets.get("x86_64")
    if t is not None:
        t.isa = level


SIMULATORS = ("iverilog", "verilator")  # kera_core.backends.verilog.testbench.SIMULATORS


def add_sim_flag(parser) -> None:
    parser.add_argument(
        "--sim",
        choices=SIMULATORS,
        help="the verilog target's simulator (default: iverilog, or KERA_VERILOG_SIM)",
    )
    add_stream_flag(parser)


def add_stream_flag(parser) -> None:
    parser.add_argument(
        "--stream",
        action="store_true",
        help="verilog: add the valid/ready stream wrapper kera_stream (run: drive it, with "
        "random bubbles and back-pressure, instead of the host port)",
    )


def add_emulate_flag(parser) -> None:
    parser.add_argument(
        "--emulate",
        action="store_true",
        help="ptx: run on the PTX emulator (no GPU needed; 3 CTAs of 5 threads) instead of a GPU",
    )


def apply_emulate(args) -> None:
    """`--emulate`: the ptx target runs its kernels on the emulator, GPU or not."""
    if not getattr(args, "emulate", False):
        return
    from kera_core import targets
    from kera_core.backends.ptx.emulate import Shape

    t = targets.get("ptx")
    if t is not None:
        t.emulate = Shape()


def apply_sim(args) -> None:
    """`--sim NAME`: the simulator the verilog target runs its test bench in; `--stream`:
    the verilog artifact has the stream wrapper and runs drive it."""
    sim = getattr(args, "sim", None)
    stream = getattr(args, "stream", False)
    if sim is None and not stream:
        return
    from kera_core import targets

    t = targets.get("verilog")
    if t is not None:
        if sim is not None:
            t.sim = sim
        if stream:
            t.stream = True
