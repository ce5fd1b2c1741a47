"""`return`, `break` and `continue` in a pure dataflow graph.

The graph has no jumps, so an early exit becomes data: a flag variable set by
the exit (``$ret`` for the function, ``$brk<n>``/``$cont<n>`` for loop ``n``) and
the value being returned (``$retval``). Flags are ordinary carried variables, so
control-flow regions thread them like any other mutable variable. After any
statement that may exit, the rest of its block runs under a guard
``if !(flags) { rest }``; a `for` body is guarded by ``!$brk && !$ret`` so later
iterations do nothing, and a `while` condition becomes ``!$brk && !$ret && cond``.
The function's result is ``select($ret, $retval, value)``.
"""

from __future__ import annotations

from kera_core.cancel import poll
from kera_core.ir.types import BOOL, UNIT, Prim, Ref, Struct, Tensor, Type, Unit, strip_ref
from kera_core.sema.frames import ERR_VAL, NEVER, Binding, Val
from kera_core.syntax import ast
from kera_core.syntax.kinds import SyntaxKind as K

RET = "$ret"
RETVAL = "$retval"


_RETURN = 1 << K.RETURN_EXPR
_JUMPS = (1 << K.BREAK_EXPR) | (1 << K.CONTINUE_EXPR)
_LOOPS = (K.FOR_EXPR, K.WHILE_EXPR, K.LOOP_EXPR)


def has_return(node) -> bool:
    return bool(node.green.kinds_below() & _RETURN)


def may_exit(node) -> bool:
    """Does ``node`` contain a `return`, or a `break`/`continue` of the enclosing loop?"""
    green = node.green
    bits = green.kinds_below()
    if bits & _RETURN:
        return True
    if not bits & _JUMPS:
        return False
    # No `return` below: a jump counts unless a loop below ``node`` encloses it.
    if green.kind in (K.BREAK_EXPR, K.CONTINUE_EXPR):
        return True
    stack = [green]
    while stack:
        for c in stack.pop().children:
            if c.is_token:
                continue
            k = c.kind
            if k == K.BREAK_EXPR or k == K.CONTINUE_EXPR:
                return True
            if k not in _LOOPS and c.kinds_below() & _JUMPS:
                stack.append(c)
    return False


