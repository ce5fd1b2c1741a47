"""Correctly rounded references for tests/test_elementary.py (docs/semantics.md §6.9).

binary32: numpy's binary64 function (for `erf`, `erfc`, which numpy lacks: the C library's,
through Python's `math`), rounded to binary32, is the correctly rounded result unless its
binary64 value lies within ``NEAR`` binary64 ulps of a binary32 rounding boundary (a
midpoint, or the overflow threshold): numpy documents its binary64 functions within 4 ulps
(SIMD/SVML) and glibc's within 1–2, so outside that band the rounding cannot change.
Those few inputs — and every input where the step list disagrees with the rounded numpy
value — are decided with mpmath at 256 bits, rounded to binary32 exactly (ties to even).
binary64: mpmath at 256 bits; the error is measured in ulps of the exact value. For the
large binary64 samples of the accuracy tables (scripts/ulp_table.py), :func:`gm_reference`:
MPFR through gmpy2, correctly rounded at ``GM_PREC`` bits (MPFR rounds every function
correctly for every argument — the trigonometric ones reduce huge arguments exactly —, so
no precision has to grow with the exponent as mpmath's must), 5–70 times faster than
mpmath; tests/test_accuracy_reference.py checks it against mpmath.
"""

from __future__ import annotations

import math

import numpy as np

from kera_core.interp import elementary as E
from kera_core.interp import expolog32, fp

NEAR = 16  # binary64 ulps around each binary32 rounding boundary that mpmath decides

NP = {
    "exp2": np.exp2,
    "log2": np.log2,
    "expm1": np.expm1,
    "log1p": np.log1p,
    "hypot": np.hypot,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "atan2": np.arctan2,
    # numpy has no erf: the C library's, through Python's math module
    "erf": lambda x: np.frompyfunc(math.erf, 1, 1)(x).astype(np.float64),
    "erfc": lambda x: np.frompyfunc(math.erfc, 1, 1)(x).astype(np.float64),
    "pow": np.power,
}
# §6.2–§6.5's binary32 functions (kera_core/interp/expolog32.py)
CR32 = {
    "exp": np.exp,
    "log": np.log,
    "tanh": np.tanh,
    "sigmoid": lambda x: np.where(x >= 0, 1.0 / (1.0 + np.exp(-x)), np.exp(x) / (1.0 + np.exp(x))),
}
NP.update(CR32)


def mp_value(name: str, *args: float):
    """f(args) in mpmath (the exact value to 256 bits), IEEE special values included."""
    import mpmath as mp

    mp.mp.prec = 256
    if name in ("sin", "cos", "tan"):
        # the exact argument reduction of a binary64 up to 2^1024 needs ~1100 more bits of π
        x = mp.mpf(args[0])
        if mp.isnan(x) or mp.isinf(x):
            return mp.nan
        _, e = mp.frexp(x) if x != 0 else (0, 0)
        with mp.workprec(256 + max(e, 0) + 64):
            v = getattr(mp, name)(x)
        return +v
    a = [mp.mpf(v) for v in args]
    if name == "pow":
        return _mp_pow(args)
    if any(mp.isnan(v) for v in a) and name != "hypot":
        return mp.nan
    x = a[0]
    if name == "exp2":
        return mp.power(2, x)
    if name == "expm1":
        return mp.mpf(-1) if x == -mp.inf else mp.expm1(x)
    if name == "log2":
        if x < 0:
            return mp.nan
        return -mp.inf if x == 0 else mp.log(x, 2)
    if name == "log1p":
        if x < -1:
            return mp.nan
        return -mp.inf if x == -1 else mp.log1p(x)
    if name == "hypot":
        if any(mp.isinf(v) for v in a):
            return mp.inf
        if any(mp.isnan(v) for v in a):
            return mp.nan
        return mp.sqrt(a[0] ** 2 + a[1] ** 2)
    if name == "atan2":
        return _mp_atan2(args)
    if name in ("erf", "erfc") and abs(x) > 40:  # erfc(|x|) < 2^−2300 (mpmath overflows)
        far = mp.mpf(2) ** -3000
        if name == "erf":
            return mp.sign(x) * (1 - far)
        return far if x > 0 else 2 - far
    if name == "sqrt":
        return mp.nan if x < 0 else mp.sqrt(x)
    if name == "erf":
        return mp.erf(x)
    if name == "erfc":
        return mp.erfc(x)
    if name in CR32:
        return _mp_cr32(name, x)
    raise KeyError(name)


def _mp_atan2(args):
    """atan2(y, x) exactly; zeros and infinities as C99 F.9.1.4 says (a zero result is
    unsigned here: ulp_error does not look at the sign of zero)."""
    import math

    import mpmath as mp

    y, x = (mp.mpf(v) for v in args)
    sy = math.copysign(1.0, args[0])
    neg_x = math.copysign(1.0, args[1]) < 0
    if y == 0:
        r = mp.pi if neg_x else mp.mpf(0)
    elif mp.isinf(y) and mp.isinf(x):
        r = 3 * mp.pi / 4 if neg_x else mp.pi / 4
    elif mp.isinf(y) or x == 0:
        r = mp.pi / 2
    elif mp.isinf(x):
        r = mp.pi if neg_x else mp.mpf(0)
    else:
        return mp.atan2(y, x)
    return sy * r


