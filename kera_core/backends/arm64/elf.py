"""The ARM64 artifact as a real static Linux ELF, run under ``qemu-aarch64``: an end-to-end
check of the ABI the in-process (unicorn) runner only imitates.

The artifact's code is included byte for byte (``.incbin``) after a small harness written in
GNU assembly, assembled and linked by binutils (``aarch64-linux-gnu-as``/``-ld``):

* ``_start`` plants a distinct value in each callee-saved register (x19–x28, d8–d15), calls
  the entry as ``int64 f(uint64 *io, uint64 *ctx)`` (x0, x1) with the io cells (dimension
  sizes, flattened parameters, then room for the results) and the ctx cells the code reads
  (the step budget, the host helpers and the function table), and exits with status 6 if
  any callee-saved register changed;
* the helpers are AAPCS64 functions of the harness: ``alloc`` (a bump allocator with a size
  header; blocks are zeroed; ``free`` of the last block gives it back, so the per-iteration
  release of the loop program runs in bounded memory), ``memcpy``, and ``print``, which
  appends a record (site, value, offset, the shape, the bytes of a printed buffer) to a log
  that Python formats afterwards exactly as the interpreter would. Float ``%`` calls the C
  library's ``fmod`` on a real host; the harness has none, so such functions are refused
  here (:func:`unsupported`) — the unicorn runner covers them;
* after the call it writes the return code, the io cells, the parameter buffers, the print
  log and the heap to stdout (``write`` system calls) and exits; Python reads the results
  from those bytes, translating addresses by the fixed places the linker put each region.

Nothing here is on the path of ``kera run``: it is a check (tests/test_arm64_elf.py).
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from kera_core.backends.arm64.compile import Compiled
from kera_core.interp.api import RunResult
from kera_core.interp.errors import InterpError
from kera_core.interp.values import DTYPES
from kera_core.loops import ir
from kera_core.loops.run import prepare
from kera_core.loops.run_abi import check_rc, input_cells, print_sites, printed_text, result_of

AS, LD, QEMU = "aarch64-linux-gnu-as", "aarch64-linux-gnu-ld", "qemu-aarch64"
PARAMS = 0x1000_0000  # the input buffers (fixed: their addresses are in the io cells)
LOG = 0x2000_0000
LOG_SIZE = 64 << 20
HEAP = 0x3000_0000
HEAP_SIZE = 256 << 20
TIMEOUT_S = 120


def tools_missing() -> str | None:
    for tool in (AS, LD, QEMU):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt binutils-aarch64-linux-gnu qemu-user)"
    return None


def unsupported(comp: Compiled, fn: str) -> list[str]:
    """Why `fn` cannot run in the harness (empty: it can)."""
    why = []
    for lf in comp.program.functions.values():
        if _uses_float_rem(lf.body):
            why.append(f"`{lf.name}` uses float `%` (the C library's fmod; the harness has none)")
    return why


def _uses_float_rem(stmts: list) -> bool:
    for s in stmts:
        if isinstance(s, ir.Op) and s.op == "rem" and ir.is_float(s.dst.type):
            return True
        for sub in ("body", "then", "orelse", "cond"):
            inner = getattr(s, sub, None)
            if isinstance(inner, list) and _uses_float_rem(inner):
                return True
    return False


_HARNESS = """\
    .text
    .global _start
