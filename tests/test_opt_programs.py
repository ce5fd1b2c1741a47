"""The optimizer never changes results: same output bits, same printed text, same error.

For every example and for random programs, every function that survives optimisation is
run under the reference interpreter on the unoptimized and on the optimized graph, with
seeded inputs (ordinary and adversarial: NaN, ±0, subnormals, ±inf, integer extremes)
and several dimension sizes (0 included, so reductions of empty tensors fail). The
outcome must be identical: the raw little-endian bytes of every output and the printed
text, or the same checked-error code (docs/semantics.md §9 defines *which* error a run
reports when several could; the optimizer keeps it).

The generator below is aimed at the optimizer: constant conditions and constant
arithmetic to fold, private helpers (tensor arguments with symbolic and static sizes) to
inline, elementwise loops back to back to fuse and vectorize, early returns, `while`
loops, integer division and indexing that may fail at run time.
"""

from __future__ import annotations

import glob
import os
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kera_core.analysis import analyze
from kera_core.interp import InterpError, run_function
from kera_core.interp.api import entry_signature
from kera_core.interp.gen import InputGenerator
from kera_core.opt import optimize
from tests.programs import program, render
from tests.test_keg_programs import programs as keg_programs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = sorted(glob.glob(os.path.join(ROOT, "examples", "*.kera")))
MAX_STEPS = 5_000  # runs that hit it are skipped (R0007 is a host limit)


# --- running both graphs ------------------------------------------------------------------


def outcome(graph, provenance, name: str, inputs: dict, dims: dict):
    src = SimpleNamespace(graph=graph, provenance=provenance)
    try:
        r = run_function(src, name, inputs, dims, max_steps=MAX_STEPS)
    except InterpError as e:
        return ("error", e.code)
    return ("ok", [(o.key, str(o.type), o.raw) for o in r.outputs], r.printed)


def assert_same_results(module, opt_graph, seeds=range(3), sizes=(0, 1, 5, 16)) -> int:
    """Run every function of ``opt_graph`` on both graphs; returns the number of runs."""
    runs = 0
    for name, f in sorted(module.graph.functions.items()):
        if name not in opt_graph.functions:
            continue
        sig = entry_signature(module, name)
        for n in sizes if f.type.n_dims else (None,):
            dims = {i: n for i in range(f.type.n_dims)}
            named_dims = {sig.dim_names[i]: n for i in dims}
            for seed in seeds:
                for adversarial in (False, True):
                    gen = InputGenerator(seed, adversarial)
                    inputs = {p: gen.value(t, dims) for p, t in sig.value_params}
                    want = outcome(module.graph, module.provenance, name, inputs, named_dims)
                    got = outcome(opt_graph, module.provenance, name, inputs, named_dims)
                    if want[0] == "error" and want[1] == "R0007":
                        continue  # the step limit is a host setting; fusion takes fewer steps
                    assert got == want, (name, n, seed, adversarial, want[:2], got[:2])
                    runs += 1
    return runs


def check_source(src: str, **kw) -> None:
    a = analyze(src)
    assert not a.has_errors, [d.message for d in a.diagnostics if d.is_error] + [src]
    r = optimize(a.module.graph)
    assert r.report.converged
    assert_same_results(a.module, r.graph, **kw)


@pytest.mark.parametrize("path", EXAMPLES, ids=os.path.basename)
def test_examples_same_bits(path: str) -> None:
    with open(path, encoding="utf-8") as f:
        a = analyze(f.read())
    r = optimize(a.module.graph)
    assert r.report.converged
    assert assert_same_results(a.module, r.graph, seeds=range(4)) > 0


# --- a generator aimed at the optimizer ------------------------------------------------------

F_OPS = ["+", "-", "*", "/"]
I_OPS = ["+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>"]
CMP = ["<", "<=", ">", ">=", "==", "!="]


