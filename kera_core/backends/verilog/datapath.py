"""The datapath of a kernel in hardware: how each loop-program primitive is spelled in
Verilog-2005, exactly as :mod:`kera_core.loops.prims` defines it.

Two kinds of primitive:

* **integer, bool and bit primitives** (and the float ones that only move bits: ``neg``,
  ``abs``, ``canon``, ``select``, ``bitcast``) are combinational expressions over the
  operands' registers, written in one controller state (:func:`int_expr`);
* **float arithmetic, comparisons and conversions** run on an instance of one of Kera's own
  float units (``units/*.v``, :mod:`float_units`): :func:`float_unit` says which unit, what
  drives its operand ports and how its result ports become the destination.

Values are unsigned bit vectors of the type's width (``bool``: 1 bit); signedness is applied
per operation with ``$signed``, never stored.
"""

from __future__ import annotations

from dataclasses import dataclass

from kera_core.loops.ir import BITS, Imm, is_float, is_signed

from .float_units import UNITS


class NotSupported(Exception):
    """The loop program uses something the Verilog backend does not build (yet)."""


def width(t: str) -> int:
    return 1 if t == "bool" else BITS[t]


def lit(t: str, bits: int) -> str:
    w = width(t)
    return f"{w}'h{bits & ((1 << w) - 1):x}"


def cnan(t: str) -> str:
    return "32'h7fc00000" if t == "f32" else "64'h7ff8000000000000"


def _mw(t: str) -> int:
    return 23 if t == "f32" else 52


def is_nan(t: str, a: str) -> str:
    w, mw = width(t), _mw(t)
    return f"((&{a}[{w - 2}:{mw}]) && (|{a}[{mw - 1}:0]))"


def sgn(t: str, a: str) -> str:
    return f"$signed({a})" if is_signed(t) else a


# --- integer (and bit-moving float) primitives ---------------------------------------------


@dataclass
class Helpers:
    """The Verilog functions the expressions call (signed division and remainder)."""

    needed: set[tuple[str, int]]

    def call(self, kind: str, w: int, a: str, b: str) -> str:
        self.needed.add((kind, w))
        return f"k_{kind}{w}({a}, {b})"

    def text(self) -> str:
        out = []
        for kind, w in sorted(self.needed):
            if kind == "sdiv":
                res = "(a[W] ^ b[W]) ? -q : q".replace("W", str(w - 1))
                core = "q = (ub == 0) ? 0 : ua / ub"
            else:  # srem: the sign of the dividend; MIN % -1 = 0 falls out of |MIN| % 1
                res = f"a[{w - 1}] ? -q : q"
                core = "q = (ub == 0) ? 0 : ua % ub"
            out.append(
                f"  function [{w - 1}:0] k_{kind}{w};\n"
                f"    input [{w - 1}:0] a;\n"
                f"    input [{w - 1}:0] b;\n"
                f"    reg [{w - 1}:0] ua, ub, q;\n"
                f"    begin\n"
                f"      ua = a[{w - 1}] ? -a : a;\n"
                f"      ub = b[{w - 1}] ? -b : b;\n"
                f"      {core};\n"
                f"      k_{kind}{w} = {res};\n"
                f"    end\n"
                f"  endfunction\n"
            )
        return "".join(out)


INT_OPS = {
    "add",
    "sub",
    "mul",
    "div",
    "rem",
    "neg",
    "abs",
    "minimum",
    "maximum",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "select",
    "and",
    "or",
    "xor",
    "not",
    "shl",
    "shr",
    "bitcast",
    "convert",
}
FLOAT_COMB = {"neg", "abs", "canon", "select", "bitcast"}


def is_combinational(op: str, dst_t: str, arg_ts: tuple[str, ...]) -> bool:
    """Whether the primitive is a combinational expression (else it runs on a float unit)."""
    if op in ("select", "bitcast"):
        return True
    if op == "convert":
        return not (is_float(dst_t) or is_float(arg_ts[0])) or dst_t == arg_ts[0]
    if any(is_float(t) for t in arg_ts):
        return op in FLOAT_COMB
    return op in INT_OPS


