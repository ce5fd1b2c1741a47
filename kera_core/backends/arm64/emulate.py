"""Running ARM64 code on this (x86-64) machine, in-process, under unicorn.

The artifact's code is what an ARM64 host would run; only the run's context differs.  The
code calls every host helper through a ``ctx`` cell (docs/targets/arm64.md); here each cell
holds the address of a two-instruction stub, ``svc #k; ret``, on a page of its own.  The
``svc`` traps into :meth:`Machine._trap`, which services helper ``k`` in Python (allocation
in emulated memory, ``free``, ``fmod``, ``memcpy``, ``print``) from the AAPCS64 argument
registers and writes the result register, and the stub's ``ret`` goes back to the code.

Memory map (every region surrounded by unmapped guard pages, so a stray access is a fault
that ends the run with an error, never a crash):

=====================  ==========================================  =======
region                 what                                        rights
=====================  ==========================================  =======
``STUBS``              the helper stubs, and the exit address      r-x
``CODE``               every function of the artifact              r-x
``DATA``               ctx cells, function table, io cells         rw-
``STACK``              1 MiB                                       rw-
``PARAMS``             the caller's buffers, one mapping each      rw-
``HEAP``               the run's allocations, one mapping each     rw-
=====================  ==========================================  =======

Never taking the host down: indices and divisors are checked by the loop program, source
loops spend the step budget (R0007), allocations past the memory limit are refused (R0009),
and a fault inside the emulator (which the checks should make impossible) is reported as
R0008 with the faulting address.  The FP unit is enabled through CPACR_EL1; FPCR is set by
the code itself on entry.
"""

from __future__ import annotations

import struct
from typing import TextIO

import numpy as np

from kera_core.backends.arm64 import select as S
from kera_core.interp.api import RunResult, _Tee
from kera_core.interp.errors import InterpError
from kera_core.interp.values import DTYPES
from kera_core.loops.run import prepare
from kera_core.loops.run_abi import check_rc, input_cells, print_sites, printed_text, result_of

PAGE = 0x1000
STUBS = 0x0010_0000
EXIT = STUBS + 0x800  # the return address given to the entry: reaching it ends the run
CODE = 0x0100_0000
DATA = 0x0800_0000
DATA_SIZE = 0x10_0000
STACK = 0x0A00_0000
STACK_SIZE = 0x40_0000  # 4 MiB: RECURSION_LIMIT nested calls of large functions
PARAMS = 0x10_0000_0000
HEAP = 0x20_0000_0000
DEFAULT_MEMORY = 1 << 30
NO_LIMIT = 1 << 62
SVC = 0xD4000001
RET = 0xD65F03C0


class EmulatorMissing(RuntimeError):
    """unicorn is not installed."""


def _uc():
    try:
        import unicorn
        from unicorn import arm64_const
    except ImportError as e:  # pragma: no cover - the dependency is declared
        raise EmulatorMissing("the arm64 target runs under unicorn: pip install unicorn") from e
    return unicorn, arm64_const


