"""The wasm target's SIMD exp/log/tanh/sigmoid (simd_math.vmath), bit for bit.

A hand-written module runs, over the same inputs, the f32x4/f64x2 helpers and the scalar
helpers of rt.math; both must give the interpreter's bits (kera_core/interp/mathfns.py),
NaN for NaN (payloads are canonicalised by the export, so only NaN-ness is compared).
Inputs per function and format: random bit patterns, dense sweeps of the ranges where the
step lists switch cases (thresholds, scaleB's cases, subnormals, near 1, the polynomial /
exp switch of tanh), and the special values, shuffled and also planted at every lane
position among ordinary values so the per-lane selects are exercised.
"""

from __future__ import annotations

import functools
import types

import numpy as np
import pytest
import wasmtime

from kera_core.backends.wasm import rt, simd_math
from kera_core.interp import mathfns as M
from kera_core.ir.types import F32, F64

OPS = ("exp", "log", "tanh", "sigmoid")
PRIMS = {"f32": F32, "f64": F64}
DT = {"f32": (np.float32, np.uint32), "f64": (np.float64, np.uint64)}

REGION = 4 << 20  # bytes per buffer: input at 0, vector output, scalar output
N_RANDOM = 50_000


def _loop(name: str, step: int, body: str) -> str:
    at = "(i32.add (local.get $a) (local.get $i))"
    to = "(i32.add (local.get $o) (local.get $i))"
    return f"""\
  (func (export "{name}") (param $a i32) (param $o i32) (param $n i32) (local $i i32)
    (block $b (loop $l
      (br_if $b (i32.ge_u (local.get $i) (local.get $n)))
      {body.format(at=at, to=to)}
      (local.set $i (i32.add (local.get $i) (i32.const {step})))
      (br $l))))"""


