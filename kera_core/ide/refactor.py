"""Refactorings: extract a function, inline a ``let``, add a missing effect up the call chain.

Each refactoring has a cheap *plan* (what the code action list needs: is it possible here,
and its title) and the edits, computed from the plan when the action is resolved. Extract
and inline are then checked by lowering the edited text (:func:`new_errors`): an edit that
would add an error is refused, never applied.

All spans are byte offsets into the analysed text; edits are
:class:`~kera_core.diagnostics.Edit`\\ s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kera_core.diagnostics import Diagnostic, Edit
from kera_core.ide import builtins as B
from kera_core.ide.calls import calls
from kera_core.ide.common import (
    LOCAL_KINDS,
    Local,
    expr_type,
    local_at_def,
    local_type,
    symbol_at,
    token_at,
)
from kera_core.ir.types import UNIT, Ref, Tensor, Type, dim_syms, tuple_type
from kera_core.sema import lower_module
from kera_core.sema.env import FnSig, Use, tuple_element_ok
from kera_core.sema.lower import LoweredFn
from kera_core.sema.ownership import check_function_guarded
from kera_core.source import Span, encode
from kera_core.syntax import ast
from kera_core.syntax.kinds import SyntaxKind as K
from kera_core.syntax.parse import parse
from kera_core.syntax.tree import SyntaxNode
from kera_core.workspace import Analysis

EXTRACT_KIND = "refactor.extract.function"
INLINE_KIND = "refactor.inline"


class RefactorError(Exception):
    """Why a refactoring is refused here; the message can be shown to the user."""


# --- shared helpers -------------------------------------------------------------------------


def apply_edits(text: str, edits: list[Edit]) -> str:
    data = encode(text)
    for e in sorted(edits, key=lambda e: (e.span.start, e.span.end), reverse=True):
        data = data[: e.span.start] + encode(e.new_text) + data[e.span.end :]
    return data.decode("utf-8", "surrogateescape")


def _fn_errors(a: Analysis, sig: FnSig) -> bool:
    return any(d.is_error and sig.span.covers(d.span) for d in a.diagnostics)


def _lowered(a: Analysis, offset: int) -> tuple[FnSig, LoweredFn]:
    if a.module is None or a.parse is None:
        raise RefactorError("the file is not analysed")
    sig = a.sig_at(offset)
    lf = a.module.functions.get(sig.name) if sig is not None else None
    if sig is None or lf is None:
        raise RefactorError("not inside a function")
    if _fn_errors(a, sig):
        raise RefactorError(f"`{sig.name}` has errors")
    return sig, lf


def _root_name(e: ast.Expr | None) -> ast.PathExpr | None:
    """The variable a place expression (``x``, ``x[i]``, ``p.f.g``, ``(x)``) belongs to."""
    while e is not None:
        if isinstance(e, ast.PathExpr):
            return e
        if isinstance(e, ast.IndexExpr | ast.FieldExpr):
            e = e.base
        elif isinstance(e, ast.ParenExpr):
            e = e.inner
        else:
            return None
    return None


def _written_names(node: SyntaxNode) -> list[ast.PathExpr]:
    """The variables ``node`` assigns (whole or in part) or lends as ``&mut``."""
    out = []
    for n in node.descendants():
        if n.kind == K.ASSIGN_EXPR:
            p = _root_name(ast.AssignExpr(n).lhs)
        elif n.kind == K.REF_EXPR and ast.RefExpr(n).is_mut:
            p = _root_name(ast.RefExpr(n).operand)
        else:
            continue
        if p is not None:
            out.append(p)
    return out


def _uses_in(lf: LoweredFn, span: Span) -> list[Use]:
    return [u for u in lf.uses if span.covers(u.span)]


def _effects_of(a: Analysis, lf: LoweredFn, node: SyntaxNode) -> set[str]:
    """The effects the calls inside ``node`` perform."""
    env = a.module.env  # type: ignore[union-attr]
    fn_uses = {u.span: u for u in lf.uses}
    out: set[str] = set()
    for n in node.descendants():
        if n.kind != K.CALL_EXPR:
            continue
        callee = ast.CallExpr(n).callee
        if not isinstance(callee, ast.PathExpr) or callee.name is None:
            continue
        name = callee.name.text
        u = fn_uses.get(callee.name.span) or fn_uses.get(callee.span)
        if u is not None and u.kind == "fn" and u.name in env.fns:
            out |= set(env.fns[u.name].type.effects)
        elif u is None and name in B.INFO and B.INFO[name].effect:
            out.add(B.INFO[name].effect)
    return out


def _indent_of(text: bytes, offset: int) -> bytes:
    start = text.rfind(b"\n", 0, offset) + 1
    line = text[start:offset]
    return line[: len(line) - len(line.lstrip(b" \t"))]


def _reindent(snippet: str, old: str, new: str) -> str:
    lines = snippet.split("\n")
    out = [lines[0]]
    for ln in lines[1:]:
        out.append(new + ln[len(old) :] if ln.startswith(old) else new + ln.lstrip(" \t"))
    return "\n".join(out)


def _callee_closure(a: Analysis, name: str) -> list[str]:
    """``name``'s callees in the file, transitively (without ``name``)."""
    callees: dict[str, list[str]] = {}
    for c in calls(a):
        callees.setdefault(c.caller, []).append(c.callee)
    out, todo = [name], [name]
    while todo:
        for c in callees.get(todo.pop(), []):
            if c not in out:
                out.append(c)
                todo.append(c)
    return out[1:]


