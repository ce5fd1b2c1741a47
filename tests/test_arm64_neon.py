"""The arm64 target's NEON path (kera_core/backends/arm64/vector.py): `lanes` loops that the
shared layer plans run as `.4s` (f32) / `.2d` (f64) loops — jam × W lanes a step, then W,
then the scalar loop — and give the interpreter's raw result bytes at every length around
the vector width and the jam, on adversarial floats and on chosen NaN payloads, ±0,
subnormals and infinities.  ``KERA_FUZZ_EXAMPLES`` above its default adds longer lengths.

Needs ``unicorn`` (pip).
"""

from __future__ import annotations

import copy
import os

import numpy as np

from kera_core.backends.arm64 import compile as A
from kera_core.backends.arm64.select import Selector
from kera_core.interp.api import run_function as reference
from kera_core.loops.lower import program_of
from kera_core.targets import get
from tests.test_arm64 import _module, check, emulator, machine_for, outcome

LONG = int(os.environ.get("KERA_FUZZ_EXAMPLES", "20")) > 20

ELEMENTWISE = """
pub fn v32[N](a: f32, x: &f32[N], y: &f32[N], z: &f32[N]) -> f32[N] {
    let m = maximum(x, y) - minimum(y, z);
    let s = if a > 0.0 { fma(x, y, z) } else { -x };
    m * s + sqrt(abs(z)) / (x - a)
}
pub fn v64[N](a: f64, x: &f64[N], y: &f64[N], z: &f64[N]) -> f64[N] {
    let m = maximum(x, y) - minimum(y, z);
    m * fma(x, y, z) + sqrt(abs(z)) / (x - a) - -y
}
pub fn axpy[N](a: f32, x: &f32[N], y: &f32[N]) -> f32[N] { a * x + y }
pub fn c32[N](x: &f32[N], y: &f32[N]) -> f32[N] {
    let mut out: f32[N] = zeros();
    for i in 0..N { out[i] = if x[i] < y[i] { x[i] } else { y[i] * 2.0 }; }
    out
}
pub fn c64[N](x: &f64[N], y: &f64[N]) -> f64[N] {
    let mut out: f64[N] = zeros();
    for i in 0..N {
        let a = if x[i] != y[i] { x[i] } else { -y[i] };
        let b = if x[i] <= y[i] { a } else { y[i] };
        let c = if x[i] >= y[i] { b } else { abs(x[i]) };
        let d = if x[i] > y[i] { c } else { minimum(c, x[i]) };
        out[i] = if x[i] == y[i] { d + 1.0 } else { d };
    }
    out
}
pub fn pass32[N](x: &f32[N], y: &f32[N]) -> f32[N] { maximum(-x, abs(y)) - minimum(abs(x), -y) }
"""

JAMMED = """
pub fn mm32[M, K, N](a: &f32[M, K], b: &f32[K, N]) -> f32[M, N] { matmul(a, b) }
pub fn mm64[M, K, N](a: &f64[M, K], b: &f64[K, N]) -> f64[M, N] { matmul(a, b) }
pub fn cv[N, K](x: &f32[N], k: &f32[K]) -> f32[N] { conv1d(x, k) }
pub fn s32[N](x: &f32[N]) -> f32 { sum(x) }
pub fn s64[N](x: &f64[N]) -> f64 { sum(x * x) }
pub fn d32[N](x: &f32[N], y: &f32[N]) -> f32 { dot(x, y) }
pub fn sm[N](x: &f32[N]) -> f32[N] { softmax(x) }
"""


def listing(m, name: str) -> str:
    return get("arm64").preview(m.graph, m.provenance, name)


