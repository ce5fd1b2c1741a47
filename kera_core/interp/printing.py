"""What `print` writes (docs/semantics.md §9): the value format (sema decodes text escapes)."""

from __future__ import annotations

import numpy as np

from kera_core.ir.types import Struct, strip_ref


def format_float(x) -> str:
    """Shortest digits that read back as the same value of x's own format, Python-repr style.

    Positional when the decimal exponent E of the first digit is in [-4, 16), with at least
    one digit after the point (`1.0`, `0.0001`, `123.25`); otherwise `d.ddde±XX` with at
    least two exponent digits (`1e+16`, `1.5e-05`). NaN is `NaN`; infinities `inf`, `-inf`.
    """
    if np.isnan(x):
        return "NaN"
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    sci = np.format_float_scientific(x, unique=True, trim="-", exp_digits=1)
    mant, exp = sci.split("e")
    sign = "-" if mant.startswith("-") else ""
    digits = mant.lstrip("-").replace(".", "")
    e = int(exp)
    if digits == "0":
        return sign + "0.0"
    if -4 <= e < 16:
        if e >= 0:
            whole = digits[: e + 1].ljust(e + 1, "0")
            frac = digits[e + 1 :] or "0"
        else:
            whole = "0"
            frac = "0" * (-e - 1) + digits
        return f"{sign}{whole}.{frac}"
    m = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{m}e{'-' if e < 0 else '+'}{abs(e):02d}"


def format_scalar(v) -> str:
    if isinstance(v, np.bool_ | bool):
        return "true" if v else "false"
    if isinstance(v, np.floating):
        return format_float(v)
    return str(int(v))


def format_value(v, t=None) -> str:
    """A scalar as above; a tensor as nested `[a, b, …]` in row-major order; a struct as
    `{a, b, …}` of its fields; a tuple (``t`` says which structs are) as `(a, b, …)`, a
    one-element tuple as `(a,)`."""
    if isinstance(v, np.ndarray):
        if v.ndim == 0:
            return format_scalar(v[()])
        return "[" + ", ".join(format_value(x) for x in v) + "]"
    if isinstance(v, tuple):
        t = strip_ref(t) if t is not None else None
        fields = [ft for _, ft in t.fields] if isinstance(t, Struct) else [None] * len(v)
        inner = ", ".join(format_value(x, ft) for x, ft in zip(v, fields, strict=True))
        if isinstance(t, Struct) and t.is_tuple:
            return "(" + inner + ("," if len(v) == 1 else "") + ")"
        return "{" + inner + "}"
    return format_scalar(v)
