"""Lowering one function body to a region of the graph, type-checking as it goes.

The result is self-contained (its own node and region tables, provenance with
spans relative to the function, diagnostics), so the module can cache it and
reuse it when an edit touched another function.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field

from kera_core.diagnostics import Diagnostic, Edit, Fix, error, quoted
from kera_core.ir import ops
from kera_core.ir.graph import Graph
from kera_core.ir.node import Function, Node, Region, Value
from kera_core.ir.provenance import FnProvenance
from kera_core.ir.types import (
    BOOL,
    F64,
    I64,
    PRIMS,
    TOKEN,
    UNIT,
    Prim,
    RangeType,
    Ref,
    Struct,
    Tensor,
    Type,
    Unit,
    display_dim,
    elem_of,
    is_soa,
    soa_elem,
    soa_shape,
    strip_ref,
    tuple_type,
)
from kera_core.sema import literals, type_constants
from kera_core.sema.deps import text_of
from kera_core.sema.env import (
    ConstDef,
    FnSig,
    ModuleEnv,
    TypeResolver,
    Use,
    did_you_mean,
    tuple_element_error,
    tuple_element_ok,
)
from kera_core.sema.frames import ERR, ERR_VAL, NEVER, Binding, ErrorType, Frame, Scope, Val
from kera_core.sema.lower_calls import BUILTINS, Calls
from kera_core.sema.lower_control import ControlFlow
from kera_core.sema.lower_exits import RET, RETVAL, Exits, has_return
from kera_core.sema.lower_refs import References, unparen
from kera_core.sema.lower_views import Views, is_slice
from kera_core.source import Span
from kera_core.syntax import ast
from kera_core.syntax.kinds import SyntaxKind as K

BIN_OPS = {
    K.PLUS: "add", K.MINUS: "sub", K.STAR: "mul", K.SLASH: "div", K.PERCENT: "rem",
    K.AMP: "and", K.PIPE: "or", K.CARET: "xor", K.SHL: "shl", K.SHR: "shr",
    K.EQ2: "eq", K.NEQ: "ne", K.LT: "lt", K.LTEQ: "le", K.GT: "gt", K.GTEQ: "ge",
    K.AMP2: "land", K.PIPE2: "lor",
}  # fmt: skip
COMPOUND = {
    K.PLUSEQ: "add", K.MINUSEQ: "sub", K.STAREQ: "mul", K.SLASHEQ: "div", K.PERCENTEQ: "rem",
    K.AMPEQ: "and", K.PIPEEQ: "or", K.CARETEQ: "xor", K.SHLEQ: "shl", K.SHREQ: "shr",
}  # fmt: skip
COMPARISONS = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})
TOKEN_VAR = "$token"


class Unsupported(Exception):
    pass


@dataclass
class LoweredFn:
    """One function's lowering: everything needed to merge it into a module graph."""

    sig: FnSig
    function: Function | None
    nodes: dict[bytes, Node] = field(default_factory=dict)
    regions: dict[bytes, Region] = field(default_factory=dict)
    provenance: FnProvenance | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)  # absolute, as of ``base``
    base: int = 0  # where the function started when it was lowered
    expr_types: dict = field(default_factory=dict)  # (start, end, kind) -> Type, absolute
    uses: list = field(default_factory=list)  # Use records, absolute (see env.Use)
    # what diagnostics, expr_types and uses depend on (set by lower_module): the text,
    # the signatures in scope and which callees lowered, not the callees' hashes
    shape: bytes = b""
    # for a lowering whose diagnostics point into other functions' headers (a call's
    # mismatch names the callee's parameter): each such header as it was then, (the
    # function's name, its start, its end, its text), so that a reuse can place those spans
    # where the headers are now (sema/module.py ``_reusable``); None when some span lies
    # elsewhere (the lowering is not reused where it must move)
    anchors: tuple | None = None

    @property
    def lowers(self) -> bool:
        """Did the function lower (a graph, no error)? Read without building a graph that
        is built on demand (sema/body_reuse.py)."""
        return self.function is not None

    @property
    def relocatable(self) -> bool:
        """Can this lowering be reused after the function moved? Not if a diagnostic
        points into another item (that item may have moved differently)."""
        span = self.sig.span
        return all(
            span.covers(d.span) and all(span.covers(r.span) for r in d.related)
            for d in self.diagnostics
        )


_WRAPPERS = (ast.ParenExpr, ast.PrefixExpr)  # hoisted: `A | B` makes a union per call
_PLACE_STEPS = (ast.IndexExpr, ast.FieldExpr, ast.ParenExpr)


def _is_untyped_float(e: ast.Expr | None) -> bool:
    """An unsuffixed float literal (or its negation/parenthesis)."""
    while isinstance(e, _WRAPPERS):
        e = e.inner if isinstance(e, ast.ParenExpr) else e.operand
    return _is_untyped_literal(e) and e.token.kind == K.FLOAT  # type: ignore[union-attr]


def _is_untyped_int(e: ast.Expr | None) -> bool:
    """An unsuffixed integer literal (or its negation/parenthesis), or an `if` whose every
    branch ends in one (`if c { 1 } else { 0 }`): its type comes from the expected one."""
    while isinstance(e, _WRAPPERS):
        e = e.inner if isinstance(e, ast.ParenExpr) else e.operand
    if isinstance(e, ast.IfExpr):
        while isinstance(e, ast.IfExpr):
            then, other = e.then_branch, e.else_branch
            if then is None or other is None or not _is_untyped_int(then.tail):
                return False
            e = other if isinstance(other, ast.IfExpr) else other.tail  # type: ignore[assignment]
        return _is_untyped_int(e)
    if isinstance(e, ast.MatchExpr):  # every arm ends in one
        arms = e.arms
        return bool(arms) and all(_is_untyped_int(_tail_of(a.body)) for a in arms)
    return _is_untyped_literal(e) and e.token.kind == K.INT  # type: ignore[union-attr]


def _tail_of(e: ast.Expr | None) -> ast.Expr | None:
    """A block's tail (`{ …; 1 }` ends in `1`), other expressions themselves."""
    while isinstance(e, ast.BlockExpr):
        e = e.block.tail if e.block is not None else None
    return e


def _is_untyped_literal(e: ast.Expr | None) -> bool:
    """A literal without suffix (or its negation/parenthesis): its type comes from context."""
    while isinstance(e, _WRAPPERS):
        e = e.inner if isinstance(e, ast.ParenExpr) else e.operand
    if not isinstance(e, ast.Literal):
        return False
    tok = e.token
    return tok.kind in (K.INT, K.FLOAT) and literals.split_suffix(tok.text)[1] is None


def _shown(text: str, negate: bool) -> str:
    """A literal as a message quotes it (made only for a diagnostic)."""
    return quoted(f"{'-' if negate else ''}{text}")


_NONE: tuple = ()


def _swap_operands(call: ast.CallExpr) -> tuple[ast.Expr, ast.Expr] | None:
    """The two variables of `swap(&mut a, &mut b)` (or of `swap(a, b)`), else None."""
    callee = call.callee
    if not isinstance(callee, ast.PathExpr) or callee.name_text != "swap" or len(call.args) != 2:
        return None
    a, b = (x.operand if isinstance(x, ast.RefExpr) else x for x in call.args)
    return a, b  # type: ignore[return-value]


@dataclass(frozen=True)
class CallArg:
    """A bare name passed to a call (`f(r)`, `swap(a, b)`): the call changes the variable
    the name denotes when the parameter is `&mut` (a `&mut` parameter or reference variable
    passed on) — which only the callee's signature tells, so :meth:`FnLowering.carried_names`
    decides."""

    callee: str
    index: int
    name: str


