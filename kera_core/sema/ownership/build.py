"""From a function's AST to the ownership CFG, plus the checks that need no dataflow.

The builder walks the body in evaluation order (`docs/language.md` §6.17) and emits
one event per read, move, borrow, write and binding. While walking it also reports
what is decided by the shape of the code alone: two `&mut` of one variable in a call
(K0402), a block or function that hands out a borrow of a variable it owns (K0404),
a move out of a borrow (K0408), and host code touching `@device` memory
(K0406/K0407). Static diagnostics are anchored at the node where they occur, so those
in unreachable code can be dropped like the dataflow ones.
"""

from __future__ import annotations

from kera_core.diagnostics import Diagnostic, Edit, Fix, Related, error
from kera_core.ir.types import I64, Ref, Tensor, Type, Unit, holds_tensor, strip_ref
from kera_core.sema.env import FnSig, ModuleEnv
from kera_core.sema.lower_calls import BUILTINS
from kera_core.sema.lower_views import is_slice
from kera_core.sema.ownership.cfg import Cfg, Dest, Event, Loan, Var
from kera_core.source import Span
from kera_core.syntax import ast
from kera_core.syntax.kinds import SyntaxKind as K

EMPTY: frozenset[Loan] = frozenset()
_PLACE_STEPS = (ast.ParenExpr, ast.IndexExpr, ast.FieldExpr)  # hoisted: `A | B` makes a union
_X_METHODS: dict[tuple[type, type], object] = {}  # (builder, AST class) -> x_<class> or False


def space_of(t: Type | None) -> str | None:
    t = strip_ref(t) if t is not None else None
    return t.space if isinstance(t, Tensor) else None


def unparen(e: ast.Expr | None) -> ast.Expr | None:
    while isinstance(e, ast.ParenExpr):
        e = e.inner
    return e


