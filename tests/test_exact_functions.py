"""The exact functions (issue 16 item 5; docs/semantics.md §6.8): `floor`, `ceil`, `trunc`,
`round` (ties to even), `round_half_away` (ties away from zero), `copysign`.

* the step lists of kera_core/loops/composite.py, evaluated with numpy on whole arrays, give
  the interpreter's bits on a dense f32 sample (every binade's edges, every special value,
  10^6 random bit patterns, all of [2^21, 2^24) and the values around ±k.5) and an f64
  sample; ``KERA_EXHAUSTIVE=1`` runs all 2^32 f32 bit patterns instead;
* the interpreter against numpy (`floor`, `ceil`, `trunc`, `rint`, `copysign`) and against an
  exact reference in rationals (`fractions.Fraction`), NaN canonical, the sign of zero kept;
* the type checker: floats only, one element type, two operands for `copysign`;
* the real pipeline — the loop program (CPU and GRID shapes), x86-64 at every level this CPU
  runs, arm64 under unicorn, verilog under iverilog (small cases) — gives the interpreter's
  bits on scalars and tensors of sizes 0, 1, 17 and 1025 with adversarial inputs (NaN
  payloads of either sign, ±0, subnormals, ±inf, huge, ties); the ptx text assembles; wasm
  gives the interpreter's bits too;
* the highlighting lists (Neovim, tree-sitter, VS Code) name every builtin.
"""

from __future__ import annotations

import json
import math
import os
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from kera_core.analysis import analyze
from kera_core.interp.api import run_function as reference
from kera_core.interp.ops_impl import HANDLERS
from kera_core.ir.node import Node
from kera_core.loops import composite as C
from kera_core.loops import lower_program, run_function
from kera_core.loops.emit import Emitter
from kera_core.loops.ir import Imm, Op, Var
from kera_core.loops.target import CPU, GRID
from kera_core.targets import get, run_module
from tests.outcomes import outcome, runnable_target, same_as_reference, x86_levels
from tests.tools import tool_missing

ROOT = Path(__file__).resolve().parent.parent
UNARY = ("floor", "ceil", "trunc", "round", "round_half_away")
FNS = (*UNARY, "copysign")
FLOATS = ("f32", "f64")
DT = {"f32": np.float32, "f64": np.float64}
UT = {"f32": np.uint32, "f64": np.uint64}
SIGN = {"f32": 1 << 31, "f64": 1 << 63}
CANON = {"f32": 0x7FC00000, "f64": 0x7FF8000000000000}


def _bits(a, t: str) -> np.ndarray:
    return np.asarray(a, DT[t]).view(UT[t])


def _canon(a, t: str) -> np.ndarray:
    a = np.array(a, DT[t])
    a[np.isnan(a)] = np.nan  # numpy's nan is the canonical one (positive, quiet)
    return a


def _same_bits(got, want, t: str, what) -> None:
    g, w = _bits(got, t), _bits(want, t)
    bad = np.flatnonzero(g != w)
    if bad.size:
        i = bad[0]
        x = what[1][i] if isinstance(what, tuple) else None
        raise AssertionError(
            f"{what[0] if isinstance(what, tuple) else what}: {bad.size} mismatches; first at "
            f"input {x!r}: got {hex(int(g[i]))}, want {hex(int(w[i]))}"
        )


# --- the step lists, evaluated with numpy -------------------------------------------------------


def _imm_value(x: Imm):
    if x.type in DT:
        return np.array(x.bits, UT[x.type]).view(DT[x.type])[()]
    if x.type == "bool":
        return np.bool_(x.bits)
    return np.array(x.bits, {"u32": np.uint32, "u64": np.uint64}[x.type])[()]


def _canon_arr(r):
    r = np.asarray(r)
    if r.dtype.kind == "f":
        r = r.copy()
        r[np.isnan(r)] = np.nan
    return r


_VEC = {
    "roundeven": lambda a: _canon_arr(np.rint(a)),
    "abs": lambda a: _canon_arr(np.abs(a)),
    "add": lambda a, b: _canon_arr(a + b),
    "sub": lambda a, b: _canon_arr(a - b),
    "gt": np.greater,
    "lt": np.less,
    "eq": np.equal,
    "ne": np.not_equal,
    "select": np.where,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
}