def new_errors(a: Analysis, edits: list[Edit], function: str, new: list[str]) -> list[Diagnostic]:
    """The errors the edited ``function`` (and the functions ``new`` the edit adds) would
    have. ``edits`` stay inside ``function``'s span (its end included).

    Checked on a slice of the file — its structs, constants, the function and what it
    calls, transitively — parsed and lowered afresh: adding a function changes the
    signature table every body is lowered against, so lowering the whole edited file
    would lower every function again (a second for 5,000 lines).
    """
    assert a.module is not None and a.parse is not None
    env = a.module.env
    sig = env.fns[function]
    if not all(sig.span.start <= e.span.start <= e.span.end <= sig.span.end for e in edits):
        # (a function whose body a parse error cut short ends before its statements do)
        raise RefactorError(f"the edit reaches past `{function}` (is its `}}` missing?)")
    data = encode(a.text)
    keep = [i.span for i in ast.SourceFile(a.parse.tree).items if not isinstance(i, ast.Fn)]
    keep += [env.fns[n].span for n in _callee_closure(a, function) if n in env.fns]
    keep = sorted(set(keep), key=lambda s: s.start)
    prefix = b"".join(data[s.start : s.end] + b"\n\n" for s in keep)
    base = len(prefix) - sig.span.start
    old = (prefix + data[sig.span.start : sig.span.end] + b"\n").decode("utf-8", "surrogateescape")
    moved = [Edit(Span(e.span.start + base, e.span.end + base), e.new_text) for e in edits]
    p = parse(apply_edits(old, moved))
    module = lower_module(p)
    errs = [d for d in p.diagnostics if d.is_error]
    names = [function, *new]
    touched = [module.env.fns[n].span for n in names if n in module.env.fns]
    errs += [d for d in module.diagnostics if d.is_error and any(t.covers(d.span) for t in touched)]
    for n in names:
        if n in module.functions:
            errs += [d for d in check_function_guarded(module, n) if d.is_error]
    return errs


def _fresh_name(a: Analysis, base: str) -> str:
    taken = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", a.text))
    name, i = base, 1
    while name in taken or B.reserved(name):
        i += 1
        name = f"{base}{i}"
    return name


# --- extract function ---------------------------------------------------------------------------


@dataclass
class ExtractPlan:
    sig: FnSig
    lf: LoweredFn
    span: Span  # the selection, trimmed
    nodes: list[SyntaxNode]  # one expression, or a run of statements
    is_expr: bool
    title: str = "Extract function"


_NOT_EXTRACTABLE = frozenset({K.RANGE_EXPR, K.ASSIGN_EXPR, K.RETURN_EXPR, K.BREAK_EXPR})
_EXITS = frozenset({K.RETURN_EXPR, K.BREAK_EXPR, K.CONTINUE_EXPR})


def _trim(text: bytes, span: Span) -> Span:
    s, e = span.start, span.end
    while s < e and text[s : s + 1] in b" \t\r\n":
        s += 1
    while e > s and text[e - 1 : e] in b" \t\r\n":
        e -= 1
    return Span(s, e)