class Scope:
    def __init__(self, helpers: list[str], dim: str = "N", tensors=("x", "y")) -> None:
        self.f32 = ["a"]
        self.i64 = ["b", "c"]
        self.tensors = list(tensors)  # f32[dim] values usable as `t[i]`, `sum(&t)`
        self.loop: str | None = None
        self.helpers = helpers
        self.dim = dim
        self.n = 0

    def fresh(self, p: str) -> str:
        self.n += 1
        return f"{p}{self.n}"


def f_lit(draw) -> str:
    return draw(st.sampled_from(["0.0", "1.0", "0.5", "2.25", "3.0", "1.0e-3", "65504.0"])) + "f32"


def i_lit(draw) -> str:
    return f"{draw(st.sampled_from([0, 1, 2, 3, 7, 63, 64, 100]))}i64"


def f_expr(draw, sc: Scope, depth: int) -> str:
    kinds = ["var", "lit", "elem"]
    if sc.loop:
        kinds += ["loop_elem", "loop_elem"]
    if depth > 0:
        kinds += ["bin", "bin", "neg", "cast", "if", "reduce", "fma", "math", "minmax"]
        if sc.helpers:
            kinds += ["call", "call"]
    k = draw(st.sampled_from(kinds))
    d = depth - 1
    if k == "var":
        return draw(st.sampled_from(sc.f32))
    if k == "lit":
        return f_lit(draw)
    if k == "elem":
        return f"{draw(st.sampled_from(sc.tensors))}[{i_expr(draw, sc, min(d, 1))}]"
    if k == "loop_elem":
        t = draw(st.sampled_from(sc.tensors))
        off = draw(st.sampled_from(["", "", " + 1i64", " - 1i64"]))
        return f"{t}[{sc.loop}{off}]"
    if k == "bin":
        return f"({f_expr(draw, sc, d)} {draw(st.sampled_from(F_OPS))} {f_expr(draw, sc, d)})"
    if k == "neg":
        return f"-{f_expr(draw, sc, d)}"
    if k == "cast":
        return f"({i_expr(draw, sc, d)} as f32)"
    if k == "if":
        c = cond(draw, sc, d)
        return f"(if {c} {{ {f_expr(draw, sc, d)} }} else {{ {f_expr(draw, sc, d)} }})"
    if k == "reduce":
        t = draw(st.sampled_from(sc.tensors))
        u = sc.tensors[0]
        return draw(st.sampled_from([f"sum(&{t})", f"max(&{t})", f"dot(&{t}, &{u})", f"min(&{t})"]))
    if k == "fma":
        return f"fma({', '.join(f_expr(draw, sc, d) for _ in range(3))})"
    if k == "math":
        fn = draw(st.sampled_from(["sqrt", "abs", "exp", "tanh"]))
        return f"{fn}({f_expr(draw, sc, d)})"
    if k == "minmax":
        fn = draw(st.sampled_from(["minimum", "maximum"]))
        return f"{fn}({f_expr(draw, sc, d)}, {f_expr(draw, sc, d)})"
    h = draw(st.sampled_from(sc.helpers))
    if h.startswith("s"):
        return f"{h}({f_expr(draw, sc, d)}, {f_expr(draw, sc, 0)})"
    arg = draw(st.sampled_from([*sc.tensors, "w"])) if sc.dim == "N" else "v"
    return f"{h}(&{arg}, {f_expr(draw, sc, d)}, {i_expr(draw, sc, 0)})"


def i_expr(draw, sc: Scope, depth: int) -> str:
    kinds = ["var", "lit", "dim"] + (["bin", "bin", "cast"] if depth > 0 else [])
    if sc.loop:
        kinds.append("loop")
    k = draw(st.sampled_from(kinds))
    if k == "var":
        return draw(st.sampled_from(sc.i64))
    if k == "lit":
        return i_lit(draw)
    if k == "dim":
        return sc.dim
    if k == "loop":
        return sc.loop or "0i64"
    if k == "bin":
        op = draw(st.sampled_from(I_OPS))
        return f"({i_expr(draw, sc, depth - 1)} {op} {i_expr(draw, sc, depth - 1)})"
    return f"({draw(st.sampled_from(sc.f32))} as i64)"