def test_lanes_loops_select_neon() -> None:
    """The vector path is selected: `.4s` for f32 kernels, `.2d` for f64 ones; minimum and
    maximum are fmin/fmax (never the nm forms); fmla appears only where the program says
    fma (a * x + y stays fmul then fadd)."""
    m = _module(ELEMENTWISE)
    j = _module(JAMMED)
    for mod, name, arr in (
        (m, "v32", ".4s"),
        (m, "v64", ".2d"),
        (j, "mm32", ".4s"),
        (j, "mm64", ".2d"),
        (j, "s32", ".4s"),
        (j, "s64", ".2d"),
        (j, "d32", ".4s"),
    ):
        text = listing(mod, name)
        assert arr in text and "ldr q" in text, name
        assert "fminnm" not in text and "fmaxnm" not in text, name
    v32 = listing(m, "v32")
    for form in ("fmla v", "fmax v", "fmin v", "fneg v", "fabs v", "fsqrt v", "fdiv v"):
        assert form in v32, form
    # a source-level (counted) loop stays scalar: each iteration spends a step
    assert "fcmgt v" not in listing(m, "c32") and "bsl v" not in listing(m, "c64")
    axpy = listing(m, "axpy")
    assert "fmul v" in axpy and "fadd v" in axpy and "fmla" not in axpy
    assert "fmla" not in listing(j, "mm32")  # each product rounded, then added
    # the switch: the same program selected without vectors has no vector instruction
    prog = program_of(m.graph, "v32")
    sel = Selector(prog.functions["v32"], prog, vectors=False)
    vfn = sel.select()
    assert not any(i.op.startswith("v.") for b in vfn.blocks for i in b.insts)


def test_elementwise_every_length_bit_for_bit() -> None:
    """Every length 0-19 and around 2W, 4W (W = 4 for f32, 2 for f64), 32 and 64."""
    m = _module(ELEMENTWISE)
    sizes = (*range(20), 31, 32, 33, 63, 64, 65) + ((1000, 4099) if LONG else ())
    for name in ("v32", "v64", "axpy", "c32", "c64", "pass32"):
        check(m, m.graph, name, sizes=sizes, seeds=(1, 2))


def test_jammed_loops_with_inner_chains_bit_for_bit() -> None:
    """Matmul's columns and the canonical sum's lanes run as jammed q-register loops whose
    accumulators stay in registers across the inner loop (conv1d's body is refused by the
    shared planner and stays scalar): sizes around W, 2W, 4W ± 1, the sum's tile
    boundaries and matmul's panel widths 63, 64, 65, 127, 129."""
    m = _module(JAMMED)
    small = (0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33)
    for name in ("mm32", "mm64", "cv", "sm"):
        check(m, m.graph, name, sizes=small)
    for name in ("s32", "s64", "d32"):
        check(m, m.graph, name, sizes=(*small, 1023, 1024, 1025, 2049))
    panels = [(m_, 3, n) for n in (63, 64, 65, 127, 129) for m_ in (4, 5)]
    for name in ("mm32", "mm64"):
        check(m, m.graph, name, shapes=panels)
    if LONG:
        check(m, m.graph, "mm32", shapes=[(9, 17, 131), (16, 64, 65)], seeds=(1, 2, 3))
        check(m, m.graph, "sm", sizes=(1023, 1024, 1025, 3073))


# chosen bit patterns: NaN payloads (quiet, signalling, negative), ±0, subnormals, ±inf
SPECIAL_F32 = [
    0x7FC00001,
    0x7F800001,
    0xFFC00000,
    0xFFFFFFFF,
    0x7FC00000,
    0x00000000,
    0x80000000,
    0x00000001,
    0x807FFFFF,
    0x7F800000,
    0xFF800000,
    0x3F800000,
    0xBFC00000,
    0x7F7FFFFF,
]
SPECIAL_F64 = [
    0x7FF8000000000001,
    0x7FF0000000000001,
    0xFFF8000000000000,
    0xFFFFFFFFFFFFFFFF,
    0x7FF8000000000000,
    0x0000000000000000,
    0x8000000000000000,
    0x0000000000000001,
    0x800FFFFFFFFFFFFF,
    0x7FF0000000000000,
    0xFFF0000000000000,
    0x3FF0000000000000,
    0xBFF8000000000000,
    0x7FEFFFFFFFFFFFFF,
]


