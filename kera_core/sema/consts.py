"""Constants, checked once per module: each initializer is a constant expression, no
constant refers to itself, each value lowers without error, and each value is evaluated
at compile time by the interpreter's own handlers — a checked error there (integer
division by zero, a cast of NaN to bool …) is K0317 on the operation, not a run-time
error in every function that uses the constant. A use of a constant that
failed gets no diagnostic of its own (the constant's are reported once, on the constant),
so `C + C` with a bad `C` does not repeat `C`'s error at every use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kera_core.diagnostics import Diagnostic, error
from kera_core.ir.node import Value
from kera_core.ir.types import FnType, Prim, Ref, Tensor
from kera_core.sema import literals
from kera_core.sema.env import FnSig, ModuleEnv, Use
from kera_core.sema.frames import Frame
from kera_core.syntax import ast

if TYPE_CHECKING:
    from kera_core.interp.errors import InterpError

_WHAT = {
    ast.CallExpr: "a call",
    ast.IndexExpr: "indexing",
    ast.FieldExpr: "a field access",
    ast.BlockExpr: "a block",
    ast.IfExpr: "an `if`",
    ast.ForExpr: "a loop",
    ast.WhileExpr: "a loop",
    ast.LoopExpr: "a loop",
    ast.MatchExpr: "a `match`",
    ast.ArrayExpr: "an array",
    ast.StructLit: "a struct literal",
    ast.RefExpr: "a borrow",
    ast.AssignExpr: "an assignment",
    ast.RangeExpr: "a range",
}


def _references(env: ModuleEnv, name: str, diags: list[Diagnostic]) -> list[str] | None:
    """The constants ``name``'s initializer uses, or None if it is not a constant expression."""
    c = env.consts[name]
    if c.value is None:
        return None
    refs: list[str] = []
    ok = True
    stack: list[ast.Expr | None] = [c.value]
    while stack:
        e = stack.pop()
        if e is None:
            continue
        if isinstance(e, ast.Literal | ast.ConstPath):  # `f32::PI`: checked where lowered
            continue
        if isinstance(e, ast.PathExpr):
            ref = e.name.text if e.name is not None else ""
            if ref in env.consts:
                refs.append(ref)
            elif ref in env.imported_consts:
                continue  # checked in its own file; a cycle across files: sema/package.py
            else:
                ok = False
                where = "a function" if ref in env.fns else "not a constant"
                diags.append(
                    error(
                        "K0315",
                        e.span,
                        f"`{ref}` is {where}: the initializer of constant `{name}` may use only "
                        "literals, other constants, operators and `as`",
                    )
                )
        elif isinstance(e, ast.ParenExpr):
            stack.append(e.inner)
        elif isinstance(e, ast.PrefixExpr):
            stack.append(e.operand)
        elif isinstance(e, ast.BinExpr):
            stack.extend((e.rhs, e.lhs))
        elif isinstance(e, ast.CastExpr):
            stack.append(e.expr)
        elif isinstance(e, ast.ArrayExpr):  # a table (§3.3): its elements are constant too
            stack.extend(reversed(e.elements))
        elif isinstance(e, ast.IndexExpr) and _is_table_element(e):  # `W[2]` of a table `W`
            stack.extend(reversed([e.base, *e.indices]))
        else:
            ok = False
            what = _WHAT.get(type(e), "this expression")
            diags.append(
                error(
                    "K0315",
                    e.span,
                    f"the initializer of constant `{name}` must be a constant expression, "
                    f"not {what}",
                )
            )
    return refs if ok else None


def _is_table_element(e: ast.IndexExpr) -> bool:
    """`W[i, j]`: an element of a constant (a name) at indices, not a slice — a constant
    expression when its indices are (checked with the rest of the initializer)."""
    base = e.base
    while isinstance(base, ast.ParenExpr):
        base = base.inner
    indices = e.indices
    return (
        isinstance(base, ast.PathExpr)
        and bool(indices)
        and not any(isinstance(i, ast.RangeExpr) for i in indices)
    )