def cond(draw, sc: Scope, depth: int) -> str:
    k = draw(st.sampled_from(["f", "i", "const", "const", "and", "not"]))
    op = draw(st.sampled_from(CMP))
    if k == "f":
        return f"{f_expr(draw, sc, depth)} {op} {f_expr(draw, sc, depth)}"
    if k == "i":
        return f"{i_expr(draw, sc, depth)} {op} {i_expr(draw, sc, depth)}"
    if k == "const":
        return draw(st.sampled_from(["true", "false", "2i64 > 1i64", "(3i64 * 4i64) == 11i64"]))
    if k == "and":
        return f"({cond(draw, sc, 0)} && {cond(draw, sc, 0)})"
    return f"!({cond(draw, sc, 0)})"


def statements(draw, sc: Scope, n: int, returns: bool, io: bool) -> list[str]:
    out: list[str] = []
    for _ in range(n):
        kinds = ["let", "leti", "reduce_loop", "map_loop", "map_chain", "inplace", "if", "while"]
        if returns:
            kinds.append("return")
        if io:
            kinds.append("print")
        k = draw(st.sampled_from(kinds))
        if k == "let":
            v = sc.fresh("v")
            out.append(f"    let {v}: f32 = {f_expr(draw, sc, 2)};")
            sc.f32.append(v)
        elif k == "leti":
            v = sc.fresh("k")
            out.append(f"    let {v}: i64 = {i_expr(draw, sc, 2)};")
            sc.i64.append(v)
        elif k == "reduce_loop":
            acc, i = sc.fresh("acc"), sc.fresh("i")
            out.append(f"    let mut {acc}: f32 = {f_lit(draw)};")
            sc.loop = i
            out.append(f"    for {i} in 0..{sc.dim} {{ {acc} = {acc} + {f_expr(draw, sc, 2)}; }}")
            sc.loop = None
            sc.f32.append(acc)
        elif k == "map_loop":
            t, i = sc.fresh("t"), sc.fresh("i")
            hi = draw(st.sampled_from([sc.dim, sc.dim, f"{sc.dim} - 1i64"]))
            out.append(f"    let mut {t}: f32[{sc.dim}] = zeros();")
            sc.loop = i
            out.append(f"    for {i} in 0..{hi} {{ {t}[{i}] = {f_expr(draw, sc, 2)}; }}")
            sc.loop = None
            sc.tensors.append(t)
        elif k == "map_chain":  # two loops, the second reading the first at `i`: fusable
            t1, t2, i, j = sc.fresh("t"), sc.fresh("t"), sc.fresh("i"), sc.fresh("i")
            out.append(f"    let mut {t1}: f32[{sc.dim}] = zeros();")
            sc.loop = i
            out.append(f"    for {i} in 0..{sc.dim} {{ {t1}[{i}] = {f_expr(draw, sc, 1)}; }}")
            sc.loop = j
            op = draw(st.sampled_from(F_OPS))
            rhs = f"{t1}[{j}] {op} {f_expr(draw, sc, 1)}"
            out.append(f"    let mut {t2}: f32[{sc.dim}] = zeros();")
            out.append(f"    for {j} in 0..{sc.dim} {{ {t2}[{j}] = {rhs}; }}")
            sc.loop = None
            sc.tensors += [t1, t2]
        elif k == "inplace":  # loops updating one tensor in turn: fusable when elementwise
            t = sc.fresh("t")
            out.append(f"    let mut {t}: f32[{sc.dim}] = {sc.tensors[0]} * {f_lit(draw)};")
            for _ in range(draw(st.integers(2, 3))):
                i = sc.fresh("i")
                sc.loop = i
                sc.tensors.append(t)
                rhs = f"{t}[{i}] {draw(st.sampled_from(F_OPS))} {f_expr(draw, sc, 1)}"
                sc.tensors.pop()
                out.append(f"    for {i} in 0..{sc.dim} {{ {t}[{i}] = {rhs}; }}")
            sc.loop = None
            sc.tensors.append(t)
        elif k == "if":
            m = sc.fresh("m")
            out.append(f"    let mut {m}: f32 = {f_expr(draw, sc, 1)};")
            out.append(f"    if {cond(draw, sc, 1)} {{ {m} = {f_expr(draw, sc, 2)}; }}")
            sc.f32.append(m)
        elif k == "while":
            w, s = sc.fresh("w"), sc.fresh("s")
            limit = draw(st.sampled_from(["0i64", "3i64", sc.dim]))
            out.append(f"    let mut {w}: i64 = 0i64;")
            out.append(f"    let mut {s}: f32 = {f_lit(draw)};")
            out.append(
                f"    while {w} < {limit} {{ {s} = {s} * {f_expr(draw, sc, 1)}; {w} += 1i64; }}"
            )
            sc.f32.append(s)
        elif k == "return":
            out.append(f"    if {cond(draw, sc, 1)} {{ return {f_expr(draw, sc, 1)}; }}")
        else:
            out.append(f"    print({f_expr(draw, sc, 1)});")
    return out


