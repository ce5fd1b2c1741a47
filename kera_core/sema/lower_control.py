"""Assignment and structured control flow (`if`, `for`, `while`) as region nodes.

Forms (see docs/graph.md):

- ``if``: inputs ``cond, carried…, captured…``; regions ``then`` and ``else`` take
  ``(carried…, captured…)`` and yield ``(value?, carried…)``; outputs the same.
- ``for``: inputs ``range, carried…, captured…``; the body region takes
  ``(i, carried…, captured…)`` and yields the next ``carried…``; outputs the final ones.
- ``while``: inputs ``carried…, captured…``; region ``cond`` yields one bool and
  region ``body`` yields the next ``carried…``; both take ``(carried…, captured…)``.
"""

from __future__ import annotations

from kera_core.diagnostics import Edit, Fix, warning
from kera_core.ir.node import Node, Region
from kera_core.ir.types import (
    BOOL,
    I64,
    UNIT,
    Prim,
    RangeType,
    Ref,
    Struct,
    Sym,
    Tensor,
    Type,
    is_soa,
    soa_elem,
    soa_shape,
    strip_ref,
)
from kera_core.sema import literals
from kera_core.sema.env import Use, did_you_mean
from kera_core.sema.frames import ERR_VAL, NEVER, Binding, Frame, Scope, Val
from kera_core.sema.lower_exits import may_exit
from kera_core.sema.lower_views import is_slice
from kera_core.source import Span
from kera_core.syntax import ast
from kera_core.syntax.kinds import SyntaxKind as K

COMPOUND = {
    K.PLUSEQ: "add", K.MINUSEQ: "sub", K.STAREQ: "mul", K.SLASHEQ: "div", K.PERCENTEQ: "rem",
    K.AMPEQ: "and", K.PIPEEQ: "or", K.CARETEQ: "xor", K.SHLEQ: "shl", K.SHREQ: "shr",
}  # fmt: skip


def soa_chain(target) -> tuple[ast.Expr, list[ast.FieldExpr]] | None:
    """A place `x[i]`, `p.f` or `x[i].f.g`: the place the fields are taken of (an element
    `x[i]`, or a struct `p`) and the fields from the outermost (`g`, `f`); None for others."""
    fields: list[ast.FieldExpr] = []
    while True:
        while isinstance(target, ast.ParenExpr):
            target = target.inner
        if isinstance(target, ast.FieldExpr) and target.field is not None:
            fields.append(target)
            target = target.base
            if not isinstance(target, ast.FieldExpr | ast.IndexExpr | ast.ParenExpr):
                return (target, fields)
            continue
        if isinstance(target, ast.IndexExpr) and not is_slice(target):
            return (target, fields)
        return None