def _statement_run(block: SyntaxNode, span: Span) -> list[SyntaxNode] | None:
    kids = list(block.children())
    starts = [i for i, c in enumerate(kids) if c.span.start == span.start]
    ends = [i for i, c in enumerate(kids) if c.span.end == span.end]
    if not starts or not ends or starts[0] > ends[-1]:
        return None
    return kids[starts[0] : ends[-1] + 1]


def plan_extract(a: Analysis, span: Span) -> ExtractPlan:
    """Can the selection ``span`` be extracted? Raises :class:`RefactorError` if not."""
    if a.parse is None:
        raise RefactorError("the file is not parsed")
    span = _trim(encode(a.text), span)
    if not span:
        raise RefactorError("nothing is selected")
    sig, lf = _lowered(a, span.start)
    body = sig.ast.body
    if body is None or not body.span.covers(span) or body.span == span:
        raise RefactorError("the selection is not inside the function's body")
    node = a.parse.tree.covering_node(span)
    nodes: list[SyntaxNode] | None = None
    is_expr = False
    for anc in node.ancestors():
        if anc.kind == K.BLOCK:
            nodes = _statement_run(anc, span)
            if nodes is not None:
                block = ast.Block(anc)
                tail = block.tail
                for n in nodes:
                    if n.kind in (K.LET_STMT, K.EXPR_STMT):
                        continue
                    if tail is None or n != tail.syntax or expr_type(lf, n) != UNIT:
                        nodes = None  # a tail with a value: select it as an expression
                        break
            break
        if anc.span != span:
            break
    if nodes is None:
        exact = [n for n in node.ancestors() if n.span == span and n.kind in ast.EXPRS]
        if not exact:
            raise RefactorError("the selection is not a whole expression or whole statements")
        e = exact[-1]
        parent = e.parent
        if parent is not None and parent.kind == K.EXPR_STMT and parent.span == span:
            nodes = [parent]  # a block-like statement without `;`
        else:
            nodes, is_expr = [e], True
            _check_expression(a, lf, e)
    for n in nodes:
        for d in [n, *n.descendants()]:
            if d.kind in _EXITS:
                raise RefactorError("the selection contains `return`, `break` or `continue`")
    return ExtractPlan(sig, lf, span, nodes, is_expr)


def _check_expression(a: Analysis, lf: LoweredFn, e: SyntaxNode) -> None:
    if e.kind in _NOT_EXTRACTABLE:
        raise RefactorError("this expression cannot be extracted")
    parent = e.parent
    if parent is not None and parent.kind == K.CALL_EXPR and e.index == 0:
        raise RefactorError("a function name cannot be extracted")
    if (
        e.kind in ast.PATTERN_KINDS
        and parent is not None
        and (
            parent.kind in (K.MATCH_ARM, K.OR_PAT, K.RANGE_PAT)
            or (
                parent.kind == K.PREFIX_EXPR
                and parent.parent is not None
                and parent.parent.kind in (K.MATCH_ARM, K.OR_PAT, K.RANGE_PAT)
            )
        )
    ):
        if parent.kind != K.MATCH_ARM or ast.MatchArm(parent).pattern == e:
            raise RefactorError("a pattern of a `match` cannot be extracted")
    # a place that is written (`x` in `x[i] = …`, `&mut x`) is not a value
    child, up = e, parent
    while up is not None and up.kind in (K.INDEX_EXPR, K.FIELD_EXPR, K.PAREN_EXPR):
        first = next(iter(up.children()), None)
        if first != child:
            break
        child, up = up, up.parent
    if up is not None and up.kind == K.ASSIGN_EXPR and next(iter(up.children()), None) == child:
        raise RefactorError("the target of an assignment cannot be extracted")
    if up is not None and up.kind == K.REF_EXPR and ast.RefExpr(up).is_mut:
        raise RefactorError("a `&mut` borrow's variable cannot be extracted")
    t = expr_type(lf, e)
    if t is None:
        raise RefactorError("the type of the selection is not known")
    if isinstance(t, Ref):
        raise RefactorError("a borrow cannot be returned from a new function")


def _dims_in(t: Type, out: set[int]) -> None:
    if isinstance(t, Ref):
        _dims_in(t.inner, out)
    elif isinstance(t, Tensor):
        for d in t.shape:
            out.update(dim_syms(d))