def _own_targets(n) -> tuple:
    """The variables an assignment or `&mut x` node itself changes, and the bare names a
    call passes (:class:`CallArg`)."""
    target = None
    if n.kind == K.ASSIGN_EXPR:
        target = ast.AssignExpr(n).lhs
    elif n.kind == K.REF_EXPR and ast.RefExpr(n).is_mut:
        target = ast.RefExpr(n).operand
    elif n.kind == K.CALL_EXPR:
        call = ast.CallExpr(n)
        callee = call.callee
        if not isinstance(callee, ast.PathExpr) or callee.name is None:
            return _NONE
        out = []
        for i, arg in enumerate(call.args):
            while isinstance(arg, ast.ParenExpr):
                arg = arg.inner
            if isinstance(arg, ast.PathExpr) and arg.name is not None:
                out.append(CallArg(callee.name.text, i, arg.name.text))
        return tuple(out)
    while isinstance(target, _PLACE_STEPS):
        target = target.inner if isinstance(target, ast.ParenExpr) else target.base
    if isinstance(target, ast.PathExpr):
        return (target.name_text,)
    return _NONE


def assigned_names(node, memo: dict[int, tuple] | None = None) -> tuple:
    """Variables a region may change: assignment targets and `&mut x` arguments, in
    source order (first occurrence), and the bare names passed to calls (:class:`CallArg`).

    Iterative, and linear over a whole function with ``memo`` (keyed by green node:
    the answer depends only on a subtree's text), so nested regions — an `else if`
    ladder — do not re-walk what their parents already walked.
    """
    if not node.green.kinds_below() & _CHANGERS:
        return _NONE  # no assignment and no `&mut` below: a subtree skipped whole
    memo = {} if memo is None else memo
    stack: list[tuple[object, bool]] = [(node, False)]
    while stack:
        n, done = stack.pop()
        key = id(n.green)
        if key in memo:
            continue
        if not done:
            stack.append((n, True))
            stack.extend(
                (c, False)
                for c in n.children()
                if c.green.kinds_below() & _CHANGERS and id(c.green) not in memo
            )
            continue
        names = _own_targets(n)
        for c in n.children():
            if not c.green.kinds_below() & _CHANGERS:
                continue
            sub = memo[id(c.green)][1]
            if not sub:
                continue
            if not names:
                names = sub
            else:
                names = names + tuple(x for x in sub if x not in names)
        memo[key] = (n.green, names)  # the green is kept alive so its id stays unique
    return memo[id(node.green)][1]


# the nodes `_own_targets` looks at
_CHANGERS = (1 << K.ASSIGN_EXPR) | (1 << K.REF_EXPR) | (1 << K.CALL_EXPR)

# Constant and parameter nodes by what they are made of: a node is a pure function of its
# contents (never changed once made), and these recur on every line of every function.
_LEAVES: dict[tuple, Node] = {}
_LEAVES_MAX = 65536


def _leaf(key: tuple, node: Node) -> Node:
    if len(_LEAVES) >= _LEAVES_MAX:
        _LEAVES.clear()
    _LEAVES[key] = node
    return node


