"""Reference variables (`let r = &mut y;`), reborrows and `swap`.

A reference variable is an *alias*: it has no value of its own and makes no node. Reading
`r` reads `y`'s current value, writing through `r` (`r[i] = v`, `r = e`, passing `r` to a
`&mut` parameter) rebinds `y`, so `let r = &mut y; f(r);` lowers to exactly the graph of
`f(&mut y);` (docs/graph.md). `swap(&mut a, &mut b)` makes no node either: the two
variables exchange their values (docs/language.md §9). The ownership checker
(`sema/ownership/`) enforces that a live `&mut` borrow is the only way to reach `y`.
"""

from __future__ import annotations

from kera_core.diagnostics import Edit, Fix, Related
from kera_core.ir.types import UNIT, Ref, Type, strip_ref
from kera_core.sema.env import Use
from kera_core.sema.frames import ERR, ERR_VAL, Binding, Val
from kera_core.sema.lower_views import ViewTarget, is_slice
from kera_core.source import Span
from kera_core.syntax import ast


def unparen(e: ast.Expr | None) -> ast.Expr | None:
    while isinstance(e, ast.ParenExpr):
        e = e.inner
    return e


class References:
    """Mixin of :class:`kera_core.sema.lower.FnLowering` for borrows held in variables."""

    aliases = 0  # reference variables made so far in this function (0: no shadow checks)

    def note_type(self, e: ast.Expr, t: Type) -> None:
        """Record ``e``'s type for the checker and the editor, as :meth:`expr` does."""
        syntax = e.syntax
        self.expr_types[(syntax.offset, syntax.offset + syntax.green.text_len, syntax.kind)] = t

    def mut_borrow(self, arg: ast.Expr, missing: str, fix_missing: bool = True):
        """An argument where `&mut T` is wanted: `&mut x`, or — passed on as it is — a `&mut`
        parameter or reference variable. Returns its value (typed `&mut T`) and the name of
        the variable the callee changes; ``missing`` is the message when it is neither."""
        if isinstance(arg, ast.RefExpr) and arg.is_mut:
            target = arg.operand
            if is_slice(unparen(target)):
                return self.mut_view(arg, unparen(target))  # type: ignore[arg-type]
            if not isinstance(target, ast.PathExpr) or target.name is None:
                return self.err("K0311", arg.span, "`&mut` needs a variable: `&mut x`"), None
            v = self._mut_variable(target, arg.span)
            if not v.is_err:
                self.note_type(arg, v.type)
            return v, target.name.text
        bare = unparen(arg)
        if isinstance(bare, ast.PathExpr) and bare.name is not None:
            b = self.lookup(bare.name.text)
            if b is not None and b.reborrowable:
                self.uses.append(Use(bare.name.span, b.kind, b.span, b.name))
                if b.val.is_err:
                    return b.val, None
                v = Val(b.val.value, Ref(strip_ref(b.val.type), True))
                self.note_type(arg, v.type)
                return v, bare.name.text
        fix = None
        if fix_missing:
            fix = Fix(
                "pass a mutable borrow", (Edit(Span(arg.span.start, arg.span.start), "&mut "),)
            )
        return self.err("K0301", arg.span, missing, fix=fix), None

    def mut_view(self, arg: ast.Expr, e: ast.IndexExpr) -> tuple[Val, ViewTarget | None]:
        """`&mut x[i, ..]`: the view (typed `&mut` of its slice type) and where a write
        through it goes — that region of the variable ``x``."""
        base = unparen(e.base)
        if not isinstance(base, ast.PathExpr) or base.name is None:
            return self.err(
                "K0311",
                arg.span,
                "`&mut` needs a variable or a slice of one: `&mut x`, `&mut x[i, ..]`",
            ), None
        v = self._mut_variable(base, arg.span)
        if v.is_err:
            return v, None
        self.note_type(base, v.type)
        spec = self.view_spec(Val(v.value, strip_ref(v.type)), e)
        if spec is None:
            return ERR_VAL, None
        view = self.slice_val(v, spec, e.span)
        if view.is_err:
            return view, None
        self.note_type(e, spec.type)
        out = Val(view.value, Ref(spec.type, True))
        self.note_type(arg, out.type)
        return out, ViewTarget(base.name.text, spec, arg.span)

    def store_back(self, target: str | ViewTarget, val: Val) -> None:
        """A call's new value of a `&mut` argument: the variable's, or a view's region of
        its variable (`update_slice`)."""
        if isinstance(target, str):
            self._set(target, val)
            return
        cur = self.lookup(target.name)
        assert cur is not None
        new = self.update_slice_val(cur.val, target.spec, val, target.span)
        if not new.is_err:
            self._set(target.name, Val(new.value, strip_ref(cur.val.type)))

    def _mut_variable(self, target: ast.PathExpr, span: Span) -> Val:
        """`&mut x`: ``x`` must be a mutable variable (or a `&mut` borrow passed on)."""
        b = self.lookup(target.name.text)  # type: ignore[union-attr]
        if b is None:
            if self.env.const_named(target.name.text) is not None:  # type: ignore[union-attr]
                return self.constant_not_place(target.name, span, "borrow constant `{}` as mutable")
            return self.expr(target, None)
        self.uses.append(Use(target.name.span, b.kind, b.span, b.name))  # type: ignore[union-attr]
        if b.kind == "dim":
            return self.err("K0311", target.span, f"`{b.name}` is a dimension, not a variable")
        if not b.mutable:
            fix = Fix(f"make `{b.name}` mutable", (Edit(Span(b.span.start, b.span.start), "mut "),))
            return self.err(
                "K0405",
                target.span,
                f"cannot borrow `{b.name}` as mutable: it is not declared `mut`",
                fix=fix,
            )
        if b.val.is_err:
            return b.val
        if isinstance(b.val.type, Ref) and not b.val.type.mutable:
            return self.err(
                "K0405",
                span,
                f"cannot borrow `{b.name}` as mutable: it is a shared borrow",
                related=(Related(b.span, f"`{b.name}` is declared here"),),
            )
        return Val(b.val.value, Ref(strip_ref(b.val.type), True))

    def constant_not_place(self, ref, span: Span, what: str) -> Val:
        """`C = v`, `W[i] = v`, `&mut W`: a constant is not a place (K0311, §6.16) — the
        value of a constant table cannot change any more than a number constant's."""
        name = ref.text
        self.uses.append(Use(ref.span, "const", name=name))
        local = name.lower() if name.lower() != name else f"{name}_copy"
        return self.err(
            "K0311",
            span,
            f"cannot {what.format(name)}: a constant never changes; copy it into a"
            f" variable first: `let mut {local} = {name};`",
        )

    def shared_reborrow(self, arg: ast.Expr) -> Val | None:
        """A `&mut` parameter or reference variable passed by name where `&T` is wanted:
        read through, like `&p`. None for any other argument."""
        bare = unparen(arg)
        if not isinstance(bare, ast.PathExpr) or bare.name is None:
            return None
        b = self.peek_binding(bare.name.text)
        if b is None or not b.reborrowable:
            return None
        v = self.expr(bare, None)
        if v.is_err or v.value is None:
            return v
        v = Val(v.value, Ref(strip_ref(v.type), False))
        self.note_type(arg, v.type)
        return v

    # --- `let r = &mut y;` -----------------------------------------------------------------
    def let_ref(self, st: ast.LetStmt, borrow: ast.RefExpr, declared: Type | None) -> None:
        """Bind a reference variable: an alias of the variable it borrows."""
        assert self.frame is not None
        ref = st.name
        target = borrow.operand
        if is_slice(unparen(target)):
            self.let_view(st, borrow, declared)
            return
        if not isinstance(target, ast.PathExpr) or target.name is None:
            self.err("K0311", borrow.span, "`&mut` needs a variable: `&mut x`")
            v = ERR_VAL
        else:
            v = self._mut_variable(target, borrow.span)
        v = self._as_declared(v, declared, borrow)
        if ref is None:
            return
        name = ref.text
        if v.is_err:
            self.frame.scopes[-1][name] = Binding(name, Val(None, ERR), st.is_mut, ref.span)
            return
        self.note_type(borrow, v.type)
        if st.init is not None:
            self.note_type(st.init, v.type)
        aliased = self.alias_target(target.name.text)  # type: ignore[union-attr]
        if aliased == name:
            self.err(
                "K0315",
                ref.span,
                f"`{name}` cannot be a borrow of a variable of the same name: rename it",
            )
            self.frame.scopes[-1][name] = Binding(name, Val(None, ERR), st.is_mut, ref.span)
            return
        self.aliases += 1
        self.frame.scopes[-1][name] = Binding(
            name, Val(None, v.type), True, ref.span, "local", aliased, True
        )

    def _as_declared(self, v: Val, declared: Type | None, borrow: ast.RefExpr) -> Val:
        """``v``, or an error value (K0301) when a `let`'s declared type is another."""
        if v.is_err or declared is None or declared == v.type:
            return v
        self.err(
            "K0301",
            borrow.span,
            f"mismatched types: expected {self.show(declared)}, found {self.show(v.type)} (value)",
        )
        return ERR_VAL

    def let_view(self, st: ast.LetStmt, borrow: ast.RefExpr, declared: Type | None) -> None:
        """`let r = &mut x[i, ..];`: ``r`` names that region of ``x`` (its bounds evaluated
        here, once)."""
        assert self.frame is not None
        ref = st.name
        v, target = self.mut_view(borrow, unparen(borrow.operand))  # type: ignore[arg-type]
        v = self._as_declared(v, declared, borrow)
        if ref is None:
            return
        name = ref.text
        if v.is_err or target is None:  # writes through it are not reported again
            self.frame.scopes[-1][name] = Binding(name, Val(None, ERR), True, ref.span)
            return
        if st.init is not None:
            self.note_type(st.init, v.type)
        if target.name == name:
            self.err(
                "K0315",
                ref.span,
                f"`{name}` cannot be a borrow of a variable of the same name: rename it",
            )
            self.frame.scopes[-1][name] = Binding(name, Val(None, ERR), st.is_mut, ref.span)
            return
        self.aliases += 1
        view = self.hide_bounds(name, target.spec)
        self.frame.scopes[-1][name] = Binding(
            name, Val(None, v.type), True, ref.span, "local", target.name, True, view
        )

    def check_shadow(self, name: str, span: Span) -> bool:
        """A new binding may not hide a variable that a reference variable in scope borrows:
        the reference would then name the new variable (the limit is in language.md §9).
        False (and a diagnostic) when it would."""
        if not self.aliases:
            return True
        f = self.frame
        while f is not None:
            for scope in f.scopes:
                for b in scope.values():
                    if b.alias == name:
                        self.err(
                            "K0315",
                            span,
                            f"cannot declare `{name}` while the reference `{b.name}` to it is"
                            " in scope: rename one of them",
                            related=(Related(b.span, f"`{b.name}` borrows `{name}`"),),
                        )
                        return False
            f = f.parent
        return True

    # --- swap ---------------------------------------------------------------------------------
    def swap_call(self, e: ast.CallExpr):
        """`swap(&mut a, &mut b)`: `a` and `b` exchange values (same type and shape)."""
        args = e.args
        if len(args) != 2:
            return self.err(
                "K0303", e.span, f"`swap` takes 2 argument(s) but {len(args)} were given"
            )
        got = []
        for arg in args:
            v, name = self.mut_borrow(arg, "`swap` exchanges two variables: pass `&mut x`")
            got.append((arg, v, name))
        if any(v.is_err or name is None for _, v, name in got):
            return ERR_VAL
        (a_arg, a, a_name), (b_arg, b, b_name) = got
        if a.type != b.type:
            return self.err(
                "K0301",
                e.span,
                f"`swap` exchanges two values of one type: the first is"
                f" {self.show(strip_ref(a.type))}, the second {self.show(strip_ref(b.type))}",
                related=(
                    Related(a_arg.span, f"this is {self.show(strip_ref(a.type))}"),
                    Related(b_arg.span, f"this is {self.show(strip_ref(b.type))}"),
                ),
            )
        t = strip_ref(a.type)
        self.store_back(a_name, Val(b.value, t))  # type: ignore[arg-type]
        self.store_back(b_name, Val(a.value, t))  # type: ignore[arg-type]
        return Val(None, UNIT)
