"""The loop program's own interpreter: a statement at a time, each primitive as prims.py says.

It exists to split blame: the graph interpreter computes the reference bits; this one
computes what the loop program says. When both agree and a backend differs, the bug is in
the backend; when these two differ, it is in the lowering (tests/test_loops_agree.py).

Buffers are flat numpy arrays, scalars numpy scalars. A use of a freed buffer, a load
outside a buffer or a write to a read-only parameter is an :class:`LoopProgramError` (a
lowering bug), never a silently wrong number.
"""

from __future__ import annotations

import numpy as np

from kera_core.interp import printing
from kera_core.interp.errors import InterpError
from kera_core.interp.values import DTYPES
from kera_core.loops.ir import (
    Alloc,
    Buf,
    Call,
    Check,
    Copy,
    Exchange,
    Free,
    If,
    Imm,
    LFunction,
    Load,
    Loop,
    Op,
    Print,
    Program,
    Store,
    Var,
    While,
)
from kera_core.loops.prims import PRIMS


class LoopProgramError(Exception):
    """The loop program broke its own rules (a lowering bug, never a user error)."""


def imm_value(c: Imm):
    dt = DTYPES[c.type]
    if c.type == "bool":
        return np.bool_(c.bits != 0)
    width = np.dtype(dt).itemsize
    u = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[width]
    return np.array(c.bits, dtype=u).view(dt)[()]