def extract_edits(
    a: Analysis, plan: ExtractPlan, name: str | None = None
) -> tuple[list[Edit], str]:
    """The edits of an extraction and the new function's name."""
    sig, lf, span = plan.sig, plan.lf, plan.span
    text = encode(a.text)
    dims = sig.dim_names
    inside = _uses_in(lf, span)
    by_def: dict[Span, Use] = {}
    for u in inside:
        if u.kind in LOCAL_KINDS and u.def_span is not None and not span.covers(u.def_span):
            by_def.setdefault(u.def_span, u)
    written: set[Span] = set()
    use_at = {u.span: u for u in lf.uses}
    for n in plan.nodes:
        for p in _written_names(n):
            u = use_at.get(p.name.span) if p.name is not None else None
            if u is not None and u.def_span is not None:
                written.add(u.def_span)

    def used_outside(def_span: Span) -> bool:
        return any(
            u.def_span == def_span and not span.covers(u.span) and u.span != def_span
            for u in lf.uses
        )

    params: list[tuple[str, str]] = []  # (parameter text, argument text)
    typed: list[Type] = []
    outputs: list[tuple[str, Type, str]] = []  # (name, type, how: "let"/"let mut"/"assign")
    value_dims: list[str] = []
    for def_span, u in by_def.items():
        loc = local_at_def(a, def_span)
        if loc is None:
            raise RefactorError(f"cannot tell where `{u.name}` is defined")
        if loc.kind == "dim":
            value_dims.append(loc.name)
            continue
        t = local_type(a, lf, loc)
        if t is None:
            raise RefactorError(f"the type of `{loc.name}` is not known")
        params.append(_param(loc, t, def_span in written, dims))
        typed.append(t)
        inner = t.inner if isinstance(t, Ref) else t
        if def_span in written and not isinstance(inner, Tensor) and not isinstance(t, Ref):
            if plan.is_expr:
                raise RefactorError(f"the expression assigns `{loc.name}`")
            if used_outside(def_span):
                outputs.append((loc.name, t, "assign"))
    if not plan.is_expr:
        for n in plan.nodes:
            if n.kind != K.LET_STMT:
                continue
            let = ast.LetStmt(n)
            pat = let.pattern
            if pat is None:
                bound = [(let.name, let.is_mut)]
            else:  # `let (a, b) = …`: each name the pattern binds
                bound = [(b.name, b.is_mut) for b in pat.binds()]
            for ref, mut in bound:
                if ref is None or ref.text == "_" or not used_outside(ref.span):
                    continue
                loc = local_at_def(a, ref.span)
                t = local_type(a, lf, loc) if loc is not None else None
                if t is None:
                    raise RefactorError(f"the type of `{ref.text}` is not known")
                outputs.append((ref.text, t, "let mut" if mut else "let"))
    if len(outputs) > 1 and any(
        how == "assign" or not tuple_element_ok(t) for _, t, how in outputs
    ):
        names = ", ".join(f"`{o[0]}`" for o in outputs)
        raise RefactorError(
            f"the selection sets {names}, used after it: several are returned (as a tuple) only"
            " when the selection declares them all and they hold numbers, bools, structs or tuples"
        )
    if plan.is_expr:
        result: Type | None = expr_type(lf, plan.nodes[0])
    elif len(outputs) > 1:  # names it declares, returned as a tuple and taken apart again
        result = tuple_type(tuple(t for _, t, _ in outputs))
    else:
        result = outputs[0][1] if outputs else None
    if result is not None and result == UNIT:
        result = None
    bound: set[int] = set()
    for t in typed:
        _dims_in(t, bound)
    if result is not None:
        _dims_in(result, bound)
    dim_params = [dims[i] for i in sorted(bound) if i < len(dims)]
    for d in value_dims:
        if d not in dim_params:
            params.append((f"{d}: i64", d))
    eff: set[str] = set()
    for n in plan.nodes:
        eff |= _effects_of(a, lf, n)

    name = name or _fresh_name(a, "extracted")
    head = f"fn {name}"
    if dim_params:
        head += f"[{', '.join(dim_params)}]"
    head += f"({', '.join(p for p, _ in params)})"
    if result is not None:
        head += f" -> {result.display(dims)}"
    if eff:
        head += " ! " + ", ".join(sorted(eff))
    old_indent = _indent_of(text, span.start).decode("utf-8", "surrogateescape")
    snippet = text[span.start : span.end].decode("utf-8", "surrogateescape")
    body = "    " + _reindent(snippet, old_indent, "    ")
    if not plan.is_expr and len(outputs) > 1:
        body += "\n    (" + ", ".join(o[0] for o in outputs) + ")"
    elif not plan.is_expr and outputs:
        body += f"\n    {outputs[0][0]}"
    new_fn = f"\n\n{head} {{\n{body}\n}}"
    call = f"{name}({', '.join(arg for _, arg in params)})"
    if plan.is_expr:
        replacement = call
    elif len(outputs) > 1:
        pat = ", ".join(("mut " if how == "let mut" else "") + n for n, _, how in outputs)
        replacement = f"let ({pat}) = {call};"
    elif outputs:
        out_name, _, how = outputs[0]
        replacement = f"{out_name} = {call};" if how == "assign" else f"{how} {out_name} = {call};"
    else:
        replacement = f"{call};"
    return [Edit(span, replacement), Edit(Span(sig.span.end, sig.span.end), new_fn)], name