_start:
    ldr x0, =kio
    ldr x1, =kctx
{plant}
    ldr x9, =kcode + {entry}
    blr x9
{verify}
    ldr x1, =khdr
    str x0, [x1]
    ldr x2, =heap_next
    ldr x2, [x2]
    str x2, [x1, #8]
    ldr x2, =log_next
    ldr x2, [x2]
    str x2, [x1, #16]
    ldr x0, =khdr
    mov x1, #24
    bl write_all
    ldr x0, =kio
    ldr x1, ={io_bytes}
    bl write_all
    ldr x0, =kparams
    ldr x1, ={params_bytes}
    bl write_all
    ldr x0, =klog
    ldr x1, =log_next
    ldr x1, [x1]
    sub x1, x1, x0
    bl write_all
    ldr x0, =kheap
    ldr x1, =heap_next
    ldr x1, [x1]
    sub x1, x1, x0
    bl write_all
    mov x0, #0
    mov x8, #93
    svc #0

write_all:                      // x0 address, x1 length; exit(3) if stdout fails
    mov x20, x0
    mov x21, x1
1:  cbz x21, 2f
    mov x0, #1
    mov x1, x20
    mov x2, x21
    mov x8, #64
    svc #0
    cmp x0, #0
    b.le 3f
    add x20, x20, x0
    sub x21, x21, x0
    b 1b
2:  ret
3:  mov x0, #3
    mov x8, #93
    svc #0

h_alloc:                        // x0 bytes -> x0 a zeroed 16-aligned block, or 0
    ldr x13, =heap_room
    ldr x13, [x13]
    cmp x0, x13
    b.hi 9f
    add x11, x0, #15
    and x11, x11, #-16
    cbnz x11, 1f
    mov x11, #16
1:  ldr x9, =heap_next
    ldr x10, [x9]
    add x12, x10, x11
    add x12, x12, #16
    ldr x14, =heap_end
    ldr x14, [x14]
    cmp x12, x14
    b.hi 9f
    str x11, [x10]
    add x0, x10, #16
    str x12, [x9]
    mov x15, x0
2:  cmp x15, x12
    b.hs 3f
    str xzr, [x15], #8
    b 2b
3:  ret
9:  mov x0, #0
    ret

h_free:                         // x0 block: given back if it is the last one
    cbz x0, 1f
    ldr x9, [x0, #-16]
    add x10, x0, x9
    ldr x11, =heap_next
    ldr x12, [x11]
    cmp x10, x12
    b.ne 1f
    sub x10, x0, #16
    str x10, [x11]
1:  ret

h_memcpy:                       // x0 dst, x1 src, x2 bytes
    mov x9, #0
1:  cmp x9, x2
    b.hs 2f
    ldrb w10, [x1, x9]
    strb w10, [x0, x9]
    add x9, x9, #1
    b 1b
2:  ret

h_print:                        // x0 site, x1 value, x2 offset, x3 shape
    lsr x11, x0, #20            // site = function << 20 | ordinal: its row in ksites
    ldr x12, =kfirst
    ldr x11, [x12, x11, lsl #3]
    and x12, x0, #0xFFFFF
    add x11, x11, x12
    ldr x12, =ksites
    add x11, x12, x11, lsl #4
    ldp x12, x13, [x11]         // rank, element bytes (0: not a buffer)
    mov x14, #1
    mov x15, #0
1:  cmp x15, x12
    b.hs 2f
    ldr x16, [x3, x15, lsl #3]
    mul x14, x14, x16
    add x15, x15, #1
    b 1b
2:  mul x14, x14, x13           // bytes of the printed buffer
    ldr x9, =log_next
    ldr x10, [x9]
    add x16, x10, #24
    add x16, x16, x12, lsl #3
    add x16, x16, x14
    add x16, x16, #7
    and x16, x16, #-8
    ldr x17, =log_end
    ldr x17, [x17]
    cmp x16, x17
    b.hi 8f
    stp x0, x1, [x10]
    str x2, [x10, #16]
    add x10, x10, #24
    mov x15, #0
3:  cmp x15, x12
    b.hs 4f
    ldr x17, [x3, x15, lsl #3]
    str x17, [x10], #8
    add x15, x15, #1
    b 3b
4:  madd x15, x2, x13, x1
    mov x17, #0
5:  cmp x17, x14
    b.hs 6f
    ldrb w12, [x15, x17]
    strb w12, [x10, x17]
    add x17, x17, #1
    b 5b
6:  str x16, [x9]
    ret
8:  mov x0, #5                  // the print log is full
    mov x8, #93
    svc #0

h_nofmod:
    mov x0, #4
    mov x8, #93
    svc #0

clobbered:                      // a callee-saved register changed across the call
    mov x0, #6
    mov x8, #93
    svc #0

    .ltorg
    .balign 64
kcode:
    .incbin "{code}"

    .data
    .balign 8
kctx:
    .quad {steps}, h_alloc, h_free, h_nofmod, h_nofmod, h_memcpy, ktable, h_print
ktable:
{table}
kio:
{io}
kfirst:
{first}
ksites:
{sites}
khdr:
    .quad 0, 0, 0
heap_next:
    .quad kheap
heap_end:
    .quad kheap + {heap_limit}
heap_room:
    .quad {heap_limit}
log_next:
    .quad klog
log_end:
    .quad klog + {log_size}

    .section .kparams, "aw"
kparams:
    .incbin "{params}"

    .section .klog, "aw", @nobits
klog:
    .skip {log_size}

    .section .kheap, "aw", @nobits
kheap:
    .skip {heap_size}
"""


def _sentinel(k: int) -> int:
    return 0x5EED_0000_0000_0000 | (k * 0x0101_0101)


# AAPCS64: x19–x28 and the low 64 bits of v8–v15 survive a call; the harness plants a
# distinct value in each before the call and exits with status 6 if one changed.
_PLANT = "\n".join(
    [f"    ldr x{r}, ={_sentinel(r)}" for r in range(19, 29)]
    + [f"    ldr x9, ={_sentinel(100 + d)}\n    fmov d{d}, x9" for d in range(8, 16)]
)
_VERIFY = "\n".join(
    [f"    ldr x9, ={_sentinel(r)}\n    cmp x{r}, x9\n    b.ne clobbered" for r in range(19, 29)]
    + [
        f"    fmov x10, d{d}\n    ldr x9, ={_sentinel(100 + d)}\n    cmp x10, x9\n    b.ne clobbered"
        for d in range(8, 16)
    ]
)


def _quads(values: list[int]) -> str:
    if not values:
        return "    .quad 0"
    return "\n".join(
        "    .quad " + ", ".join(str(v) for v in values[k : k + 8])
        for k in range(0, len(values), 8)
    )


def run_elf(
    comp: Compiled,
    source,
    fn_name: str,
    inputs: dict,
    dims: dict | None = None,
    *,
    max_steps: int | None = None,
    memory_limit: int = HEAP_SIZE,
) -> RunResult:
    """Build the static ELF for one run of `fn_name` and run it under qemu-aarch64."""
    missing = tools_missing()
    if missing:
        raise RuntimeError(missing)
    why = unsupported(comp, fn_name)
    if why:
        raise ValueError("; ".join(why))
    sig, args, bound, prog = prepare(source, fn_name, inputs, dims, comp.program)
    lf = prog.functions[fn_name]
    params = bytearray()

    def put(arr: np.ndarray) -> int:
        data = arr.tobytes()
        params.extend(b"\0" * (-len(params) % 64))
        at = PARAMS + len(params)
        params.extend(data if data else b"\0")
        return at

    cells = input_cells(sig, args, bound, lf, put)
    n_out = sum(len(g) for g in lf.results)
    io = cells + [0] * n_out
    image, offsets = b"", {}
    for name, code in comp.codes:
        image += b"\0" * (-len(image) % 64)
        offsets[name] = len(image)
        image += code
    sites = print_sites(prog)
    site_cells: list[int] = []
    first: list[int] = [0] * len(prog.functions)  # per function, its first row in ksites
    for row, (number, st) in enumerate(sorted(sites.items())):
        if number & 0xFFFFF == 0:
            first[number >> 20] = row
        buf = isinstance(st.value, ir.Buf)
        site_cells += [len(st.shape), np.dtype(DTYPES[st.value.elem]).itemsize] if buf else [0, 0]
    steps = (max_steps if max_steps is not None else 1 << 62) & ((1 << 64) - 1)
    heap_limit = min(int(memory_limit), HEAP_SIZE - 4096)
    with tempfile.TemporaryDirectory(prefix="kera-elf-") as tmp:
        d = Path(tmp)
        (d / "code.bin").write_bytes(image)
        (d / "params.bin").write_bytes(bytes(params) or b"\0")
        text = _HARNESS.format(
            entry=offsets[fn_name],
            plant=_PLANT,
            verify=_VERIFY,
            io_bytes=8 * len(io),
            params_bytes=len(params),
            code=d / "code.bin",
            params=d / "params.bin",
            steps=steps,
            table=_quads_labels(comp.codes, offsets),
            io=_quads(io),
            first=_quads(first),
            sites=_quads(site_cells),
            heap_limit=heap_limit,
            heap_size=HEAP_SIZE,
            log_size=LOG_SIZE,
        )
        (d / "h.S").write_text(text)
        subprocess.run([AS, "-o", str(d / "h.o"), str(d / "h.S")], check=True, capture_output=True)
        subprocess.run(
            [
                LD,
                "-static",
                "-o",
                str(d / "prog"),
                str(d / "h.o"),
                f"--section-start=.kparams={PARAMS:#x}",
                f"--section-start=.klog={LOG:#x}",
                f"--section-start=.kheap={HEAP:#x}",
            ],
            check=True,
            capture_output=True,
        )
        done = subprocess.run([QEMU, str(d / "prog")], capture_output=True, timeout=TIMEOUT_S)
    if done.returncode != 0:
        raise InterpError(
            "R0008", f"arm64 ELF: exit status {done.returncode}: {done.stderr[-300:]!r}"
        )
    return _decode(done.stdout, sig, bound, lf, io, len(cells), params, sites)


def _quads_labels(codes, offsets) -> str:
    return "\n".join(f"    .quad kcode + {offsets[name]}" for name, _ in codes)


def _decode(out: bytes, sig, bound, lf, io, n_in, params, sites) -> RunResult:
    rc, heap_next, log_next = struct.unpack_from("<3Q", out, 0)
    at = 24
    io_after = list(struct.unpack_from(f"<{len(io)}Q", out, at))
    at += 8 * len(io)
    params_after = out[at : at + len(params)]
    at += len(params)
    log = out[at : at + (log_next - LOG)]
    at += log_next - LOG
    heap = out[at : at + (heap_next - HEAP)]
    printed = _replay(log, sites)
    check_rc(rc, "arm64")

    def read_array(addr: int, elem: str, count: int) -> np.ndarray:
        dt = np.dtype(DTYPES[elem])
        n = count * dt.itemsize
        for base, blob in ((PARAMS, params_after), (HEAP, heap)):
            if base <= addr and addr + n <= base + len(blob):
                return np.frombuffer(blob[addr - base : addr - base + n], dtype=dt).copy()
        if count == 0:
            return np.zeros(0, dtype=dt)
        raise InterpError("R0008", "arm64 ELF: a result points outside the run's memory")

    return result_of(sig, bound, lf, io_after, n_in, read_array, printed)


def _replay(log: bytes, sites) -> str:
    """The printed text: each log record (site, value, offset, then for a buffer its shape
    and the bytes it had when printed) formatted as the interpreter prints."""
    out: list[str] = []
    at = 0
    while at < len(log):
        site, value, offset = struct.unpack_from("<3Q", log, at)
        at += 24
        st = sites[site]
        dims: list[int] = []
        nbytes = 0
        if st.text is None and isinstance(st.value, ir.Buf):
            rank = len(st.shape)
            dims = list(struct.unpack_from(f"<{rank}q", log, at)) if rank else []
            at += 8 * rank
            nbytes = (int(np.prod(dims)) if dims else 1) * np.dtype(DTYPES[st.value.elem]).itemsize
        copied = log[at : at + nbytes]
        out.append(printed_text(st, value, offset, dims, lambda _addr, n, c=copied: c[:n]))
        at += -(-nbytes // 8) * 8
    return "".join(out)