def special(t: str, n: int, shift: int) -> np.ndarray:
    """n values cycling through the chosen bit patterns (starting at `shift`, so each pattern
    meets every lane and every jammed copy), every third one an ordinary value."""
    pats, ut, ft = (
        (SPECIAL_F32, np.uint32, np.float32) if t == "f32" else (SPECIAL_F64, np.uint64, np.float64)
    )
    bits = np.array([pats[(k + shift) % len(pats)] for k in range(n)], dtype=ut)
    out = bits.view(ft).copy()
    out[::3] = np.arange(len(out[::3]), dtype=ft) * ft(0.75) - ft(2)
    return out


def test_nan_payloads_zeros_subnormals_and_infinities_in_every_lane() -> None:
    """Inputs that carry NaN payloads (DN makes arithmetic NaNs canonical; bsl, fneg and fabs
    carry them to the result, where they are canonicalised like the scalar code's), ±0
    (fmin/fmax order −0 < +0), subnormals (FZ off) and ±inf, in every lane position."""
    em = emulator()
    m = _module(ELEMENTWISE + JAMMED)
    cases = {
        "v32": ("f32", ("x", "y", "z")),
        "v64": ("f64", ("x", "y", "z")),
        "c32": ("f32", ("x", "y")),
        "c64": ("f64", ("x", "y")),
        "pass32": ("f32", ("x", "y")),
        "s32": ("f32", ("x",)),
        "s64": ("f64", ("x",)),
        "d32": ("f32", ("x", "y")),
    }
    for name, (t, params) in cases.items():
        _, machine = machine_for(m.graph, name)
        try:
            for n in (5, 17, 37):
                for shift in range(4):
                    inputs = {p: special(t, n, shift + 5 * k) for k, p in enumerate(params)}
                    if name in ("v32", "v64"):
                        inputs["a"] = special(t, 4, shift)[1 + shift % 3]
                    dims = {"N": n}
                    want = outcome(lambda: reference(m, name, inputs, dims))  # noqa: B023
                    got = outcome(lambda: em.run(machine, m, name, inputs, dims))  # noqa: B023
                    assert got == want, (name, n, shift)
        finally:
            machine.close()
    _, machine = machine_for(m.graph, "mm32")
    try:
        for mm, k, nn in ((4, 3, 9), (5, 2, 17)):
            a = special("f32", mm * k, 1).reshape(mm, k)
            b = special("f32", k * nn, 2).reshape(k, nn)
            dims = {"M": mm, "K": k, "N": nn}
            want = outcome(lambda: reference(m, "mm32", {"a": a, "b": b}, dims))  # noqa: B023
            got = outcome(lambda: em.run(machine, m, "mm32", {"a": a, "b": b}, dims))  # noqa: B023
            assert got == want, (mm, k, nn)
    finally:
        machine.close()


def test_vector_loops_under_float_pressure_allocate_and_agree() -> None:
    """More loop invariants broadcast than there are v-registers: q values spill to 16-byte
    slots and come back whole."""
    params = ", ".join(f"a{i}: f64" for i in range(34))
    terms = " + ".join(f"minimum(x, a{i}) - maximum(x, a{33 - i})" for i in range(34))
    src = f"pub fn p[N](x: &f64[N], {params}) -> f64[N] {{ {terms} }}\n"
    src += (
        "pub fn q[N](x: &f64[N], a: f64) -> f64[N] { let t = minimum(x, a); x * 1.0 + sum(&t) }\n"
    )
    m = _module(src)
    assert ".2d" in listing(m, "p") and "str q" in listing(m, "p")
    for name in ("p", "q"):
        check(m, m.graph, name, sizes=(0, 1, 2, 3, 5, 9, 33), seeds=(1, 2))


