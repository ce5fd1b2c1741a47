"""Dimension expressions as loop-program statements.

A dimension expression ``(Σ c·N + k) / d`` (kera_core/ir/types.py) is computed in i64
from the function's dimension variables, and checked the way the interpreter checks it
(kera_core/ir/dims.py, docs/language.md §7.5): the division exact and the size not below
zero, else R0003. Constant parts are folded; a check that folds to true is not emitted.
"""

from __future__ import annotations

from collections.abc import Callable

from kera_core.ir.dims import Step
from kera_core.ir.types import Dim, Sym
from kera_core.loops.emit import Emitter, _sval, imm
from kera_core.loops.ir import Check, Imm, Operand


def _check(e: Emitter, ok: Operand, message: str, node: bytes | None) -> None:
    if isinstance(ok, Imm) and ok.bits:
        return
    e.emit(Check(ok, "R0003", message, node))


def _exact_div(e: Emitter, num: Operand, by: int, what: str, node: bytes | None) -> Operand:
    """``num / by`` (``by`` != 0), checked to be exact and not below zero."""
    if by != 1:
        if isinstance(num, Imm):
            v = _sval(num)
            ok = imm("bool", v % by == 0)
            _check(e, ok, f"{what} is not a whole number", node)
            num = imm("i64", v // by if v % by == 0 else 0)
        else:
            rem = e.op("rem", num, imm("i64", by))
            _check(e, e.op("eq", rem, imm("i64", 0)), f"{what} is not a whole number", node)
            num = e.op("div", num, imm("i64", by))
    if isinstance(num, Imm):
        _check(e, imm("bool", _sval(num) >= 0), f"{what} is below zero", node)
    else:
        _check(e, e.op("ge", num, imm("i64", 0)), f"{what} is below zero", node)
    return num


def _linear(
    e: Emitter, d: Dim, dim_of: Callable[[int], Operand], skip: int | None
) -> tuple[Operand, int, int]:
    """(const + Σ c·dim for the symbols other than ``skip``, skip's coefficient, divisor)."""
    if isinstance(d, int):
        return imm("i64", d), 0, 1
    if isinstance(d, Sym):
        return (imm("i64", 0), 1, 1) if d.index == skip else (dim_of(d.index), 0, 1)
    acc: Operand = imm("i64", d.const)
    coeff = 0
    for k, c in d.terms:
        if k == skip:
            coeff = c
        else:
            acc = e.add_i(acc, e.mul_i(dim_of(k), imm("i64", c)))
    return acc, coeff, d.div


def dim_operand(
    e: Emitter, d: Dim, dim_of: Callable[[int], Operand], what: str, node: bytes | None
) -> Operand:
    """The size ``d`` stands for, checked (R0003)."""
    if isinstance(d, Sym):
        return dim_of(d.index)
    if isinstance(d, int):
        return imm("i64", d)
    num, _, div = _linear(e, d, dim_of, None)
    return _exact_div(e, num, div, what, node)


def solve_operand(
    e: Emitter,
    step: Step,
    got: Operand,
    dim_of: Callable[[int], Operand],
    what: str,
    node: bytes | None,
) -> Operand:
    """The value of ``step.solves`` that gives the axis the size ``got``, checked (R0003)."""
    if isinstance(step.dim, Sym):
        return got
    rest, coeff, div = _linear(e, step.dim, dim_of, step.solves)
    num = e.mul_i(got, imm("i64", div))
    if isinstance(rest, Imm):
        num = e.add_i(num, imm("i64", -_sval(rest)))
    else:
        num = e.op("sub", num, rest)
    if coeff < 0:  # `10 - N`: solve with the sign moved to the numerator
        num = e.mul_i(num, imm("i64", -1)) if isinstance(num, Imm) else e.op("neg", num)
        coeff = -coeff
    return _exact_div(e, num, coeff, f"{what} (solving for a dimension)", node)