def steps(fn: str, t: str):
    """The composite's step list on one scalar (the parameters are Vars 'x' and 'y')."""
    e = Emitter([0])
    x, y = e.var(t, "x"), e.var(t, "y")
    if fn == "copysign":
        out = C.copysign(e, x, y, t)
    else:
        out = C.EXACT_UNARY[fn](e, x, t)
    assert all(isinstance(s, Op) for s in e.stmts), "a straight-line step list"
    assert {s.op for s in e.stmts} <= {*_VEC, "bitcast"}, {s.op for s in e.stmts}
    return e.stmts, x, y, out


def run_steps(fn: str, t: str, x: np.ndarray, y: np.ndarray | None = None) -> np.ndarray:
    stmts, xv, yv, out = steps(fn, t)
    env = {xv.id: x, yv.id: y}

    def val(a):
        return _imm_value(a) if isinstance(a, Imm) else env[a.id]

    with np.errstate(all="ignore"):
        for s in stmts:
            args = [val(a) for a in s.args]
            if s.op == "bitcast":
                r = np.asarray(args[0]).view(
                    {**DT, **{"u32": np.uint32, "u64": np.uint64}}[s.dst.type]
                )
            else:
                r = np.asarray(_VEC[s.op](*args))
            env[s.dst.id] = r
    assert isinstance(out, Var)
    return np.broadcast_to(env[out.id], x.shape)


def interp(fn: str, t: str, x: np.ndarray, y: np.ndarray | None = None) -> np.ndarray:
    node = Node(fn, (), (), {})
    args = (x,) if y is None else (x, y)
    return np.asarray(HANDLERS[fn](node, None, *args))


# --- the exact reference in rationals -----------------------------------------------------------


def exact(fn: str, t: str, x: float, y: float | None = None):
    """The IEEE result of ``fn`` (an integer is exactly representable), NaN canonical."""
    dt = DT[t]
    if math.isnan(x):
        return dt(np.nan)
    neg = math.copysign(1.0, x) < 0
    if fn == "copysign":
        y_neg = not math.isnan(y) and math.copysign(1.0, y) < 0
        return dt(-abs(x) if y_neg else abs(x))
    if math.isinf(x):
        return dt(x)
    q = Fraction(x)
    if fn == "floor":
        n = math.floor(q)
    elif fn == "ceil":
        n = math.ceil(q)
    elif fn == "trunc":
        n = math.trunc(q)
    elif fn == "round":
        n = round(q)  # Python rounds a Fraction half to even
    else:
        n = math.floor(abs(q) + Fraction(1, 2))
        n = -n if q < 0 else n
    r = dt(float(n))
    assert Fraction(float(r)) == n, "the result is representable"
    return dt(-0.0) if n == 0 and neg else r  # a zero result has x's sign


# --- samples ---------------------------------------------------------------------------------


def special_bits(t: str) -> list[int]:
    mant = 23 if t == "f32" else 52
    w = 32 if t == "f32" else 64
    top = (1 << (w - 1 - mant)) - 1
    out = []
    for sign in (0, 1 << (w - 1)):
        for ex in range(top + 1):
            half = 1 << (mant - 1)
            for m in (0, 1, 2, half - 1, half, half + 1, (1 << mant) - 2, (1 << mant) - 1):
                out.append(sign | (ex << mant) | m)
        # NaN payloads (quiet and signalling, either sign)
        for m in (1, 1 << (mant - 1), (1 << (mant - 1)) + 1, (1 << mant) - 1, 0x5555):
            out.append(sign | (top << mant) | m)
    return out


def around(t: str, values, ulps: int) -> np.ndarray:
    """Every bit pattern within ``ulps`` of each value (both signs)."""
    b = _bits(np.array(values, DT[t]), t)
    got = [np.arange(int(v) - ulps, int(v) + ulps + 1, dtype=UT[t]) for v in b]
    return np.concatenate(got)