class ControlFlow:
    """Mixin of :class:`kera_core.sema.lower.FnLowering` for assignment and control flow."""

    # --- assignment ------------------------------------------------------------------
    def e_AssignExpr(self, e: ast.AssignExpr, expected):
        op = e.op
        if op is None:
            return ERR_VAL
        compound = COMPOUND.get(op.kind)
        lhs, rhs = e.operands

        def value(current: Val, target_type) -> Val:
            if compound is None:
                return self.expr(rhs, target_type)
            r = self.expr(rhs, target_type)
            return self.op(compound, [current, r], e.span)

        self.assign_place(lhs, value, compound is not None, e.span)
        return Val(None, UNIT)

    def index_store(self, target: ast.IndexExpr, make, needs_current: bool, span: Span):
        """The store of ``make(current, type)`` into the element ``target`` (`x[i]`) of the
        value ``base`` — of a tensor of structs too (`bodies[i] = Body { … }`, §8.1)."""

        def store(base: Val, base_type) -> Val:
            if is_soa(base_type):
                return self.soa_store(base, base_type, target, [], make, needs_current, span)
            t = base_type.elem if hasattr(base_type, "elem") else None
            if needs_current:  # `x[i] += v`: read the element first
                idx = [self.expr(i, I64) for i in target.indices]
                v = make(self.op("index", [base, *idx], target.span), t)
            else:  # `x[i] = v`: the right-hand side is evaluated first
                v = make(None, t)
                idx = [self.expr(i, I64) for i in target.indices]
            return self.op("update", [base, *idx, v], span)

        return store

    def field_store(self, target: ast.FieldExpr, make, needs_current: bool, span: Span):
        """The store of ``make(current, type)`` into the field ``target`` (`p.f`) of the
        struct value ``base``."""

        def set_field(base: Val, base_type) -> Val:
            i = self.field_index(base_type, target)
            if i is None:
                return ERR_VAL
            cur = self.op("field", [base], target.span, {"index": i}) if needs_current else None
            v = make(cur, base_type.fields[i][1])
            return self.op("set_field", [base, v], span, {"index": i})

        return set_field

    def field_index(self, t, target: ast.FieldExpr) -> int | None:
        """The index of the field ``target`` names in the struct type ``t``; None after
        K0204."""
        assert target.field is not None
        fname = target.field.text
        if not isinstance(t, Struct):
            self.err("K0204", target.field.span, f"{self.show(t)} has no field `{fname}`")
            return None
        i = t.field_index(fname)
        if i is None:
            self.err(
                "K0204",
                target.field.span,
                f"struct `{t.name}` has no field `{fname}`"
                + did_you_mean(fname, [f for f, _ in t.fields]),
            )
            return None
        if not t.is_tuple:
            self.uses.append(Use(target.field.span, "field", name=fname, owner=t.name))
        return i

    def soa_store(
        self, base: Val, t: Struct, ix: ast.IndexExpr, fields, make, needs_current: bool, span
    ) -> Val:
        """Store ``make(current, type)`` into `bodies[i].f.g` of the tensor of structs
        ``base`` (`bodies`): into the one tensor `bodies.f.g` at `i` — or, where `g` is a
        struct (or there are no ``fields``), into each of its fields' tensors (§8.1)."""
        path: list[int] = []
        place: Type = t
        for fe in reversed(fields):  # outermost field first: `bodies[i].f` before `.g`
            i = self.field_index(place if isinstance(place, Struct) else place.elem, fe)  # type: ignore[attr-defined]
            if i is None:
                return ERR_VAL
            path.append(i)
            place = place.fields[i][1]  # type: ignore[attr-defined]
        leaves = [base]
        for i in path:
            leaves.append(self.op("field", [leaves[-1]], ix.span, {"index": i}))
        at = leaves[-1]
        elem = soa_elem(place) if is_soa(place) else place.elem  # type: ignore[attr-defined]
        if needs_current:  # `bodies[i].x += v`: read the element first
            idx = [self.expr(i, I64) for i in ix.indices]
            if not self.soa_indices_ok(t, idx, ix):
                return ERR_VAL
            if is_soa(place):
                cur = self.soa_at(at, idx, ix.span)
            else:
                cur = self.op("index", [at, *idx], ix.span)
            v = make(cur, elem)
        else:  # `bodies[i] = v`: the right-hand side is evaluated first
            v = make(None, elem)
            idx = [self.expr(i, I64) for i in ix.indices]
            if not self.soa_indices_ok(t, idx, ix):
                return ERR_VAL
        if v.is_err:
            return ERR_VAL
        if not self.check_type(elem, v, span, "assignment to an element"):
            return ERR_VAL
        new = self.soa_update(at, place, idx, v, span)
        for k, i in reversed(list(enumerate(path))):
            new = self.op("set_field", [leaves[k], new], span, {"index": i})
        return new

    def soa_update(self, at: Val, t, idx: list[Val], v: Val, span: Span) -> Val:
        """The tensor (of structs) ``at`` of type ``t`` with the element at ``idx`` set to
        ``v``: one `update` per field's tensor."""
        if not is_soa(t):
            return self.op("update", [at, *idx, v], span)
        new = at
        for k, (_, ft) in enumerate(t.fields):
            part = self.op("field", [v], span, {"index": k})
            leaf = self.op("field", [new], span, {"index": k})
            new = self.op(
                "set_field", [new, self.soa_update(leaf, ft, idx, part, span)], span, {"index": k}
            )
        return new

    def assign_place(self, target, make, needs_current: bool, span: Span) -> Val:
        """Store ``make(current, type)`` into the place ``target``; returns the new root value."""
        if isinstance(target, ast.ParenExpr):
            return self.assign_place(target.inner, make, needs_current, span)
        if isinstance(target, ast.PathExpr) and (ref := target.name) is not None:
            name = ref.text
            b = self.lookup(name)
            if b is None:
                if self.env.const_named(name) is not None:
                    return self.constant_not_place(ref, target.span, "assign to constant `{}`")
                return self.expr(target, None)  # reports the unknown name
            self.uses.append(Use(ref.span, b.kind, b.span, name))
            if b.kind == "dim":
                return self.err(
                    "K0311", target.span, f"`{name}` is a dimension and cannot be assigned"
                )
            if not b.mutable:
                fix = Fix(
                    f"make `{name}` mutable", (Edit(Span(b.span.start, b.span.start), "mut "),)
                )
                what = "parameter" if b.kind == "param" else "variable"
                return self.err(
                    "K0405", target.span,
                    f"cannot assign to immutable {what} `{name}`",
                    fix=fix if b.kind != "loop" else None,
                )  # fmt: skip
            if isinstance(b.val.type, Ref) and not b.val.type.mutable:
                return self.err(
                    "K0405",
                    target.span,
                    f"cannot assign through the shared borrow `{name}`; declare it `&mut`",
                )
            if b.val.is_err:
                return b.val
            t = strip_ref(b.val.type)
            new = make(b.val, t)
            if new.is_err:
                return new
            if not self.check_type(t, new, span, f"assignment to `{name}`"):
                return ERR_VAL
            self._set(name, Val(new.value, t))
            if new.value is not None:
                self.prov.node_names.setdefault(new.value.node, name)
            return new
        if is_slice(target):

            def store_view(base: Val, base_type) -> Val:
                # the bounds are evaluated before the value: they fix the value's type
                spec = self.view_spec(Val(base.value, base_type), target)
                if spec is None:
                    return ERR_VAL
                current = self.slice_val(base, spec, target.span) if needs_current else None
                v = make(current, spec.type)
                if v.is_err or not self.check_type(spec.type, v, span, "assignment to a slice"):
                    return ERR_VAL
                return self.update_slice_val(base, spec, v, span)

            return self.assign_place(target.base, store_view, True, span)
        chain = soa_chain(target)
        if chain is not None and not chain[1]:  # `x[i] = v`, `bodies[i] = Body { … }`
            store = self.index_store(target, make, needs_current, span)
            return self.assign_place(chain[0].base, store, True, span)  # type: ignore[attr-defined]
        if chain is not None and not isinstance(chain[0], ast.IndexExpr):  # `p.f.g = v`
            store = self.field_store(chain[1][0], make, needs_current, span)
            return self.assign_place(chain[1][0].base, store, True, span)
        if chain is not None:  # `a[i].f.g = v`: of a tensor of structs, `a.f.g[i] = v` (§8.1)
            ix, fields = chain
            plain, current = make, needs_current
            for fe in fields:  # the outermost first: `g` is stored into `f`, into `a[i]`
                plain = self.field_store(fe, plain, current, span)
                current = True
            elements = self.index_store(ix, plain, True, span)  # type: ignore[arg-type]

            def store(base: Val, base_type) -> Val:
                if is_soa(base_type):
                    return self.soa_store(base, base_type, ix, fields, make, needs_current, span)
                return elements(base, base_type)

            return self.assign_place(ix.base, store, True, span)  # type: ignore[attr-defined]
        if target is None:
            return ERR_VAL
        return self.err(
            "K0311",
            target.span,
            "cannot assign to this expression; assign to a variable, an element `x[i]` or a field `p.x`",
        )

    # --- if --------------------------------------------------------------------------
    def e_IfExpr(self, e: ast.IfExpr, expected):
        cond = self.expr(e.condition, BOOL)
        if not cond.is_err and cond.type != BOOL:
            self.err(
                "K0301",
                e.condition.span,
                f"an `if` condition must be `bool`, found {self.show(cond.type)}",
            )
            cond = ERR_VAL
        then_b = e.then_branch
        else_b = e.else_branch
        if expected is None:  # let a typed branch type an untyped literal in the other
            for b in (then_b, else_b):
                tail = b.tail if isinstance(b, ast.Block) else b
                expected = expected or self.peek_type(tail)

        def then_fn():
            return self.block(then_b, expected) if then_b is not None else ERR_VAL

        def else_fn(_):
            if isinstance(else_b, ast.Block):
                return self.block(else_b, expected)
            if isinstance(else_b, ast.IfExpr):
                return self.expr(else_b, expected)
            return Val(None, UNIT)

        nodes = [x.syntax for x in (then_b, else_b) if x is not None]
        v = self.if_node(cond, then_fn, else_fn, nodes, e.span)
        if not v.is_err and v.value is not None and else_b is None:
            return self.err(
                "K0301",
                e.span,
                f"an `if` without `else` cannot produce a value (found {self.show(v.type)})",
            )
        return v

    def if_node(
        self,
        cond: Val,
        then_fn,
        else_fn,
        syntax_nodes: list,
        span: Span,
        what: str = "",
        names: list[str] | None = None,
    ) -> Val:
        """An `if` node whose branches are built by ``then_fn()`` and ``else_fn(then_value)``
        (``what``: the construct a type mismatch of the branches names, "`if` and `else`";
        ``names``: the carried names, when the caller knows them)."""
        if names is None:
            names = self.carried_names(syntax_nodes)
        outer = self.frame
        f1 = self.open_frame(names, [])
        self.frame = f1
        v1 = then_fn()
        fin1 = self.finals(f1)
        self.frame = outer
        f2 = self.open_frame(names, [], share=f1)
        self.frame = f2
        v2 = else_fn(v1)
        fin2 = self.finals(f2)
        self.frame = outer
        if cond.is_err or v1.is_err or v2.is_err:
            return ERR_VAL
        if v1.type is NEVER and v2.type is NEVER:
            result = Val(None, NEVER)
        elif v1.type is NEVER:
            v1 = self.zero_of(v2.type, span)
        elif v2.type is NEVER:
            v2 = self.zero_of(v1.type, span)
        has_value = v1.value is not None or v2.value is not None
        if has_value and (v1.type != v2.type or v1.value is None or v2.value is None):
            return self.err(
                "K0301",
                span,
                f"{what or '`if` and `else`'} have different types: "
                f"{self.show(v1.type)} and {self.show(v2.type)}",
            )
        params = tuple(f2.params)
        r1 = Region(params, tuple(([v1.value] if has_value else []) + fin1))
        r2 = Region(params, tuple(([v2.value] if has_value else []) + fin2))
        self.regions[r1.hash] = r1
        self.regions[r2.hash] = r2
        types = ([v1.type] if has_value else []) + [f2.params[i] for i in range(len(names))]
        inputs = [cond.value] + self._initial(names) + f2.capture_inputs
        node = self.add(
            Node("if", tuple(inputs), tuple(types), {"results": tuple(types)}, (r1.hash, r2.hash)),
            span,
        )
        self.rebind(names, node, 1 if has_value else 0)
        if v1.type is NEVER and v2.type is NEVER:
            return result
        return Val(node.out(0), v1.type) if has_value else Val(None, UNIT)

    def _initial(self, names: list[str]):
        out = []
        for n in names:
            b = self.lookup(n)
            out.append(b.val.value)
        return out

    # --- match -----------------------------------------------------------------------
    def e_MatchExpr(self, e: ast.MatchExpr, expected):
        """`match s { p => a, q => b, _ => c }`: `s` evaluated once, then a chain
        `if s is p { a } else if s is q { b } else { c }` (language.md §6.18)."""
        s_expr = e.scrutinee
        s = self.expr(s_expr, None)
        if not s.is_err and not _matchable(s.type):
            s = self.err(
                "K0308",
                s_expr.span,  # type: ignore[union-attr]
                f"`match` takes an integer or a `bool`, found {self.show(s.type)}",
            )
        arm_list = e.arm_list
        if arm_list is None:
            return ERR_VAL  # the parser reported the missing `{`
        arms = e.arms
        if not arms:
            return self.err("K0329", arm_list.span, "this `match` has no arms: add `_ => …`")
        wild = next((i for i, a in enumerate(arms) if _is_wildcard(a.pattern)), None)
        if wild is not None:
            for a in arms[wild + 1 :]:
                self.diags.append(
                    warning("K0330", a.span, "unreachable arm: the `_` arm above matches first")
                )
            arms = arms[: wild + 1]
        exhaustive = wild is not None or (
            not s.is_err and _covers([a.pattern for a in arms], s.type)
        )
        if expected is None:  # let a typed arm type an untyped literal in another
            for a in arms:
                expected = expected or self.peek_type(a.body)
        home = self.frame
        last = len(arms) - 1
        # the names any arm assigns, threaded through every `if` of the chain (once, not
        # once per arm over the arms left: a match of n arms is O(n))
        carried = self.carried_names([a.syntax for a in arms])

        def chain(i: int) -> Val:
            arm = arms[i]
            here = s if s.is_err else self.capture(s, home)  # type: ignore[arg-type]
            if i == last and exhaustive:  # every value left matches the last arm
                if i != wild:
                    self._pattern_test(arm.pattern, here, arm.span)  # (its checks only)
                return self.expr(arm.body, expected)
            cond = self._pattern_test(arm.pattern, here, arm.span)
            if i == last:  # not exhaustive (reported): an `else` of `()`
                return self.if_node(
                    cond,
                    lambda: self.expr(arm.body, expected),
                    lambda _: ERR_VAL,
                    [],
                    e.span,
                    names=carried,
                )
            return self.if_node(
                cond,
                lambda: self.expr(arm.body, expected),
                lambda _: chain(i + 1),
                [],
                e.span,
                "the arms of a `match`",
                names=carried,
            )

        v = chain(0)
        if not exhaustive and not s.is_err:
            what = "`true` and `false`" if s.type == BOOL else "every value"
            return self.err(
                "K0329",
                s_expr.span,  # type: ignore[union-attr]
                f"this `match` does not cover {what} of {self.show(s.type)}: add `_ => …` as "
                "the last arm",
            )
        return v

    def _pattern_test(self, pat, s: Val, span: Span) -> Val:
        """The `bool` "``s`` matches ``pat``" (a pattern node, language.md §6.18)."""
        if pat is None or s.is_err:
            return ERR_VAL  # the parser reported a missing pattern
        k = pat.kind
        if k == K.OR_PAT:
            acc: Val | None = None
            for alt in pat.children():
                c = self._pattern_test(alt, s, span)
                acc = c if acc is None else self.op("or", [acc, c], span)
            return acc if acc is not None else ERR_VAL
        if k == K.RANGE_PAT:
            bounds = list(pat.children())
            if s.type == BOOL:
                return self.err("K0320", pat.span, "a range pattern matches integers, not a `bool`")
            if len(bounds) != 2:
                return ERR_VAL  # the parser reported the missing bound
            lo = self._pattern_atom(bounds[0], s.type)
            hi = self._pattern_atom(bounds[1], s.type)
            ge = self.op("ge", [s, lo], span)
            return self.op("and", [ge, self.op("le", [s, hi], span)], span)
        v = self._pattern_atom(pat, s.type)
        return self.op("eq", [s, v], span)

    def _pattern_atom(self, node, t: Type) -> Val:
        """A pattern's literal, `-` literal or constant as a value of the matched type."""
        e = ast.as_expr(node)
        if e is None:
            return ERR_VAL
        if isinstance(e, ast.PathExpr):
            name = e.name_text
            if name == "_":
                return self.err(
                    "K0320",
                    e.span,
                    "`_` is a whole pattern: write it alone, as the last arm `_ => …`",
                )
            if name is not None and self.lookup(name) is not None:
                return self.err(
                    "K0320",
                    e.span,
                    f"a pattern names a constant, and `{name}` is a variable: compare with "
                    f"`if` instead, or make it a `const`",
                )
        v = self.expr(e, t)
        if not v.is_err and v.type != t:
            return self.err(
                "K0320",
                e.span,
                f"this pattern is a {self.show(v.type)}, but the matched value is a {self.show(t)}",
            )
        return v

    # --- for -------------------------------------------------------------------------
    def e_ForExpr(self, e: ast.ForExpr, expected):
        depth = len(self.loops)
        try:
            return self._for(e)
        finally:
            while len(self.loops) > depth:
                self._end_loop()

    def _for(self, e: ast.ForExpr):
        it = e.iterable
        bare = it
        while isinstance(bare, ast.ParenExpr):
            bare = bare.inner
        if isinstance(bare, ast.RefExpr) and bare.is_mut:
            return self.err(
                "K0112",
                it.span,
                "`for` over `&mut x` (a mutable place per element) is not in Kera: write the "
                "elements by index, `for i in 0..N { x[i] = …; }`",
            )
        rng = self.expr(it, None)
        if rng.is_err:
            return ERR_VAL
        tensor = strip_ref(rng.type)
        if is_soa(tensor):  # `for b in bodies`: `b` is `bodies[i]`, a copy (§8.1)
            tensor = Tensor(I64, soa_shape(tensor))  # type: ignore[arg-type]  (its shape)
        if isinstance(tensor, Tensor):
            if tensor.rank != 1:
                return self.err(
                    "K0112",
                    it.span,
                    f"`for` over the rows of {self.show(rng.type)} needs views, which Kera does "
                    "not have yet: iterate the indices, `for i in 0..M { … x[i, j] … }`",
                )
            tval = rng
            rng = self.elements_range(tensor, it.span)
        elif not isinstance(rng.type, RangeType):
            return self.err(
                "K0301",
                it.span,
                f"`for` iterates over a range `a..b` or a 1-D tensor, found {self.show(rng.type)}",
            )
        if e.body is None:
            return ERR_VAL
        var = e.var.text if e.var else "_"
        var_span = e.var.span if e.var else e.span
        if e.var is not None:
            self.check_shadow(var, e.var.span)
        exits = self._begin_loop(e.body.syntax, e.span)
        names = [n for n in self.carried_names([e.body.syntax]) if n != var]
        outer = self.frame
        elem = rng.type.elem
        f = self.open_frame(names, [elem])
        self.frame = f
        if isinstance(tensor, Tensor):
            # `for v in x { B }` is `for i in 0..N { let v = x[i]; B }` (language.md §6.9):
            # the hidden index `#i` (no name a user can write), the element read first thing
            # in the body — inside the guard of a body that may exit, as the `let` would be
            base = self.iterated(bare, tval, outer)
            f.scopes.append(
                Scope(
                    {"#i": Binding("#i", Val(self.param(0, elem), elem), False, var_span, "loop")}
                )
            )

            def run_body():
                assert self.frame is not None
                x = self.lookup_iterated(base)
                i = self.lookup("#i")
                assert i is not None
                if is_soa(x.type):
                    v = self.soa_at(x, [i.val], it.span)
                else:
                    v = self.op("index", [x, i.val], it.span)
                self.frame.scopes.append(Scope({var: Binding(var, v, False, var_span, "loop")}))
                try:
                    return self.block(e.body, None)
                finally:
                    self.frame.scopes.pop()

        else:
            f.scopes.append(
                Scope({var: Binding(var, Val(self.param(0, elem), elem), False, var_span, "loop")})
            )

            def run_body():
                return self.block(e.body, None)

        if exits:
            self.bind_flag(self.loops[-1][1], self.false(), e.span)
            guard = self.still_running([self.loops[-1][0], *self.exit_flags()[:1]], e.span)
            if self.lookup("$ret") is None:
                guard = self.still_running([self.loops[-1][0]], e.span)
            body = self.if_node(
                guard,
                run_body,
                lambda _: Val(None, UNIT),
                [e.body.syntax],
                e.span,
            )
        else:
            body = run_body()
        fin = self.finals(f)
        self.frame = outer
        if body.is_err:
            return ERR_VAL
        region = Region(tuple(f.params), tuple(fin))
        self.regions[region.hash] = region
        types = tuple(f.params[1 : 1 + len(names)])
        inputs = [rng.value] + self._initial(names) + f.capture_inputs
        node = self.add(
            Node("for", tuple(inputs), types, {"results": types}, (region.hash,)), e.span
        )
        self.rebind(names, node, 0)
        return Val(None, UNIT)

    def elements_range(self, t: Tensor, span: Span) -> Val:
        """`0..N` over the first (only) dimension of ``t``, as `for i in 0..N` builds it."""
        n = self.dim_size(t.shape[0], span)
        return self.op("range", [self.const(I64, 0, span), n], span, {"inclusive": False})

    def dim_size(self, d, span: Span) -> Val:
        """A dimension's size as an `i64` value: a number, a dimension (`N`), or a dimension
        expression computed as `(Σ c·N + k) / d` — exact, since it was checked on entry
        (language.md §7.5), as `for i in 0..N - 1` would compute it."""
        if isinstance(d, int):
            return self.const(I64, d, span)
        if isinstance(d, Sym):
            return Val(self.add(Node("dim", (), (I64,), {"index": d.index}), span).out(0), I64)
        total = self.const(I64, d.const, span)
        for k, c in d.terms:
            term = self.dim_size(Sym(k), span)
            if c != 1:
                term = self.op("mul", [self.const(I64, c, span), term], span)
            total = self.op("add", [total, term], span)
        if d.div != 1:
            total = self.op("div", [total, self.const(I64, d.div, span)], span)
        return total

    def iterated(self, bare: ast.Expr | None, value: Val, home: Frame):
        """What the body of `for v in it` reads its elements from: the name `x` of `x` or
        `&x` — looked up in the body as `x[i]` would look it up, so the graph is the index
        loop's — or else the expression's ``value``, evaluated once before the loop in the
        frame ``home``."""
        if isinstance(bare, ast.RefExpr):
            bare = bare.operand
            while isinstance(bare, ast.ParenExpr):
                bare = bare.inner
        if isinstance(bare, ast.PathExpr) and bare.name is not None:
            if self.lookup(bare.name.text, home) is not None:  # (a constant is a value)
                return bare.name.text
        return (value, home)

    def lookup_iterated(self, base) -> Val:
        if isinstance(base, str):
            b = self.lookup(base)
            assert b is not None
            return b.val
        return self.capture(*base)

    def capture(self, val: Val, home: Frame, frame: Frame | None = None) -> Val:
        """``val``, a value of frame ``home``, as seen in ``frame`` (the current one):
        captured by every frame in between, as :meth:`lookup` captures a local's value."""
        frame = frame or self.frame
        assert frame is not None
        if frame is home or frame.parent is None:
            return val
        key = (id(home), val.value)
        known = frame.seen_from.get(key)
        if known is not None:
            return known
        seen = self.capture(val, home, frame.parent)
        idx = frame.captures.get(seen.value)
        if idx is None:
            idx = len(frame.params)
            frame.params.append(strip_ref(seen.type))
            frame.captures[seen.value] = idx
            frame.capture_inputs.append(seen.value)
        out = frame.seen_from[key] = Val(self.param(idx, frame.params[idx]), seen.type)
        return out

    def _begin_loop(self, body_syntax, span) -> bool:
        """Set up `break`/`continue` flags when the body needs them; True if it does."""
        if not may_exit(body_syntax):
            return False
        depth = len(self.loops)
        brk, cont = f"$brk{depth}", f"$cont{depth}"
        self.bind_flag(brk, self.false(), span)
        self.loops.append((brk, cont))
        return True

    def _end_loop(self) -> None:
        brk, _ = self.loops.pop()
        for scope in reversed(self.frame.scopes):
            if brk in scope:
                del scope[brk]
                break

    # --- while -----------------------------------------------------------------------
    def e_WhileExpr(self, e: ast.WhileExpr, expected):
        depth = len(self.loops)
        try:
            return self._while(e)
        finally:
            while len(self.loops) > depth:
                self._end_loop()

    def e_LoopExpr(self, e: ast.LoopExpr, expected):
        """`loop { body }` is lowered exactly as `while true { body }` (language.md §6.10)."""
        return self.e_WhileExpr(e, expected)  # type: ignore[arg-type]

    def _while(self, e: ast.WhileExpr | ast.LoopExpr):
        condition = e.condition
        if e.body is None or (condition is None and isinstance(e, ast.WhileExpr)):
            return ERR_VAL
        exits = self._begin_loop(e.body.syntax, e.span)
        heads = [] if condition is None else [condition.syntax]
        names = self.carried_names([*heads, e.body.syntax])

        def cond_fn() -> Val:
            return self.true() if condition is None else self.expr(condition, BOOL)

        outer = self.frame
        fc: Frame = self.open_frame(names, [])
        self.frame = fc
        if exits:
            flags = [self.loops[-1][0]] + (["$ret"] if self.lookup("$ret") is not None else [])
            cond = self.if_node(
                self.still_running(flags, e.span),
                cond_fn,
                lambda _: self.false(),
                heads,
                e.span,
            )
        else:
            cond = cond_fn()
        self.frame = outer
        if not cond.is_err and cond.type != BOOL and condition is not None:
            self.err(
                "K0301",
                condition.span,
                f"a `while` condition must be `bool`, found {self.show(cond.type)}",
            )
            cond = ERR_VAL
        fb = self.open_frame(names, [], share=fc)
        self.frame = fb
        if exits:
            self.bind_flag(self.loops[-1][1], self.false(), e.span)
        body = self.block(e.body, None)
        fin = self.finals(fb)
        self.frame = outer
        if cond.is_err or body.is_err:
            return ERR_VAL
        params = tuple(fb.params)
        rc = Region(params, (cond.value,))
        rb = Region(params, tuple(fin))
        self.regions[rc.hash] = rc
        self.regions[rb.hash] = rb
        types = tuple(params[: len(names)])
        inputs = self._initial(names) + fb.capture_inputs
        node = self.add(
            Node("while", tuple(inputs), types, {"results": types}, (rc.hash, rb.hash)), e.span
        )
        self.rebind(names, node, 0)
        return Val(None, UNIT)


