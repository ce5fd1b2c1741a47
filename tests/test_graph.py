"""The graph: fingerprints, golden dumps, invariants, incrementality, type errors."""

import glob
import os
import random
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kera_core.analysis import analyze
from kera_core.ir.graph import Graph
from kera_core.ir.node import Node
from kera_core.ir.types import F32, Sym, Tensor
from kera_core.ir.verify import verify
from kera_core.ir.view import graph_dot, graph_json, graph_text
from kera_core.sema import LoweringCache, lower_module
from kera_core.syntax.parse import parse
from tests.programs import Layout, Names, program, render

EXAMPLES = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "examples", "*.kera")))
GOLDEN = Path(__file__).parent / "golden" / "graph"


def fp(text: str) -> bytes:
    a = analyze(text)
    assert not a.has_errors, [d.message for d in a.diagnostics]
    return a.module.graph.fingerprint()


def codes(text: str) -> list[str]:
    return [d.code for d in analyze(text).diagnostics]


SAXPY = """/// doc
pub fn saxpy[N](a: f32, x: &f32[N], y: &mut f32[N]) {
    for i in 0..N {
        y[i] = a * x[i] + y[i];
    }
}

fn helper(v: f32) -> f32 {
    let t = v * 2.0;
    t + 1.0
}

pub fn twice[N](x: &f32[N]) -> f32 {
    helper(sum(x))
}
"""


# --- fingerprint invariance -------------------------------------------------------------


def test_fingerprint_ignores_layout_comments_and_local_names():
    base = fp(SAXPY)
    relaid = SAXPY.replace("    ", "  ").replace("{\n", "{ // c\n").replace("; ", ";")
    assert fp(relaid) == base
    renamed = SAXPY.replace("helper(", "aide(").replace("fn helper", "fn aide")
    renamed = renamed.replace("t + 1.0", "u + 1.0").replace("let t", "let u").replace("[N]", "[M]")
    renamed = (
        renamed.replace("0..N", "0..M")
        .replace("v * 2.0", "w * 2.0")
        .replace("(v: f32)", "(w: f32)")
    )
    assert fp(renamed) == base


def test_fingerprint_ignores_item_order():
    items = SAXPY.split("\n\n")
    assert fp("\n\n".join(reversed(items))) == fp(SAXPY)


@pytest.mark.parametrize(
    "old,new",
    [
        ("2.0", "2.5"),  # a constant
        ("a * x[i]", "a - x[i]"),  # an operator
        ("pub fn twice", "pub fn thrice"),  # an exported name
        ("(v: f32) -> f32", "(v: f64) -> f64"),  # a type (and its uses)
        ("fn twice[N](x: &f32[N]) -> f32", "fn twice[N](x: &f32[N]) -> f32 ! io"),  # an effect
    ],
)
def test_fingerprint_changes_with_meaning(old, new):
    changed = SAXPY.replace(old, new)
    if "f64" in new:
        changed = changed.replace("helper(sum(x))", "helper(sum(x) as f64) as f32")
    assert changed != SAXPY
    assert fp(changed) != fp(SAXPY)


def test_per_function_hash_is_stable_when_other_functions_change():
    a = analyze(SAXPY).module.graph
    b = analyze(SAXPY.replace("t + 1.0", "t + 3.0")).module.graph
    assert a.functions["saxpy"].hash == b.functions["saxpy"].hash
    assert a.functions["twice"].hash != b.functions["twice"].hash  # calls helper by hash


def test_dedup_merges_common_subexpressions():
    text = "pub fn f(a: f32, b: f32) -> f32 { let x = a * b; let y = a * b; x + y }"
    g = analyze(text).module.graph
    muls = [n for n in g.nodes.values() if n.op == "mul"]
    assert len(muls) == 1
    g2 = Graph()
    n1 = g2.add(Node("const", (), (F32,), {"type": F32, "value": 1}))
    n2 = g2.add(Node("const", (), (F32,), {"type": F32, "value": 1}))
    assert n1 is n2 and len(g2.nodes) == 1


def test_hash_domains_are_separate():
    t = Tensor(F32, (Sym(0), 4))
    n = Node("const", (), (F32,), {"type": F32, "value": 0})
    assert t.hash != n.hash
    assert Tensor(F32, (Sym(0),)).hash == Tensor(F32, (Sym(0),)).hash
    assert Tensor(F32, (Sym(0),)).hash != Tensor(F32, (Sym(1),)).hash