def _param(loc: Local, t: Type, writes: bool, dims: tuple[str, ...]) -> tuple[str, str]:
    """(parameter, argument) for a variable the extracted code reads or writes: tensors and
    borrows by `&` (read) or `&mut` (written); other values by copy (`mut` when written)."""
    n = loc.name
    if isinstance(t, Ref):
        if writes:
            return f"{n}: &mut {t.inner.display(dims)}", f"&mut {n}"
        return f"{n}: &{t.inner.display(dims)}", (f"&{n}" if t.mutable else n)
    if isinstance(t, Tensor):
        if writes:
            return f"{n}: &mut {t.display(dims)}", f"&mut {n}"
        return f"{n}: &{t.display(dims)}", f"&{n}"
    return (f"mut {n}" if writes else n) + f": {t.display(dims)}", n


# --- inline let -------------------------------------------------------------------------------


@dataclass
class InlinePlan:
    sig: FnSig
    lf: LoweredFn
    let: ast.LetStmt
    name: str
    uses: list[Use]

    @property
    def title(self) -> str:
        return f"Inline `{self.name}`"


_ATOMIC = frozenset(
    {
        K.LITERAL,
        K.PATH_EXPR,
        K.CALL_EXPR,
        K.INDEX_EXPR,
        K.FIELD_EXPR,
        K.PAREN_EXPR,
        K.ARRAY_EXPR,
        K.BLOCK_EXPR,
    }
)
_NO_PARENS_INSIDE = frozenset(
    {
        K.ARG_LIST,
        K.ARRAY_EXPR,
        K.INDEX_LIST,
        K.STRUCT_LIT_FIELD,
        K.PAREN_EXPR,
        K.LET_STMT,
        K.BLOCK,
        K.EXPR_STMT,
        K.RETURN_EXPR,
    }
)


def plan_inline(a: Analysis, offset: int) -> InlinePlan:
    """Can the `let` named (or used) at ``offset`` be inlined? Raises if not."""
    tok = token_at(a, offset)
    if tok is None or tok.kind != K.IDENT:
        raise RefactorError("there is no variable here")
    sym = symbol_at(a, offset)
    if sym is None or sym.kind != "local" or sym.def_span is None:
        raise RefactorError("only a `let` binding can be inlined")
    sig, lf = _lowered(a, sym.def_span.start)
    loc = local_at_def(a, sym.def_span)
    if loc is None or loc.node.kind != K.LET_STMT:
        raise RefactorError("only a `let` binding can be inlined")
    let = ast.LetStmt(loc.node)
    if let.is_mut:
        raise RefactorError(f"`{loc.name}` is mutable")
    init = let.init
    if init is None:
        raise RefactorError(f"`{loc.name}` has no initializer")
    if _effects_of(a, lf, init.syntax) or any(
        n.kind in _EXITS for n in [init.syntax, *init.syntax.descendants()]
    ):
        raise RefactorError(f"the initializer of `{loc.name}` has effects")
    if let.type is not None and any(
        t.kind in (K.INT, K.FLOAT) and not re.search(r"[iuf](8|16|32|64)$", t.text)
        for t in init.syntax.tokens()
    ):
        raise RefactorError(f"the literals of `{loc.name}`'s initializer take the `let`'s type")
    uses = [u for u in lf.uses if u.def_span == loc.span and u.span != loc.span]
    # a variable the initializer reads must not change while `name` is in scope
    block = loc.node.parent
    scope = Span(loc.node.span.end, block.span.end if block is not None else sig.span.end)
    read = {u.def_span for u in _uses_in(lf, init.span) if u.def_span is not None}
    if read and block is not None:
        use_at = {u.span: u for u in lf.uses}
        for n in block.descendants():
            if n.span.end <= scope.start or n.kind not in (K.ASSIGN_EXPR, K.REF_EXPR):
                continue
            for p in _written_names(n):
                u = use_at.get(p.name.span) if p.name is not None else None
                if u is not None and u.def_span in read:
                    raise RefactorError(
                        f"`{u.name}` changes after `{loc.name}` is bound: inlining would "
                        "change its value"
                    )
    return InlinePlan(sig, lf, let, loc.name, uses)