def _up(n: int) -> int:
    return -(-n // PAGE) * PAGE


class Region:
    """A bump allocator of separately mapped blocks with an unmapped page after each."""

    def __init__(self, uc, base: int, limit: int) -> None:
        self.uc = uc
        self.base = base
        self.next = base
        self.limit = limit
        self.used = 0
        self.live: dict[int, int] = {}  # address -> mapped size

    def alloc(self, nbytes: int) -> int:
        n = max(int(nbytes), 1)
        if n > self.limit - self.used:
            return 0
        size = _up(n)
        addr = self.next
        self.uc.mem_map(addr, size)  # zeroed
        self.next += size + PAGE  # a guard page after every block
        self.live[addr] = size
        self.used += n
        return addr

    def free(self, addr: int) -> None:
        size = self.live.pop(int(addr), None)
        if size is not None:
            self.uc.mem_unmap(addr, size)
            self.used -= min(self.used, size)

    def release(self) -> None:
        for addr, size in list(self.live.items()):
            self.uc.mem_unmap(addr, size)
        self.live.clear()
        self.used = 0
        self.next = self.base

    def owns(self, addr: int) -> bool:
        return any(a <= addr < a + s for a, s in self.live.items())


class Machine:
    """One emulated ARM64 machine holding an artifact's code; runs are independent."""

    def __init__(self, codes: list[tuple[str, bytes]]) -> None:
        unicorn, A = _uc()
        self.unicorn, self.A = unicorn, A
        uc = self.uc = unicorn.Uc(unicorn.UC_ARCH_ARM64, unicorn.UC_MODE_ARM)
        uc.reg_write(A.UC_ARM64_REG_CPACR_EL1, uc.reg_read(A.UC_ARM64_REG_CPACR_EL1) | (3 << 20))
        rx = unicorn.UC_PROT_READ | unicorn.UC_PROT_EXEC
        stubs = b"".join(struct.pack("<II", SVC | (k << 5), RET) for k in range(S.CTX_CELLS))
        uc.mem_map(STUBS, PAGE, rx)
        uc.mem_write(STUBS, stubs)
        self.entry: dict[str, int] = {}
        image = b""
        for name, code in codes:
            image += b"\0" * (-len(image) % 64)
            self.entry[name] = CODE + len(image)
            image += code
        self.table = [self.entry[n] for n, _ in codes]
        uc.mem_map(CODE, _up(max(len(image), 1)), unicorn.UC_PROT_ALL)
        uc.mem_write(CODE, image)
        uc.mem_protect(CODE, _up(max(len(image), 1)), rx)
        uc.mem_map(DATA, DATA_SIZE)
        uc.mem_map(STACK, STACK_SIZE)
        uc.hook_add(unicorn.UC_HOOK_INTR, self._trap)
        self.heap = Region(uc, HEAP, 0)
        self.params = Region(uc, PARAMS, NO_LIMIT)
        self.instructions: int | None = None

    def close(self) -> None:
        self.uc = None

    # -- helpers the code calls (svc #cell) ---------------------------------------------------
    def _trap(self, uc, intno, _user) -> None:
        try:
            A = self.A
            pc = uc.reg_read(A.UC_ARM64_REG_PC)
            word = int.from_bytes(uc.mem_read(pc - 4, 4), "little")
            k = (word >> 5) & 0xFFFF
            x = [uc.reg_read(getattr(A, f"UC_ARM64_REG_X{i}")) for i in range(4)]
            if k == S.CTX_ALLOC:
                uc.reg_write(A.UC_ARM64_REG_X0, self.heap.alloc(x[0]))
            elif k == S.CTX_FREE:
                self.heap.free(x[0])
            elif k in (S.CTX_FMOD, S.CTX_FMODF):
                self._fmod(k == S.CTX_FMOD)
            elif k == S.CTX_MEMCPY:
                if x[2]:
                    uc.mem_write(x[0], bytes(uc.mem_read(x[1], x[2])))
            elif k == S.CTX_PRINT:
                self.printer(x[0], x[1], x[2], x[3])
            else:
                raise InterpError("R0008", f"arm64: unknown host call {k}")
        except BaseException as e:  # noqa: BLE001 - reported after emu_start returns
            self.failure = e
            uc.emu_stop()

    def _fmod(self, double: bool) -> None:
        uc, A = self.uc, self.A
        if double:
            a, b = (uc.reg_read(r) for r in (A.UC_ARM64_REG_D0, A.UC_ARM64_REG_D1))
            va, vb = np.array([a, b], dtype=np.uint64).view(np.float64)
            with np.errstate(all="ignore"):
                r = np.fmod(va, vb)
            uc.reg_write(A.UC_ARM64_REG_D0, int(np.float64(r).view(np.uint64)))
        else:
            a, b = (uc.reg_read(r) & 0xFFFFFFFF for r in (A.UC_ARM64_REG_D0, A.UC_ARM64_REG_D1))
            va, vb = np.array([a, b], dtype=np.uint32).view(np.float32)
            with np.errstate(all="ignore"):
                r = np.fmod(va, vb)  # exact, so computing in f32 is computing fmodf
            uc.reg_write(A.UC_ARM64_REG_D0, int(np.float32(r).view(np.uint32)))

    # -- memory ------------------------------------------------------------------------------
    def read_array(self, addr: int, elem: str, count: int) -> np.ndarray:
        dt = np.dtype(DTYPES[elem])
        if count == 0:
            return np.zeros(0, dtype=dt)
        if not (self.heap.owns(addr) or self.params.owns(addr)):
            raise InterpError("R0008", "arm64: a result points outside the run's memory")
        raw = bytes(self.uc.mem_read(addr, count * dt.itemsize))
        return np.frombuffer(raw, dtype=dt).copy()

    # -- a run -------------------------------------------------------------------------------
    def call(self, fn: str, cells: list[int], n_out: int, max_steps: int, memory: int, printer):
        """Run ``fn`` on ``cells``; the return code and the io cells after the call."""
        uc, A = self.uc, self.A
        self.printer = printer
        self.failure: BaseException | None = None
        ctx = [0] * S.CTX_CELLS
        ctx[S.CTX_STEPS] = max_steps & ((1 << 64) - 1)
        for k in range(1, S.CTX_CELLS):
            ctx[k] = STUBS + 8 * k
        table_at = DATA + 8 * S.CTX_CELLS
        ctx[S.CTX_FUNCS] = table_at
        io_at = table_at + 8 * len(self.table)
        io = cells + [0] * n_out
        if 8 * (S.CTX_CELLS + len(self.table) + len(io)) > DATA_SIZE:
            raise InterpError("R0009", "arm64: too many io cells")
        uc.mem_write(DATA, struct.pack(f"<{len(ctx)}Q", *ctx))
        uc.mem_write(table_at, struct.pack(f"<{len(self.table)}Q", *self.table))
        uc.mem_write(io_at, struct.pack(f"<{len(io)}Q", *io))
        uc.reg_write(A.UC_ARM64_REG_X0, io_at)
        uc.reg_write(A.UC_ARM64_REG_X1, DATA)
        uc.reg_write(A.UC_ARM64_REG_SP, STACK + STACK_SIZE)
        uc.reg_write(A.UC_ARM64_REG_LR, EXIT)
        uc.reg_write(A.UC_ARM64_REG_FPCR, 0)
        try:
            uc.emu_start(self.entry[fn], EXIT)
        except self.unicorn.UcError as e:
            pc = uc.reg_read(A.UC_ARM64_REG_PC)
            self.heap.release()
            raise InterpError("R0008", f"arm64: the code faulted ({e}) at {pc:#x}") from None
        if self.failure is not None:
            self.heap.release()
            raise self.failure
        rc = uc.reg_read(A.UC_ARM64_REG_X0)
        out = list(struct.unpack(f"<{len(io)}Q", bytes(uc.mem_read(io_at, 8 * len(io)))))
        return rc, out


class Printer:
    """`print` from the code: formats exactly as the interpreter does (loops/run_abi.py)."""

    def __init__(self, machine: Machine, program, out: TextIO) -> None:
        self.m = machine
        self.sites = print_sites(program)
        self.out = out

    def __call__(self, site: int, value: int, offset: int, shape_at: int) -> None:
        st = self.sites[int(site)]
        rank = len(st.shape)
        raw = bytes(self.m.uc.mem_read(shape_at, 8 * rank)) if rank else b""
        dims = list(struct.unpack(f"<{rank}q", raw)) if rank else []

        def read(addr: int, n: int) -> bytes:
            return bytes(self.m.uc.mem_read(addr, n))

        self.out.write(printed_text(st, value, offset, dims, read))


def run(
    machine: Machine,
    source,
    fn_name: str,
    inputs: dict,
    dims: dict | None = None,
    *,
    stdout: TextIO | None = None,
    max_steps: int | None = None,
    memory_limit: int = DEFAULT_MEMORY,
) -> RunResult:
    sig, args, bound, prog = prepare(source, fn_name, inputs, dims)
    lf = prog.functions[fn_name]
    uc = machine.uc
    params = machine.params = Region(uc, PARAMS, NO_LIMIT)
    machine.heap = Region(uc, HEAP, memory_limit)

    def put(arr: np.ndarray) -> int:
        data = arr.tobytes()
        addr = params.alloc(len(data))
        if data:
            uc.mem_write(addr, data)
        return addr

    try:
        cells = input_cells(sig, args, bound, lf, put)
        n_out = sum(len(gr) for gr in lf.results)
        tee = _Tee(stdout)
        printer = Printer(machine, prog, tee)
        steps = max_steps if max_steps is not None else NO_LIMIT
        rc, io = machine.call(fn_name, cells, n_out, steps, memory_limit, printer)
        check_rc(rc, "arm64")
        return result_of(sig, bound, lf, io, len(cells), machine.read_array, tee.buf.getvalue())
    finally:
        machine.heap.release()
        params.release()