def test_record_digests_are_memoised_by_content_and_bounded(monkeypatch):
    from kera_core.ir import encoding
    from kera_core.ir.node import Region
    from kera_core.ir.types import I64

    monkeypatch.setattr(encoding, "_RECORD_DIGESTS", {d: {} for d in encoding.DOMAINS})
    monkeypatch.setattr(encoding, "_RECORD_DIGESTS_MAX", 3)
    nodes = [Node("const", (), (I64,), {"type": I64, "value": v}) for v in (*range(5), 1, 1)]
    for n in nodes:  # what the memo gives is what hashing the record gives, full or not
        assert n.hash == encoding.digest("node", n.canonical())
        assert len(encoding._RECORD_DIGESTS["node"]) <= 3
    r = Region((F32,), (nodes[0].out(0),))
    assert Region((F32,), (nodes[0].out(0),)).hash == r.hash != nodes[0].hash
    assert encoding._RECORD_DIGESTS["region"] == {
        next(iter(encoding._RECORD_DIGESTS["region"])): r.hash
    }


def test_region_record_is_the_documented_layout():
    """``Region`` joins cached type encodings; its record is what a ``Writer`` writes
    (docs/graph.md), for every kind of parameter type and output indices past one byte."""
    from kera_core.ir.encoding import Writer, digest
    from kera_core.ir.node import Region, Value
    from kera_core.ir.types import I64, TOKEN, Ref, tuple_type

    params = (F32, Tensor(F32, (Sym(0), 300)), Ref(Tensor(I64, (Sym(1),)), True), TOKEN,
              tuple_type((F32, I64)))  # fmt: skip
    n = Node("const", (), (F32,), {"type": F32, "value": 0})
    yields = (n.out(0), Value(n.hash, 127), Value(n.hash, 128), Value(n.hash, 70_000))
    w = Writer()
    w.uvar(len(params))
    for t in params:
        t.encode(w)
    w.uvar(len(yields))
    for v in yields:
        w.raw(v.node)
        w.uvar(v.index)
    assert Region(params, yields).hash == digest("region", w.getvalue())
    assert Region((), ()).hash == digest("region", b"\x00\x00")


def test_binding_plans_are_memoised_by_equal_types(monkeypatch):
    """A plan read from the memo is the plan computed afresh, for equal types made apart
    (a type parameter's display name is not part of its equality), and the memo is bounded."""
    from kera_core.ir import dims
    from kera_core.ir.types import I64, Ref, Struct, TypeParam

    monkeypatch.setattr(dims, "_PLANS", {})
    monkeypatch.setattr(dims, "_PLANS_MAX", 2)

    def sig(name: str):
        body = Struct("Body", (("x", Tensor(F32, (Sym(0),))), ("m", Tensor(F32, (Sym(1), 2)))))
        return (Ref(Tensor(TypeParam(0, "Float", name), (Sym(0), Sym(1)))), body, I64)

    cases = [(sig("T"), 2), (sig("U"), 2), ((Tensor(F32, (Sym(0),)),), 2), ((F32,), 1)]
    for params, n in cases:
        assert dims.binding_plan(params, n) == dims._binding_plan(params, n)
        assert len(dims._PLANS) <= 2


def test_broadcast_shortcuts_agree_with_the_loop():
    from kera_core.ir.ops import TypeRuleError, broadcast_shapes
    from kera_core.ir.types import DimExpr

    shapes = [(), (1,), (4,), (Sym(0),), (1, Sym(0)), (3, 1), (3, Sym(0)), (2, 3, 4),
              (DimExpr(((0, 2),), 0, 1),), (Sym(0), 1)]  # fmt: skip

    def by_loop(a, b):  # the general case, written out
        out = []
        for i in range(1, max(len(a), len(b)) + 1):
            da = a[-i] if i <= len(a) else 1
            db = b[-i] if i <= len(b) else 1
            if da != db and da != 1 and db != 1:
                raise TypeRuleError("", "K0305")
            out.append(da if da == db or db == 1 else db)
        return tuple(reversed(out))

    for a in shapes:
        for b in shapes:
            try:
                want = by_loop(a, b)
            except TypeRuleError:
                with pytest.raises(TypeRuleError):
                    broadcast_shapes(a, b)
                continue
            assert broadcast_shapes(a, b) == want


def test_literal_suffixes_are_memoised_and_bounded(monkeypatch):
    from kera_core.sema import literals

    monkeypatch.setattr(literals, "_SPLIT", {})
    monkeypatch.setattr(literals, "_SPLIT_MAX", 3)
    cases = {"1_000u32": ("1_000", "u32"), "0x1f32": ("0x1f32", None), "2.5f32": ("2.5", "f32"),
             "7": ("7", None), "i64": ("i64", None), "3i8": ("3", "i8")}  # fmt: skip
    for _ in range(2):
        for text, want in cases.items():
            assert literals.split_suffix(text) == want
            assert len(literals._SPLIT) <= 3