class Exits:
    """Mixin of :class:`kera_core.sema.lower.FnLowering` for early exits."""

    loops: list[tuple[str, str]]

    # --- values of any type -------------------------------------------------------
    def zero_of(self, t: Type, span) -> Val:
        """A placeholder of type ``t``, used where a value is required but never observed."""
        t0 = strip_ref(t)
        if isinstance(t0, Unit):
            return Val(None, UNIT)
        if isinstance(t0, Prim):
            return self.const(t0, 0, None)
        if isinstance(t0, Tensor):
            return self.op("full", [self.const(t0.elem, 0, None)], span, {"type": t0})
        if isinstance(t0, Struct):
            fields = [self.zero_of(ft, span) for _, ft in t0.fields]
            return self.op("struct", fields, span, {"type": t0})
        return ERR_VAL

    def bind_flag(self, name: str, val: Val, span) -> None:
        assert self.frame is not None
        self.frame.scopes[-1][name] = Binding(name, val, True, span, "flag")

    def false(self) -> Val:
        return self.const(BOOL, 0, None)

    def true(self) -> Val:
        return self.const(BOOL, 1, None)

    def exit_flags(self) -> list[str]:
        """The flags that say "stop running this block" at the current point."""
        names = []
        if self.lookup(RET) is not None:
            names.append(RET)
        if self.loops:
            brk, cont = self.loops[-1]
            names += [brk, cont]
        return [n for n in names if self.lookup(n) is not None]

    def still_running(self, flags: list[str], span) -> Val:
        """`!(f1 || f2 || …)` over the current values of ``flags``."""
        acc: Val | None = None
        for f in flags:
            v = self.lookup(f).val  # type: ignore[union-attr]
            acc = v if acc is None else self.op("or", [acc, v], span)
        assert acc is not None
        return self.op("not", [acc], span)

    # --- sequencing ------------------------------------------------------------------
    def seq(self, items: list, expected: Type | None, fn_body: bool) -> Val:
        """Lower statements then the tail (last item, may be None) with exit guards."""
        steps = self.body_steps  # the function body's statements, through sema/body_reuse.py
        if fn_body and steps is not None:
            self.body_steps = None  # (only the body itself, not a guarded rest of it)
        for i, item in steps(items) if fn_body and steps is not None else enumerate(items[:-1]):
            if fn_body and i & 63 == 63:
                poll("lowering", i, len(items))  # a long body's graph built inside a query
            if isinstance(item, ast.LetStmt):
                self.let(item, items, i + 1, expected)
                continue
            if not isinstance(item, ast.ExprStmt):
                continue
            e = item.expr
            if e is None:
                continue
            v = self.expr(e, None)
            if v.is_err:
                continue
            if v.type is NEVER or (may_exit(item.syntax) and self.exit_flags()):
                rest = items[i + 1 :]
                if all(x is None for x in rest):
                    return Val(None, NEVER) if v.type is NEVER else Val(None, UNIT)
                if v.type is NEVER:
                    return Val(None, NEVER)  # the rest is unreachable: nothing to run
                return self.guarded_rest(rest, expected, fn_body, item.span)
        tail = items[-1]
        if tail is None:
            return Val(None, UNIT)
        return self.expr(tail, expected)

    def guarded_rest(self, rest: list, expected, fn_body: bool, span) -> Val:
        flags = self.exit_flags()
        cond = self.still_running(flags, span)
        nodes = [x.syntax for x in rest if x is not None]

        def then_fn():
            return self.seq(rest, expected, fn_body)

        def else_fn(then_val: Val):
            return self.zero_of(then_val.type, span) if then_val.value is not None else then_val

        return self.if_node(cond, then_fn, else_fn, nodes, span)

    # --- exits --------------------------------------------------------------------------
    def e_ReturnExpr(self, e: ast.ReturnExpr, expected):
        result = self.sig.type.result
        if e.value is not None:
            v = self.expr(e.value, None if isinstance(result, Unit) else result)
            if v.is_err or not self.check_type(
                result, v, e.value.span, "return value", fn_result=True
            ):
                return ERR_VAL
        elif not isinstance(result, Unit):
            return self.err("K0309", e.span, f"`return` needs a value of type {self.show(result)}")
        else:
            v = Val(None, UNIT)
        if v.value is not None:
            self._set(
                RETVAL,
                Val(
                    v.value,
                    strip_ref(result) if isinstance(result, Ref) and result.mutable else v.type,
                ),
            )
        self._set(RET, self.true())
        return Val(None, NEVER)

    def e_BreakExpr(self, e, expected):
        if not self.loops:
            return self.err("K0314", e.span, "`break` outside of a loop")
        self._set(self.loops[-1][0], self.true())
        return Val(None, NEVER)

    def e_ContinueExpr(self, e, expected):
        if not self.loops:
            return self.err("K0314", e.span, "`continue` outside of a loop")
        self._set(self.loops[-1][1], self.true())
        return Val(None, NEVER)

    def select(self, cond: Val, a: Val, b: Val, span) -> Val:
        if a.value is None:
            return a
        return self.op("select", [cond, a, b], span)

    def land_lor(self, e: ast.BinExpr, name: str) -> Val:
        """`a && b` / `a || b`: b is evaluated only when needed if it could fail."""
        e_lhs, e_rhs = e.operands
        lhs = self.expr(e_lhs, BOOL)
        risky = e_rhs is not None and _risky(e_rhs.syntax)
        if not risky or lhs.is_err or lhs.type != BOOL:
            rhs = self.expr(e_rhs, BOOL)
            return self.op(name, [lhs, rhs], e.span)
        short = self.false() if name == "land" else self.true()

        def then_fn():
            return self.expr(e_rhs, BOOL)

        def else_fn(_):
            return short

        cond = lhs if name == "land" else self.op("not", [lhs], e.span)
        return self.if_node(cond, then_fn, else_fn, [e_rhs.syntax], e.span)


_CALL_OR_INDEX = (1 << K.INDEX_EXPR) | (1 << K.CALL_EXPR)
_DIVISIONS = (1 << K.SLASH) | (1 << K.PERCENT)


def _risky(node) -> bool:
    """Could evaluating ``node`` fail (an index, a call, a division or remainder)?"""
    bits = node.green.kinds_below()
    if bits & _CALL_OR_INDEX:
        return True
    if not bits & _DIVISIONS:
        return False
    return any(
        n.kind == K.BIN_EXPR and ast.BinExpr(n).op is not None
        and ast.BinExpr(n).op.kind in (K.SLASH, K.PERCENT)
        for n in node.preorder() if not n.is_token
    )  # fmt: skip