def _matchable(t: Type) -> bool:
    return t == BOOL or (isinstance(t, Prim) and t.is_int)


def _is_wildcard(pat) -> bool:
    return pat is not None and pat.kind == K.PATH_EXPR and ast.PathExpr(pat).name_text == "_"


def _atom_value(node) -> int | None:
    """The value of a literal pattern atom (`3`, `-3`, `true`), None for others."""
    negate = node.kind == K.PREFIX_EXPR
    if negate:
        node = node.child_of_kind(K.LITERAL)
    if node is None or node.kind != K.LITERAL:
        return None
    tok = ast.Literal(node).token
    if tok.kind in (K.TRUE_KW, K.FALSE_KW):
        return None if negate else int(tok.kind == K.TRUE_KW)
    if tok.kind != K.INT:
        return None
    try:
        v = literals.int_value(literals.split_suffix(tok.text)[0])
    except ValueError:
        return None
    return -v if negate else v


def _intervals(pat) -> list[tuple[int, int]]:
    if pat is None:
        return []
    if pat.kind == K.OR_PAT:
        return [iv for alt in pat.children() for iv in _intervals(alt)]
    if pat.kind == K.RANGE_PAT:
        bounds = [_atom_value(b) for b in pat.children()]
        if len(bounds) == 2 and bounds[0] is not None and bounds[1] is not None:
            return [(bounds[0], bounds[1])]
        return []
    v = _atom_value(pat)
    return [] if v is None else [(v, v)]


def _covers(patterns: list, t: Type) -> bool:
    """Do the literal values and ranges of ``patterns`` cover every value of ``t``? (A
    constant counts for nothing: only `_` or literals make a `match` exhaustive.)"""
    lo, hi = (0, 1) if t == BOOL else literals.int_range(t)  # type: ignore[arg-type]
    nxt = lo
    for a, b in sorted(iv for p in patterns for iv in _intervals(p)):
        if a > nxt:
            return False
        nxt = max(nxt, b + 1)
        if nxt > hi:
            return True
    return nxt > hi