def _mp_pow(args):
    """x^y exactly; NaNs, zeros and infinities from the C library's pow through numpy (C99
    F.9.4.4: those results are exact), negative x: ±|x|^y for an integer y, else NaN."""
    import mpmath as mp

    x, y = (mp.mpf(v) for v in args)
    if not (mp.isfinite(x) and mp.isfinite(y)) or x == 0 or y == 0:
        with np.errstate(all="ignore"):
            return mp.mpf(float(np.power(np.float64(args[0]), np.float64(args[1]))))
    if x < 0:
        if y != mp.floor(y):
            return mp.nan
        v = mp.power(-x, y)
        return -v if int(y) % 2 else v
    return mp.power(x, y)


def _mp_cr32(name: str, x):
    import mpmath as mp

    if name == "exp":
        return mp.mpf(0) if x == -mp.inf else mp.exp(x)
    if name == "log":
        if x < 0:
            return mp.nan
        return -mp.inf if x == 0 else mp.log(x)
    if mp.isinf(x):
        return mp.sign(x) if name == "tanh" else mp.mpf(int(x > 0))
    return mp.tanh(x) if name == "tanh" else 1 / (1 + mp.exp(-x))


def round_mp(v, t: str) -> float:
    """The mpmath value v rounded to nearest-even in format t (a Python float, exact)."""
    import mpmath as mp

    mant, emin, emax = (23, -126, 127) if t == "f32" else (52, -1022, 1023)
    if mp.isnan(v):
        return float("nan")
    if mp.isinf(v) or v == 0:
        return float(v)
    s = -1 if v < 0 else 1
    a = abs(v)
    _, e = mp.frexp(a)  # a = m·2^e, m ∈ [1/2, 1)
    q = max(e - 1, emin) - mant
    n = a * mp.mpf(2) ** -q
    fl = mp.floor(n)
    frac = n - fl
    if frac > 0.5 or (frac == 0.5 and int(fl) % 2 == 1):
        fl += 1
    r = fl * mp.mpf(2) ** q
    if r >= mp.mpf(2) ** (emax + 1):
        return s * float("inf")
    return s * float(r)


def ulp_error(got: float, v, t: str) -> float:
    """|got − v| in ulps of v's binade (subnormals: the smallest spacing)."""
    import mpmath as mp

    mant, emin = (23, -126) if t == "f32" else (52, -1022)
    if mp.isnan(v):
        return 0.0 if got != got else float("inf")
    if mp.isinf(v) or abs(round_mp(v, t)) == float("inf"):  # the correct result overflows
        return 0.0 if got == round_mp(v, t) else float("inf")
    if got != got or abs(got) == float("inf"):
        return float("inf")
    _, e = mp.frexp(abs(v)) if v != 0 else (0, emin + 1)
    ulp = mp.mpf(2) ** (max(e - 1, emin) - mant)
    return float(abs(mp.mpf(got) - v) / ulp)


GM_PREC = 128  # bits of gm_reference's values; an input near a midpoint is redone at 1024
_NEAR_MIDPOINT = 0.5 - 2.0**-60  # |v − w| in ulps beyond which 128 bits may not decide w


def _gm_functions() -> dict:
    """The binary64 functions of the tables in MPFR (C99 Annex F's special values: MPFR
    follows it for atan2, hypot and pow)."""
    import gmpy2

    def sigmoid(x):
        return 1 / (1 + gmpy2.exp(-gmpy2.mpfr(x)))

    def pow_(x, y):
        return gmpy2.mpfr(x) ** y

    names = ("exp", "log", "tanh", "sqrt", "exp2", "log2", "expm1", "log1p", "sin", "cos")
    fns = {n: getattr(gmpy2, n) for n in (*names, "tan", "erf", "erfc", "hypot", "atan2")}
    return {**fns, "sigmoid": sigmoid, "pow": pow_}


def gm_reference(name: str, got: np.ndarray, a: np.ndarray, b: np.ndarray | None = None):
    """For binary64 results ``got`` of ``name`` on ``a`` (and ``b``): (err, want) — each
    result's error in ulps of the exact value (as :func:`ulp_error`: 0 or inf where the
    exact value is NaN, zero or rounds to ±inf), and the correctly rounded result."""
    import gmpy2

    f = _gm_functions()[name]
    n = got.size
    err = np.full(n, np.nan)
    want = np.empty(n)
    gl, al = got.tolist(), a.tolist()
    bl = b.tolist() if b is not None else None
    inf = float("inf")
    get_exp, mul_2exp, is_finite = gmpy2.get_exp, gmpy2.mul_2exp, gmpy2.is_finite

    def at(i: int, prec: int):
        with gmpy2.context(gmpy2.get_context(), precision=prec):
            return f(al[i]) if bl is None else f(al[i], bl[i])

    with gmpy2.context(gmpy2.get_context(), precision=GM_PREC):
        for i in range(n):
            v = f(al[i]) if bl is None else f(al[i], bl[i])
            w = float(v)  # MPFR: rounded to nearest-even binary64, subnormals and overflow
            if is_finite(v) and v != 0 and abs(w) != inf:
                s = 52 - max(get_exp(v) - 1, -1022)  # v·2^s: ulp(v) = 1
                g = gl[i]
                d = float(mul_2exp(v - g, s))
                dw = d if g == w else float(mul_2exp(v - w, s))
                if abs(dw) > _NEAR_MIDPOINT:  # decide at 1024 bits
                    v = at(i, 1024)
                    w = float(v)
                    with gmpy2.context(gmpy2.get_context(), precision=1024):
                        d = float(mul_2exp(v - g, s))
                err[i] = abs(d)
            want[i] = w
    special = np.isnan(err)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    err[special] = np.where(same[special], 0.0, inf)
    return err, want