def inline_edits(a: Analysis, plan: InlinePlan) -> list[Edit]:
    text = encode(a.text)
    init = plan.let.init
    assert init is not None and a.parse is not None
    init_text = text[init.span.start : init.span.end].decode("utf-8", "surrogateescape")
    atomic = init.syntax.kind in _ATOMIC and not (
        init.syntax.kind == K.LITERAL and init_text.startswith("-")
    )
    edits = []
    for u in plan.uses:
        node = a.parse.tree.covering_node(u.span)
        while node.kind != K.PATH_EXPR and node.parent is not None and node.span == u.span:
            node = node.parent
        parent = node.parent if node.kind == K.PATH_EXPR else None
        bare = atomic or (parent is not None and parent.kind in _NO_PARENS_INSIDE)
        if parent is not None and parent.kind == K.ASSIGN_EXPR:
            bare = bare or next(iter(parent.children()), None) != node  # the right side
        edits.append(Edit(u.span, init_text if bare else f"({init_text})"))
    let = plan.let.span
    start, end = let.start, let.end
    line_start = text.rfind(b"\n", 0, start) + 1
    nl = text.find(b"\n", end)
    line_end = len(text) if nl < 0 else nl + 1
    if not text[line_start:start].strip() and not text[end:line_end].strip():
        start, end = line_start, line_end
    edits.append(Edit(Span(start, end), ""))
    return edits


# --- a missing effect, up the call chain ------------------------------------------------------

_EFFECT_MSG = re.compile(r"has the `(\w+)` effect, which `(\w+)` does not declare")


@dataclass
class EffectPlan:
    effect: str
    functions: list[str]  # the function with the diagnostic, then its callers to update

    @property
    def title(self) -> str:
        first, rest = self.functions[0], self.functions[1:]
        callers = ", ".join(f"`{n}`" for n in rest)
        return f"add `{self.effect}` to the effects of `{first}` and its callers {callers}"


def plan_effect_chain(a: Analysis, d: Diagnostic) -> EffectPlan | None:
    """For a K0501 diagnostic: the function and every caller, transitively, that would lack
    the effect once its callee declares it. None when no caller needs it (the diagnostic's
    own quick fix is then the whole fix)."""
    if d.code != "K0501" or a.module is None:
        return None
    m = _EFFECT_MSG.search(d.message)
    if m is None:
        return None
    effect, fn = m.group(1), m.group(2)
    env = a.module.env
    if fn not in env.fns:
        return None
    callers: dict[str, list[str]] = {}
    for c in calls(a):
        callers.setdefault(c.callee, [])
        if c.caller not in callers[c.callee]:
            callers[c.callee].append(c.caller)
    chain = [fn]
    i = 0
    while i < len(chain):
        for c in callers.get(chain[i], []):
            if c not in chain and effect not in env.fns[c].type.effects:
                chain.append(c)
        i += 1
    return EffectPlan(effect, chain) if len(chain) > 1 else None


def effect_edits(a: Analysis, plan: EffectPlan) -> list[Edit]:
    env = a.module.env  # type: ignore[union-attr]
    edits = []
    for name in plan.functions:
        fn = env.fns[name].ast
        if plan.effect in [e.text.strip() for e in fn.effects]:
            continue
        lst = fn.effect_list
        if lst is not None:
            edits.append(Edit(Span(lst.span.end, lst.span.end), f", {plan.effect}"))
        else:
            anchor = fn.syntax.child_of_kind(K.RET_TYPE) or fn.param_list
            at = anchor.span.end if anchor is not None else fn.name.span.end  # type: ignore[union-attr]
            edits.append(Edit(Span(at, at), f" ! {plan.effect}"))
    return edits