def int_expr(
    op: str, dst_t: str, arg_ts: tuple[str, ...], a: list[str], h: Helpers, consts: list
) -> str:
    """The Verilog expression of a combinational primitive over operand expressions ``a``
    (``consts[i]``: the bits of operand ``i`` where it is a constant, else None). Unary
    primitives of a constant are folded by the caller, so only registers are part-selected."""
    t = arg_ts[0] if arg_ts else dst_t
    w = width(t)
    if op == "select":
        return f"({a[0]} ? {a[1]} : {a[2]})"
    if op == "bitcast":
        if width(dst_t) != w:
            raise NotSupported(f"bitcast {t} -> {dst_t}")
        return a[0]
    if is_float(t):
        x = a[0]
        if op == "convert":  # the same format
            return f"({is_nan(t, x)} ? {cnan(t)} : {x})"
        if op == "canon":
            return f"({is_nan(t, x)} ? {cnan(t)} : {x})"
        if op == "neg":
            return f"({is_nan(t, x)} ? {cnan(t)} : {{~{x}[{w - 1}], {x}[{w - 2}:0]}})"
        if op == "abs":
            return f"({is_nan(t, x)} ? {cnan(t)} : {{1'b0, {x}[{w - 2}:0]}})"
        raise NotSupported(f"float `{op}` as an expression")
    if op in ("add", "sub", "mul", "and", "or", "xor"):
        sym = {"add": "+", "sub": "-", "mul": "*", "and": "&", "or": "|", "xor": "^"}[op]
        return f"({a[0]} {sym} {a[1]})"
    if op == "not":
        return f"(~{a[0]})"
    if op == "neg":
        return f"(-{a[0]})"
    if op == "abs":
        return f"({a[0]}[{w - 1}] ? -{a[0]} : {a[0]})" if is_signed(t) else a[0]
    if op in ("div", "rem"):
        if is_signed(t):
            return h.call("sdiv" if op == "div" else "srem", w, a[0], a[1])
        sym = "/" if op == "div" else "%"
        return f"(({a[1]} == 0) ? {w}'h0 : {a[0]} {sym} {a[1]})"
    if op in ("eq", "ne"):
        return f"({a[0]} {'==' if op == 'eq' else '!='} {a[1]})"
    if op in ("lt", "le", "gt", "ge"):
        sym = {"lt": "<", "le": "<=", "gt": ">", "ge": ">="}[op]
        return f"({sgn(t, a[0])} {sym} {sgn(t, a[1])})"
    if op in ("minimum", "maximum"):
        sym = "<" if op == "minimum" else ">"
        return f"(({sgn(t, a[0])} {sym} {sgn(t, a[1])}) ? {a[0]} : {a[1]})"
    if op in ("shl", "shr"):
        k = (w - 1).bit_length()
        cw = width(arg_ts[1])
        if consts[1] is not None:
            cnt = str(consts[1] & (w - 1))
        else:
            cnt = f"{a[1]}[{min(k, cw) - 1}:0]"
        if op == "shl":
            return f"({a[0]} << {cnt})"
        return f"($signed({a[0]}) >>> {cnt})" if is_signed(t) else f"({a[0]} >> {cnt})"
    if op == "convert":
        return convert_int(t, dst_t, a[0])
    raise NotSupported(f"integer `{op}`")


def convert_int(src: str, dst: str, x: str) -> str:
    """Integer/bool → integer/bool: wrap, sign- or zero-extend; to bool: ``x != 0``."""
    if dst == "bool":
        return f"({x} != 0)"
    ws, wd = width(src), width(dst)
    if wd <= ws:
        return f"{x}[{wd - 1}:0]" if wd < ws else x
    fill = f"{x}[{ws - 1}]" if is_signed(src) and src != "bool" else "1'b0"
    return f"{{{{{wd - ws}{{{fill}}}}}, {x}}}"


# --- float units ---------------------------------------------------------------------------