def dense_f32(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    parts = [np.array(special_bits("f32"), np.uint32)]
    parts.append(rng.integers(0, 1 << 32, 1_000_000, dtype=np.uint64).astype(np.uint32))
    ks = np.arange(0, 64, dtype=np.float64)
    halves = np.concatenate([ks + 0.5, 2.0**22 + ks + 0.5, 2.0**23 - ks - 0.5])
    parts.append(around("f32", np.concatenate([halves, -halves]), 64))
    # all of [2^21, 2^24): halves in the first binade, 1/2-steps and integers in the next two
    lo, hi = 0x4A000000, 0x4B800000
    full = np.arange(lo, hi, dtype=np.uint32)
    parts += [full, full | np.uint32(1 << 31)]
    # all of [0.5, 1) and [1, 2) with either sign, strided
    parts.append(np.arange(0x3F000000, 0x40000000, 7, dtype=np.uint32))
    parts.append(np.arange(0xBF000000, 0xC0000000, 7, dtype=np.uint32))
    return np.concatenate(parts)


def sample_f64(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    parts = [np.array(special_bits("f64"), np.uint64)]
    parts.append(rng.integers(0, 1 << 63, 300_000, dtype=np.uint64) * np.uint64(2))
    parts.append(rng.integers(0, 1 << 63, 300_000, dtype=np.uint64) * np.uint64(2) + np.uint64(1))
    ks = np.arange(0, 64, dtype=np.float64)
    halves = np.concatenate([ks + 0.5, 2.0**51 + ks + 0.5, 2.0**52 - ks - 0.5])
    parts.append(around("f64", np.concatenate([halves, -halves, 2.0**52 + ks, 2.0**53 + ks]), 32))
    # log-uniform magnitudes around the integers' range
    mag = np.exp2(rng.uniform(-3, 56, 300_000)) * rng.choice([-1.0, 1.0], 300_000)
    parts.append(mag.view(np.uint64))
    return np.concatenate(parts)


def _numpy(fn: str, x, y=None):
    with np.errstate(all="ignore"):
        if fn == "copysign":
            return np.copysign(x, np.where(np.isnan(y), np.ones_like(y), y))
        return {"floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "round": np.rint}[fn](x)


def _check_steps_on(t: str, xb: np.ndarray, rng, fns=FNS) -> None:
    x = xb.view(DT[t])
    y = rng.permutation(x)
    for fn in fns:
        yy = y if fn == "copysign" else None
        want = interp(fn, t, x, yy)
        _same_bits(run_steps(fn, t, x, yy), want, t, (f"steps {fn} {t}", x))
        if fn != "round_half_away":
            _same_bits(want, _canon(_numpy(fn, x, yy), t), t, (f"numpy {fn} {t}", x))
        elif t == "f32":
            # ties away, independently: floor(|x| + 0.5) in binary64 is exact for binary32 x
            with np.errstate(all="ignore"):
                a = np.abs(x).astype(np.float64)
                ref = np.copysign(np.floor(a + 0.5), x).astype(np.float32)
            _same_bits(want, _canon(ref, t), t, (f"ties away {t}", x))
        # (f64 ties away: against exact rationals below)


@pytest.mark.parametrize("t", FLOATS)
def test_step_lists_equal_the_interpreter_and_numpy_on_a_dense_sample(t: str) -> None:
    xb = dense_f32() if t == "f32" else sample_f64()
    rng = np.random.default_rng(1)
    chunk = 1 << 21  # a few tens of MB at a time: the suite's process stays small
    for start in range(0, len(xb), chunk):
        _check_steps_on(t, xb[start : start + chunk], rng)


def test_step_lists_on_all_f32_bit_patterns() -> None:
    """All 2^32 patterns with KERA_EXHAUSTIVE=1; the brief profile (default runs and CI)
    takes one contiguous chunk of 2^24 around 1.0 (every rounding case of [2^-1, 2^1))."""
    rng = np.random.default_rng(2)
    chunk = 1 << 24
    whole = bool(os.environ.get("KERA_EXHAUSTIVE"))
    for start in range(0, 1 << 32, chunk) if whole else (0x3F000000,):
        _check_steps_on(
            "f32", np.arange(start, start + chunk, dtype=np.uint64).astype(np.uint32), rng
        )


@pytest.mark.parametrize("t", FLOATS)
def test_the_interpreter_against_exact_rationals(t: str) -> None:
    rng = np.random.default_rng(3)
    xb = np.concatenate(
        [
            np.array(special_bits(t), UT[t]),
            rng.choice(dense_f32() if t == "f32" else sample_f64(), 4000),
            around(
                t, [0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 2.0 ** (23 if t == "f32" else 52) - 0.5], 3
            ),
        ]
    )
    x = xb.view(DT[t])
    y = rng.permutation(x)
    for fn in FNS:
        yy = y if fn == "copysign" else None
        got = interp(fn, t, x, yy)
        want = np.array(
            [
                exact(fn, t, float(a), None if yy is None else float(b))
                for a, b in zip(x, y, strict=True)
            ],
            DT[t],
        )
        _same_bits(got, want, t, (f"exact {fn} {t}", x))


def test_the_special_cases_of_the_brief() -> None:
    cases = [
        ("floor", -0.0, -0.0),
        ("floor", -0.3, -1.0),
        ("floor", 0.7, 0.0),
        ("ceil", -0.5, -0.0),
        ("ceil", -0.7, -0.0),
        ("ceil", 0.3, 1.0),
        ("trunc", -0.7, -0.0),
        ("trunc", 2.5, 2.0),
        ("round", -0.5, -0.0),
        ("round", 2.5, 2.0),
        ("round", 3.5, 4.0),
        ("round_half_away", -0.5, -1.0),
        ("round_half_away", 2.5, 3.0),
        ("round_half_away", -0.49999997, -0.0),
        ("round_half_away", 8388606.5, 8388607.0),
        ("round_half_away", 8388607.5, 8388608.0),
    ]
    for t in FLOATS:
        for fn, x, want in cases:
            xs = np.array([x, np.inf, -np.inf, 16777216.0, -1e30], DT[t])
            ws = np.array([want, np.inf, -np.inf, 16777216.0, -1e30], DT[t])
            _same_bits(interp(fn, t, xs), ws, t, (f"{fn}({x})", xs))
            _same_bits(run_steps(fn, t, xs), ws, t, (f"steps {fn}({x})", xs))
        nan_neg = np.array([0xFFC00001 if t == "f32" else 0xFFF8000000000001], UT[t]).view(DT[t])
        for fn in UNARY:
            assert _bits(interp(fn, t, nan_neg), t)[0] == CANON[t]
            assert _bits(run_steps(fn, t, nan_neg), t)[0] == CANON[t]
        # copysign: y's sign bit, a NaN y positive, a NaN x canonical
        xs = np.array([1.5, -1.5, 0.0, np.inf, 3.0], DT[t])
        ys = np.concatenate([np.array([-0.0, 2.0, -1.0, -np.inf], DT[t]), nan_neg])
        ws = np.array([-1.5, 1.5, -0.0, -np.inf, 3.0], DT[t])
        for got in (interp("copysign", t, xs, ys), run_steps("copysign", t, xs, ys)):
            _same_bits(got, ws, t, ("copysign", xs))
            assert _bits(interp("copysign", t, nan_neg, ys[:1]), t)[0] == CANON[t]


# --- the type checker ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "code", "needle"),
    [
        ("floor(k)", "K0308", "floor(k)"),
        ("round(x, x)", "K0303", "round(x, x)"),
        ("copysign(x)", "K0303", "copysign(x)"),
        ("copysign(x, d)", "K0301", "copysign(x, d)"),
        ("copysign(k, k)", "K0308", "copysign(k, k)"),
    ],
)
def test_misuse_is_reported_with_a_code_and_a_span(body: str, code: str, needle: str) -> None:
    src = f"pub fn f(x: f32, d: f64, k: i32) -> f32 {{ {body} }}\n"
    diags = [d for d in analyze(src).diagnostics if d.is_error]
    assert diags, body
    d = diags[0]
    assert d.code == code, (body, d.code, d.message)
    assert src[d.span.start : d.span.end] == needle, (body, src[d.span.start : d.span.end])


def test_abs_is_the_existing_builtin_and_hover_names_the_new_ones() -> None:
    from kera_core.ide.builtins import INFO
    from kera_core.sema.lower_calls import BUILTINS

    assert BUILTINS["abs"] == (1, "unary")
    for fn in FNS:
        assert fn in BUILTINS and fn in INFO, fn


def test_the_highlighting_lists_name_every_builtin() -> None:
    from kera_core.sema.lower_calls import BUILTINS

    vim = (ROOT / "editors/nvim/syntax/kera.vim").read_text()
    vim_names = set()
    for line in vim.splitlines():
        if line.startswith("syn keyword keraBuiltin"):
            vim_names |= set(line.split()[3:])
    scm = (ROOT / "grammar/queries/highlights.scm").read_text()
    block = scm[scm.index("@function.builtin") :]
    scm_names = set(re.findall(r'"(\w+)"', block[: block.index("))")]))
    tm = json.loads((ROOT / "vscode-extension/syntaxes/kera.tmLanguage.json").read_text())
    pat = next(
        p["match"]
        for p in tm["repository"]["calls"]["patterns"]
        if "builtin" in json.dumps(p.get("captures", {}))
    )
    tm_names = set(pat[pat.index("(") + 1 : pat.index(")")].split("|"))
    for names in (vim_names, scm_names, tm_names):
        assert set(BUILTINS) <= names, sorted(set(BUILTINS) - names)


# --- the real pipeline ---------------------------------------------------------------------------


def _fn(fn: str, t: str, kind: str) -> str:
    return f"{fn}_{t}_{kind}"


def _source() -> str:
    lines = []
    for t in FLOATS:
        for fn in UNARY:
            lines.append(f"pub fn {_fn(fn, t, 's')}(x: {t}) -> {t} {{ {fn}(x) }}")
            lines.append(f"pub fn {_fn(fn, t, 'v')}[N](x: &{t}[N]) -> {t}[N] {{ {fn}(x) }}")
        fn = "copysign"
        lines.append(f"pub fn {_fn(fn, t, 's')}(x: {t}, y: {t}) -> {t} {{ copysign(x, y) }}")
        lines.append(
            f"pub fn {_fn(fn, t, 'v')}[N](x: &{t}[N], y: &{t}[N]) -> {t}[N] {{ copysign(x, y) }}"
        )
        lines.append(
            f"pub fn {_fn(fn, t, 'b')}[N](x: &{t}[N], y: {t}) -> {t}[N] {{ copysign(x, y) }}"
        )
    # composed with other elementwise operations (fused into one loop)
    lines.append(
        "pub fn mix[N](x: &f32[N], y: &f32[N]) -> f32[N] "
        "{ floor(x) + ceil(y) * trunc(x - y) - copysign(round_half_away(x), y) + round(y) }"
    )
    return "\n".join(lines) + "\n"


_MODULE: list = []


def module():
    if not _MODULE:
        a = analyze(_source())
        assert not a.has_errors, [str(d) for d in a.diagnostics if d.is_error]
        _MODULE.append(a.module)
    return _MODULE[0]


def adversarial(t: str, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    specials = np.array(special_bits(t), UT[t])
    tie = np.array([0.5, 1.5, 2.5, 0.49999997, 2.0**23 - 0.5, 2.0**22 + 0.5, 1e30, 2.0**52 - 0.5])
    pool = np.concatenate([specials, _bits(np.concatenate([tie, -tie]).astype(DT[t]), t)])
    x = (rng.standard_normal(n) * np.exp2(rng.integers(-4, 30, n))).astype(DT[t])
    xb = _bits(x, t).copy()
    k = rng.random(n) < 0.5
    xb[k] = rng.choice(pool, int(k.sum()))
    return xb.view(DT[t])


def cases():
    out = []
    for t in FLOATS:
        for fn in FNS:
            out.append((_fn(fn, t, "s"), t))
            out.append((_fn(fn, t, "v"), t))
        out.append((_fn("copysign", t, "b"), t))
    out.append(("mix", "f32"))
    return out


def inputs(name: str, t: str, n: int, seed: int) -> list[dict]:
    """Arguments of ``name``: a list of runs (a scalar function: several scalars)."""
    x = adversarial(t, max(n, 1), seed)
    y = adversarial(t, max(n, 1), seed + 7)
    two = "copysign" in name or name == "mix"
    if name.endswith("_s"):
        k = min(len(x), 24)
        return [{"x": x[i], **({"y": y[i]} if two else {})} for i in range(k)]
    if name.endswith("_b"):
        return [{"x": x[:n], "y": y[0]}]
    return [{"x": x[:n], **({"y": y[:n]} if two else {})}]


SIZES = (0, 1, 17, 1025)


def test_the_interpreter_runs_them_on_scalars_and_tensors() -> None:
    m = module()
    for name, t in cases():
        if name == "mix":
            continue
        fn = name.rsplit("_", 2)[0]
        for n in SIZES:
            for a in inputs(name, t, n, 5):
                got = reference(m, name, a).outputs[0].value
                x = np.asarray(a["x"], DT[t])
                y = None if "y" not in a else np.asarray(a["y"], DT[t])
                want = _canon(interp(fn, t, _canon(x, t), None if y is None else _canon(y, t)), t)
                _same_bits(np.asarray(got), np.broadcast_to(want, np.shape(got)), t, name)


def test_the_loop_program_in_both_shapes_gives_the_interpreters_bits() -> None:
    m = module()
    for name, t in cases():
        progs = {tg: lower_program(m.graph, name, tg) for tg in (CPU, GRID)}
        for n in SIZES if not name.endswith("_s") else (1,):
            for a in inputs(name, t, n, 11):
                want = outcome(lambda: reference(m, name, a))  # noqa: B023
                for tg, prog in progs.items():
                    got = outcome(lambda: run_function(m, name, a, program=prog))  # noqa: B023
                    assert got == want, (name, n, tg)


def _native(tname: str, cases_, sizes, runs_per_scalar: int = 24) -> None:
    t = runnable_target(tname)
    m = module()
    for name, _ in cases_:
        assert not t.unsupported(m.graph, name), (tname, name, t.unsupported(m.graph, name))
        for n in sizes if not name.endswith("_s") else (1,):
            for a in inputs(name, _, n, 13)[:runs_per_scalar]:
                same_as_reference(m, name, a, lambda: run_module(t, m, name, a), tname, n, a)  # noqa: B023


@pytest.mark.parametrize("level", x86_levels() or ["none"])
def test_x86_64_gives_the_interpreters_bits_at_every_level(level: str) -> None:
    if level == "none":
        tool_missing("the x86_64 target runs only on an x86-64 machine")
    from kera_core.backends.x86_64 import compile as X
    from kera_core.backends.x86_64.runtime import Loaded, run

    m = module()
    for name, t in cases():
        data, _ = X.build(m.graph, name, X.isa_for(level))
        loaded = Loaded(X.read(data, m.graph)[1])
        try:
            for n in SIZES if not name.endswith("_s") else (1,):
                for a in inputs(name, t, n, 17):
                    same_as_reference(m, name, a, lambda: run(loaded, m, name, a), level, n, a)  # noqa: B023
        finally:
            loaded.close()


def test_arm64_gives_the_interpreters_bits() -> None:
    try:
        get("arm64")
    except ImportError as e:
        tool_missing(f"the arm64 target cannot load here: {e}")
    _native("arm64", cases(), (0, 1, 17, 1025), runs_per_scalar=8)


def test_verilog_gives_the_interpreters_bits_on_small_cases() -> None:
    small = [
        ("floor_f32_v", "f32"),
        ("ceil_f32_v", "f32"),
        ("trunc_f64_v", "f64"),
        ("round_f32_v", "f32"),
        ("round_half_away_f32_v", "f32"),
        ("copysign_f32_b", "f32"),
    ]
    _native("verilog", small, (0, 9))


def test_ptx_assembles_with_ptxas() -> None:
    from kera_core.backends.ptx import compile as P

    if P.find_ptxas() is None:
        tool_missing("ptxas not found (pip install nvidia-cuda-nvcc-cu12)")
    m = module()
    texts = []
    for name, _ in cases():
        assert not P.unsupported(m.graph, name), name
        texts.append(P.compiled(m.graph, name).selected.text)
    for arch in ("sm_80", "sm_90"):
        P.ptxas(P.batch(texts), arch)


def test_wasm_gives_the_interpreters_bits() -> None:
    try:
        get("wasm")
    except ImportError:
        tool_missing("the wasm target needs wasmtime")
    _native("wasm", cases(), SIZES, runs_per_scalar=8)
