"""The examples under the reference interpreter: hand-computed cases and golden digests.

`tests/golden/run_digests.txt` holds, for every exported function of every example, the
last line of `kera run FILE --entry FN --seed 1` (and with `--adversarial`). Regenerate
it with `UPDATE_EXPECT=1 pytest tests/test_interp_examples.py` after a deliberate change
of semantics or of the examples, and say why in the commit.
"""

from __future__ import annotations

import contextlib
import glob
import io
import os

import numpy as np
import pytest

from kera_core.analysis import analyze
from kera_core.cli import run as run_cli
from kera_core.interp import run_function

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN = os.path.join(ROOT, "tests", "golden", "run_digests.txt")
UPDATE = os.environ.get("UPDATE_EXPECT") == "1"

_MODULES: dict[str, object] = {}


def example(name: str):
    if name not in _MODULES:
        with open(os.path.join(ROOT, "examples", name), encoding="utf-8") as f:
            a = analyze(f.read())
        assert not a.has_errors, [str(d) for d in a.diagnostics if d.is_error]
        _MODULES[name] = a.module
    return _MODULES[name]


def f32(*v):
    return np.array(v, np.float32)


def bits(a) -> list[int]:
    a = np.asarray(a)
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64).reshape(-1).tolist()


# --- hand-computed cases ----------------------------------------------------------------


def test_saxpy_three_ways():
    m = example("saxpy.kera")
    x, y = f32(1, 2, 3), f32(10, 20, 30)
    assert run_function(m, "saxpy", {"a": 2.0, "x": x, "y": y})["y"].tolist() == [12, 24, 36]
    for fn in ("saxpy_pure", "saxpy_fused"):
        assert run_function(m, fn, {"a": 2.0, "x": x, "y": y})["result"].tolist() == [12, 24, 36]


def test_tables_crc_stencil_grades_isqrt():
    m = example("tables.kera")
    data = np.frombuffer(b"123456789", np.uint8).copy()
    assert int(run_function(m, "crc32", {"data": data})["result"]) == 0xCBF43926
    x = f32(0, 0, 16, 0, 0, 1, 1)
    # 16 spread by the binomial weights; the two elements at each end are copied
    assert run_function(m, "smooth", {"x": x})["result"].tolist() == [0, 0, 6, 4.0625, 1.3125, 1, 1]
    scores = np.array([0, 39, 40, 59, 60, 74, 75, 100, 101, -1, 70], np.int32)
    assert run_function(m, "grades", {"scores": scores})["result"].tolist() == [2, 2, 3, 2, 2]
    for n, r in ((-5, 0), (0, 0), (1, 1), (3, 1), (4, 2), (15, 3), (16, 4), (2**62, 2**31)):
        assert int(run_function(m, "isqrt", {"n": np.int64(n)})["result"]) == r, n


def test_dot_three_ways():
    m = example("dot.kera")
    x, y = f32(1, 2, 3), f32(4, 5, 6)
    for fn in ("dot_builtin", "dot_loop", "dot_fma"):
        assert run_function(m, fn, {"x": x, "y": y})["result"] == 32.0
    assert run_function(m, "norm", {"x": f32(3, 4)})["result"] == 5.0
    assert run_function(m, "cosine", {"x": f32(0, 0), "y": f32(1, 1)})["result"] == 0.0


def test_matmul_2x2_and_loops_agree_bitwise():
    m = example("matmul.kera")
    a = f32(1, 2, 3, 4).reshape(2, 2)
    b = f32(5, 6, 7, 8).reshape(2, 2)
    want = [[19, 22], [43, 50]]
    assert run_function(m, "matmul_builtin", {"a": a, "b": b})["result"].tolist() == want
    assert run_function(m, "matmul_loops", {"a": a, "b": b})["result"].tolist() == want
    assert run_function(m, "rotate90", {"v": f32(1, 0)})["result"].tolist() == [0, 1]
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 9)).astype(np.float32)
    b = rng.standard_normal((9, 3)).astype(np.float32)
    c1 = run_function(m, "matmul_builtin", {"a": a, "b": b})["result"]
    c2 = run_function(m, "matmul_loops", {"a": a, "b": b})["result"]
    assert bits(c1) == bits(c2)


def test_conv1d_builtin_is_the_loop_even_on_adversarial_inputs():
    from kera_core.interp.gen import InputGenerator
    from kera_core.ir.types import F32, Sym, Tensor

    m = example("conv1d.kera")
    gen = InputGenerator(5, adversarial=True)
    t = Tensor(F32, (Sym(0),))
    for _ in range(3):
        x = gen.value(t, {0: 40})
        k = gen.value(t, {0: 5})
        a = run_function(m, "conv1d_builtin", {"x": x, "k": k})["result"]
        b = run_function(m, "conv1d_loops", {"x": x, "k": k})["result"]
        assert bits(a) == bits(b)
    r = run_function(m, "forward_difference", {"x": f32(1, 4, 9)})["result"]
    assert r.tolist() == [3, 5, -9]


def test_softmax():
    m = example("softmax.kera")
    x = np.linspace(-3, 5, 50).astype(np.float32)
    a = run_function(m, "softmax_builtin", {"x": x})["result"]
    b = run_function(m, "softmax_manual", {"x": x})["result"]
    assert bits(a) == bits(b)
    assert abs(float(np.sum(a.astype(np.float64))) - 1.0) < 1e-6
    assert np.all(np.diff(a) > 0)
    assert run_function(m, "predict", {"logits": f32(0, 3, 3, 1)})["result"] == 1
    g = run_function(m, "gate", {"x": f32(0, 100, -100)})["result"]
    assert g[0] == 0.5 and g[1] == 1.0 and 0 < g[2] < 1e-40