@st.composite
def opt_programs(draw) -> str:
    items: list[str] = []
    helpers: list[str] = []
    for k in range(draw(st.integers(0, 2))):
        sc = Scope(list(helpers), dim="M", tensors=("v",))
        sc.f32, sc.i64 = ["s"], ["j"]
        body = statements(draw, sc, draw(st.integers(0, 2)), returns=True, io=False)
        vis = "pub " if draw(st.integers(0, 3)) == 0 else ""
        head = f"{vis}fn h{k}[M](v: &f32[M], s: f32, j: i64) -> f32 {{"
        items.append("\n".join([head, *body, f"    {f_expr(draw, sc, 2)}", "}"]))
        helpers.append(f"h{k}")
    for k in range(draw(st.integers(1, 2))):  # scalar helpers: arithmetic only, cannot fail
        op1, op2 = draw(st.sampled_from(F_OPS)), draw(st.sampled_from(F_OPS))
        body = f"(p {op1} {f_lit(draw)}) {op2} q"
        items.append(f"fn s{k}(p: f32, q: f32) -> f32 {{ {body} }}")
        helpers.append(f"s{k}")
    for k in range(draw(st.integers(1, 2))):
        sc = Scope(helpers)
        io = draw(st.integers(0, 4)) == 0
        tensor_result = draw(st.booleans())
        pre = ["    let w: f32[4] = [a, 1.0f32, -0.0f32, a];"]
        body = statements(draw, sc, draw(st.integers(1, 5)), returns=not tensor_result, io=io)
        if tensor_result:
            ret, tail = "f32[N]", f"{draw(st.sampled_from(sc.tensors))} * a"
        else:
            ret, tail = "f32", f_expr(draw, sc, 2)
        eff = " ! io" if io else ""
        head = f"pub fn f{k}[N](x: &f32[N], y: &f32[N], a: f32, b: i64, c: i64) -> {ret}{eff} {{"
        items.append("\n".join([head, *pre, *body, f"    {tail}", "}"]))
    return "\n\n".join(items) + "\n"


@settings(max_examples=60)
@given(opt_programs())
def test_generated_programs_same_results(src: str) -> None:
    check_source(src, seeds=range(2), sizes=(0, 1, 4))


@settings(max_examples=25)
@given(program())
def test_tests_programs_same_results(prog) -> None:
    check_source(render(prog), seeds=range(2), sizes=(0, 3))


@settings(max_examples=25)
@given(keg_programs())
def test_keg_programs_same_results(src: str) -> None:
    check_source(src, seeds=range(2), sizes=(0, 3))


def test_generator_reaches_the_passes() -> None:
    """Guard: generated programs give every pass something to do, somewhere."""
    from tests.draws import assert_reaches

    def changes(name: str):
        def holds(src: str) -> bool:
            a = analyze(src)
            if a.has_errors:
                return False
            return any(r.changed and r.name == name for r in optimize(a.module.graph).report.runs)

        return holds

    passes = ("inline", "fold", "cse", "dce", "fuse", "vectorize")
    assert_reaches(opt_programs(), {p: changes(p) for p in passes})
