"""`exp`, `log`, `tanh`, `sigmoid` and `sqrt` as fixed sequences of IEEE operations.

binary32 arguments go to :mod:`kera_core.interp.expolog32` (correctly rounded step lists,
evaluated in binary64); the binary64 step lists are below.

These functions *are* the definitions in docs/semantics.md §6: every line below is one
correctly rounded operation (or an exact bit manipulation), in the order written there,
and a backend reproduces the same sequence. No fma is used, so a target without a fused
multiply-add (WebAssembly) computes them at full speed.

The algorithms follow FreeBSD msun (fdlibm) for exp and log and Cephes for the tanh
polynomial, with their branches for speed removed, so one straight-line sequence plus a
few selects covers every input. The coefficients are given by bit pattern.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from kera_core.interp import expolog32
from kera_core.interp.fp import F32, F64, FloatFormat, canon, fmt_of, scaleb


def _f64(bits: int):
    return F64.const(bits)


def _b64(x: float) -> int:
    return int(np.array(x, dtype=np.float64).view(np.uint64))


@dataclass(frozen=True)
class MathConsts:
    """The constants of the binary64 step lists, as bit patterns (docs/semantics.md §6.6)."""

    inv_ln2: int
    ln2_hi: int
    ln2_lo: int
    exp_p: tuple[int, ...]  # P1..Pn of c = r - t*(P1 + t*(P2 + ...))
    exp_over: int  # x > this -> +inf
    exp_under: int  # x < this -> +0
    log_lg_odd: tuple[int, ...]  # Lg1, Lg3, Lg5, Lg7 (t2 = z*(Lg1 + w*(Lg3 + ...)))
    log_lg_even: tuple[int, ...]  # Lg2, Lg4, Lg6 (t1 = w*(Lg2 + w*(Lg4 + ...)))
    sqrt2: int  # m >= this is halved
    sub_scale: int  # subnormal inputs of log are multiplied by 2**sub_scale
    tanh_small: int  # |x| < this uses the odd polynomial/rational
    tanh_one: int  # |x| >= this gives +-1
    tanh_p: tuple[int, ...]  # P of P/Q, highest first
    tanh_q: tuple[int, ...]  # Q of P/Q without the leading 1


C64 = MathConsts(
    inv_ln2=0x3FF71547652B82FE,
    ln2_hi=0x3FE62E42FEE00000,
    ln2_lo=0x3DEA39EF35793C76,
    exp_p=(
        0x3FC555555555553E,
        0xBF66C16C16BEBD93,
        0x3F11566AAF25DE2C,
        0xBEBBBD41C5D26BF1,
        0x3E66376972BEA4D0,
    ),
    exp_over=0x40862E42FEFA39EF,
    exp_under=0xC0874910D52D3051,
    log_lg_odd=(0x3FE5555555555593, 0x3FD2492494229359, 0x3FC7466496CB03DE, 0x3FC2F112DF3E5244),
    log_lg_even=(0x3FD999999997FA04, 0x3FCC71C51D8E78AF, 0x3FC39A09D078C69F),
    sqrt2=0x3FF6A09E667F3BCD,
    sub_scale=54,
    tanh_small=_b64(0.625),
    tanh_one=_b64(22.0),
    tanh_p=tuple(
        _b64(v)
        for v in (-9.64399179425052238628e-1, -9.92877231001918586564e1, -1.61468768441708447952e3)
    ),
    tanh_q=tuple(
        _b64(v)
        for v in (1.12811678491632931402e2, 2.23548839060100448583e3, 4.84406305325125486048e3)
    ),
)

CONSTS = {"f64": C64}


def _quiet(fn):
    """Run ``fn`` with numpy's floating-point warnings off (overflow to inf is intended)."""

    @functools.wraps(fn)
    def wrapper(x):
        with np.errstate(all="ignore"):
            return fn(x)

    return wrapper


def _setup(x):
    x = np.asarray(x)
    f = fmt_of(x)
    c = CONSTS[f.name]
    return x, f, c, f.const


def _horner(t, coeffs, k):
    """coeffs[0] + t*(coeffs[1] + t*(... + t*coeffs[-1])): a multiply then an add per step."""
    u = k(coeffs[-1])
    for b in reversed(coeffs[:-1]):
        u = k(b) + t * u
    return u


# --- exp ---------------------------------------------------------------------------


@_quiet
def exp(x):
    """e**x (docs/semantics.md §6.2)."""
    if fmt_of(np.asarray(x)) is F32:
        return expolog32.unary("exp", x)
    x, f, c, k = _setup(x)
    over = x > k(c.exp_over)
    under = x < k(c.exp_under)
    nan = np.isnan(x)
    special = over | under | nan
    xs = _masked(x, special, 0)
    kf = np.rint(xs * k(c.inv_ln2))  # round half to even; exact
    hi = xs - kf * k(c.ln2_hi)
    lo = kf * k(c.ln2_lo)
    r = hi - lo
    t = r * r
    cc = r - t * _horner(t, c.exp_p, k)
    one, two = f.dtype(1), f.dtype(2)
    y = one - ((lo - (r * cc) / (two - cc)) - hi)
    out = np.asarray(scaleb(y, kf.astype(f.idtype), f))
    if special.any():
        out = out.copy() if out.ndim == 0 else out
        np.copyto(out, f.dtype(np.inf), where=over)
        np.copyto(out, f.dtype(0), where=under)
        np.copyto(out, f.nan, where=nan)
    return out


def _masked(x, mask, value):
    """x with the elements under ``mask`` replaced by ``value`` (a fresh array)."""
    out = np.array(x, copy=True)
    np.copyto(out, out.dtype.type(value), where=mask)
    return out


