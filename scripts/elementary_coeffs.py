"""Print the constants of docs/semantics.md §6.9 (kera_core/interp/elementary.py).

Run with mpmath installed (`pip install -e .[test]`):

    python scripts/elementary_coeffs.py

Polynomials are Chebyshev fits (mpmath.chebyfit, 200-bit arithmetic) of the smooth
remainders the step lists evaluate in binary64; double-double constants are the value
rounded to binary64 and the rest rounded again. The output is what elementary.py holds,
so a change of these numbers is a change of semantics (every result bit may move).
"""

from __future__ import annotations

import mpmath as mp

mp.mp.prec = 200
TINY = mp.mpf(2) ** -200


def fit(f, a, b, deg: int) -> list[float]:
    poly = mp.chebyfit(f, [a, b], deg + 1)
    return [float(c) for c in reversed(poly)]  # lowest degree first


def dd(v) -> tuple[float, float]:
    hi = float(v)
    return hi, float(v - mp.mpf(hi))


LN2 = mp.log(2)


def exp2_tail(r):
    """(2^r − 1 − c1·r − c2·r² − c3·r³) / r⁴, r ∈ [−1/2, 1/2]."""
    if abs(r) < TINY:
        return LN2**4 / 24
    return (mp.power(2, r) - 1 - LN2 * r - LN2**2 / 2 * r**2 - LN2**3 / 6 * r**3) / r**4


def expm1_tail(r):
    """(e^r − 1 − r − r²/2 − r³/6) / r⁴, r ∈ [−0.35, 0.35]."""
    if abs(r) < TINY:
        return mp.mpf(1) / 24
    return (mp.exp(r) - 1 - r - r**2 / 2 - r**3 / 6) / r**4


def log_tail(z):
    """(atanh(s)/s − 1 − z/3) / z², z = s² ∈ [0, 0.0295] (|s| ≤ 0.1716)."""
    if z < TINY:
        return mp.mpf(1) / 5
    s = mp.sqrt(z)
    return (mp.atanh(s) / s - 1 - z / 3) / z**2


PIO4_SQ = (mp.pi / 4) ** 2 * (1 + mp.mpf(2) ** -40)  # the reduced argument's z = r² range


def sin_tail(z):
    """(sin(s)/s − 1 + z/6 − z²/120 + z³/5040) / z⁴, s = √z, z ∈ [0, (π/4)²]."""
    if z < TINY:
        return mp.mpf(1) / 362880
    s = mp.sqrt(z)
    return (mp.sin(s) / s - 1 + z / 6 - z**2 / 120 + z**3 / 5040) / z**4


def cos_tail(z):
    """(cos(s) − 1 + z/2 − z²/24 + z³/720) / z⁴, s = √z, z ∈ [0, (π/4)²]."""
    if z < TINY:
        return mp.mpf(1) / 40320
    s = mp.sqrt(z)
    return (mp.cos(s) - 1 + z / 2 - z**2 / 24 + z**3 / 720) / z**4


def two_over_pi_words(n: int = 20) -> list[int]:
    """2/π in 64-bit words: word 0 the integer part (0), word j the bits 64(j−1)+1 … 64j."""
    with mp.workprec(64 * n + 128):
        v = 2 / mp.pi
        return [int(mp.floor(v * mp.mpf(2) ** (64 * j))) % (1 << 64) for j in range(n)]


def logp_tail(z):
    """(P(z) − 1/3 − z/5 − z²/7 − z³/9) / z⁴, P(z) = (atanh(s)/s − 1)/z, z = s² ∈ [0, 0.0295]
    (pow's longer logarithm: P(z) = Σ z^k/(2k + 3))."""
    if z < TINY:
        return mp.mpf(1) / 11
    s = mp.sqrt(z)
    return ((mp.atanh(s) / s - 1) / z - mp.mpf(1) / 3 - z / 5 - z**2 / 7 - z**3 / 9) / z**4


ATAN_Z = (mp.mpf(1) / 32) ** 2 * (1 + mp.mpf(2) ** -20)  # atan2's reduced u: z = u² range


def atan_tail(z):
    """(atan(u)/u − 1 + z/3) / z², u = √z, z ∈ [0, (1/32)²]."""
    if z < TINY:
        return mp.mpf(1) / 5
    u = mp.sqrt(z)
    return (mp.atan(u) / u - 1 + z / 3) / z**2