def _near_boundary32(y: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Where the binary64 value y is within NEAR binary64 ulps of a binary32 rounding boundary
    (r = y rounded to binary32).

    Where |y| is in binary32's normal range [2^−126, 2^127) the boundaries are the midpoints,
    whose low 29 fraction bits (below binary32's 23) are 2^28 in every binade: the distance
    in binary64 ulps is that of y's low 29 bits from 2^28 (a binade's ends are binary32
    values, 2^28 ulps from any midpoint). Elsewhere (subnormal results, the overflow
    threshold, inf, NaN) :func:`_near_boundary32_any` measures it."""
    a = np.abs(y)
    with np.errstate(invalid="ignore"):
        fast = (a >= 2.0**-126) & (a < 2.0**127)
    out = np.zeros(y.shape, bool)
    low = (y[fast].view(np.uint64) & np.uint64((1 << 29) - 1)).astype(np.int64)
    out[fast] = np.abs(low - (1 << 28)) <= NEAR
    rest = ~fast
    if rest.any():
        out[rest] = _near_boundary32_any(y[rest], r[rest])
    return out


def _near_boundary32_any(y: np.ndarray, r: np.ndarray) -> np.ndarray:
    """:func:`_near_boundary32` for any y: the distance to the midpoints on either side of r."""
    big = np.float64(2.0**128)
    with np.errstate(all="ignore"):
        rd = np.where(np.isinf(r), np.sign(y) * big, r.astype(np.float64))
        up = np.nextafter(r, np.float32(np.inf)).astype(np.float64)
        dn = np.nextafter(r, np.float32(-np.inf)).astype(np.float64)
        up = np.where(np.isinf(up), big, up)
        dn = np.where(np.isinf(dn), -big, dn)
        dist = np.minimum(np.abs(y - (rd + up) / 2), np.abs(y - (rd + dn) / 2))
        return np.isfinite(y) & (dist <= NEAR * np.spacing(np.abs(y)))


def check_f32(name: str, x: np.ndarray, y: np.ndarray | None = None, got=None):
    """Run the interpreter's step list on binary32 x (and y) — or take its results ``got``
    from elsewhere (scripts/cr32_sweep.py: a compiled kernel) — and compare with the
    correctly rounded result. Returns (failures, decided): failures a list of (x, y, got,
    want) and decided the number of inputs mpmath decided."""
    with np.errstate(all="ignore"):
        x64 = x.astype(np.float64)
        if y is None:
            if got is None:
                got = expolog32.unary(name, x) if name in CR32 else E.unary(name, x)
            ref = NP[name](x64)
        else:
            got = E.binary(name, x, y)
            ref = NP[name](x64, y.astype(np.float64))
        r = fp.canon(ref.astype(np.float32))
    gb, rb = got.view(np.uint32), r.view(np.uint32)
    todo = np.flatnonzero((gb != rb) | _near_boundary32(ref, r))
    failures = []
    for i in todo:
        args = (float(x[i]),) if y is None else (float(x[i]), float(y[i]))
        want = np.float32(round_mp(mp_value(name, *args), "f32"))
        want = fp.canon(np.asarray(want))
        if got[i].view(np.uint32) != want.view(np.uint32):
            failures.append((*args, float(got[i]), float(want)))
    return failures, len(todo)


def sweep(name: str, lo: int = 0, hi: int = 1 << 32, chunk: int = 1 << 22, log=None):
    """check_f32 over the binary32 bit patterns [lo, hi)."""
    fails, decided = [], 0
    for start in range(lo, hi, chunk):
        xb = np.arange(start, min(start + chunk, hi), dtype=np.uint64).astype(np.uint32)
        f, d = check_f32(name, xb.view(np.float32))
        fails += f
        decided += d
        if log is not None:
            log(f"{name} {start:#010x} decided {decided} failures {len(fails)} {f[:3]}")
    return fails, decided


if __name__ == "__main__":
    import sys
    import time

    for name in sys.argv[1:]:
        t0 = time.time()
        fails, decided = sweep(name, log=lambda s: print(s, flush=True))
        print(
            f"DONE {name}: failures {len(fails)} {fails[:20]} decided {decided} "
            f"in {time.time() - t0:.0f} s",
            flush=True,
        )
