"""Random well-typed Kera programs survive source → graph → .keg → graph unchanged.

The generator is small on purpose: scalar (`f32`, `i64`) and tensor arithmetic,
`let`/`let mut`, `if` as an expression and as a statement, `for` over `0..N` and over a
constant range, casts, reductions and calls of earlier functions (private or `pub`).
Every program it draws must analyse without errors, so a failure here is either a
generator bug or a real round-trip bug, and the shrunk program says which.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kera_core.analysis import analyze
from kera_core.keg import read_keg, write_keg
from tests.draws import assert_draws

F_OPS = ["+", "-", "*"]
I_OPS = ["+", "-", "*", "&", "|", "^"]
CMP = ["<", "<=", ">", ">=", "==", "!="]


class _Scope:
    def __init__(self) -> None:
        self.f32 = ["a"]
        self.i64 = ["b"]
        self.loop: list[str] = []  # index variables usable as `x[i]`
        self.counter = 0

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"


def _f_lit(draw) -> str:
    return f"{draw(st.integers(0, 99))}.{draw(st.integers(0, 9))}f32"


def _i_lit(draw) -> str:
    return f"{draw(st.integers(0, 999))}i64"


def f_expr(draw, sc: _Scope, callees: list[str], depth: int) -> str:
    choices = ["var", "lit"]
    if sc.loop:
        choices.append("index")
    if depth > 0:
        choices += ["bin", "bin", "neg", "cast", "if", "reduce", "fma"]
        if callees:
            choices.append("call")
    kind = draw(st.sampled_from(choices))
    sub = depth - 1
    if kind == "var":
        return draw(st.sampled_from(sc.f32))
    if kind == "lit":
        return _f_lit(draw)
    if kind == "index":
        return f"x[{draw(st.sampled_from(sc.loop))}]"
    if kind == "bin":
        op = draw(st.sampled_from(F_OPS))
        return f"({f_expr(draw, sc, callees, sub)} {op} {f_expr(draw, sc, callees, sub)})"
    if kind == "neg":
        return f"-{f_expr(draw, sc, callees, sub)}"
    if kind == "cast":
        return f"({i_expr(draw, sc, sub)} as f32)"
    if kind == "if":
        c = cond(draw, sc, callees, sub)
        t, e = f_expr(draw, sc, callees, sub), f_expr(draw, sc, callees, sub)
        return f"(if {c} {{ {t} }} else {{ {e} }})"
    if kind == "reduce":
        return draw(st.sampled_from(["sum(x)", "max(x)", "dot(x, x)", "sum(x * a)"]))
    if kind == "fma":
        args = [f_expr(draw, sc, callees, sub) for _ in range(3)]
        return f"fma({', '.join(args)})"
    callee = draw(st.sampled_from(callees))
    return f"{callee}({f_expr(draw, sc, callees, sub)}, {i_expr(draw, sc, sub)}, x)"


def i_expr(draw, sc: _Scope, depth: int) -> str:
    choices = ["var", "lit"] + (["bin", "bin", "cast"] if depth > 0 else [])
    kind = draw(st.sampled_from(choices))
    if kind == "var":
        return draw(st.sampled_from(sc.i64 + sc.loop))
    if kind == "lit":
        return _i_lit(draw)
    if kind == "bin":
        op = draw(st.sampled_from(I_OPS))
        return f"({i_expr(draw, sc, depth - 1)} {op} {i_expr(draw, sc, depth - 1)})"
    return f"({draw(st.sampled_from(sc.f32))} as i64)"


def cond(draw, sc: _Scope, callees: list[str], depth: int) -> str:
    op = draw(st.sampled_from(CMP))
    if draw(st.booleans()):
        return f"{f_expr(draw, sc, callees, depth)} {op} {f_expr(draw, sc, callees, depth)}"
    return f"{i_expr(draw, sc, depth)} {op} {i_expr(draw, sc, depth)}"


def statements(draw, sc: _Scope, callees: list[str], n: int, indent: str) -> list[str]:
    out: list[str] = []
    for _ in range(n):
        kind = draw(st.sampled_from(["let", "let", "leti", "for_n", "for_c", "if", "assign"]))
        if kind == "let":
            v = sc.fresh("v")
            out.append(f"{indent}let {v} = {f_expr(draw, sc, callees, 2)};")
            sc.f32.append(v)
        elif kind == "leti":
            v = sc.fresh("k")
            out.append(f"{indent}let {v}: i64 = {i_expr(draw, sc, 2)};")
            sc.i64.append(v)
        elif kind in ("for_n", "for_c"):
            acc, i = sc.fresh("acc"), sc.fresh("i")
            bound = "N" if kind == "for_n" else str(draw(st.integers(0, 5)))
            out.append(f"{indent}let mut {acc} = {_f_lit(draw)};")
            out.append(f"{indent}for {i} in 0..{bound} {{")
            if kind == "for_n":
                sc.loop.append(i)
            else:
                sc.i64.append(i)
            body = f_expr(draw, sc, callees, 2)
            out.append(f"{indent}    {acc} = {acc} + {body};")
            if kind == "for_n":
                sc.loop.pop()
            else:
                sc.i64.pop()
            out.append(f"{indent}}}")
            sc.f32.append(acc)
        elif kind == "if":
            acc = sc.fresh("m")
            out.append(f"{indent}let mut {acc} = {f_expr(draw, sc, callees, 1)};")
            out.append(f"{indent}if {cond(draw, sc, callees, 1)} {{")
            out.append(f"{indent}    {acc} = {f_expr(draw, sc, callees, 2)};")
            out.append(f"{indent}}}")
            sc.f32.append(acc)
        else:
            v = sc.fresh("t")
            out.append(f"{indent}let {v}: f32[N] = x * {f_expr(draw, sc, callees, 1)};")
            out.append(f"{indent}let {sc.fresh('v')} = sum({v});")
            sc.f32.append(f"v{sc.counter}")
    return out


@st.composite
def programs(draw) -> str:
    fns: list[str] = []
    names: list[str] = []
    for k in range(draw(st.integers(1, 4))):
        sc = _Scope()
        name = f"f{k}"
        vis = "pub " if k == 0 or draw(st.booleans()) else ""
        body = statements(draw, sc, names, draw(st.integers(0, 5)), "    ")
        tail = f_expr(draw, sc, names, 2)
        head = f"{vis}fn {name}[N](a: f32, b: i64, x: &f32[N]) -> f32 {{"
        fns.append("\n".join([head, *body, f"    {tail}", "}"]))
        names.append(name)
    order = draw(st.permutations(range(len(fns))))
    return "\n\n".join(fns[i] for i in order) + "\n"


@given(programs())
def test_generated_programs_round_trip(src: str) -> None:
    a = analyze(src)
    assert not a.has_errors, [d.message for d in a.diagnostics if d.is_error] + [src]
    g, prov = a.module.graph, a.module.provenance
    for with_prov in (prov, None):
        data = write_keg(g, with_prov)
        k = read_keg(data)
        assert k.graph.fingerprint() == g.fingerprint()
        assert [f.hash for f in k.graph.exported()] == [f.hash for f in g.exported()]
        assert write_keg(k.graph, k.provenance) == data
    # the bare file is the same with or without provenance, apart from section 7
    assert write_keg(read_keg(write_keg(g, prov)).graph) == write_keg(g)


def test_generator_draws_every_construct() -> None:
    """Guard against a generator that silently stopped producing loops, ifs or calls."""
    assert_draws(programs(), str, ("for ", "if ", "as f32", "f0(", "sum(", "let mut"))