def erf_c(n: int):
    """The n-th coefficient of erf(x)/x = Σ c_n·x^(2n): 2/√π·(−1)^n/(n!·(2n + 1))."""
    return 2 / mp.sqrt(mp.pi) * (-1) ** n / (mp.factorial(n) * (2 * n + 1))


def erf_tail(z):
    """(erf(x)/x − c_0 − … − c_4·z⁴) / z⁵, x = √z, z ∈ [0, 1]."""
    if z < TINY:
        return erf_c(5)
    x = mp.sqrt(z)
    return (mp.erf(x) / x - sum(erf_c(n) * z**n for n in range(5))) / z**5


# erfc's intervals of |x| ∈ [1, 32): (centre, half-width); on each, erfcx(c + w·u) = e^(x²)·
# erfc(x) is a degree-20 polynomial in u ∈ [−1, 1] (fit error below 2^−68 relative)
ERFC_IV = ((1.5, 0.5), (2.5, 0.5), (3.5, 0.5), (5, 1), (7, 1), (10, 2), (14, 2), (20, 4), (28, 4))
ERFC_DEG, ERFC_DD = 20, 6  # the first ERFC_DD coefficients are double-doubles


def erfcx_poly(c, w) -> list:
    """The coefficients of erfcx(c + w·u) in u, lowest degree first (mpmath numbers)."""
    return list(
        reversed(
            mp.chebyfit(
                lambda u: mp.erfc(c + w * u) * mp.exp((c + w * u) ** 2), [-1, 1], ERFC_DEG + 1
            )
        )
    )


def erfc_tables():
    hi, lo = [], []
    for c, w in ERFC_IV:
        co = erfcx_poly(mp.mpf(c), mp.mpf(w))
        hi.append([float(v) for v in co])
        lo.append([dd(v)[1] for v in co[:ERFC_DD]])
    return hi, lo


TABLE = {
    "EXP2_C1": dd(LN2),
    "EXP2_C2": dd(LN2**2 / 2),
    "EXP2_C3": dd(LN2**3 / 6),
    "EXP2_Q": fit(exp2_tail, -0.5, 0.5, 9),
    "EXPM1_C3": dd(mp.mpf(1) / 6),
    "EXPM1_Q": fit(expm1_tail, -0.35, 0.35, 9),
    "LOG_THIRD": dd(mp.mpf(1) / 3),
    "LOG_R": fit(log_tail, 0, 0.0295, 7),
    "INV_LN2": dd(1 / LN2),
    "PIO2": dd(mp.pi / 2),
    "SIN_C1": dd(-mp.mpf(1) / 6),
    "SIN_C2": dd(mp.mpf(1) / 120),
    "SIN_C3": dd(-mp.mpf(1) / 5040),
    "COS_C2": dd(mp.mpf(1) / 24),
    "COS_C3": dd(-mp.mpf(1) / 720),
    "SIN_Q": fit(sin_tail, 0, PIO4_SQ, 5),
    "COS_Q": fit(cos_tail, 0, PIO4_SQ, 5),
    "LOGP_C": [v for k in (3, 5, 7, 9) for v in dd(mp.mpf(1) / k)],
    "LOGP_Q": fit(logp_tail, 0, 0.0295, 7),
    "PI": dd(mp.pi),
    "ATAN_THIRD": dd(-mp.mpf(1) / 3),
    "ATAN_Q": fit(atan_tail, 0, ATAN_Z, 5),
    "ATAN_K": [v for k in range(17) for v in dd(mp.atan(mp.mpf(k) / 16))],
    "ERF_C": [v for n in range(5) for v in dd(erf_c(n))],
    "ERF_Q": fit(erf_tail, 0, 1, 12),
}


if __name__ == "__main__":
    for name, vals in TABLE.items():
        print(f"{name} = ({', '.join(v.hex() for v in vals)})")
    hi, lo = erfc_tables()
    for i, (h, lw) in enumerate(zip(hi, lo, strict=True)):
        print(f"ERFC_HI[{i}] = ({', '.join(v.hex() for v in h)})")
        print(f"ERFC_LO[{i}] = ({', '.join(v.hex() for v in lw)})")
    print(f"TWO_OVER_PI = ({', '.join(f'{w:#018x}' for w in two_over_pi_words())})")