class Interpreter:
    def __init__(self, program: Program, stdout=None, max_steps: int | None = None) -> None:
        self.program = program
        self.stdout = stdout
        self.steps_left = max_steps
        self.max_steps = max_steps
        self.live_bytes = 0
        self.peak_bytes = 0

    def tick(self, node: bytes | None) -> None:
        if self.steps_left is not None:
            self.steps_left -= 1
            if self.steps_left < 0:
                raise InterpError("R0007", f"more than {self.max_steps} loop iterations", node)

    def call(self, fn: LFunction, args: list) -> list:
        env: dict[int, object] = {}
        bufs: dict[int, np.ndarray] = {}
        it = iter(args)
        for d in fn.dims:
            env[d.id] = np.int64(next(it))
        for group in fn.params:
            for x in group:
                v = next(it)
                if isinstance(x, Buf):
                    bufs[x.id] = v
                else:
                    env[x.id] = v
        self.block(fn.body, env, bufs)
        out = []
        for group in fn.results:
            for x in group:
                if isinstance(x, Buf):
                    if x.id not in bufs:
                        raise LoopProgramError(f"{fn.name}: result {x!r} was freed")
                    out.append(bufs[x.id])
                else:
                    out.append(env[x.id])
        return out

    def val(self, x, env):
        if type(x) is Imm:
            return imm_value(x)
        try:
            return env[x.id]
        except KeyError:
            raise LoopProgramError(f"{x!r} read before it was set") from None

    def buf(self, b: Buf, bufs) -> np.ndarray:
        try:
            return bufs[b.id]
        except KeyError:
            raise LoopProgramError(f"{b!r} used while not allocated") from None

    def block(self, stmts: list, env: dict, bufs: dict) -> None:
        for s in stmts:
            t = type(s)
            if t is Op:
                p = PRIMS[s.op]
                env[s.dst.id] = p.run(s.dst.type, *(self.val(a, env) for a in s.args))
            elif t is Load:
                arr = self.buf(s.buf, bufs)
                i = int(self.val(s.index, env))
                if not 0 <= i < arr.shape[0]:
                    raise LoopProgramError(
                        f"load {s.buf!r}[{i}] outside its {arr.shape[0]} elements"
                    )
                env[s.dst.id] = arr[i]
            elif t is Store:
                arr = self.buf(s.buf, bufs)
                i = int(self.val(s.index, env))
                if not 0 <= i < arr.shape[0]:
                    raise LoopProgramError(
                        f"store {s.buf!r}[{i}] outside its {arr.shape[0]} elements"
                    )
                if s.buf.role == "param" and not s.buf.mutable:
                    raise LoopProgramError(f"store into the read-only parameter {s.buf!r}")
                arr[i] = self.val(s.value, env)
            elif t is Loop:
                lo = int(self.val(s.lo, env))
                hi = int(self.val(s.hi, env))
                vid = s.var.id
                for i in range(lo, hi):
                    if s.counted:
                        self.tick(s.node)
                    env[vid] = np.int64(i)
                    self.block(s.body, env, bufs)
            elif t is While:
                while True:
                    self.block(s.cond, env, bufs)
                    if not bool(self.val(s.test, env)):
                        break
                    self.tick(s.node)
                    self.block(s.body, env, bufs)
            elif t is If:
                self.block(s.then if bool(self.val(s.cond, env)) else s.orelse, env, bufs)
            elif t is Check:
                if not bool(self.val(s.ok, env)):
                    raise InterpError(s.code, s.message, s.node)
            elif t is Alloc:
                n = int(self.val(s.buf.size, env))
                if s.buf.id in bufs:
                    raise LoopProgramError(f"{s.buf!r} allocated twice")
                # a fresh buffer's contents are undefined (docs/lowering.md): 0xA5 bytes,
                # so a read of an element never written gives bits no program computes
                arr = np.full(n * np.dtype(DTYPES[s.buf.elem]).itemsize, 0xA5, np.uint8)
                arr = arr.view(DTYPES[s.buf.elem])
                bufs[s.buf.id] = arr
                self.live_bytes += arr.nbytes
                self.peak_bytes = max(self.peak_bytes, self.live_bytes)
            elif t is Free:
                arr = bufs.pop(s.buf.id, None)
                if arr is None:
                    raise LoopProgramError(f"{s.buf!r} freed while not allocated")
                self.live_bytes -= arr.nbytes
            elif t is Copy:
                dst, src = self.buf(s.dst, bufs), self.buf(s.src, bufs)
                n = int(self.val(s.count, env))
                a, b = int(self.val(s.dst_at, env)), int(self.val(s.src_at, env))
                if n and (a < 0 or b < 0 or a + n > dst.shape[0] or b + n > src.shape[0]):
                    raise LoopProgramError(f"copy of {n} outside {s.dst!r} or {s.src!r}")
                if s.dst.role == "param" and not s.dst.mutable:
                    raise LoopProgramError(f"copy into the read-only parameter {s.dst!r}")
                dst[a : a + n] = src[b : b + n].copy()
            elif t is Exchange:
                a, b = self.buf(s.a, bufs), self.buf(s.b, bufs)
                if a.dtype != b.dtype or a.shape != b.shape:
                    raise LoopProgramError(f"exchange of unlike buffers {s.a!r} and {s.b!r}")
                if {s.a.role, s.b.role} - {"temp", "result"}:
                    raise LoopProgramError(f"exchange of a non-temporary {s.a!r} or {s.b!r}")
                bufs[s.a.id], bufs[s.b.id] = b, a
            elif t is Call:
                args = []
                for a in s.args:
                    args.append(self.buf(a, bufs) if isinstance(a, Buf) else self.val(a, env))
                outs = self.call(self.program.functions[s.fn], args)
                for r, v in zip(s.results, outs, strict=True):
                    if isinstance(r, Buf):
                        bufs[r.id] = v
                    else:
                        env[r.id] = v
            elif t is Print:
                self.print(s, env, bufs)
            else:  # pragma: no cover
                raise LoopProgramError(f"unknown statement {s!r}")

    def print(self, s: Print, env, bufs) -> None:
        if s.text is not None:
            text = s.text
        elif isinstance(s.value, Buf):
            shape = tuple(int(self.val(d, env)) for d in s.shape)
            n = int(np.prod(shape)) if shape else 1
            at = int(self.val(s.offset, env)) if s.offset is not None else 0
            arr = self.buf(s.value, bufs)[at : at + n].reshape(shape)
            text = printing.format_value(arr)
        else:
            text = printing.format_value(self.val(s.value, env))
        if self.stdout is not None:
            self.stdout.write(text)


__all__ = ["Interpreter", "LoopProgramError", "Var"]