# --- log ---------------------------------------------------------------------------


@_quiet
def log(x):
    """Natural logarithm (docs/semantics.md §6.3)."""
    if fmt_of(np.asarray(x)) is F32:
        return expolog32.unary("log", x)
    x, f, c, k = _setup(x)
    nan = np.isnan(x) | (x < 0)
    zero = x == 0
    inf = x == f.dtype(np.inf)
    special = nan | zero | inf
    xs = _masked(x, special, 1)
    smallest_normal = f.const(1 << f.mant)
    sub = xs < smallest_normal
    xs = np.where(sub, xs * f.const((c.sub_scale + f.bias) << f.mant), xs)
    ix = xs.view(f.udtype)
    e = (ix >> f.udtype(f.mant)).astype(np.int64) - f.bias - np.where(sub, c.sub_scale, 0)
    mbits = (ix & f.udtype((1 << f.mant) - 1)) | f.udtype(f.bias << f.mant)
    m = mbits.view(f.dtype)  # in [1, 2)
    big = m >= k(c.sqrt2)
    m = np.where(big, m * f.dtype(0.5), m)
    e = e + big
    fx = m - f.dtype(1)
    s = fx / (f.dtype(2) + fx)
    dk = e.astype(f.dtype)  # exact
    z = s * s
    w = z * z
    t1 = w * _horner(w, c.log_lg_even, k)
    t2 = z * _horner(w, c.log_lg_odd, k)
    rr = t2 + t1
    hfsq = (f.dtype(0.5) * fx) * fx
    out = dk * k(c.ln2_hi) - ((hfsq - (s * (hfsq + rr) + dk * k(c.ln2_lo))) - fx)
    if special.any():
        out = np.array(out, copy=True)
        np.copyto(out, f.dtype(-np.inf), where=zero)
        np.copyto(out, f.dtype(np.inf), where=inf)
        np.copyto(out, f.nan, where=nan)
    return out


# --- tanh --------------------------------------------------------------------------


@_quiet
def tanh(x):
    """Hyperbolic tangent (docs/semantics.md §6.4)."""
    if fmt_of(np.asarray(x)) is F32:
        return expolog32.unary("tanh", x)
    x, f, c, k = _setup(x)
    a = np.abs(x)
    one, two = f.dtype(1), f.dtype(2)
    # small |x|: a rational function of x
    s = x * x
    num = _horner_high_first(s, c.tanh_p, k)
    den = _horner_high_first(s, (_b64(1.0), *c.tanh_q), k)
    small = x + (x * s) * (num / den)
    # larger |x|: 1 - 2 / (exp(2|x|) + 1), with the sign of x
    e = exp(np.where(a < k(c.tanh_one), a + a, f.dtype(0)))
    large = one - two / (e + one)
    large = np.where(x < 0, -large, large)
    out = np.where(a < k(c.tanh_small), small, large)
    out = np.where(a >= k(c.tanh_one), np.where(x < 0, -one, one), out)
    out = np.where(x == 0, x, out)  # keeps the sign of zero
    return canon(np.where(np.isnan(x), f.nan, out))


def _horner_high_first(t, coeffs, k):
    """((c0*t + c1)*t + c2)... : Cephes' polevl order, one multiply then one add per step."""
    u = k(coeffs[0])
    for b in coeffs[1:]:
        u = u * t + k(b)
    return u


# --- sigmoid -----------------------------------------------------------------------


@_quiet
def sigmoid(x):
    """1 / (1 + e**-x), computed without overflow (docs/semantics.md §6.5)."""
    if fmt_of(np.asarray(x)) is F32:
        return expolog32.unary("sigmoid", x)
    x, f, c, k = _setup(x)
    e = exp(-np.abs(x))
    d = f.dtype(1) + e
    num = np.where(x >= 0, f.dtype(1), e)
    return canon(num / d)


# --- sqrt --------------------------------------------------------------------------


@_quiet
def sqrt(x):
    """IEEE-754 squareRoot: correctly rounded; sqrt(-0) = -0; x < 0 gives NaN."""
    x = np.asarray(x)
    return canon(np.sqrt(x))


UNARY = {"exp": exp, "log": log, "tanh": tanh, "sigmoid": sigmoid, "sqrt": sqrt}


def constants_table(f: FloatFormat = F64) -> list[tuple[str, str, str]]:
    """(name, hex bits, decimal) of the binary64 constants for docs/semantics.md, straight
    from the code."""
    c = CONSTS[f.name]
    width = 16
    rows: list[tuple[str, str, str]] = []

    def add(name: str, bits: int) -> None:
        rows.append((name, f"0x{bits:0{width}X}", repr(float(f.const(bits)))))

    add("INV_LN2", c.inv_ln2)
    add("LN2_HI", c.ln2_hi)
    add("LN2_LO", c.ln2_lo)
    for i, b in enumerate(c.exp_p, 1):
        add(f"P{i}", b)
    add("EXP_OVER", c.exp_over)
    add("EXP_UNDER", c.exp_under)
    lg = {}
    for i, b in enumerate(c.log_lg_odd):
        lg[2 * i + 1] = b
    for i, b in enumerate(c.log_lg_even):
        lg[2 * i + 2] = b
    for i in sorted(lg):
        add(f"Lg{i}", lg[i])
    add("SQRT2", c.sqrt2)
    add("TANH_SMALL", c.tanh_small)
    add("TANH_ONE", c.tanh_one)
    for i, b in enumerate(c.tanh_p):
        add(f"TP{i}", b)
    for i, b in enumerate(c.tanh_q):
        add(f"TQ{i}", b)
    return rows


__all__ = ["UNARY", "exp", "log", "sigmoid", "sqrt", "tanh", "F32", "F64"]
