"""The arm64 target: instructions per element, against the x86-64 backend's, and compile time.

Usage: python bench/arm64_bench.py [--sizes 1000,4000]

Emulated speed is not the target's speed, so this counts instructions. Both backends' code
runs under unicorn (the arm64 artifact as `kera run --target arm64` runs it; the x86-64
artifact at its SSE2 level — unicorn emulates no AVX — with its host helpers serviced from
Python), a block hook adds each executed block's instruction count (capstone, once per
block), and the figure is instructions per element at two sizes, so the fixed cost of the
call cancels: (count(N2) − count(N1)) / (N2 − N1) (matmul: per multiply-add of the n³).
The outputs of both are checked against the interpreter's bytes. Then compile time per 1000
graph nodes of straight-line functions, for both.
"""

from __future__ import annotations

import argparse
import struct
import time

import capstone
import numpy as np
import unicorn
from unicorn import x86_const as U

from kera_core.analysis import analyze
from kera_core.backends.arm64 import compile as A
from kera_core.backends.arm64 import emulate as E
from kera_core.backends.x86_64 import compile as X
from kera_core.backends.x86_64 import select as XS
from kera_core.interp import run_function
from kera_core.loops import run_abi
from kera_core.loops.run import prepare

SRC = """
pub fn axpy[N](a: f32, x: &f32[N], y: &f32[N]) -> f32[N] { a * x + y }
pub fn total[N](x: &f32[N]) -> f32 { sum(x) }
pub fn dotp[N](x: &f32[N], y: &f32[N]) -> f32 { dot(x, y) }
pub fn soft[N](x: &f32[N]) -> f32[N] { softmax(x) }
pub fn norm[N](x: &f32[N]) -> f32[N] { layernorm(x, 0.00001) }
pub fn mm[M, K, N](a: &f32[M, K], b: &f32[K, N]) -> f32[M, N] { matmul(a, b) }
"""


class BlockCounter:
    """Instructions executed, from a block hook (each block decoded once)."""

    def __init__(self, uc, cs) -> None:
        self.count = 0
        self.sizes: dict[int, int] = {}
        self.uc, self.cs = uc, cs
        uc.hook_add(unicorn.UC_HOOK_BLOCK, self._block)

    def _block(self, uc, address, size, _user) -> None:
        n = self.sizes.get(address)
        if n is None:
            n = self.sizes[address] = sum(
                1 for _ in self.cs.disasm(bytes(uc.mem_read(address, size)), address)
            )
        self.count += n