class FnLowering(ControlFlow, Calls, Exits, References, Views):
    """Lowers one function; assignment/control flow, calls and reference variables come
    from the mixins."""

    #: how the body's statements are walked (``items -> (index, item)``); None: all in order.
    #: sema/body_reuse.py records and resumes long bodies through it.
    body_steps = None

    def __init__(self, env: ModuleEnv, sig: FnSig, callee_hashes: dict[str, Function]) -> None:
        self.env = env
        self.sig = sig
        self.callees = callee_hashes
        self.base = sig.span.start
        self.nodes: dict[bytes, Node] = {}
        self.regions: dict[bytes, Region] = {}
        self.diags: list[Diagnostic] = []
        self.prov = FnProvenance(
            sig.name, sig.span, sig.name_span, sig.dim_names, sig.param_names, doc=sig.doc
        )
        self.effects = set(sig.type.effects)
        self.frame: Frame | None = None
        self.loops: list[tuple[str, str]] = []
        self.expr_types: dict[tuple[int, int, K], Type] = {}
        self.uses: list[Use] = []
        self._assigned: dict[int, tuple] = {}  # assigned_names memo (green id -> names)
        self.foreign = 0  # > 0: lowering another file's constant (inline_const)
        self._inlined: dict[int, Val] = {}  # inline_const memo (id of the ConstDef -> value)
        self._peek_locals: dict[str, Type] = {}  # loop variables met by _type_of_use
        dim_spans = (
            tuple(d.span for d in sig.ast.dim_params)
            if sig.ast is not None and sig.dim_names  # one name per dimension parameter
            else ()
        )
        self.types = TypeResolver(env, sig.dim_names, [], self.uses, dim_spans, sig.type_names())

    # --- diagnostics ---------------------------------------------------------------
    def err(self, code: str, span: Span, msg: str, **kw) -> Val:
        self.diags.append(error(code, span, msg, **kw))
        return ERR_VAL

    def show(self, t: Type) -> str:
        return f"`{t.display(self.sig.dim_names)}`"

    # --- nodes -----------------------------------------------------------------------
    def add(self, node: Node, span: Span | None) -> Node:
        node = self.nodes.setdefault(node.hash, node)
        if span is not None and not self.foreign:
            fn = self.sig.span
            start, end = span.start, span.end
            if fn.start <= start and end <= fn.end:  # a constant's is elsewhere
                base = self.base
                self.prov.add_at(node.hash, start - base, end - base)
        return node

    def op(self, name: str, args: list[Val], span: Span, attrs: dict | None = None) -> Val:
        types_in = []
        values = []
        unit = False
        for a in args:  # one pass: an error operand first, then a `()` one
            t = a.type
            if t.__class__ is ErrorType:
                return ERR_VAL
            v = a.value
            if v is None:
                unit = True
            types_in.append(t)
            values.append(v)
        if unit:
            return self.err("K0301", span, f"`{name}` cannot take a `()` operand")
        if attrs is None:
            attrs = {}
        try:
            types = ops.infer_named(name, tuple(types_in), attrs, self.sig.dim_names)
        except ops.TypeRuleError as e:
            return self.err(e.code, span, str(e))
        node = self.add(Node(name, tuple(values), types, attrs), span)
        return Val(node.out(0), types[0])

    def const(self, t: Prim, value: int, span: Span | None) -> Val:
        key = ("const", t, value, type(value))  # 1 and True are equal keys, not equal attrs
        node = _LEAVES.get(key)
        if node is None:
            node = _leaf(key, Node("const", (), (t,), {"type": t, "value": value}))
        node = self.add(node, span)
        return Val(node.out(0), t)

    def param(self, index: int, t: Type) -> Value:
        key = ("param", t, index, type(index))
        node = _LEAVES.get(key)
        if node is None:
            node = _leaf(key, Node("param", (), (t,), {"index": index, "type": t}))
        return self.add(node, None).out(0)

    # --- frames ------------------------------------------------------------------------
    def lookup(self, name: str, frame: Frame | None = None) -> Binding | None:
        """The binding ``name`` denotes here; a reference variable (`let r = &mut y;`)
        resolves to its variable's current value, under its own name and declaration."""
        b = self._find(name, frame)
        if b is None or b.alias is None:
            return b
        t = self.lookup(b.alias, frame)
        if t is None:
            return None
        val = t.val
        if b.view is not None and not val.is_err:  # `let r = &mut y[i, ..];`: reads `y[i, ..]`
            val = self.slice_val(val, self.view_of(b), b.span)
        return Binding(b.name, val, t.mutable, b.span, b.kind, b.alias, True, b.view)

    def alias_target(self, name: str) -> str:
        """The variable ``name`` denotes: itself, or what the reference variable borrows."""
        b = self.peek_binding(name)
        while b is not None and b.alias is not None:  # a view of a view: the variable
            name = b.alias
            b = self.peek_binding(name)
        return name

    def peek_binding(self, name: str) -> Binding | None:
        """The binding ``name`` denotes, as it is (no capture made, no alias resolved)."""
        f = self.frame
        while f is not None:
            b = f.lookup_local(name)
            if b is not None:
                return b
            f = f.parent
        return None

    def _find(self, name: str, frame: Frame | None = None) -> Binding | None:
        frame = frame or self.frame
        assert frame is not None
        b = frame.lookup_local(name)
        if b is not None or frame.parent is None:
            return b
        b = frame.captured.get(name)
        if b is not None:  # outer frames do not change while this one is being lowered
            return b
        outer = self._find(name, frame.parent)
        if outer is None or outer.val.value is None:
            return outer
        idx = frame.captures.get(outer.val.value)
        if idx is None:
            idx = len(frame.params)
            frame.params.append(
                strip_ref(outer.val.type) if outer.kind != "param" else outer.val.type
            )
            frame.captures[outer.val.value] = idx
            frame.capture_inputs.append(outer.val.value)
        captured = Binding(
            name,
            Val(self.param(idx, frame.params[idx]), outer.val.type),
            outer.mutable,
            outer.span,
            outer.kind,
            mutref=outer.mutref,
        )
        frame.captured[name] = captured
        return captured

    def open_frame(
        self, names: list[str], leading: list[Type], share: Frame | None = None
    ) -> Frame:
        """A new region frame whose first params are ``leading`` then the carried ``names``."""
        assert self.frame is not None
        if share is not None:
            f = Frame(
                self.frame,
                list(share.params),
                captures=dict(share.captures),
                capture_inputs=list(share.capture_inputs),
                carried=list(share.carried),
            )
        else:
            f = Frame(self.frame, list(leading))
            for name in names:
                f.params.append(strip_ref(self.lookup(name).val.type))  # type: ignore[union-attr]
            f.carried = list(names)
        base = len(leading)
        for i, name in enumerate(f.carried):
            outer = self.lookup(name)
            assert outer is not None
            t = f.params[base + i]
            f.entry[name] = value = self.param(base + i, t)
            f.scopes[0][name] = Binding(
                name, Val(value, t), outer.mutable, outer.span, outer.kind, mutref=outer.mutref
            )
        return f

    def carried_names(self, syntax_nodes: list) -> list[str]:
        """Names a region must thread: effect token and exit flags in scope, then assigned ones."""
        # Every region frame binds, first in its scopes[0], all the `$` names its parent had
        # in scope when it was opened (see open_frame), in that order, and a parent does not
        # change while a child is lowered: so this frame's own scopes list every `$` name
        # in scope, outermost first, without walking up the frame chain.
        assert self.frame is not None
        names: list[str] = []
        seen: set[str] = set()
        for scope in self.frame.scopes:
            for n in scope.flags:
                if n not in seen:
                    seen.add(n)
                    names.append(n)
        for sn in syntax_nodes:
            for n in assigned_names(sn, self._assigned):
                if isinstance(n, CallArg):
                    if not self.passes_mutably(n):
                        continue
                    n = n.name
                n = self.alias_target(n)  # `r[i] = v` with `let r = &mut y;` changes `y`
                if n in seen:
                    continue
                b = self.lookup(n)
                if b is not None and b.val.value is not None and b.kind != "dim":
                    seen.add(n)
                    names.append(n)
        return names

    def passes_mutably(self, arg: CallArg) -> bool:
        """Does the call hand the bare name on as `&mut` (so the call may change it)?"""
        b = self.peek_binding(arg.name)
        if b is None or not b.reborrowable:
            return False
        sig = self.env.fns.get(arg.callee)
        if sig is None:
            return arg.callee == "swap"
        params = sig.type.params
        p = params[arg.index] if arg.index < len(params) else None
        return isinstance(p, Ref) and p.mutable

    def finals(self, frame: Frame) -> list[Value]:
        """The carried names' values at the end of ``frame`` (one an error left without a
        value yields its value on entry: the function has an error, its graph is not used)."""
        out = []
        for name in frame.carried:
            b = frame.lookup_local(name)
            assert b is not None
            out.append(b.val.value if b.val.value is not None else frame.entry[name])
        return out

    def rebind(self, names: list[str], node: Node, first: int) -> None:
        for i, name in enumerate(names):
            b = self.lookup(name)
            assert b is not None
            self._set(name, Val(node.out(first + i), node.types[first + i]))

    def _set(self, name: str, val: Val) -> None:
        assert self.frame is not None
        for scope in reversed(self.frame.scopes):
            if name in scope:
                old = scope[name]
                if old.alias is not None:  # a write through `r` changes what it borrows
                    self._set_through(old, val)
                    return
                scope[name] = Binding(name, val, old.mutable, old.span, old.kind, None, old.mutref)
                return
        b = self.peek_binding(name)  # a reference variable of an enclosing region
        if b is not None and b.alias is not None:
            self._set_through(b, val)
            return
        if b is not None and b.val.value is None:
            return  # a variable of an enclosing region that holds no value (unit, or an
            # error's): not carried into this one, nothing to thread
        raise AssertionError(f"{name} is not bound in this frame")

    def _set_through(self, ref: Binding, val: Val) -> None:
        """Write ``val`` through the reference variable ``ref``: into the variable it
        borrows, or — a view — into its region of that variable (`update_slice`)."""
        assert ref.alias is not None
        if ref.view is not None and not val.is_err:
            cur = self.lookup(ref.alias)
            assert cur is not None
            new = self.update_slice_val(cur.val, self.view_of(ref), val, ref.span)
            if new.is_err:
                return
            val = Val(new.value, strip_ref(cur.val.type))
        self._set(ref.alias, val)

    # --- the function ----------------------------------------------------------------------
    def lower(self) -> LoweredFn:
        sig = self.sig
        fn = sig.ast
        top = Frame(None, [])
        self.frame = top
        if self.effects:
            top.params.append(TOKEN)
            top.scopes[0][TOKEN_VAR] = Binding(
                TOKEN_VAR, Val(self.param(0, TOKEN), TOKEN), True, sig.span
            )
        params = fn.params
        for i, (name, t) in enumerate(zip(sig.param_names, sig.type.params, strict=True)):
            idx = len(top.params)
            top.params.append(t)
            p = params[i]
            mutref = isinstance(t, Ref) and t.mutable
            mutable = mutref or p.is_mut
            pname = p.name
            span = pname.span if pname else p.span
            val = Val(self.param(idx, t), strip_ref(t) if mutref else t)
            if name in top.scopes[0]:
                self.err("K0206", span, f"parameter `{name}` is declared twice")
            top.scopes[0][name] = Binding(name, val, mutable, span, "param", mutref=mutref)
        dim_params = fn.dim_params if sig.dim_names else []
        for i, name in enumerate(sig.dim_names):
            top.scopes[0].setdefault(
                name, Binding(name, Val(None, I64), False, dim_params[i].span, "dim")
            )
            del i
        body = fn.body
        result = sig.type.result
        value = Val(None, UNIT)
        early = body is not None and has_return(body.syntax)
        if early:
            self.bind_flag(RET, self.false(), sig.span)
            if not isinstance(result, Unit):
                self.bind_flag(RETVAL, self.zero_of(result, sig.span), sig.span)
        if body is not None:
            value = self.block(body, None if isinstance(result, Unit) else result, fn_body=True)
        if early and not value.is_err and not isinstance(result, Unit):
            retval = top.scopes[0][RETVAL].val
            if value.type is NEVER:
                value = retval
            elif value.value is not None and self.check_type(
                result,
                value,
                body.tail.span if body.tail else body.span,
                "return value",
                fn_result=True,
            ):
                value = self.select(
                    top.scopes[0][RET].val, retval, Val(value.value, retval.type), sig.span
                )
        elif value.type is NEVER:
            value = Val(None, UNIT)
        if not value.is_err and body is not None:
            self.check_type(
                result,
                value,
                body.tail.span if body.tail else body.span,
                "return value",
                fn_result=True,
            )
        yields: list[Value] = []
        if self.effects:
            yields.append(top.scopes[0][TOKEN_VAR].val.value)  # type: ignore[arg-type]
        outputs: list[tuple[str, int]] = []
        if not isinstance(result, Unit) and value.value is not None:
            yields.append(value.value)
            outputs.append(("result", -1))
        for i, t in enumerate(sig.type.params):
            if isinstance(t, Ref) and t.mutable:
                b = top.scopes[0].get(sig.param_names[i])
                if b is not None and b.val.value is not None:
                    yields.append(b.val.value)
                    outputs.append(("param", i))
        function = None
        if not any(d.is_error for d in self.diags):
            region = Region(tuple(top.params), tuple(yields))
            self.regions[region.hash] = region
            function = Function(sig.name, sig.type, region.hash, sig.exported, tuple(outputs))
            self._keep_reachable(region.hash)
        return LoweredFn(
            sig,
            function,
            self.nodes,
            self.regions,
            self.prov,
            self.diags,
            self.base,
            self.expr_types,
            self.uses,
        )

    def _keep_reachable(self, root: bytes) -> None:
        """Drop nodes and regions that no yield reaches (reads made only for a diagnostic)."""
        g = Graph()
        g.nodes, g.regions = self.nodes, self.regions
        # ``Graph.all_regions`` order, each region's nodes walked once
        keep_regions: list[bytes] = []
        keep_nodes: dict[bytes, Node] = {}
        stack = [root]
        seen: set[bytes] = set()
        while stack:
            r = stack.pop()
            if r in seen:
                continue
            seen.add(r)
            keep_regions.append(r)
            for n in g.region_nodes(r):
                keep_nodes[n.hash] = n
                stack.extend(reversed(n.regions))
        self.nodes = keep_nodes
        self.regions = {r: self.regions[r] for r in keep_regions}
        for h in list(self.prov.node_spans):
            if h not in keep_nodes:
                del self.prov.node_spans[h]

    # --- statements -------------------------------------------------------------------------
    def block(self, blk: ast.Block, expected: Type | None, fn_body: bool = False) -> Val:
        assert self.frame is not None
        self.frame.scopes.append(Scope())
        try:
            return self.seq([*blk.statements, blk.tail], expected, fn_body)
        finally:
            self.frame.scopes.pop()

    def let(
        self,
        st: ast.LetStmt,
        items: list | None = None,
        after: int = 0,
        block_expected: Type | None = None,
    ) -> None:
        """``let``; ``items[after:]`` are the statements of the block after it and its tail
        (read only where an unsuffixed literal needs them: :meth:`float_type_of_use`,
        :meth:`int_type_of_use`), ``block_expected`` the type the block's value must have."""
        assert self.frame is not None
        declared = self.resolve_type(st.type)
        if st.pattern is not None:
            self.let_pattern(st, st.pattern, declared)
            return
        ref = st.name
        name = ref.text if ref else None
        init = st.init
        if name is not None and not self.check_shadow(name, ref.span):  # type: ignore[union-attr]
            self.expr(init, declared)  # its own diagnostics; the name stays an error
            self.frame.scopes[-1][name] = Binding(name, Val(None, ERR), st.is_mut, ref.span)  # type: ignore[union-attr]
            return
        borrow = unparen(init)
        if isinstance(borrow, ast.RefExpr) and borrow.is_mut:
            self.let_ref(st, borrow, declared)
            return
        if init is None:
            self.err("K0315", st.span, "a `let` needs an initial value: `let x = …;`")
            val = ERR_VAL
        else:
            expected = declared
            if declared is None and name is not None and items and after < len(items):
                if _is_untyped_float(init):
                    expected = self.float_type_of_use(name, items[after:], block_expected)
                elif _is_untyped_int(init):
                    expected = self.int_type_of_use(name, items[after:], block_expected)
            val = self.expr(init, expected)
            if declared is not None and not val.is_err:
                if not self.check_type(declared, val, init.span, "value"):
                    val = ERR_VAL
            if declared is not None and val.is_err:
                val = Val(None, ERR)
        if name is None:
            return
        if val.value is None and not val.is_err and isinstance(val.type, Unit):
            pass
        self.frame.scopes[-1][name] = Binding(name, val, st.is_mut, ref.span)  # type: ignore[union-attr]
        if val.value is not None:
            self.prov.node_names.setdefault(val.value.node, name)

    def let_pattern(self, st: ast.LetStmt, pat: ast.TuplePat, declared: Type | None) -> None:
        """`let (a, mut b, _) = e;`: each name is bound to its element of the tuple."""
        val = ERR_VAL
        if st.init is None:
            self.err("K0315", st.span, "a `let` needs an initial value: `let (a, b) = …;`")
        elif st.type is None or declared is not None:
            val = self.expr(st.init, declared)
            if declared is not None and not self.check_type(declared, val, st.init.span, "value"):
                val = ERR_VAL
        self.bind_pattern(pat, val, set())

    def bind_pattern(self, pat: ast.TuplePat, val: Val, seen: set[str]) -> None:
        parts = pat.elements
        if pat.is_parenthesized:  # `(a)` is `a`
            self.bind_part(parts[0], val, seen)
            return
        t = strip_ref(val.type)
        if not val.is_err and not (not parts and isinstance(t, Unit)):  # `let () = ();`
            if not isinstance(t, Struct) or not t.is_tuple or len(t.fields) != len(parts):
                if isinstance(t, Struct) and t.is_tuple:
                    n = len(t.fields)
                    what = f"a tuple of {n} element{'s' if n != 1 else ''}, {self.show(t)}"
                else:
                    what = self.show(val.type)
                self.err(
                    "K0320",
                    pat.span,
                    f"this pattern takes a tuple of {len(parts)} element"
                    f"{'s' if len(parts) != 1 else ''}, but the value is {what}",
                )
                val = ERR_VAL
        for i, part in enumerate(parts):
            if isinstance(part, ast.BindPat) and (part.name is None or part.name.text == "_"):
                continue  # `_` binds nothing and reads nothing
            elem = ERR_VAL
            if not val.is_err:
                elem = self.op("field", [val], part.span, {"index": i})
            self.bind_part(part, elem, seen)

    def bind_part(self, part: ast.BindPat | ast.TuplePat, val: Val, seen: set[str]) -> None:
        assert self.frame is not None
        if isinstance(part, ast.TuplePat):
            self.bind_pattern(part, val, seen)
            return
        ref = part.name
        if ref is None or ref.text == "_":
            return
        name = ref.text
        if name in seen:
            self.err("K0202", ref.span, f"`{name}` is bound twice in this pattern")
            return
        seen.add(name)
        syntax = part.syntax
        key = (syntax.offset, syntax.offset + syntax.green.text_len, K.BIND_PAT)
        self.expr_types[key] = val.type
        self.frame.scopes[-1][name] = Binding(name, val, part.is_mut, ref.span)
        if val.value is not None:
            self.prov.node_names.setdefault(val.value.node, name)

    def float_type_of_use(self, name: str, rest: list, block_expected: Type | None) -> Type | None:
        """The float type the rest of the block gives ``name`` (docs/language.md §6.2): the
        first assignment to it (`=`, `+=`, …) or arithmetic with it whose other operand has
        an evident float type (`s += x[i]` with `x: &f32[N]`), or else `return name` or the
        block's tail being the name, as for an integer. None when there is none, or when
        ``name`` is bound again first."""
        return self._type_of_use(name, rest, True, block_expected)

    def int_type_of_use(self, name: str, rest: list, block_expected: Type | None) -> Type | None:
        """The integer type the rest of the block gives ``name`` (docs/language.md §6.2): as
        for a float, the first assignment, operator or `swap` whose other operand has an
        evident integer type (`c += x[i]` with `x: &i32[N]`) — every binary operator takes
        one type on both sides, so only a use that is a type error with `i64` decides
        another type — or else `return name` (the function's result type) or the block's
        tail being the name (``block_expected``). None when there is none, or when ``name``
        is bound again first."""
        return self._type_of_use(name, rest, False, block_expected)

    def _type_of_use(
        self, name: str, rest: list, want_float: bool, block_expected: Type | None
    ) -> Type | None:
        tail = rest[-1]
        # the element variables of the `for v in x` loops met so far: `s += v` is a use whose
        # other operand has `x`'s element type (peek_type reads them)
        saved, self._peek_locals = self._peek_locals, {}
        try:
            return self._scan_uses(name, rest, tail, want_float, block_expected)
        finally:
            self._peek_locals = saved

    def _scan_uses(
        self, name: str, rest: list, tail, want_float: bool, block_expected: Type | None
    ) -> Type | None:
        def fits(t: Type | None) -> bool:
            return isinstance(t, Prim) and (t.is_float if want_float else t.is_int)

        for item in self._naming(name, rest):
            if item is tail and isinstance(item, ast.PathExpr):
                return block_expected if fits(block_expected) and item.name_text == name else None
            for n in item.syntax.preorder():
                k = n.kind
                if k == K.FOR_EXPR:
                    fe = ast.ForExpr(n)  # type: ignore[arg-type]
                    var, it = fe.var, fe.iterable
                    t = self.peek_type(it) if var is not None else None
                    if isinstance(t, Tensor) and t.rank == 1:
                        self._peek_locals[var.text] = t.elem  # type: ignore[union-attr]
                elif k == K.LET_STMT:
                    let = ast.LetStmt(n)  # type: ignore[arg-type]
                    bound = let.name
                    if bound is not None and bound.text == name:
                        return None
                    if bound is not None:  # a later local's evident type (`let w = M;`)
                        t = self.peek_type(let.init) if let.type is None else None
                        if let.type is not None:
                            t = TypeResolver(
                                self.env, self.sig.dim_names, [], type_names=self.sig.type_names()
                            ).resolve(let.type)
                        if t is not None:
                            self._peek_locals[bound.text] = strip_ref(t)
                elif k == K.BIND_PAT:
                    bound = ast.BindPat(n).name  # type: ignore[arg-type]
                    if bound is not None and bound.text == name:
                        return None
                elif k in (K.ASSIGN_EXPR, K.BIN_EXPR, K.CALL_EXPR):
                    if k == K.CALL_EXPR:  # `swap(&mut s, &mut t)`: one type for both
                        pair = _swap_operands(ast.CallExpr(n))  # type: ignore[arg-type]
                        if pair is None:
                            continue
                        lhs, rhs = pair
                    else:
                        e = ast.AssignExpr(n) if k == K.ASSIGN_EXPR else ast.BinExpr(n)  # type: ignore[arg-type]
                        lhs, rhs = e.lhs, e.rhs
                    for mine, other in ((lhs, rhs), (rhs, lhs)):
                        if (
                            isinstance(mine, ast.PathExpr)
                            and mine.name is not None
                            and mine.name.text == name
                        ):
                            t = self.peek_type(other)
                            if fits(t):
                                return t
                elif k == K.RETURN_EXPR:
                    v = ast.ReturnExpr(n).value  # type: ignore[arg-type]
                    if isinstance(v, ast.PathExpr) and v.name_text == name:
                        result = self.sig.type.result
                        return result if fits(result) else None
        return None

    def _naming(self, name: str, rest: list) -> Iterator:
        """The items of ``rest`` whose text holds ``name`` as a word, in order: only those can
        bind it or read it (found in the function's text, not by walking every node of the
        rest of a long body for each untyped float `let`)."""
        items = [i for i in rest if i is not None]
        fn = self.sig.ast
        if not items or fn is None:
            return iter(items)
        text = text_of(fn.syntax.green)
        if not text.isascii():  # (offsets are bytes)
            return iter(items)
        base = fn.syntax.offset
        starts = [i.syntax.offset - base for i in items]
        last = items[-1].syntax
        end = last.offset - base + last.green.text_len
        found = re.compile(rf"(?<![\w$#]){re.escape(name)}(?!\w)").finditer

        def naming() -> Iterator:
            pos = starts[0]
            while True:
                m = next(found(text, pos, end), None)
                if m is None:
                    return
                k = bisect_right(starts, m.start()) - 1
                yield items[k]
                s = items[k].syntax
                pos = max(m.end(), s.offset - base + s.green.text_len)

        return naming()

    def resolve_type(self, t: ast.Type | None) -> Type | None:
        if t is None:
            return None
        self.types.diags = self.diags
        return self.types.resolve(t)

    def peek_type(self, e: ast.Expr | None) -> Type | None:
        """The type ``e`` will have, when that is evident without lowering it (no nodes made)."""
        if isinstance(e, ast.ParenExpr | ast.PrefixExpr):
            return self.peek_type(e.inner if isinstance(e, ast.ParenExpr) else e.operand)
        if isinstance(e, ast.PathExpr) and (name := e.name_text) is not None:
            if name in self._peek_locals:
                return self._peek_locals[name]
            f = self.frame
            b = None
            while f is not None and b is None:
                b = f.lookup_local(name)
                f = f.parent
            if b is not None and b.kind != "dim" and not b.val.is_err:
                return strip_ref(b.val.type)
            if b is None and (c := self.env.const_named(name)) is not None:
                return c[0].type  # a constant's declared type (§3.3)
            return None
        if isinstance(e, ast.BinExpr):
            op = e.op
            if op is not None and BIN_OPS.get(op.kind) in COMPARISONS | {"land", "lor"}:
                return BOOL
            return self.peek_type(e.lhs) or self.peek_type(e.rhs)
        if isinstance(e, ast.Literal) and not _is_untyped_literal(e):
            tok = e.token
            if tok.kind in (K.TRUE_KW, K.FALSE_KW):
                return BOOL
            suffix = literals.split_suffix(tok.text)[1]
            return Prim(suffix) if suffix else None
        if isinstance(e, ast.CastExpr) and e.type is not None:
            return TypeResolver(
                self.env, self.sig.dim_names, [], type_names=self.sig.type_names()
            ).resolve(e.type)
        if isinstance(e, ast.ConstPath):  # `f32::PI` is an f32
            t = e.type_name.text if e.type_name is not None else ""
            return Prim(t) if type_constants.names_of(t) else None
        if isinstance(e, ast.IfExpr):  # either branch's evident type (they must agree)
            for b in (e.then_branch, e.else_branch):
                t = self.peek_type(b.tail if isinstance(b, ast.Block) else b)
                if t is not None:
                    return t
            return None
        if isinstance(e, ast.MatchExpr):  # any arm's evident type (they must agree)
            for a in e.arms:
                t = self.peek_type(a.body)
                if t is not None:
                    return t
            return None
        if isinstance(e, ast.BlockExpr) and e.block is not None:
            return self.peek_type(e.block.tail)
        if isinstance(e, ast.IndexExpr):
            base = self.peek_type(e.base)
            return base.elem if isinstance(base, Tensor) else None
        if isinstance(e, ast.RefExpr):
            return self.peek_type(e.operand)
        if isinstance(e, ast.CallExpr) and isinstance(e.callee, ast.PathExpr) and e.callee.name:
            name = e.callee.name.text
            sig = self.env.fns.get(name)
            if sig is not None:
                r = sig.type.result
                return (
                    r
                    if not isinstance(r, Tensor) or all(isinstance(d, int) for d in r.shape)
                    else None
                )
            arity, kind = BUILTINS.get(name, (0, ""))
            if len(e.args) > arity:
                return None  # along an axis: a tensor whose shape is not worth peeking at
            arg = self.peek_type(e.args[0]) if e.args else None
            if name in ("argmax", "argmin"):
                return I64
            if kind in ("reduce", "pair") and name != "matmul" and name != "conv1d":
                return elem_of(arg) if arg is not None else None
            if kind in ("unary", "elementwise"):
                return arg
        return None

    def check_type(
        self, expected: Type, val: Val, span: Span, what: str, fn_result: bool = False
    ) -> bool:
        """Report a mismatch between ``expected`` and what ``val`` is; True when they match."""
        if val.is_err:
            return False
        actual = val.type
        if actual == expected:
            return True
        if (
            isinstance(expected, Ref)
            and not expected.mutable
            and strip_ref(actual) == expected.inner
        ):
            if not isinstance(actual, Ref):
                fix = Fix("borrow it with `&`", (Edit(Span(span.start, span.start), "&"),))
                self.err(
                    "K0301",
                    span,
                    f"mismatched types: expected {self.show(expected)}, found {self.show(actual)}",
                    fix=fix,
                )
                return False
            return True
        if isinstance(actual, Ref) and not actual.mutable and actual.inner == expected:
            self.err(
                "K0301",
                span,
                f"mismatched types: expected {self.show(expected)}, found the borrow"
                f" {self.show(actual)} ({what}); a borrow is not an owned value",
            )
            return False
        if isinstance(expected, Unit) and fn_result:
            return (
                self.err(
                    "K0309",
                    span,
                    f"this function returns `()` but the body gives {self.show(actual)}; declare `-> {actual.display(self.sig.dim_names)}`",
                )
                is None
            )
        code = "K0309" if fn_result else "K0301"
        self.err(
            code,
            span,
            f"mismatched types: expected {self.show(expected)}, found {self.show(actual)} ({what})",
        )
        return False

    # --- expressions --------------------------------------------------------------------------
    def expr(self, e: ast.Expr | None, expected: Type | None) -> Val:
        if e is None:
            return ERR_VAL  # the parser already reported the missing expression
        key = (type(self), type(e))
        method = _E_METHODS.get(key)
        if method is None:
            method = _E_METHODS[key] = getattr(key[0], "e_" + key[1].__name__, False)
        if method is False:  # pragma: no cover - every Expr class has a method
            return self.err("K0315", e.span, f"unsupported expression `{e.syntax}`")
        v = method(self, e, expected)
        syntax = e.syntax  # note_type, inline: once per expression
        start = syntax.offset
        green = syntax.green
        self.expr_types[(start, start + green.text_len, green.kind)] = v.type
        return v

    def note_type(self, e: ast.Expr, t: Type | None) -> None:
        """Record the type of the expression ``e`` (for the IDE and the borrow checker)."""
        syntax = e.syntax
        start = syntax.offset  # the key is (e.span.start, e.span.end, kind)
        green = syntax.green
        self.expr_types[(start, start + green.text_len, green.kind)] = t

    def e_ConstPath(self, e: ast.ConstPath, expected):
        """``f32::PI``, ``i32::MAX``: the constant's bits (sema/type_constants.py)."""
        tn, cn = e.type_name, e.name
        if tn is None or cn is None:
            return ERR_VAL
        t, c = tn.text, cn.text
        names = type_constants.names_of(t)
        if not names:
            return self.err(
                "K0203",
                tn.span,
                f"`{t}` names no constants (`f32`, `f64` and the integer types do)",
            )
        bits = type_constants.constant_bits(t, c)
        if bits is None:
            return self.err(
                "K0201",
                cn.span,
                f"`{t}` has no constant `{c}`; it has "
                + ", ".join(f"`{n}`" for n in names)
                + did_you_mean(c, names),
            )
        return self.const(Prim(t), bits, e.span)

    def e_UnsupportedExpr(self, e: ast.UnsupportedExpr, expected):
        return ERR_VAL  # the parser reported it (K0112)

    def e_ParenExpr(self, e: ast.ParenExpr, expected):
        return self.expr(e.inner, expected) if e.inner is not None else Val(None, UNIT)

    def e_Literal(self, e: ast.Literal, expected, negate: bool = False):
        tok = e.token
        if tok.kind in (K.TRUE_KW, K.FALSE_KW):
            return self.const(BOOL, 1 if tok.kind == K.TRUE_KW else 0, e.span)
        if tok.kind == K.STRING:
            return self.err("K0315", e.span, 'string literals can only be printed: `print("…")`')
        if tok.kind not in (K.INT, K.FLOAT):
            return ERR_VAL
        body, suffix = literals.split_suffix(tok.text)
        exp_elem = elem_of(expected) if expected is not None else None
        if suffix is not None:
            t = PRIMS[suffix]
        elif exp_elem is not None and (
            exp_elem.is_float or (exp_elem.is_int and tok.kind == K.INT)
        ):
            t = exp_elem
        else:
            t = I64 if tok.kind == K.INT else F64
        if t.is_float:
            try:
                bits = literals.float_bits(body, t, negate)
            except ValueError:
                return ERR_VAL  # malformed: the lexer reported it (K0005)
            if literals.is_infinite(bits, t):
                return self.err(
                    "K0307",
                    e.span,
                    f"literal `{_shown(tok.text, negate)}` is out of range for `{t}`: it rounds to infinity",
                )
            return self.const(t, bits, e.span)
        if tok.kind == K.FLOAT:
            return self.err("K0301", e.span, f"a float literal cannot have type `{t}`")
        lo, hi = literals.int_range(t)
        try:
            v = literals.int_value(body)
        except literals.LiteralTooLarge:
            return self.err(
                "K0307",
                e.span,
                f"literal `{_shown(tok.text, negate)}` does not fit in `{t}` (range {lo}..={hi})",
            )
        except ValueError:
            return ERR_VAL  # malformed: the lexer reported it (K0005)
        if negate:
            v = -v
        if not lo <= v <= hi:
            return self.err(
                "K0307",
                e.span,
                f"literal `{_shown(tok.text, negate)}` does not fit in `{t}` (range {lo}..={hi})",
            )
        return self.const(t, v, e.span)

    def e_PathExpr(self, e: ast.PathExpr, expected):
        ref = e.name
        name = ref.text if ref else ""
        b = self.lookup(name)
        if b is not None:
            if ref is not None:
                self.uses.append(Use(ref.span, b.kind, b.span, name))
            if b.kind == "dim":
                node = self.add(
                    Node("dim", (), (I64,), {"index": self.sig.dim_names.index(name)}), e.span
                )
                return Val(node.out(0), I64)
            if b.val.value is None and not b.val.is_err and not isinstance(b.val.type, Unit):
                return ERR_VAL
            return b.val
        found = self.env.const_named(name)
        if found is not None:
            self.uses.append(Use(e.name.span, "const", name=name))  # type: ignore[union-attr]
            c, home, home_name = found
            if c.value is None or c.type is None or home_name in home.bad_consts:
                return ERR_VAL  # the constant's own diagnostics are reported once, on it
            v = self.inline_const(c, home)
            return (
                v
                if v.is_err or self.check_type(c.type, v, e.span, f"constant `{name}`")
                else ERR_VAL
            )
        if name in self.env.fns:
            return self.err(
                "K0315",
                e.span,
                f"`{name}` is a function; functions are not values yet — call it: `{name}(…)`",
            )
        if name in self.env.failed_imports:
            return ERR_VAL  # its `use` is reported (K0209, K0210)
        assert self.frame is not None
        cands = self.frame.visible_names() | set(self.env.const_names())
        return self.err(
            "K0201", e.span, f"cannot find `{name}` in this scope" + did_you_mean(name, cands)
        )

    def inline_const(self, c: ConstDef, home: ModuleEnv) -> Val:
        """A constant's value, its initializer lowered here (language.md §3.2): its names
        are the constants of ``home``, the file that defines it, never a local variable
        of this function. The uses and expression types of the initializer are the
        constant's, not this function's: they lie in the constant's text, which moves apart
        from the function's (a reused lowering moves with the function), so they are not
        kept here — the constants' check records the uses, once per constant, in the
        module's (sema/consts.py). An imported constant's initializer is in another file:
        its nodes get no span here, and its diagnostics are not this file's either."""
        assert c.value is not None and c.type is not None
        # once per constant and lowering: an initializer names constants only, so its nodes
        # read nothing of a region and hash-cons to the same nodes wherever it is lowered
        # again (lowering it at each use was exponential: `const C2 = C1 + C1; …`)
        hit = self._inlined.get(id(c))
        if hit is not None:
            return hit
        v = self._inlined[id(c)] = self._inline_const(c, home)
        return v

    def _inline_const(self, c: ConstDef, home: ModuleEnv) -> Val:
        foreign = home is not self.env
        saved_env, saved_frame, saved_types = self.env, self.frame, self.expr_types
        n_uses, n_diags, self.foreign = len(self.uses), len(self.diags), self.foreign + foreign
        self.env, self.types.env, self.frame, self.expr_types = home, home, Frame(None, []), {}
        try:
            return self.expr(c.value, c.type)
        finally:
            self.env, self.types.env, self.frame = saved_env, saved_env, saved_frame
            self.expr_types, self.foreign = saved_types, self.foreign - foreign
            del self.uses[n_uses:]
            if foreign:
                del self.diags[n_diags:]  # checked in its own file

    def e_PrefixExpr(self, e: ast.PrefixExpr, expected):
        op = e.op
        if op is not None and op.kind == K.MINUS and isinstance(e.operand, ast.Literal):
            return self.e_Literal(e.operand, expected, negate=True)
        v = self.expr(e.operand, expected)
        return self.op("neg" if op is not None and op.kind == K.MINUS else "not", [v], e.span)

    def e_BinExpr(self, e: ast.BinExpr, expected):
        op = e.op
        if op is None or op.kind not in BIN_OPS:
            return ERR_VAL
        name = BIN_OPS[op.kind]
        if name in ("land", "lor"):
            return self.land_lor(e, name)
        exp = None if name in COMPARISONS or name in ("land", "lor") else expected
        if name in ("land", "lor"):
            exp = BOOL
        lhs, rhs = self.pair(*e.operands, exp)
        return self.op(name, [lhs, rhs], e.span)

    def pair(
        self, a: ast.Expr | None, b: ast.Expr | None, expected: Type | None
    ) -> tuple[Val, Val]:
        """Lower two operands; an unsuffixed literal takes its type from the other side."""
        if _is_untyped_literal(a) and not _is_untyped_literal(b):
            vb = self.expr(b, expected)
            va = self.expr(a, elem_of(vb.type) if not vb.is_err else expected)
            return va, vb
        va = self.expr(a, expected)
        vb = self.expr(
            b, elem_of(va.type) if _is_untyped_literal(b) and not va.is_err else expected
        )
        return va, vb

    def e_CastExpr(self, e: ast.CastExpr, expected):
        to = self.resolve_type(e.type)
        if to is None:
            return ERR_VAL
        if not isinstance(to, Prim):
            return self.err(
                "K0313",
                e.type.span if e.type else e.span,
                f"can only cast to a primitive type, not {self.show(to)}",
            )
        v = self.expr(e.expr, None)
        return self.op("cast", [v], e.span, {"to": to})

    def e_RefExpr(self, e: ast.RefExpr, expected):
        if e.is_mut:
            return self.err(
                "K0315",
                e.span,
                "`&mut x` is only allowed as a call argument or as the value of a `let`"
                " (`let r = &mut x;`)",
            )
        v = self.expr(e.operand, strip_ref(expected) if expected is not None else None)
        if v.is_err or v.value is None:
            return v
        return Val(v.value, Ref(strip_ref(v.type), False))

    def e_TupleExpr(self, e: ast.TupleExpr, expected):
        parts = e.elements
        hint = strip_ref(expected) if expected is not None else None
        hints: list[Type | None] = [None] * len(parts)
        if isinstance(hint, Struct) and hint.is_tuple and len(hint.fields) == len(parts):
            hints = [ft for _, ft in hint.fields]
        vals = []
        for x, h in zip(parts, hints, strict=True):
            v = self.expr(x, h)
            if not v.is_err and (v.value is None or not tuple_element_ok(v.type)):
                self.diags.append(tuple_element_error(v.type, x.span, self.sig.dim_names))
                v = ERR_VAL
            vals.append(v)
        if not vals or any(v.is_err for v in vals):
            return ERR_VAL  # reported (an empty one, `(,)`, by the parser)
        t = tuple_type(tuple(v.type for v in vals))
        return self.op("struct", vals, e.span, {"type": t})

    def e_ArrayExpr(self, e: ast.ArrayExpr, expected):
        elem = elem_of(expected) if expected is not None else None
        vals = []
        for x in e.elements:
            v = self.expr(x, elem)
            if elem is None and not v.is_err:
                elem = elem_of(v.type)
            vals.append(v)
        return self.op("array", vals, e.span)

    def e_BlockExpr(self, e: ast.BlockExpr, expected):
        return self.block(e.block, expected) if e.block is not None else ERR_VAL

    def e_IndexExpr(self, e: ast.IndexExpr, expected):
        if is_slice(e):
            return self.e_slice(e)
        v, idx = self.soa_element(e)
        return v if idx is None else self.soa_at(v, idx, e.span)

    def e_FieldExpr(self, e: ast.FieldExpr, expected):
        v, idx = self.soa_element(e)
        return v if idx is None else self.soa_at(v, idx, e.span)

    def soa_element(self, e: ast.IndexExpr | ast.FieldExpr) -> tuple[Val, list[Val] | None]:
        """``e`` (`x[i]`, `p.f`) lowered — or, where it is an element of a tensor of structs
        or a struct field of one (`bodies[i]`, `bodies[i].pos`), the tensor of structs that
        holds it and the indices (`bodies.pos` and `[i]`), so that `bodies[i].pos.x` reads
        the one tensor `bodies.pos.x` at `i` (language.md §8.1)."""
        if isinstance(e, ast.IndexExpr):
            base = self.expr(e.base, None)
            idx = [self.expr(i, I64) for i in e.indices]
            if not base.is_err and is_soa(base.type):
                if not self.soa_indices_ok(strip_ref(base.type), idx, e):
                    return ERR_VAL, None
                return base, idx
            t = None if base.is_err else strip_ref(base.type)
            if isinstance(t, Tensor) and 0 < len(idx) < t.rank:
                return self.partial_index(e, t), None
            return self.op("index", [base, *idx], e.span), None
        inner = unparen(e.base)
        if isinstance(inner, ast.FieldExpr) or (
            isinstance(inner, ast.IndexExpr) and not is_slice(inner)
        ):
            base, idx = self.soa_element(inner)  # not through `expr`: note its type here
            held = soa_elem(strip_ref(base.type)) if idx is not None else base.type  # type: ignore[arg-type]
            self.note_type(inner, held)
        else:
            base, idx = self.expr(e.base, None), None
        if base.is_err or e.field is None:
            return ERR_VAL, None
        if idx is None:
            return self.field_of(base, e), None
        v = self.field_of(base, e)  # the field's tensor (`bodies.x`) of the tensor of structs
        if v.is_err or is_soa(v.type):
            return v, None if v.is_err else idx
        return self.op("index", [v, *idx], e.span), None

    def partial_index(self, e: ast.IndexExpr, t: Tensor) -> Val:
        """`a[i]` of a tensor of rank 2 or more (K0304): Kera indexes every dimension at once.
        Where `a[i][j]…` gives every index in C's way, the fix writes `a[i, j]`."""
        outer: ast.IndexExpr = e
        chain = [e]
        while (
            (parent := outer.syntax.parent) is not None
            and parent.kind == K.INDEX_EXPR
            and (p := ast.IndexExpr(parent)).base is not None
            and p.base.syntax == outer.syntax
            and not is_slice(p)
        ):
            outer = p
            chain.append(p)
            if sum(len(c.indices) for c in chain) >= t.rank:
                break
        given = sum(len(c.indices) for c in chain)
        base = text_of(e.base.syntax.green).strip() if e.base is not None else "a"
        first = [text_of(i.syntax.green).strip() for i in e.indices]
        fix = None
        if given == t.rank and len(chain) > 1:
            texts = [text_of(i.syntax.green).strip() for c in chain for i in c.indices]
            new = f"{base}[{', '.join(texts)}]"
            fix = Fix(f"write `{new}`", (Edit(outer.span, new),))
            how = f"write `{new}`, not one index after another"
        else:
            rest = ", ".join(first + [".."] * (t.rank - len(first)))
            how = f"an element takes {t.rank} indices; a part of it is a slice, `{base}[{rest}]`"
        self.diags.append(
            error(
                "K0304",
                outer.span if fix is not None else e.span,
                f"expected {t.rank} index(es), found {len(e.indices)}: Kera indexes every"
                f" dimension of a tensor at once — {how}",
                fix=fix,
            )
        )
        return ERR_VAL  # the outer `[j]` sees an error and says nothing more

    def soa_indices_ok(self, t, idx: list[Val], e: ast.IndexExpr) -> bool:
        """Are ``idx`` one integer per dimension of the tensor of structs ``t`` (K0304,
        K0301 as `index` says them of a tensor)?"""
        if any(i.is_err for i in idx):
            return False
        rank = len(soa_shape(t))
        if len(idx) != rank:
            self.err("K0304", e.span, f"expected {rank} index(es), found {len(idx)}")
            return False
        for i, x in zip(idx, e.indices, strict=True):
            if not (isinstance(i.type, Prim) and i.type.is_int):
                self.err("K0301", x.span, f"an index must be an integer, found {self.show(i.type)}")
                return False
        return True

    def soa_at(self, v: Val, idx: list[Val], span: Span) -> Val:
        """The element at ``idx`` of the tensor of structs ``v``: a struct value built from
        one element of each field's tensor (a copy, §8.1)."""
        t = strip_ref(v.type)
        assert isinstance(t, Struct) and t.soa
        parts = []
        for k, (_, ft) in enumerate(t.fields):
            f = self.op("field", [v], span, {"index": k})
            parts.append(
                self.soa_at(f, idx, span) if is_soa(ft) else self.op("index", [f, *idx], span)
            )
        if any(p.is_err for p in parts):
            return ERR_VAL
        return self.op("struct", parts, span, {"type": soa_elem(t)})

    def soa_zeros(self, t: Struct, span: Span) -> Val:
        """`zeros()` as a tensor of structs ``t``: every field's tensor zero (§8.1)."""
        parts = [
            self.soa_zeros(ft, span)
            if isinstance(ft, Struct)
            else self.op("full", [self.const(ft.elem, 0, span)], span, {"type": ft})  # type: ignore[attr-defined]
            for _, ft in t.fields
        ]
        return self.op("struct", parts, span, {"type": t})

    def field_of(self, base: Val, e: ast.FieldExpr) -> Val:
        """The field ``e.field`` of the struct or tuple value ``base``."""
        assert e.field is not None
        t = strip_ref(base.type)
        if not isinstance(t, Struct):
            return self.err(
                "K0204", e.field.span, f"{self.show(base.type)} has no field `{e.field.text}`"
            )
        i = t.field_index(e.field.text)
        if t.is_tuple:
            if i is None:
                n = len(t.fields)
                return self.err(
                    "K0204",
                    e.field.span,
                    f"the tuple {self.show(t)} has no field `{e.field.text}`: its "
                    f"{n} element{'s are' if n != 1 else ' is'} "
                    + ", ".join(f"`.{k}`" for k in range(n)),
                )
            return self.op("field", [base], e.span, {"index": i})
        if i is not None:
            self.uses.append(Use(e.field.span, "field", name=e.field.text, owner=t.name))
        if i is None:
            return self.err(
                "K0204",
                e.field.span,
                f"struct `{t.name}` has no field `{e.field.text}`"
                + did_you_mean(e.field.text, [f for f, _ in t.fields]),
            )
        return self.op("field", [base], e.span, {"index": i})

    def e_StructLit(self, e: ast.StructLit, expected):
        name = e.name.text if e.name else ""
        t = self.env.structs.get(name)
        if t is None and name in self.env.failed_imports:
            return ERR_VAL  # its `use` is reported (K0209, K0210)
        if t is None:
            return self.err(
                "K0203",
                e.name.span if e.name else e.span,
                f"unknown struct `{name}`" + did_you_mean(name, self.env.structs),
            )
        self.uses.append(Use(e.name.span, "struct", name=name))  # type: ignore[union-attr]
        given: dict[str, Val] = {}
        for f in e.fields:
            fname = f.name.text if f.name else ""
            i = t.field_index(fname)
            if i is not None and f.name is not None:
                self.uses.append(Use(f.name.span, "field", name=fname, owner=name))
            if i is None:
                self.err(
                    "K0204",
                    f.span,
                    f"struct `{name}` has no field `{fname}`"
                    + did_you_mean(fname, [x for x, _ in t.fields]),
                )
                continue
            if fname in given:
                self.err("K0202", f.span, f"field `{fname}` is given twice")
                continue
            ft = t.fields[i][1]
            v = self.expr(f.value, ft)
            if not v.is_err and self.field_shape_differs(name, fname, ft, v, f.span):
                v = ERR_VAL
            if not v.is_err and not self.check_type(ft, v, f.span, f"field `{fname}`"):
                v = ERR_VAL
            given[fname] = v
        missing = [f for f, _ in t.fields if f not in given]
        if missing:
            return self.err(
                "K0312",
                e.span,
                f"missing field(s) of `{name}`: " + ", ".join(f"`{m}`" for m in missing),
            )
        return self.op("struct", [given[f] for f, _ in t.fields], e.span, {"type": t})

    def field_shape_differs(self, struct: str, fname: str, ft: Type, v: Val, span: Span) -> bool:
        """K0302: a tensor of the field's element type and rank, but another shape."""
        at = v.type
        if not (isinstance(ft, Tensor) and isinstance(at, Tensor)) or at == ft:
            return False
        if at.elem != ft.elem or at.rank != ft.rank or at.space != ft.space:
            return False
        k = next(k for k, (a, b) in enumerate(zip(at.shape, ft.shape, strict=True)) if a != b)
        dims = self.sig.dim_names
        self.err(
            "K0302",
            span,
            f"field `{fname}` of `{struct}` is {self.show(ft)}, but this is {self.show(at)}:"
            f" dimension {k} is {display_dim(at.shape[k], dims)}, not"
            f" {display_dim(ft.shape[k], dims)}",
        )
        return True

    def e_RangeExpr(self, e: ast.RangeExpr, expected):
        if e.is_open:
            return ERR_VAL  # outside a slice's brackets the parser reported the missing bound
        lo, hi = self.pair(*e.operands, I64)
        return self.op("range", [lo, hi], e.span, {"inclusive": e.inclusive})


_E_METHODS: dict[tuple[type, type], object] = {}  # (lowering, AST class) -> e_<class> or False


def is_tensor(t: Type) -> bool:
    return isinstance(strip_ref(t), Tensor)


def range_elem(t: Type) -> Prim | None:
    return t.elem if isinstance(t, RangeType) else None