def test_the_artifact_runs_the_vector_code() -> None:
    m = _module("pub fn f[N](x: &f32[N], y: &f32[N]) -> f32[N] { x * y - x }")
    data, comp = A.build(m.graph, "f")
    assert any(".4s" in ln for ln in comp.listings["f"])
    x = np.linspace(-3, 3, 23, dtype=np.float32)
    art = get("arm64").lower(m.graph, m.provenance, "f")
    inputs = {"x": x, "y": x[::-1].copy()}
    r = get("arm64").run(art, m.graph, "f", inputs, provenance=m.provenance)
    assert r.digest() == reference(m, "f", inputs).digest()


def _rewritten(t: str, build):
    """The loop program of ``out = x + y + z`` (`t` elements) with the lanes loop's
    arithmetic replaced by ``build(new, x, y, z)`` (→ the stored value): the source language
    has no elementwise select, so the compare and select forms are tested on a program
    built here, against the loop program's own interpreter."""
    from kera_core.loops import ir
    from kera_core.loops.ir import Imm

    m = _module(f"pub fn f[N](x: &{t}[N], y: &{t}[N], z: &{t}[N]) -> {t}[N] {{ x + y + z }}")
    prog = copy.deepcopy(program_of(m.graph, "f"))  # never the cached program itself
    lf = prog.functions["f"]
    (loop,) = [s for s in lf.body if isinstance(s, ir.Loop)]
    loads = [s for s in loop.body if isinstance(s, ir.Load)]
    (store,) = [s for s in loop.body if isinstance(s, ir.Store)]
    ids = iter(range(1 << 20, 1 << 21))
    body: list = []

    def new(op: str, *args, into=None):
        d = into or ir.Var(next(ids), t if op not in COMPARE_NAMES else "bool")
        body.append(ir.Op(d, op, tuple(args)))
        return d

    def inner(trips: int, make) -> None:
        """``for k in 0..trips { make() }`` (a seq loop inside the lanes loop)."""
        outer = body[:]
        body.clear()
        make()
        k = ir.Var(next(ids), "i64")
        inside = body[:]
        body[:] = [*outer, ir.Loop(k, Imm("i64", 0), Imm("i64", trips), inside)]

    new.inner = inner  # type: ignore[attr-defined]
    value = build(new, *(ld.dst for ld in loads))
    loop.body[:] = [*loads, *body, ir.Store(store.buf, store.index, value)]
    return m, prog


COMPARE_NAMES = ("eq", "ne", "lt", "le", "gt", "ge")


def _compare_code(new, x, y, z):
    """Σ 2^k over the comparisons k that hold: every compare's mask, NaN rules included."""
    from kera_core.loops.ir import Imm

    t = x.type
    one = 0x3F800000 if t == "f32" else 0x3FF0000000000000
    zero = Imm(t, 0)
    acc = None
    for k, (op, a, b) in enumerate(
        [(c, x, y) for c in COMPARE_NAMES] + [(c, y, z) for c in ("lt", "le", "ne")]
    ):
        bit = Imm(t, one + (k << (23 if t == "f32" else 52)))  # 2^k
        term = new("select", new(op, a, b), bit, zero)
        acc = term if acc is None else new("add", acc, term)
    return acc


def _select_chain(new, x, y, z):
    """Masks choosing between varying values, uniform constants and fneg/fabs results (NaN
    payloads pass through bsl and the sign operations unchanged)."""
    from kera_core.loops.ir import Imm

    t = x.type
    s = new("select", new("lt", x, y), x, y)
    s = new("select", new("le", y, z), s, z)
    s = new("select", new("gt", x, z), s, new("neg", x))
    s = new("select", new("ge", z, y), s, new("abs", y))
    s = new("select", new("eq", x, y), s, Imm(t, 0x3FC00000 if t == "f32" else 0x3FF8 << 48))
    s = new("select", new("ne", y, z), s, Imm(t, 1 << (31 if t == "f32" else 63)))
    return new("maximum", new("minimum", s, z), new("neg", z))


def _fma_chain(new, x, y, z):
    """acc = z; 5 times acc = fma(x, acc, y) then acc = fma(y, z, acc): an inner loop's
    accumulator updated by fmla in its own register (only where the program says fma)."""
    from kera_core.loops.ir import Imm

    acc = new("select", Imm("bool", 1), z, z)

    def step():
        new("fma", x, acc, y, into=acc)
        new("fma", y, z, acc, into=acc)

    new.inner(5, step)
    return new("add", acc, x)