class Builder:
    """Builds the CFG of one function that lowered without errors."""

    def __init__(self, env: ModuleEnv, sig: FnSig, expr_types: dict) -> None:
        self.env = env
        self.sig = sig
        self.types = expr_types
        self.cfg = Cfg()
        self.vars: list[Var] = []
        self.scopes: list[dict[str, Var]] = []
        self.decls: list[list[Var]] = []
        self.loops: list[tuple[int, int]] = []  # (head, exit) of the enclosing loops
        self.cur: int | None = None
        self.exit = -1
        self.static: list[tuple[int, Diagnostic]] = []

    # --- plumbing ------------------------------------------------------------------
    def emit(self, ev: Event) -> int:
        n = self.cfg.add(ev)
        if self.cur is not None:
            self.cfg.edge(self.cur, n)
        self.cur = n
        return n

    def join(self, ends: list[int | None]) -> None:
        live = [n for n in ends if n is not None]
        if not live:
            self.cur = None
            return
        n = self.cfg.add(Event("nop"))
        for p in live:
            self.cfg.edge(p, n)
        self.cur = n

    def report(self, diag: Diagnostic) -> None:
        """A static diagnostic, kept only if the code it is about can run."""
        if self.cur is None:
            return  # after `return`/`break`/`continue`: unreachable
        self.static.append((self.cur, diag))

    def new_var(self, name: str, decl: Span, kind: str, t: Type | None, mutable=False) -> Var:
        v = Var(len(self.vars), name, decl, kind, t, mutable)
        self.vars.append(v)
        return v

    def temp(self, span: Span, loans: frozenset[Loan]) -> Var:
        """A borrow passed to a call: live from the argument to the call itself."""
        v = self.new_var("<borrow>", span, "tmp", None)
        v.loans = loans
        self.emit(Event("def", v.id, span))
        return v

    def lookup(self, name: str) -> Var | None:
        for scope in reversed(self.scopes):
            v = scope.get(name)
            if v is not None:
                return v
        return None

    def ty(self, e: ast.Expr | None) -> Type | None:
        if e is None:
            return None
        syntax = e.syntax  # the key is (e.span.start, e.span.end, kind)
        start = syntax.offset
        green = syntax.green
        return self.types.get((start, start + green.text_len, green.kind))

    def path_var(self, e: ast.Expr | None) -> Var | None:
        e = unparen(e)
        if isinstance(e, ast.PathExpr) and (name := e.name_text) is not None:
            return self.lookup(name)
        return None

    def place_root(self, e: ast.Expr | None) -> tuple[Var | None, str]:
        """The variable a place expression is rooted at, and the outermost access kind."""
        what = ""
        while True:
            if isinstance(e, ast.ParenExpr):
                e = e.inner
            elif isinstance(e, ast.IndexExpr):
                what = what or "element"
                e = e.base
            elif isinstance(e, ast.FieldExpr):
                what = what or "field"
                e = e.base
            elif isinstance(e, ast.PathExpr) and (name := e.name_text) is not None:
                return self.lookup(name), what or "whole"
            else:
                return None, what or "whole"

    def copy_fix(self, name: str, t: Type | None, span: Span) -> Fix | None:
        """Replace a move of ``name`` by an explicit copy with `copy_to` (a tensor's only:
        a struct or a tuple holding one has no copy)."""
        if t is not None and not isinstance(strip_ref(t), Tensor):
            return None
        space = space_of(t) or "host"
        title = f"copy it with `copy_to(&{name}, {space})`"
        if "transfer" not in self.sig.type.effects:
            title += " (needs the `transfer` effect)"
        return Fix(title, (Edit(span, f"copy_to(&{name}, {space})"),))

    # --- the function --------------------------------------------------------------
    def build(self) -> Builder:
        sig = self.sig
        fn = sig.ast
        self.cur = self.cfg.add(Event("nop"))  # node 0: entry
        self.exit = self.cfg.add(Event("nop"))
        top: dict[str, Var] = {}
        params = fn.params
        for i, (name, t) in enumerate(zip(sig.param_names, sig.type.params, strict=True)):
            p = params[i]
            pname = p.name
            decl = pname.span if pname is not None else p.span
            if isinstance(t, Ref) and t.mutable:
                v = self.new_var(name, decl, "mutref", t.inner, True)
            elif isinstance(t, Ref):
                v = self.new_var(name, decl, "refparam", t)
            else:
                v = self.new_var(name, decl, "param", t, p.is_mut)
            top.setdefault(name, v)
            self.emit(Event("def", v.id, decl))
        for d in sig.dim_names:
            if d not in top:
                top[d] = self.new_var(d, sig.name_span, "dim", I64)
        self.scopes.append(top)
        self.decls.append([])
        body = fn.body
        if body is not None:
            returns = not isinstance(sig.type.result, Unit)
            tail = body.tail
            dest = Dest("return", tail.span) if returns and tail is not None else None
            loans = self.block(body, dest, fn_body=True)
            if tail is not None:
                self.check_return(tail, loans)
        if self.cur is not None:
            self.cfg.edge(self.cur, self.exit)
        self.cur = None
        return self

    def check_return(self, value: ast.Expr, loans: frozenset[Loan]) -> None:
        """K0404: a function may hand out borrows of what its caller owns, nothing else."""
        if not loans:
            return
        for loan in sorted(loans, key=lambda x: (x.span.start, x.owner)):
            owner = self.vars[loan.owner]
            if owner.kind in ("mutref", "refparam", "dim"):
                continue
            what = "parameter" if owner.kind == "param" else "local"
            related = ()
            if loan.span != value.span:
                related = (Related(loan.span, f"`{owner.name}` is borrowed here"),)
            self.report(
                error(
                    "K0404",
                    value.span,
                    f"cannot return a borrow of {what} `{owner.name}`: it is dropped when"
                    f" `{self.sig.name}` returns",
                    related=related,
                )
            )

    # --- blocks and statements ---------------------------------------------------------
    def block(self, blk: ast.Block, ctx: Dest | None, fn_body: bool = False) -> frozenset[Loan]:
        self.scopes.append({})
        self.decls.append([])
        try:
            for st in blk.statements:
                if isinstance(st, ast.LetStmt):
                    self.let(st)
                elif isinstance(st, ast.ExprStmt):
                    self.expr(st.expr, None)
            tail = blk.tail
            loans = self.expr(tail, ctx) if tail is not None else EMPTY
            if not fn_body:
                loans = self.check_escape(blk, loans, self.decls[-1])
            return loans
        finally:
            self.scopes.pop()
            self.decls.pop()

    def check_escape(
        self, blk: ast.Block, loans: frozenset[Loan], declared: list[Var]
    ) -> frozenset[Loan]:
        """K0404: a block's value may not borrow a variable the block itself declares."""
        if not loans:
            return loans
        ids = {v.id for v in declared}
        bad = sorted((x for x in loans if x.owner in ids), key=lambda x: (x.span.start, x.owner))
        if not bad:
            return loans
        close = blk.syntax.token_of_kind(K.R_BRACE)
        end = close.span if close is not None else Span(blk.span.end, blk.span.end)
        for loan in bad:
            name = self.vars[loan.owner].name
            self.report(
                error(
                    "K0404",
                    loan.span,
                    f"`{name}` does not live long enough: the block's value borrows it",
                    related=(Related(end, f"`{name}` is dropped here while still borrowed"),),
                )
            )
        return loans - frozenset(bad)

    def let(self, st: ast.LetStmt) -> None:
        init = st.init
        t = self.ty(init)
        pat = st.pattern
        if pat is not None:  # `let (a, b) = …`: a tuple holding a tensor is moved apart
            dest = None
            if t is not None and holds_tensor(strip_ref(t)):
                value = unparen(init)
                dest = Dest("pattern", st.span, value_span=value.span if value else None)
            self.expr(init, dest)
            for b in pat.binds():
                if b.name is None or b.name.text == "_":
                    continue
                v = self.new_var(
                    b.name.text,
                    b.name.span,
                    "local",
                    self.ty(b),
                    b.is_mut,  # type: ignore[arg-type]
                )
                self.emit(Event("def", v.id, b.name.span))
                self.scopes[-1][v.name] = v
                self.decls[-1].append(v)
            return
        ref = st.name
        mut = st.is_mut
        decl = ref.span if ref is not None else st.span
        borrow = unparen(init)
        if isinstance(borrow, ast.RefExpr) and borrow.is_mut:
            self.let_ref(st, borrow, decl, t)
            return
        v = self.new_var(ref.text if ref else "_", decl, "local", t, mut)
        value = borrow  # the initializer without its parentheses
        dest = Dest(
            "let_mut" if mut else "let",
            st.span,
            target=v.id,
            value_span=value.span if value is not None else None,
        )
        loans = self.expr(init, dest) if init is not None else EMPTY
        if isinstance(t, Ref):
            v.loans = loans
        self.emit(Event("def", v.id, decl))
        if ref is not None:
            self.scopes[-1][v.name] = v
            self.decls[-1].append(v)

    def let_ref(self, st: ast.LetStmt, borrow: ast.RefExpr, decl: Span, t: Type | None) -> None:
        """`let r = &mut y;`: ``y`` is mutably borrowed from here to the last use of ``r``
        (a reborrow `&mut s` of a reference variable ``s`` borrows ``s`` and holds what it
        holds)."""
        ref = st.name
        v = self.new_var(ref.text if ref else "_", decl, "refmut", t, True)
        target = self.path_var(self.view_base(borrow.operand))
        if target is not None:
            self.emit(Event("mutborrow", target.id, borrow.span))
            if target.kind == "refmut":
                self.emit(Event("read", target.id, borrow.span))
                v.loans = target.loans | {Loan(target.id, borrow.span, True)}
            else:
                v.loans = frozenset({Loan(target.id, borrow.span, True)})
        self.emit(Event("def", v.id, decl))
        if ref is not None:
            self.scopes[-1][v.name] = v
            self.decls[-1].append(v)

    def view_base(self, e: ast.Expr | None) -> ast.Expr | None:
        """``x`` of a `&mut` operand ``x`` or view ``x[i, ..]`` (whose indices and bounds are
        read here, before the borrow starts): a view borrows its whole variable."""
        bare = unparen(e)
        if is_slice(bare):
            self.reads(bare.indices)  # type: ignore[union-attr]
            return bare.base  # type: ignore[union-attr]
        return e

    # --- expressions -----------------------------------------------------------------
    def expr(self, e: ast.Expr | None, ctx: Dest | None = None) -> frozenset[Loan]:
        """Emit the events of ``e``; return the loans its value holds (if it is a borrow).

        ``ctx`` is set when ``e`` is in a move position: its value goes to ``ctx``.
        """
        if e is None:
            return EMPTY
        key = (type(self), type(e))
        method = _X_METHODS.get(key)
        if method is None:
            method = _X_METHODS[key] = getattr(key[0], "x_" + key[1].__name__, False)
        if method is False:
            return EMPTY
        return method(self, e, ctx)

    def reads(self, exprs) -> None:
        for x in exprs:
            self.expr(x, None)

    def x_Literal(self, e, ctx):
        return EMPTY

    def x_ParenExpr(self, e: ast.ParenExpr, ctx):
        return self.expr(e.inner, ctx)

    def x_BlockExpr(self, e: ast.BlockExpr, ctx):
        return self.block(e.block, ctx) if e.block is not None else EMPTY

    def x_PathExpr(self, e: ast.PathExpr, ctx: Dest | None):
        name = e.name_text
        v = self.lookup(name) if name is not None else None
        if v is None:
            return EMPTY  # a constant
        if ctx is not None and v.is_move_type:
            self.emit(Event("move", v.id, e.span, dest=ctx))
            return EMPTY
        if ctx is not None and holds_tensor(strip_ref(v.type)):
            if v.kind in ("mutref", "refmut"):
                self.move_out_of_borrow(e, v, ctx)
            elif ctx.kind == "move_to" and v.is_borrow:
                self.move_out_of_borrow(e, v, ctx)
        self.emit(Event("read", v.id, e.span))
        return v.loans

    def move_out_of_borrow(self, e: ast.Expr, v: Var | None, ctx: Dest) -> None:
        """K0408: a tensor behind a borrow belongs to someone else; it can be copied only."""
        if ctx.kind == "move_to" and ctx.callee_span is not None:
            what = f"the borrow `{v.name}`" if v is not None else "a borrow"
            fix = Fix(
                "use `copy_to`, which leaves the original in place",
                (Edit(ctx.callee_span, "copy_to"),),
            )
            self.report(
                error(
                    "K0408",
                    e.span,
                    f"cannot move out of {what}: `move_to` consumes its argument",
                    fix=fix,
                )
            )
            return
        assert v is not None
        if v.kind == "refmut":
            msg = f"cannot move `{v.name}` out of a `&mut` borrow: the borrowed variable owns it"
            note = f"`{v.name}` is a `&mut` borrow"
        else:
            msg = f"cannot move `{v.name}` out of a `&mut` borrow: its caller still owns it"
            note = f"`{v.name}` is a `&mut` parameter"
        self.report(
            error(
                "K0408",
                e.span,
                msg,
                related=(Related(v.decl, note),),
                fix=self.copy_fix(v.name, strip_ref(v.type), e.span),
            )
        )

    def x_RefExpr(self, e: ast.RefExpr, ctx: Dest | None):
        if ctx is not None and ctx.kind == "move_to":
            self.move_out_of_borrow(e, None, ctx)
        root, what = self.place_root(e.operand)
        inner = self.expr(e.operand, None)
        if e.is_mut or root is None:
            return inner  # `&mut` outside a call was rejected by lowering; `&(a + b)`
        if root.kind == "refmut":  # `&r`: holds what `r` holds, and `r` itself
            return root.loans | {Loan(root.id, e.span)}
        if root.is_borrow:
            return root.loans  # a reborrow holds what the borrow holds
        if root.is_owner:
            return frozenset({Loan(root.id, e.span)})
        return EMPTY

    def x_ArrayExpr(self, e: ast.ArrayExpr, ctx):
        self.reads(e.elements)
        return EMPTY

    def x_StructLit(self, e: ast.StructLit, ctx):
        self.fields_in(f.value for f in e.fields)
        return EMPTY

    def x_TupleExpr(self, e: ast.TupleExpr, ctx):
        self.fields_in(e.elements)
        return EMPTY

    def fields_in(self, values) -> None:
        """The fields of a struct or tuple being built: a tensor (or a struct holding one)
        is moved in, anything else is copied."""
        for x in values:
            moves = x is not None and holds_tensor(self.ty(x))
            self.expr(x, Dest("field", x.span) if moves else None)

    def x_PrefixExpr(self, e: ast.PrefixExpr, ctx):
        self.expr(e.operand, None)
        return EMPTY

    def x_CastExpr(self, e: ast.CastExpr, ctx):
        self.expr(e.expr, None)
        return EMPTY

    def x_RangeExpr(self, e: ast.RangeExpr, ctx):
        self.reads(e.operands)
        return EMPTY

    def x_BinExpr(self, e: ast.BinExpr, ctx):
        op = e.op
        lhs, rhs = e.operands
        self.expr(lhs, None)
        if op is not None and op.kind in (K.AMP2, K.PIPE2):
            skip = self.cur  # the right operand may not run
            self.expr(rhs, None)
            self.join([self.cur, skip])
        else:
            self.expr(rhs, None)
        return EMPTY

    def x_FieldExpr(self, e: ast.FieldExpr, ctx):
        self.expr(e.base, None)
        if ctx is not None and holds_tensor(self.ty(e)):
            self.move_out_of_field(e, ctx)
        return EMPTY

    def move_out_of_field(self, e: ast.FieldExpr, ctx: Dest) -> None:
        """A field holding a tensor in a move position. Out of a variable that owns the
        struct it moves the whole variable (a struct holding a tensor moves whole, so a
        later use of any part of it is K0401, which says the value was partly moved);
        out of a borrow it is K0408; out of a temporary (`f(x).w`) it just moves."""
        root, _ = self.place_root(e)
        if root is None:
            return
        if root.kind in ("mutref", "refmut", "refparam") or root.is_borrow:
            text = str(e.syntax).strip()
            fix = None
            if ctx.kind in ("let", "let_mut") and ctx.value_span == e.span:
                fix = Fix(
                    f"borrow it with `&{text}`", (Edit(Span(e.span.start, e.span.start), "&"),)
                )
            self.report(
                error(
                    "K0408",
                    e.span,
                    f"cannot move `{text}` out of the borrow `{root.name}`: its owner keeps it",
                    related=(Related(root.decl, f"`{root.name}` is a borrow"),),
                    fix=fix,
                )
            )
        elif root.is_move_type:
            self.emit(Event("move", root.id, e.span, dest=ctx, what="field"))

    def x_IndexExpr(self, e: ast.IndexExpr, ctx):
        base = e.base
        self.expr(base, None)
        self.reads(e.indices)
        if space_of(self.ty(base)) == "device":
            self.device_element(e, base, "read")
        return EMPTY

    def device_element(self, e: ast.Expr, base: ast.Expr | None, verb: str) -> None:
        """K0406: host code addresses host, pinned and unified memory, never device memory."""
        v = self.path_var(base)
        related = ()
        if v is not None:
            related = (Related(v.decl, f"`{v.name}` lives in `@device`"),)
        name = v.name if v is not None else "x"
        if verb == "read":
            hint = f"copy it to the host first (`copy_to(&{name}, host)`)"
        else:
            hint = f"build it on the host and transfer it (`move_to({name}, device)`)"
        self.report(
            error(
                "K0406",
                e.span,
                f"cannot {verb} an element of a `@device` tensor in host code: {hint}"
                " or use whole-tensor operations",
                related=related,
            )
        )

    # --- control flow ------------------------------------------------------------------
    def x_IfExpr(self, e: ast.IfExpr, ctx):
        self.expr(e.condition, None)
        branch = self.cur
        loans = self.block(e.then_branch, ctx) if e.then_branch is not None else EMPTY
        end_then = self.cur
        self.cur = branch
        other = e.else_branch
        if isinstance(other, ast.Block):
            loans |= self.block(other, ctx)
        elif isinstance(other, ast.IfExpr):
            loans |= self.expr(other, ctx)
        self.join([end_then, self.cur])
        return loans

    def x_WhileExpr(self, e: ast.WhileExpr, ctx):
        head = self.emit(Event("nop"))
        self.expr(e.condition, None)
        exit_ = self.cfg.add(Event("nop"))
        if self.cur is not None:
            self.cfg.edge(self.cur, exit_)
        self.loop_body(e.body, head, exit_, None)
        return EMPTY

    def x_LoopExpr(self, e: ast.LoopExpr, ctx):
        """`loop { body }`: as `while true { body }` (its exit edge is kept: a superset of
        the paths, so nothing is missed)."""
        return self.x_WhileExpr(e, ctx)  # type: ignore[arg-type]

    def x_MatchExpr(self, e: ast.MatchExpr, ctx):
        """The scrutinee, then each arm's body as a branch from the same point (the
        patterns are constants: they read nothing the analysis tracks)."""
        self.expr(e.scrutinee, None)
        loans = EMPTY
        branch = self.cur
        ends = []
        for arm in e.arms:
            self.cur = branch
            loans |= self.expr(arm.body, ctx)
            ends.append(self.cur)
        if ends:
            self.join(ends)
        return loans

    def x_ForExpr(self, e: ast.ForExpr, ctx):
        it = e.iterable
        loans = self.expr(it, None)
        held = self.iterated_loan(it, loans)
        head = self.emit(Event("nop"))
        if held is not None:  # in use on every iteration: live through the whole body
            self.emit(Event("read", held.id, it.span))
        exit_ = self.cfg.add(Event("nop"))
        self.cfg.edge(self.cur, exit_)
        var = e.var
        self.loop_body(e.body, head, exit_, var)
        return EMPTY

    def iterated_loan(self, it: ast.Expr | None, loans: frozenset[Loan]) -> Var | None:
        """`for v in x` (or `&x`) reads `x` on every iteration: `x` is borrowed for the
        whole loop (language.md §6.9), so assigning, moving or `&mut`-borrowing it in the
        body is K0403 / K0404 / K0402, as for any live borrow. A tensor in `@device` memory
        has no elements host code can read (K0406)."""
        t = self.ty(it)
        if not isinstance(strip_ref(t), Tensor):
            return None
        bare = unparen(it)
        if isinstance(bare, ast.RefExpr):
            bare = unparen(bare.operand)
        if space_of(t) == "device":
            self.device_element(it, bare, "read")
        root, _ = self.place_root(bare)
        if root is not None and root.is_owner:
            loans = loans | {Loan(root.id, it.span)}
        return self.temp(it.span, loans) if loans else None

    def loop_body(self, body: ast.Block | None, head: int, exit_: int, var) -> None:
        self.scopes.append({})
        self.decls.append([])
        if var is not None:
            v = self.new_var(var.text, var.span, "loop", self.ty(None))
            self.scopes[-1][v.name] = v
            self.emit(Event("def", v.id, var.span))
        self.loops.append((head, exit_))
        try:
            if body is not None:
                self.block(body, None)
            if self.cur is not None:
                self.cfg.edge(self.cur, head)
        finally:
            self.loops.pop()
            self.scopes.pop()
            self.decls.pop()
        self.cur = exit_

    def x_BreakExpr(self, e, ctx):
        if self.loops and self.cur is not None:
            self.cfg.edge(self.cur, self.loops[-1][1])
        self.cur = None
        return EMPTY

    def x_ContinueExpr(self, e, ctx):
        if self.loops and self.cur is not None:
            self.cfg.edge(self.cur, self.loops[-1][0])
        self.cur = None
        return EMPTY

    def x_ReturnExpr(self, e: ast.ReturnExpr, ctx):
        value = e.value
        if value is not None:
            returns = not isinstance(self.sig.type.result, Unit)
            loans = self.expr(value, Dest("return", e.span) if returns else None)
            self.check_return(value, loans)
        if self.cur is not None:
            self.cfg.edge(self.cur, self.exit)
        self.cur = None
        return EMPTY

    # --- assignment --------------------------------------------------------------------
    def x_AssignExpr(self, e: ast.AssignExpr, ctx):
        op = e.op
        if op is None:
            return EMPTY
        compound = op.kind != K.EQ
        lhs, rhs = e.operands
        root, what = self.place_root(lhs)
        whole = what == "whole"
        moves = not compound and (whole or holds_tensor(self.ty(rhs)))
        self.expr(rhs, Dest("assign", e.span) if moves else None)
        self.reads(self.place_indices(lhs))
        if root is None or root.kind == "dim":
            return EMPTY
        if what == "element" and space_of(root.type) == "device":
            self.device_element(lhs, self.place_base(lhs), "write")
        if root.kind == "refmut":  # a write through `r` uses `r` (and writes its referent)
            self.emit(Event("read", root.id, lhs.span))
        if whole and compound:
            self.emit(Event("read", root.id, lhs.span))
            self.emit(Event("write", root.id, e.span, what="compound"))
        else:
            self.emit(Event("write", root.id, e.span, what=what))
        return EMPTY

    def place_indices(self, e: ast.Expr | None) -> list[ast.Expr]:
        """Index expressions of a place, root first (the order they are evaluated in)."""
        out: list[list[ast.Expr]] = []
        while isinstance(e, _PLACE_STEPS):
            if isinstance(e, ast.IndexExpr):
                out.append(e.indices)
            e = e.inner if isinstance(e, ast.ParenExpr) else e.base
        return [x for group in reversed(out) for x in group]

    def place_base(self, e: ast.Expr | None) -> ast.Expr | None:
        e = unparen(e)
        return e.base if isinstance(e, ast.IndexExpr) else None

    # --- calls -------------------------------------------------------------------------
    def x_CallExpr(self, e: ast.CallExpr, ctx):
        callee = e.callee
        name = (callee.name_text or "") if isinstance(callee, ast.PathExpr) else ""
        if name in self.env.fns:
            return self.user_call(e, self.env.fns[name])
        if name in BUILTINS:
            return self.builtin_call(e, name)
        self.reads(e.args)
        return EMPTY

    def user_call(self, e: ast.CallExpr, sig: FnSig) -> frozenset[Loan]:
        args = e.args
        params = sig.type.params
        if len(args) != len(params):
            self.reads(args)
            return EMPTY
        first_mut: dict[int, Span] = {}
        deferred: list[tuple[Var, Span]] = []
        held: list[Var] = []
        result: set[Loan] = set()
        for i, (pt, arg) in enumerate(zip(params, args, strict=True)):
            if isinstance(pt, Ref) and pt.mutable:
                result |= self.mut_arg(arg, first_mut, deferred)
            elif isinstance(pt, Ref):
                loans = self.expr(arg, None)
                bare = self.path_var(arg)
                if bare is not None and bare.kind in ("mutref", "refmut"):
                    loans = loans | {Loan(bare.id, arg.span)}  # `p` passed on as `&p`
                if loans:
                    held.append(self.temp(arg.span, loans))
                result |= loans
            else:
                moves = holds_tensor(pt)
                dest = Dest("arg", e.span, sig.name, sig.param_names[i]) if moves else None
                self.expr(arg, dest)
        self.at_call(e, deferred, held)
        return frozenset(result) if isinstance(sig.type.result, Ref) else EMPTY

    def at_call(self, e: ast.CallExpr, deferred: list[tuple[Var, Span]], held: list[Var]) -> None:
        """At the call itself: the `&mut` borrows start, and every borrow is in use (a
        reference variable passed on is used here too)."""
        for v, span in deferred:
            self.emit(Event("mutborrow", v.id, span))
        for v, span in deferred:
            if v.kind == "refmut":
                self.emit(Event("read", v.id, span))
        for t in held:
            self.emit(Event("read", t.id, e.span))

    def mut_arg(
        self, arg: ast.Expr, first_mut: dict[int, Span], deferred: list[tuple[Var, Span]]
    ) -> frozenset[Loan]:
        """An argument for a `&mut` parameter: `&mut x`, or a `&mut` parameter or reference
        variable passed on by name. Its borrow starts at the call (:meth:`at_call`)."""
        if isinstance(arg, ast.RefExpr):
            v = self.path_var(self.view_base(arg.operand))
        else:
            v = self.path_var(arg)
            if v is not None and v.kind not in ("mutref", "refmut"):
                v = None
        if v is None:
            self.expr(arg, None)
            return EMPTY
        if v.is_borrow and v.kind != "refmut":
            self.report(
                error(
                    "K0405",
                    arg.span,
                    f"cannot borrow `{v.name}` as mutable: it is a shared borrow",
                    related=(Related(v.decl, f"`{v.name}` is declared here"),),
                )
            )
            return EMPTY
        if v.id in first_mut:
            self.report(
                error(
                    "K0402",
                    arg.span,
                    f"cannot borrow `{v.name}` as mutable more than once in one call",
                    related=(Related(first_mut[v.id], "first borrow here"),),
                )
            )
            return EMPTY
        first_mut[v.id] = arg.span
        deferred.append((v, arg.span))
        return (
            v.loans | {Loan(v.id, arg.span)}
            if v.kind == "refmut"
            else frozenset({Loan(v.id, arg.span)})
        )

    def builtin_call(self, e: ast.CallExpr, name: str) -> frozenset[Loan]:
        args = e.args
        if name in ("move_to", "copy_to"):
            if args:
                callee_span = e.callee.span if e.callee is not None else None
                dest = Dest("move_to", e.span, name, callee_span=callee_span)
                self.expr(args[0], dest if name == "move_to" else None)
            self.reads(args[2:])  # the second argument names a space, not a variable
            return EMPTY
        if name == "swap":  # two `&mut` arguments, exchanged at the call
            first_mut: dict[int, Span] = {}
            deferred: list[tuple[Var, Span]] = []
            for a in args:
                self.mut_arg(a, first_mut, deferred)
            self.at_call(e, deferred, [])
            return EMPTY
        if name == "print":
            for a in args:
                if isinstance(a, ast.Literal) and a.token.kind == K.STRING:
                    continue
                self.expr(a, None)
                self.check_print(a)
            return EMPTY
        held = []
        for a in args:
            loans = self.expr(a, None)
            if loans:
                held.append(self.temp(a.span, loans))
        for t in held:
            self.emit(Event("read", t.id, e.span))
        return EMPTY

    def check_print(self, a: ast.Expr) -> None:
        """`print` formats on the host: its tensor must be host-readable (§4 of the doc)."""
        t = self.ty(a)
        if space_of(t) != "device":
            return
        borrowed = isinstance(t, Ref)
        text = str(a.syntax)
        fix = Fix(
            "copy it to the host first"
            + ("" if "transfer" in self.sig.type.effects else " (needs the `transfer` effect)"),
            (Edit(a.span, f"copy_to({text}, host)"),),
        )
        what = "a borrow of a `@device` tensor" if borrowed else "a `@device` tensor"
        self.report(
            error(
                "K0407" if borrowed else "K0406",
                a.span,
                f"`print` reads its argument on the host, but this is {what}",
                fix=fix,
            )
        )