def _cycles(env: ModuleEnv, refs: dict[str, list[str]], diags: list[Diagnostic]) -> set[str]:
    """Constants on a reference cycle (each reported once, with the cycle)."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    bad: set[str] = set()
    for root in refs:
        if root in state:
            continue
        path: list[str] = []
        stack: list[tuple[str, int]] = [(root, 0)]
        while stack:
            name, i = stack.pop()
            if i == 0:
                state[name] = 1
                path.append(name)
            deps = refs.get(name, [])
            if i < len(deps):
                stack.append((name, i + 1))
                dep = deps[i]
                if state.get(dep) == 1:
                    cycle = path[path.index(dep) :]
                    shown = " -> ".join(f"`{n}`" for n in [*cycle, dep])
                    for n in cycle:
                        if n not in bad:
                            bad.add(n)
                            c = env.consts[n]
                            diags.append(
                                error(
                                    "K0315",
                                    c.name_span or c.span,
                                    f"constant `{n}` refers to itself: {shown}",
                                )
                            )
                elif dep not in state and dep in refs:
                    stack.append((dep, 0))
                continue
            state[name] = 2
            path.pop()
    return bad


def check_constants(env: ModuleEnv) -> list[Diagnostic]:
    """Check every constant once; record the failed ones in ``env.bad_consts`` and the
    uses in the initializers that lower in ``env.uses`` (after the declarations' own, in
    source order: :func:`initializer_uses_sorted`)."""
    diags: list[Diagnostic] = []
    uses: list[Use] = []
    refs: dict[str, list[str]] = {}
    bad = env.bad_consts
    for name, c in env.consts.items():
        r = _references(env, name, diags)
        if r is None or c.type is None:
            bad.add(name)
        else:
            refs[name] = r
    bad |= _cycles(env, refs, diags)
    # the checks share their nodes and their inlined constants: each constant is lowered
    # once in all (a chain `const C2 = C1 + 1; …` lowered its whole prefix per constant)
    shared: tuple[dict, dict, dict] = ({}, {}, {})
    for name, c in env.consts.items():
        if name in bad or c.value is None or c.type is None:
            continue
        diags += _lowered_and_evaluated(env, name, bad, uses, shared)
    env.uses += initializer_uses_sorted(uses)
    return diags


def initializer_uses_sorted(uses: list[Use]) -> list[Use]:
    """The initializers' uses as ``env.uses`` holds them: in source order (so by constant
    in file order), whatever the order the constants were checked in (those of primitive
    type are collected first) — an incremental check of one constant puts its run back in
    its place (sema/incremental.py)."""
    return sorted(uses, key=lambda u: u.span.start)


def check_one_constant(
    env: ModuleEnv, name: str, uses: list[Use] | None = None
) -> list[Diagnostic] | None:
    """:func:`check_constants`' diagnostics of constant ``name`` alone, its failure
    recorded in ``env.bad_consts`` — what the whole check gives it when no other constant
    names it and none it uses failed (then no other constant's check reads it, and it reads
    only constants that lower: the order of the checks does not matter); None when one it
    uses failed (the whole check decides it). The uses in its initializer, when it lowers,
    go to ``uses``."""
    diags: list[Diagnostic] = []
    c = env.consts[name]
    env.bad_consts.discard(name)
    refs = _references(env, name, diags)
    if refs is None or c.type is None:
        env.bad_consts.add(name)
        return diags
    if any(r in env.bad_consts for r in refs):
        return None
    if _cycles(env, {name: refs}, diags):  # (it names itself)
        env.bad_consts.add(name)
        return diags
    if c.value is not None:
        diags += _lowered_and_evaluated(env, name, env.bad_consts, uses)
    return diags


def _lowered_and_evaluated(
    env: ModuleEnv,
    name: str,
    bad: set[str],
    uses: list[Use] | None = None,
    shared: tuple[dict, dict, dict] | None = None,
) -> list[Diagnostic]:
    """Constant ``name``'s value lowered, checked against its type and evaluated: its
    diagnostics; ``bad`` gets it when one is an error, ``uses`` the uses in its value (the
    names it reads; those inside another constant it reads are that constant's). With
    ``shared`` (nodes, inlined constants, which nodes reach a checked operation), the
    lowering adds to those of the checks before it (an inlined constant's value is the same
    node in every lowering)."""
    from kera_core.sema.lower import FnLowering

    c = env.consts[name]
    assert c.value is not None and c.type is not None
    sig = FnSig(name, FnType(0, (), c.type), (), (), False, c.span, c.name_span or c.span, "", None)  # type: ignore[arg-type]
    lw = FnLowering(env, sig, {})
    checked: dict[bytes, bool] = {}
    if shared is not None:
        lw.nodes, lw._inlined, checked = shared
    lw.frame = Frame(None, [])
    t = c.type
    if isinstance(t, Ref) or (isinstance(t, Tensor) and t.space != "host"):
        bad.add(name)
        owned = t.inner if isinstance(t, Ref) else Tensor(t.elem, t.shape)
        what = "a borrow" if isinstance(t, Ref) else f"in `@{t.space}` memory"
        return [
            error(
                "K0301",
                c.name_span or c.span,
                f"constant `{name}` is declared `{t}`: a constant is a value in host memory,"
                f" not {what} — declare `{owned}`",
            )
        ]
    if isinstance(t, Tensor) and not t.shape:
        bad.add(name)  # `f32[2.5]`: the parser reported the dimension
        return []
    if isinstance(t, Tensor) and _table_errors(lw, name, t, c.value):
        bad.add(name)
        return [d for d in lw.diags if c.span.covers(d.span)]
    v = lw.expr(c.value, c.type)
    if not v.is_err:
        lw.check_type(c.type, v, c.value.span, f"constant `{name}`")
    mine = [d for d in lw.diags if c.span.covers(d.span)]
    if uses is not None:
        uses += lw.uses
    if not v.is_err and not any(d.is_error for d in lw.diags) and v.value is not None:
        failed = _evaluation_error(lw, v.value, name, c.value.span, checked)
        if failed is not None:
            mine.append(failed)
    if v.is_err or any(d.is_error for d in mine):
        bad.add(name)
    return mine


# the operations with checked errors: integer `/` and `%`, a cast, an element of a table
# (`W[i]` out of range)
_CHECKED = frozenset({"div", "rem", "cast", "index"})


def _table_errors(lw, name: str, t: Tensor, value: ast.Expr) -> bool:
    """A constant table's initializer against its declared shape and element type, before
    it is lowered as a whole (§3.3): each nested literal's count against its dimension
    (K0302, at that literal: a ragged row is one whose count differs from the shape's), then
    each element against the element type (at that element; the literal-typing rules are
    those of any expected type, §6.2) — so a wrong entry of a long table is reported where
    it is, not as the whole literal's type. True when it reported something (in ``lw``);
    the uses it recorded are dropped (the lowering of the whole records them)."""
    shape = t.shape
    if not all(isinstance(d, int) for d in shape):
        return False  # (a dimension that failed to resolve: reported on the type)
    n_uses, n_diags = len(lw.uses), len(lw.diags)
    rank = len(shape)
    parts: list[tuple[ast.Expr, int, str]] = []  # (element, depth, its indices)
    stack: list[tuple[ast.Expr | None, int, str]] = [(value, 0, "")]
    while stack:
        e, depth, at = stack.pop()
        if e is None:
            continue
        bare = e
        while isinstance(bare, ast.ParenExpr) and bare.inner is not None:
            bare = bare.inner
        if depth == rank or not isinstance(bare, ast.ArrayExpr):
            if depth > 0:  # an element, or a row named by a constant (the whole: below)
                parts.append((e, depth, at))
            continue
        items = bare.elements
        if len(items) != shape[depth]:
            what = f"the initializer of constant `{name}`" if depth == 0 else f"`{name}[{at}]`"
            lw.diags.append(
                error(
                    "K0302",
                    bare.span,
                    f"{what} has {len(items)} element{'s' if len(items) != 1 else ''}, but "
                    f"`{name}` is declared `{t}`: {'it' if depth == 0 else 'each row'} "
                    f"needs {shape[depth]}",
                )
            )
        sep = ", " if at else ""
        stack.extend((x, depth + 1, f"{at}{sep}{k}") for k, x in reversed(list(enumerate(items))))
    if len(lw.diags) == n_diags:
        for e, depth, _ in sorted(parts, key=lambda p: p[0].span.start):
            want = t.elem if depth == rank else Tensor(t.elem, shape[depth:], t.space)
            v = lw.expr(e, want)
            if not v.is_err:
                lw.check_type(want, v, e.span, f"an element of constant `{name}`")
    del lw.uses[n_uses:]
    return any(d.is_error for d in lw.diags[n_diags:])


def _evaluation_error(
    lw, value: Value, name: str, whole, checked: dict[bytes, bool] | None = None
) -> Diagnostic | None:
    """Evaluate the lowered constant with the interpreter's handlers (so the compile-time
    value is the run-time one, bit for bit); the K0317 diagnostic of the first operation
    that fails, at that operation's span, or None when the value is computed.

    Only a checked operation can fail (integer `/` and `%` by zero, a cast): a constant
    without one is not evaluated here, so checking a file need not load the interpreter
    (numpy) — `kera check` stays light."""
    if not _reaches_checked(lw.nodes, value.node, {} if checked is None else checked):
        return None
    _, failure = _evaluate(lw, value)
    if failure is None:
        return None
    h, ex = failure
    spans = lw.prov.absolute(h)
    at = min(spans, key=lambda s: s.end - s.start) if spans else whole
    return error(
        "K0317",
        at,
        f"constant `{name}` cannot be evaluated: {ex.message} ({ex.code} at run time)",
    )


def _reaches_checked(nodes: dict, root: bytes, memo: dict[bytes, bool]) -> bool:
    """Does node ``root`` or one it reads make a checked operation? (``memo``: the answers
    so far, by node, shared by the constants' checks: each node is asked about once.)"""
    stack = [(root, False)]
    while stack:
        h, ready = stack.pop()
        if h in memo:
            continue
        node = nodes[h]
        if ready:
            memo[h] = node.op in _CHECKED or any(memo[i.node] for i in node.inputs)
            continue
        stack.append((h, True))
        stack.extend((i.node, False) for i in node.inputs if i.node not in memo)
    return memo[root]


def _evaluate(lw, value: Value) -> tuple[object, tuple[bytes, InterpError] | None]:
    """The value of a lowered constant, or the node that failed and its error."""
    import numpy as np

    from kera_core.interp.errors import InterpError
    from kera_core.interp.ops_impl import HANDLERS

    results: dict[bytes, object] = {}
    stack = [(value.node, False)]
    while stack:
        h, ready = stack.pop()
        if h in results:
            continue
        node = lw.nodes[h]
        if not ready:
            stack.append((h, True))
            stack.extend((i.node, False) for i in node.inputs if i.node not in results)
            continue
        args = [results[i.node] for i in node.inputs]
        try:
            with np.errstate(all="ignore"):
                results[h] = HANDLERS[node.op](node, None, *args)
        except InterpError as ex:
            return None, (h, ex)
    return results[value.node], None


def constant_value(env: ModuleEnv, name: str):
    """The compile-time value of constant ``name`` (a numpy scalar; a Python ``int`` for an
    integer literal), for a constant used where a value is needed before the functions are
    checked (a dimension, §3.3); None when it has no value — a cycle, a bad initializer, a
    failed evaluation — which :func:`check_constants` reports, once, on the constant.

    A constant that lowers to one integer ``const`` node (`const N: i64 = 64;`) has that
    node's value, wrapped as the interpreter's ``const`` wraps it: it is not evaluated, so
    a file whose dimension constants are literals is checked without loading the
    interpreter (numpy), as :func:`_evaluation_error` spares it."""
    memo = env.const_values
    if name in memo:
        return memo[name]
    memo[name] = None
    refs, bad = _reference_graph(env)
    todo, seen = [name], set()
    while todo:
        n = todo.pop()
        if n in bad:
            return None
        if n not in seen:
            seen.add(n)
            todo.extend(refs[n])
    lowered = _lowered_quietly(env, name)
    if lowered is None:
        return None
    lw, value = lowered
    node = lw.nodes[value.node]
    t = node.attr("type")
    if node.op == "const" and isinstance(t, Prim) and t.is_int:
        memo[name] = literals.wrap(int(node.attr("value")), t)  # type: ignore[arg-type]
        return memo[name]
    result, failure = _evaluate(lw, value)
    if failure is None:
        memo[name] = result
    return memo[name]


def _reference_graph(env: ModuleEnv) -> tuple[dict[str, list[str]], set[str]]:
    """The constants each constant expression refers to, and the constants that cannot be
    evaluated (not a constant expression, no type, on a cycle); their diagnostics are
    :func:`check_constants`' to report. Made once per set of constants (``env.consts``
    only grows, so its size tells), not once per constant asked for (the 200k-line
    benchmark file's 3,200 constants: 0.8 s, a quarter of its signatures' time)."""
    tables = (env.consts, env.imported_consts)
    sizes = (len(env.consts), len(env.imported_consts))
    hit = env.const_graph
    if hit is not None and hit[0][0] is tables[0] and hit[0][1] is tables[1] and hit[1] == sizes:
        return hit[2], hit[3]
    quiet: list[Diagnostic] = []
    refs: dict[str, list[str]] = {}
    for n, c in env.consts.items():
        r = _references(env, n, quiet)
        if r is not None and c.type is not None:
            refs[n] = r
    bad = _cycles(env, refs, quiet) | (set(env.consts) - set(refs))
    env.const_graph = (tables, sizes, refs, bad)
    return refs, bad


def _lowered_quietly(env: ModuleEnv, name: str):
    """Constant ``name`` lowered on its own: (the lowering, its value), or None when it
    does not lower cleanly (its diagnostics are :func:`check_constants`' to report)."""
    from kera_core.sema.lower import FnLowering

    c = env.consts[name]
    if c.value is None or c.type is None:
        return None
    sig = FnSig(name, FnType(0, (), c.type), (), (), False, c.span, c.name_span or c.span, "", None)  # type: ignore[arg-type]
    lw = FnLowering(env, sig, {})
    lw.frame = Frame(None, [])
    v = lw.expr(c.value, c.type)
    if v.is_err or v.value is None or any(d.is_error for d in lw.diags):
        return None
    if not lw.check_type(c.type, v, c.value.span, ""):
        return None
    return lw, v.value


def constant_digest(env: ModuleEnv, name: str) -> bytes:
    """The identity of constant ``name`` as another file sees it: the hash of its lowered
    value (which covers every constant it refers to), or ``b""`` when it failed (reported
    on it, in its own file)."""
    if name in env.bad_consts:
        return b""
    lowered = _lowered_quietly(env, name)
    return lowered[1].node if lowered is not None else b""