def test_deep_recursion_is_reentrant_and_restores_on_errors():
    import gc
    import sys

    from kera_core.stack import DEEP_LIMIT, deep_recursion

    limit, enabled = sys.getrecursionlimit(), gc.isenabled()
    with pytest.raises(KeyError):
        with deep_recursion(quiet_gc=True):
            assert sys.getrecursionlimit() >= DEEP_LIMIT and not gc.isenabled()
            with deep_recursion():
                assert not gc.isenabled()
            assert sys.getrecursionlimit() >= DEEP_LIMIT  # the inner exit keeps the room
            raise KeyError
    assert (sys.getrecursionlimit(), gc.isenabled()) == (limit, enabled)


# --- examples: golden dumps and invariants ------------------------------------------------


@pytest.mark.parametrize("path", EXAMPLES, ids=os.path.basename)
def test_examples_lower_and_verify(path):
    text = Path(path).read_text()
    a = analyze(text)
    assert not a.has_errors, [d.message for d in a.diagnostics]
    g = a.module.graph
    assert verify(g) == []
    assert g.exported(), "every example exports something"
    name = Path(path).stem + ".txt"
    dump = graph_text(g, a.module.provenance)
    golden = GOLDEN / name
    if os.environ.get("UPDATE_EXPECT"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(dump)
    assert golden.exists(), f"run with UPDATE_EXPECT=1 to create {golden}"
    assert dump == golden.read_text()
    assert graph_json(g)
    assert graph_dot(g).startswith("digraph")


# --- generated programs -----------------------------------------------------------------


@given(program(), st.randoms(use_true_random=False))
def test_generated_programs_lower_and_variants_agree(prog, rnd):
    text = render(prog)
    a = analyze(text)
    assert not a.has_errors, (text, [d.message for d in a.diagnostics])
    assert verify(a.module.graph) == []
    base = a.module.graph.fingerprint()
    other_names = Names(
        x="p", y="q", a="alpha", dim="M", local="w", loop="k", acc="total", tparam="Elem"
    )
    layout = Layout(indent="\t", space="  ", comments=True, blank="\n\n")
    order = list(range(len(prog)))
    rnd.shuffle(order)
    for variant in (render(prog, other_names), render(prog, lay=layout), render(prog, order=order)):
        assert fp(variant) == base, variant


MUTATIONS = [
    ("0.5", "true"),
    ("sum(&", "sum(1.0 + "),
    ("&f32[", "&f64["),
    ("-> f32 {", "-> bool {"),
    ("dot(&", "dot(1, &"),
    ("[N]", "[N, N]"),
    ("a:", "a: &"),
    ("x[", "a["),
]


@given(program(), st.sampled_from(MUTATIONS), st.integers(0, 50))
def test_ill_typed_mutations_give_diagnostics_not_exceptions(prog, mutation, skip):
    text = render(prog)
    old, new = mutation
    positions = [i for i in range(len(text)) if text.startswith(old, i)]
    if not positions:
        return
    at = positions[skip % len(positions)]
    mutated = text[:at] + new + text[at + len(old) :]
    a = analyze(mutated)  # must not raise
    for d in a.diagnostics:
        assert d.code.startswith("K0") and d.message


@given(st.text(max_size=200))
def test_arbitrary_text_never_crashes_lowering(text):
    analyze(text)


def test_random_token_mutations_of_examples_never_crash():
    rng = random.Random(3)
    pieces = [
        "(",
        ")",
        "{",
        "}",
        ";",
        "&",
        "mut",
        "x",
        "1",
        "f32",
        "[N]",
        ",",
        "+",
        "return",
        "@device",
    ]
    for path in EXAMPLES:
        text = Path(path).read_text()
        for _ in range(25):
            i = rng.randrange(len(text))
            j = min(len(text), i + rng.randrange(6))
            mutated = text[:i] + rng.choice(pieces) + text[j:]
            analyze(mutated)


# --- incrementality -------------------------------------------------------------------------


def test_edit_inside_one_function_relowers_only_that_function():
    cache = LoweringCache()
    lower_module(parse(SAXPY), cache)
    assert cache.lowered == 3
    edited = SAXPY.replace("y[i] = a * x[i] + y[i];", "y[i] = a * x[i] - y[i];")
    m = lower_module(parse(edited), cache)
    assert cache.lowered == 4 and cache.reused == 2
    assert not m.diagnostics
    # an edit above other functions moves them; they are reused, rebased
    moved = "// a new comment line\n\n" + edited
    m2 = lower_module(parse(moved), cache)
    assert cache.lowered == 4
    prov = m2.provenance.functions["helper"]
    assert prov.span.start == moved.index("fn helper")
    spans = [s for ss in prov.node_spans.values() for s in ss]
    assert spans and all(0 <= s.start and s.end <= len(prov.span) for s in spans)


def test_editing_a_callee_relowers_its_callers():
    cache = LoweringCache()
    lower_module(parse(SAXPY), cache)
    lower_module(parse(SAXPY.replace("t + 1.0", "t + 2.0")), cache)
    assert cache.lowered == 3 + 2  # helper and its caller twice


# --- type checking ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body,code,needle",
    [
        ("fn f(a: f32) -> f32 { a + 1.0f64 }", "K0301", "different element types"),
        ("fn f(a: f32) -> i32 { a }", "K0309", "expected `i32`, found `f32`"),
        (
            "fn f[M, K, N](a: &f32[M, K], b: &f32[N, K]) -> f32[M, K] { matmul(a, b) }",
            "K0306",
            "inner dimensions",
        ),
        ("fn f[N, M](a: &f32[N], b: &f32[M]) -> f32[N] { a + b }", "K0305", "broadcast"),
        ("fn f[N](a: &f32[N]) -> f32 { a[0, 1] }", "K0304", "expected 1 index"),
        ("fn f() -> i8 { 300 }", "K0307", "does not fit in `i8`"),
        ("fn f(value: f32) -> f32 { valeu }", "K0201", "did you mean `value`"),
        ("fn f() {}\nfn f() {}", "K0202", "defined twice"),
        ("fn f(a: f32) -> f32 { sqr(a) }", "K0205", "did you mean `sqrt`"),
        ("fn f(a: Flaot) {}", "K0203", "unknown type"),
        ("fn f(a: f32) { a = 1.0; }", "K0405", "immutable"),
        ("fn f(a: f32) { print(a); }", "K0501", "`io` effect"),
        ("fn f(x: &f32[N]) {}", "K0201", "unknown dimension"),
        ("fn f() { break; }", "K0314", "outside of a loop"),
        (
            "fn g[N](x: &f32[N], y: &f32[N]) -> f32 { dot(x, y) }\n"
            "fn f[A, B](p: &f32[A], q: &f32[B]) -> f32 { g(p, q) }",
            "K0310",
            "dimension `N` of `g`",
        ),
        ("fn f() -> f32 { let y: f32[4] = zeros(); y }", "K0309", "expected `f32`"),
        ("fn f() -> f32 { let x = 1.0; zeros() }", "K0301", "cannot infer the shape"),
        ("fn a<T: Float>(x: T) -> T { a(x) }", "K0322", "cannot be recursive"),
        ("struct P { x: f32 }\nfn f() -> P { P { y: 1.0 } }", "K0204", "has no field `y`"),
    ],
)
def test_type_errors(body, code, needle):
    a = analyze(body)
    found = [(d.code, d.message) for d in a.diagnostics]
    assert any(c == code and needle in m for c, m in found), found