def test_layernorm():
    m = example("layernorm.kera")
    x = f32(1, 2, 3, 4, 10)
    y = run_function(m, "normalize", {"x": x})["result"].astype(np.float64)
    assert abs(y.mean()) < 1e-6 and abs(y.var() - 1.0) < 1e-4
    ones, zeros = np.ones(5, np.float32), np.zeros(5, np.float32)
    z = run_function(m, "layernorm_builtin", {"x": x, "gamma": ones, "beta": zeros, "eps": 1e-5})[
        "result"
    ]
    assert bits(z) == bits(run_function(m, "normalize", {"x": x})["result"])
    assert run_function(m, "variance", {"x": f32(1, 3)})["result"] == 1.0
    assert run_function(m, "min_max_scale", {"x": f32(2, 4, 3)})["result"].tolist() == [0, 1, 0.5]


def test_bits_example():
    m = example("bits.kera")

    def r(fn, **kw):
        return int(run_function(m, fn, kw)["result"])

    assert r("splitmix64", state=np.uint64(0)) == 0xE220A8397B1DCDAF
    assert r("popcount", v=np.uint64(0xFF00FF)) == 16
    assert r("reverse_bits", x=np.uint32(1), width=np.uint32(4)) == 8
    assert r("gcd", a=48, b=18) == 6
    assert r("fnv1a", bytes=np.frombuffer(b"a", np.uint8)) == 0xE40C292C
    assert r("digit_sum", x=np.uint32(9875)) == 29
    assert r("sign_extend_byte", x=np.uint32(0x1FF)) == -1
    assert r("scramble", b=np.uint8(0x12)) == 0x21 ^ 0xA5


def test_pid_settles():
    m = example("pid.kera")
    gains = {"kp": 2.0, "ki": 0.5, "kd": 0.0}
    r = run_function(
        m,
        "simulate",
        {
            "gains": gains,
            "setpoint": 1.0,
            "dt": 0.1,
            "tolerance": 0.05,
            "trace": np.zeros(500, np.float32),
        },
    )
    steps = int(r["result"])
    assert 10 < steps < 500
    assert abs(float(r["trace"][steps - 1]) - 1.0) < 0.05
    assert np.all(r["trace"][steps:] == 0)


def test_stats_multiple_returns():
    m = example("stats.kera")
    # 1 + 1e-8 + … : the plain sum loses every small term, the compensated one keeps them
    x = f32(1.0, *([1e-8] * 1000))
    s, comp = run_function(m, "kahan", {"x": x})["result"].values()
    best, naive, err = run_function(m, "sum_error", {"x": x})["result"].values()
    assert float(naive) == 1.0 and best == s - comp
    assert abs(float(best) - (1.0 + 1000 * float(np.float32(1e-8)))) < 1e-7
    assert err == abs(best - naive) and err > 0
    v = np.array([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0])
    mean, var = run_function(m, "mean_variance", {"x": v})["result"].values()
    assert mean == 5.0 and abs(var - np.var(v, ddof=1)) < 1e-12
    assert tuple(run_function(m, "mean_variance", {"x": v[:1]})["result"].values()) == (2.0, 0.0)
    lo, hi = run_function(m, "extremes", {"x": f32(3, -1, 7, -1, 7)})["result"].values()
    assert (lo["0"], lo["1"], hi["0"], hi["1"]) == (1, -1.0, 2, 7.0)
    lo, hi = run_function(m, "extremes", {"x": f32()})["result"].values()
    assert (lo["0"], hi["0"]) == (-1, -1)
    assert run_function(m, "range", {"x": f32(3, -1, 7)})["result"] == 8.0
    assert run_function(m, "range", {"x": f32()})["result"] == 0.0


# --- golden digests ---------------------------------------------------------------------------


def _cases() -> list[tuple[str, str]]:
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "*.kera"))):
        name = os.path.basename(path)
        for fn in example(name).graph.exported():
            out.append((name, fn.name))
    return out


def _last_line(name: str, fn: str, *extra: str) -> str:
    buf, err = io.StringIO(), io.StringIO()
    path = os.path.join(ROOT, "examples", name)
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        rc = run_cli.main([path, "--entry", fn, "--seed", "1", *extra])
    assert rc in (0, 1), err.getvalue()
    return buf.getvalue().rstrip("\n").splitlines()[-1]


def _current() -> list[str]:
    lines = []
    for name, fn in _cases():
        lines.append(f"{name} {fn} seed=1 {_last_line(name, fn)}")
        lines.append(f"{name} {fn} seed=1,adversarial {_last_line(name, fn, '--adversarial')}")
    return lines


def test_golden_run_digests():
    got = _current()
    if UPDATE or not os.path.exists(GOLDEN):
        os.makedirs(os.path.dirname(GOLDEN), exist_ok=True)
        with open(GOLDEN, "w", encoding="utf-8") as f:
            f.write("\n".join(got) + "\n")
        if not UPDATE:
            pytest.fail(f"wrote {GOLDEN}; rerun (set UPDATE_EXPECT=1 to regenerate on purpose)")
        return
    with open(GOLDEN, encoding="utf-8") as f:
        want = f.read().splitlines()
    assert got == want, "result digests changed; if on purpose, rerun with UPDATE_EXPECT=1"