@dataclass(frozen=True)
class UnitUse:
    """One use of a float unit: which registry unit, its operand ports (name → expression),
    and the destination's value as an expression over the unit's output ports (``{y}``,
    ``{eq}``, ``{lt}``, ``{le}``, ``{un}`` are replaced by the instance's wires)."""

    unit: str
    ports: dict[str, str]
    result: str

    @property
    def latency(self) -> int:
        return UNITS[self.unit].latency


def float_unit(op: str, dst_t: str, arg_ts: tuple[str, ...], a: list[str]) -> UnitUse:
    t = arg_ts[0]
    if op in ("add", "sub"):
        return UnitUse(
            f"{t}_add", {"a": a[0], "b": a[1], "sub": "1'b1" if op == "sub" else "1'b0"}, "{y}"
        )
    if op in ("mul", "div"):
        return UnitUse(f"{t}_{op}", {"a": a[0], "b": a[1]}, "{y}")
    if op == "sqrt":
        return UnitUse(f"{t}_sqrt", {"a": a[0]}, "{y}")
    if op == "fma":
        return UnitUse(f"{t}_fma", {"a": a[0], "b": a[1], "c": a[2]}, "{y}")
    if op in ("minimum", "maximum"):
        return UnitUse(
            f"{t}_minmax",
            {"a": a[0], "b": a[1], "is_max": "1'b1" if op == "maximum" else "1'b0"},
            "{y}",
        )
    if op in ("eq", "ne", "lt", "le", "gt", "ge"):
        x, y = (a[1], a[0]) if op in ("gt", "ge") else (a[0], a[1])
        res = {"eq": "{eq}", "ne": "(~{eq})", "lt": "{lt}", "le": "{le}"}.get(op)
        res = res or ("{lt}" if op == "gt" else "{le}")
        return UnitUse(f"{t}_cmp", {"a": x, "b": y}, res)
    if op == "convert":
        return _convert(t, dst_t, a[0])
    raise NotSupported(f"float `{op}` has no float unit yet")


def _convert(src: str, dst: str, x: str) -> UnitUse:
    if is_float(src) and is_float(dst):
        return UnitUse(f"{src}_to_{dst}", {"a": x}, "{y}")
    if is_float(src):
        if dst == "bool":  # a != 0 (NaN != 0 is true)
            return UnitUse(f"{src}_cmp", {"a": x, "b": lit(src, 0)}, "(~{eq})")
        wd, s = width(dst), is_signed(dst)
        if wd >= 32:
            return UnitUse(f"{src}_to_{dst}", {"a": x}, "{y}")
        # saturate to 32 bits, then clamp to the narrow range: the same as saturating
        # directly (truncation then saturation is monotone; NaN is already 0)
        if s:
            hi, lo = (1 << (wd - 1)) - 1, (1 << 32) - (1 << (wd - 1))
            res = (
                f"(($signed({{y}}) > $signed(32'h{hi:x})) ? {wd}'h{hi:x} : "
                f"($signed({{y}}) < $signed(32'h{lo:x})) ? {wd}'h{1 << (wd - 1):x} : "
                f"{{y}}[{wd - 1}:0])"
            )
            return UnitUse(f"{src}_to_i32", {"a": x}, res)
        hi = (1 << wd) - 1
        res = f"(({{y}} > 32'h{hi:x}) ? {wd}'h{hi:x} : {{y}}[{wd - 1}:0])"
        return UnitUse(f"{src}_to_u32", {"a": x}, res)
    ws = width(src)
    if ws >= 32:
        return UnitUse(f"{src}_to_{dst}", {"a": x}, "{y}")
    # a narrow integer (or bool) is exact in 32 bits: extend, then the 32-bit unit
    ext = convert_int(src, "i32" if is_signed(src) else "u32", x)
    unit = f"{'i' if is_signed(src) and src != 'bool' else 'u'}32_to_{dst}"
    return UnitUse(unit, {"a": ext}, "{y}")


def imm_expr(c: Imm) -> str:
    return lit(c.type, c.bits)