def test_symbolic_dimensions_unify_across_calls():
    text = (
        "fn g[K](x: &f32[K], y: &f32[K]) -> f32[K] { x * y }\n"
        "pub fn f[N](a: &f32[N], b: &f32[N]) -> f32[N] { g(a, b) + a }\n"
    )
    assert not analyze(text).diagnostics


def test_literal_types_follow_context():
    text = "pub fn f(a: f32, n: u8) -> f32 { let m = n + 1; a * 2.0 + 1 as f32 }"
    a = analyze(text)
    assert not a.diagnostics
    consts = [n for n in a.module.graph.nodes.values() if n.op == "const"]
    types = sorted(str(n.types[0]) for n in consts)
    assert "f32" in types and "i64" in types


def test_diagnostic_prints_both_types_with_dimension_names():
    a = analyze("fn f[N](x: &f32[N]) -> f64[N] { x * 2.0 }")
    msg = next(d.message for d in a.diagnostics)
    assert "`f64[N]`" in msg and "`f32[N]`" in msg


def test_fix_for_missing_effect_and_borrow():
    text = "fn g[N](x: &f32[N]) -> f32 { sum(x) }\nfn f() -> f32 {\n    print(1.0);\n    1.0\n}\n"
    d = next(d for d in analyze(text).diagnostics if d.code == "K0501")
    assert d.fix is not None and d.fix.edits[0].new_text == " ! io"
    text2 = "fn g[N](x: &f32[N]) -> f32 { sum(x) }\npub fn f[N](y: f32[N]) -> f32 { g(y) }\n"
    d2 = next(d for d in analyze(text2).diagnostics if d.code == "K0301")
    assert d2.fix is not None and d2.fix.edits[0].new_text == "&"
    assert d2.related, "points at the parameter declaration"