class X86Emulated:
    """The x86-64 artifact under unicorn: code, ctx cells whose helpers are serviced in
    Python (alloc, free, memcpy), the io cells; enough for the benchmark kernels."""

    CODE, DATA, STACK, HEAP, STUBS = 0x100_0000, 0x800_0000, 0xA00_0000, 0x10_0000_0000, 0x10_0000

    def __init__(self, codes) -> None:
        uc = self.uc = unicorn.Uc(unicorn.UC_ARCH_X86, unicorn.UC_MODE_64)
        image, self.entry = b"", {}
        for name, code in codes:
            image += b"\0" * (-len(image) % 64)
            self.entry[name] = self.CODE + len(image)
            image += code
        self.table = [self.entry[n] for n, _ in codes]
        uc.mem_map(self.CODE, -(-len(image) // 4096) * 4096)
        uc.mem_write(self.CODE, image)
        uc.mem_map(self.STUBS, 4096)
        uc.mem_write(self.STUBS, b"\xc3" * 4096)  # ret
        uc.mem_map(self.DATA, 1 << 20)
        uc.mem_map(self.STACK, 1 << 20)
        uc.mem_map(self.HEAP, 1 << 30)
        uc.hook_add(unicorn.UC_HOOK_CODE, self._helper, begin=self.STUBS, end=self.STUBS + 4095)
        self.counter = BlockCounter(uc, capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64))

    def _helper(self, uc, address, _size, _user) -> None:
        k = (address - self.STUBS) // 16
        rdi, rsi, rdx = (
            uc.reg_read(r) for r in (U.UC_X86_REG_RDI, U.UC_X86_REG_RSI, U.UC_X86_REG_RDX)
        )
        if k == XS.CTX_ALLOC:
            at = self.next
            self.next += -(-max(rdi, 1) // 64) * 64
            uc.mem_write(at, b"\0" * rdi)
            uc.reg_write(U.UC_X86_REG_RAX, at)
        elif k == XS.CTX_MEMCPY:
            uc.mem_write(rdi, bytes(uc.mem_read(rsi, rdx)))
            uc.reg_write(U.UC_X86_REG_RAX, rdi)
        elif k != XS.CTX_FREE:
            raise RuntimeError(f"x86 helper {k} is not emulated here")

    def run(self, source, fn: str, inputs: dict, dims=None):
        uc = self.uc
        sig, args, bound, prog = prepare(source, fn, inputs, dims)
        lf = prog.functions[fn]
        self.next = self.HEAP

        def put(arr: np.ndarray) -> int:
            data = arr.tobytes()
            at = self.next
            self.next += -(-max(len(data), 1) // 64) * 64
            uc.mem_write(at, data)
            return at

        cells = run_abi.input_cells(sig, args, bound, lf, put)
        n_out = sum(len(g) for g in lf.results)
        io = cells + [0] * n_out
        ctx = [0] * XS.CTX_CELLS
        ctx[XS.CTX_STEPS] = 1 << 62
        for k in range(1, XS.CTX_CELLS):
            ctx[k] = self.STUBS + 16 * k
        table_at = self.DATA + 8 * XS.CTX_CELLS
        ctx[XS.CTX_FUNCS] = table_at
        io_at = table_at + 8 * len(self.table)
        uc.mem_write(self.DATA, struct.pack(f"<{len(ctx)}Q", *ctx))
        uc.mem_write(table_at, struct.pack(f"<{len(self.table)}Q", *self.table))
        uc.mem_write(io_at, struct.pack(f"<{len(io)}Q", *io))
        exit_at = self.STUBS + 4000
        sp = self.STACK + (1 << 20) - 64
        uc.mem_write(sp, struct.pack("<Q", exit_at))
        uc.reg_write(U.UC_X86_REG_RSP, sp)
        uc.reg_write(U.UC_X86_REG_RDI, io_at)
        uc.reg_write(U.UC_X86_REG_RSI, self.DATA)
        self.counter.count = 0
        uc.emu_start(self.entry[fn], exit_at)
        rc = uc.reg_read(U.UC_X86_REG_RAX)
        out = list(struct.unpack(f"<{len(io)}Q", bytes(uc.mem_read(io_at, 8 * len(io)))))
        run_abi.check_rc(rc, "x86_64")

        def read_array(addr, elem, count):
            dt = np.dtype(ir_dtype(elem))
            return np.frombuffer(bytes(uc.mem_read(addr, count * dt.itemsize)), dtype=dt).copy()

        return run_abi.result_of(
            sig, bound, lf, out, len(cells), read_array, ""
        ), self.counter.count


def ir_dtype(elem: str):
    from kera_core.interp.values import DTYPES

    return DTYPES[elem]


def inputs_for(name: str, n: int, rng) -> tuple[dict, dict | None]:
    if name == "mm":
        a = rng.standard_normal((n, n)).astype(np.float32)
        return {"a": a, "b": rng.standard_normal((n, n)).astype(np.float32)}, None
    out = {"x": rng.standard_normal(n).astype(np.float32)}
    if name in ("axpy", "dotp"):
        out["y"] = rng.standard_normal(n).astype(np.float32)
    if name == "axpy":
        out["a"] = np.float32(0.5)
    return out, None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,4000")
    args = ap.parse_args()
    n1, n2 = (int(s) for s in args.sizes.split(","))
    m = analyze(SRC).module
    g = m.graph
    rng = np.random.default_rng(1)
    sse2 = X.isa_for("sse2")
    print("instructions per element (matmul: per multiply-add), under unicorn")
    print(f"{'kernel':8} {'arm64':>9} {'x86 sse2':>9} {'arm64/x86':>9}  same bytes")
    for f in g.exported():
        name = f.name
        arm = E.Machine(A.read(A.build(g, name)[0], g)[1])
        arm_counter = BlockCounter(
            arm.uc, capstone.Cs(capstone.CS_ARCH_ARM64, capstone.CS_MODE_ARM)
        )
        x86 = X86Emulated(X.read(X.build(g, name, sse2)[0], g)[1])
        per: dict[str, list[int]] = {"arm": [], "x86": []}
        same = True
        sizes = (8, 16) if name == "mm" else (n1, n2)
        for n in sizes:
            inp, _ = inputs_for(name, n, rng)
            want = run_function(m, name, inp).digest()
            arm_counter.count = 0
            got = E.run(arm, m, name, inp)
            per["arm"].append(arm_counter.count)
            res, count = x86.run(m, name, inp)
            per["x86"].append(count)
            same &= got.digest() == want and res.digest() == want
        work = [s**3 for s in sizes] if name == "mm" else list(sizes)
        ra, rx = ((per[k][1] - per[k][0]) / (work[1] - work[0]) for k in ("arm", "x86"))
        print(f"{name:8} {ra:9.2f} {rx:9.2f} {ra / rx:9.2f}  {same}")
        arm.close()
    for terms in (300, 3000):
        body = " + ".join(f"x * {i + 1}.5" for i in range(terms))
        gm = analyze(f"pub fn f(x: f32) -> f32 {{ {body} }}\n").module.graph
        nodes = len(gm.nodes)
        t = time.perf_counter()
        A.build(gm, "f")
        ta = time.perf_counter() - t
        t = time.perf_counter()
        X.build(gm, "f", sse2)
        tx = time.perf_counter() - t
        print(
            f"compile {nodes:>6} nodes: arm64 {ta * 1e6 / nodes:.1f} ms, "
            f"x86_64 {tx * 1e6 / nodes:.1f} ms per 1k nodes"
        )


if __name__ == "__main__":
    main()