def test_compares_and_selects_on_masks_bit_for_bit(monkeypatch) -> None:
    """fcmeq/fcmge/fcmgt (lt, le with the operands swapped, ne as not eq) give masks; bsl
    selects on them; fmla updates an inner loop's accumulator — for f32 and f64, on
    adversarial values and chosen NaN payloads."""
    from kera_core.backends.arm64 import emulate as em_mod
    from kera_core.interp.api import entry_signature
    from kera_core.interp.gen import InputGenerator
    from kera_core.loops import run as loops_run

    em = emulator()
    for t in ("f32", "f64"):
        for build in (_compare_code, _select_chain, _fma_chain):
            m, prog = _rewritten(t, build)
            sig = entry_signature(m, "f")
            comp = A.compile_program(prog)
            text = "\n".join(comp.listings["f"])
            assert ("." + ("4s" if t == "f32" else "2d")) in text
            assert ("fmla v" if build is _fma_chain else "bsl v") in text
            machine = em.Machine(comp.codes)
            monkeypatch.setattr(
                em_mod, "prepare", lambda s, f, i, d, p=prog: loops_run.prepare(s, f, i, d, p)
            )
            try:
                runs = []
                for n in (*range(12), 17, 33):
                    for adv in (False, True):
                        g = InputGenerator(n + 7, adversarial=adv)
                        runs.append((n, {p: g.value(ty, {0: n}) for p, ty in sig.value_params}))
                    for shift in (0, 3):
                        runs.append(
                            (n, {p: special(t, n, shift + 5 * k) for k, p in enumerate("xyz")})
                        )
                for n, inputs in runs:
                    want = outcome(
                        lambda: loops_run.run_function(m, "f", inputs, {"N": n}, program=prog)  # noqa: B023
                    )
                    got = outcome(lambda: em.run(machine, m, "f", inputs, {"N": n}))  # noqa: B023
                    assert got == want, (t, build.__name__, n)
            finally:
                machine.close()


def test_the_vector_code_as_a_real_elf_under_qemu() -> None:
    """The same NEON bytes as a static ELF under qemu-aarch64 (tests/test_arm64_elf.py's
    harness: the ABI end to end, callee-saved d8-d15 checked): elementwise, matmul and the
    canonical sum around the vector width, on adversarial values and NaN payloads."""
    from kera_core.interp.api import entry_signature
    from kera_core.interp.gen import InputGenerator
    from tests.test_arm64_elf import elf

    E = elf()
    m = _module(ELEMENTWISE + JAMMED)
    for name, sizes in (("v32", (9, 17)), ("v64", (5, 19)), ("mm32", (5, 9)), ("s32", (33,))):
        comp = A.compiled(m.graph, name)
        assert any(".4s" in ln or ".2d" in ln for ln in comp.listings[name]), name
        sig = entry_signature(m, name)
        for n in sizes:
            dims = dict.fromkeys(range(len(sig.dim_names)), n)
            inputs = {p: InputGenerator(n, True).value(t, dims) for p, t in sig.value_params}
            named = {sig.dim_names[i]: k for i, k in dims.items()}
            want = outcome(lambda: reference(m, name, inputs, named))  # noqa: B023
            got = outcome(lambda: E.run_elf(comp, m, name, inputs, named))  # noqa: B023
            assert got == want, (name, n)
    comp = A.compiled(m.graph, "v64")
    for shift in range(3):
        inputs = {p: special("f64", 11, shift + 5 * k) for k, p in enumerate("xyz")}
        inputs["a"] = np.float64(-0.0)
        want = outcome(lambda: reference(m, "v64", inputs, {"N": 11}))  # noqa: B023
        got = outcome(lambda: E.run_elf(comp, m, "v64", inputs, {"N": 11}))  # noqa: B023
        assert got == want, shift