def build_wat() -> str:
    """Exports `v_<op>_<w>` / `s_<op>_<w>` (in address, out address, byte count)."""
    mod = types.SimpleNamespace(helpers={})
    funcs = []
    for w, p in PRIMS.items():
        for op in OPS:
            vec = simd_math.vmath(mod, op, p, "(v128.load {at})")
            funcs.append(_loop(f"v_{op}_{w}", 16, f"(v128.store {{to}} {vec})"))
            sca = rt.math(mod, op, p, f"({w}.load {{at}})")
            funcs.append(_loop(f"s_{op}_{w}", p.bits // 8, f"({w}.store {{to}} {sca})"))
    pages = 3 * REGION >> 16
    return "\n".join(
        ["(module", f'  (memory (export "memory") {pages})', *mod.helpers.values(), *funcs, ")"]
    )


class Runner:
    def __init__(self) -> None:
        self.store = wasmtime.Store(wasmtime.Engine())
        module = wasmtime.Module(self.store.engine, wasmtime.wat2wasm(build_wat()))
        self.inst = wasmtime.Instance(self.store, module, [])
        ex = self.inst.exports(self.store)
        self.mem = ex["memory"]
        self.fns = {n: ex[n] for n in (f"{k}_{op}_{w}" for k in "vs" for op in OPS for w in DT)}

    def buf(self) -> np.ndarray:
        ptr = self.mem.data_ptr(self.store)
        return np.ctypeslib.as_array(ptr, shape=(self.mem.data_len(self.store),))

    def run(self, kind: str, op: str, x: np.ndarray) -> np.ndarray:
        """``kind`` ("v" or "s") applied to ``x`` (length a multiple of 16 bytes)."""
        raw = x.view(np.uint8)
        out = np.empty_like(raw)
        fn = self.fns[f"{kind}_{op}_{x.dtype.name.replace('float', 'f')}"]
        for lo in range(0, raw.size, REGION):
            chunk = raw[lo : lo + REGION]
            mem = self.buf()
            mem[: chunk.size] = chunk
            fn(self.store, 0, REGION, chunk.size)
            out[lo : lo + chunk.size] = self.buf()[REGION : REGION + chunk.size]
        return out.view(x.dtype)


@functools.lru_cache(maxsize=1)
def runner() -> Runner:
    return Runner()


def _from_bits(w: str, bits) -> np.ndarray:
    ft, ut = DT[w]
    return np.asarray(bits, dtype=np.uint64).astype(ut).view(ft)


def _around(w: str, values, width: int) -> np.ndarray:
    """The ``width`` floats on either side of each value (by bit pattern, same sign)."""
    ft, ut = DT[w]
    out = []
    for v in values:
        b = int(np.array(v, ft).view(ut))
        lo = max(b - width, b & (1 << (8 * ft().itemsize - 1)))
        out.append(np.arange(lo, b + width + 1, dtype=np.uint64))
    return _from_bits(w, np.concatenate(out))


def specials(w: str) -> np.ndarray:
    ft, ut = DT[w]
    if w == "f32":
        bits = [0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FFFFFFF, 0xFFC00001, 0xFF800001]
        bits += [1, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0x00000002, 0x00400000]
    else:
        bits = [0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001]
        bits += [0x7FFFFFFFFFFFFFFF, 0xFFF8000000000001, 0xFFF0000000000001]
        bits += [1, 0x000FFFFFFFFFFFFF, 0x0010000000000000, 0x7FEFFFFFFFFFFFFF, 2]
        bits += [0x0008000000000000]
    x = _from_bits(w, bits)
    c = M.CONSTS[w]
    consts = _from_bits(w, [c.exp_over, c.exp_under, c.sqrt2, c.tanh_small, c.tanh_one, c.inv_ln2])
    plain = np.array([0.0, np.inf, 1.0, 0.5, 2.0, 0.625, 10.0, 22.0, 88.0, 709.0], ft)
    pos = np.concatenate([np.abs(x[6:]), consts, plain])
    with np.errstate(over="ignore"):
        pos = np.concatenate([pos, np.nextafter(pos, ft(np.inf)), np.nextafter(pos, ft(0))])
    return np.concatenate([x[:6], pos, -pos])


def interesting(op: str, w: str, rng) -> np.ndarray:
    """Dense sweeps where the step lists change behaviour."""
    ft, ut = DT[w]
    c = M.CONSTS[w]
    f = M.F32 if w == "f32" else M.F64
    ln2 = float(np.log(2.0))
    over, under = (float(_from_bits(w, [b])[0]) for b in (c.exp_over, c.exp_under))
    # log-uniform magnitudes over the whole range, both signs
    hi_exp = 127 if w == "f32" else 1023
    lo_exp = -149 if w == "f32" else -1074
    mags = np.exp2(rng.uniform(lo_exp, hi_exp, 20_000)).astype(ft)
    logu = np.concatenate([mags, -mags[:5_000]])
    parts = [logu]
    if op == "exp":
        parts += [
            np.linspace(under - 2, over + 2, 40_000).astype(ft),
            _around(w, [over, under, -over, -under], 2_000),
            # scaleB's case boundaries (k = emin, emax, emax + 1) and the subnormal results
            _around(w, [(f.emin - 0.5) * ln2, (f.emax - 0.5) * ln2, (f.emax + 0.5) * ln2], 2_000),
            _around(w, [(f.emin - 63.5) * ln2, (f.emin - 10) * ln2], 500),
            # near-ties of roundeven(x * INV_LN2)
            _around(w, [(j + 0.5) * ln2 for j in range(-40, 40)], 20),
            rng.uniform(-1, 1, 10_000).astype(ft) * ft(1e-3),
        ]
    elif op == "log":
        sub = rng.integers(1, 1 << f.mant, 20_000, dtype=np.uint64)
        parts += [
            _from_bits(w, sub),
            _around(w, [1.0], 10_000),
            _around(w, [float(_from_bits(w, [c.sqrt2])[0]) * 2.0**e for e in (-3, 0, 1, 7)], 300),
            _around(w, [2.0**e for e in (-1, 1, 2, lo_exp + f.mant, hi_exp)], 300),
            rng.uniform(0, 4, 20_000).astype(ft),
        ]
    else:
        one = float(_from_bits(w, [c.tanh_one])[0])
        lim = 25.0 if op == "tanh" else -under + 5
        parts += [
            np.linspace(-lim, lim, 40_000).astype(ft),
            _around(w, [0.625, -0.625, one, -one, under, -under, over, -over], 2_000),
            _around(w, [2.0**-12, 2.0 ** (-f.mant), 2.0 ** (lo_exp + f.mant)], 200),
            rng.uniform(-1, 1, 20_000).astype(ft),
        ]
    return np.concatenate(parts)


def inputs(op: str, w: str) -> np.ndarray:
    ft, ut = DT[w]
    lanes = 16 // ft().itemsize
    rng = np.random.default_rng([OPS.index(op), int(w[1:])])
    rand = rng.integers(0, np.iinfo(ut).max, N_RANDOM, dtype=ut, endpoint=True).view(ft)
    sp = specials(w)
    body = np.concatenate([rand, interesting(op, w, rng), sp])
    rng.shuffle(body)
    # every special at every lane position, the other lanes ordinary values
    planted = np.repeat(rng.standard_normal(len(sp) * lanes).astype(ft)[:, None], lanes, 1)
    planted = planted * rng.uniform(0.5, 2, planted.shape).astype(ft)
    for j in range(lanes):
        planted[j::lanes, j] = sp
    x = np.concatenate([body, planted.ravel()])
    pad = -len(x) % lanes
    return np.concatenate([x, np.zeros(pad, ft)])


def _bits_equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Bitwise equal, or both NaN."""
    ut = DT["f32" if a.dtype == np.float32 else "f64"][1]
    na, nb = np.isnan(a), np.isnan(b)
    return np.where(na | nb, na & nb, a.view(ut) == b.view(ut))


@pytest.mark.parametrize("w", ["f32", "f64"])
@pytest.mark.parametrize("op", OPS)
def test_simd_matches_scalar_and_interpreter(op: str, w: str) -> None:
    x = inputs(op, w)
    assert x.size >= N_RANDOM
    r = runner()
    vec = r.run("v", op, x)
    sca = r.run("s", op, x)
    ref = np.asarray(M.UNARY[op](x))
    ut = DT[w][1]
    for name, got, want in (("vector/scalar", vec, sca), ("scalar/interpreter", sca, ref)):
        ok = _bits_equal(got, want)
        if not ok.all():
            i = np.flatnonzero(~ok)[:5]
            raise AssertionError(
                f"{op} {w} {name}: {int((~ok).sum())} of {x.size} differ, e.g. "
                + ", ".join(
                    f"x={x[j]!r} ({int(x[j : j + 1].view(ut)[0]):#x}): {got[j]!r} vs {want[j]!r}"
                    for j in i
                )
            )


def test_helpers_registered_once() -> None:
    mod = types.SimpleNamespace(helpers={})
    for _ in range(2):
        for op in OPS:
            assert simd_math.vmath(mod, op, F32, "(local.get $v)") == (
                f"(call $v{op}_f32 (local.get $v))"
            )
    assert sorted(mod.helpers) == sorted(f"$v{op}_f32" for op in OPS)
    wasmtime.wat2wasm("(module\n" + "\n".join(mod.helpers.values()) + ")")
