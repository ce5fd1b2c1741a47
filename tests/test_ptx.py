"""The ptx target: PTX from the loop program, checked here by ptxas (sm_80 and sm_90), its
text held to the clauses of docs/semantics.md a GPU is tempted to break, and its run path
prepared up to the launch (a GPU runs it: scripts/gpu-check.sh)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from kera_core.analysis import analyze
from kera_core.backends.ptx import compile as P
from kera_core.targets import get
from tests.tools import tool_missing

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.kera"))
FLOAT_OP = re.compile(r"^\s*(add|sub|mul|div|sqrt|fma|rcp|rsqrt)\.(\S*)f(32|64)\b", re.M)


def _module(src: str):
    a = analyze(src)
    assert not a.has_errors, [str(d) for d in a.diagnostics if d.is_error]
    return a.module


def _ptxas() -> None:
    if P.find_ptxas() is None:
        tool_missing("ptxas not found (pip install nvidia-cuda-nvcc-cu12)")


def _example_texts() -> list[str]:
    texts = []
    for path in EXAMPLES:
        m = _module(path.read_text())
        for f in m.graph.exported():
            if not P.unsupported(m.graph, f.name):
                texts.append(P.compiled(m.graph, f.name).selected.text)
    return texts


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_every_example_assembles_with_ptxas(arch: str) -> None:
    _ptxas()
    texts = _example_texts()
    assert len(texts) >= 40  # every example function the target compiles
    P.ptxas(P.batch(texts), arch)  # raises PtxasError with ptxas's messages


def test_generated_programs_assemble_with_ptxas() -> None:
    _ptxas()
    from kera_core.backends.ptx.check import draw_programs

    texts = []
    for src, *_ in draw_programs(40):  # the generated programs gpu-check.sh runs, alike
        a = analyze(src)
        for f in a.module.graph.exported():
            if not P.unsupported(a.module.graph, f.name):
                texts.append(P.compiled(a.module.graph, f.name).selected.text)
    assert len(texts) >= 20
    for arch in ("sm_80", "sm_90"):
        P.ptxas(P.batch(texts), arch)


def test_every_float_operation_rounds_to_nearest_and_never_flushes() -> None:
    texts = _example_texts()
    text = "\n".join(texts)
    assert (
        ".ftz" not in text
        and ".approx" not in text
        and ".sat" not in text.replace("cvt.rzi.sat", "")
    )
    for m in FLOAT_OP.finditer(text):
        mods = m.group(2)
        assert ".rn." in f".{mods}" or mods.startswith("rn."), m.group(0)


def test_fma_only_where_kera_asks_for_it() -> None:
    m = _module(
        "pub fn a[N](x: &f32[N], y: &f32[N]) -> f32[N] { x * y + x }\n"
        "pub fn b[N](x: &f32[N], y: &f32[N]) -> f32[N] { fma(x, y, x) }\n"
    )
    a = P.compiled(m.graph, "a").selected.text
    b = P.compiled(m.graph, "b").selected.text
    assert "fma." not in a and "mul.rn.f32" in a and "add.rn.f32" in a
    assert "fma.rn.f32" in b


def test_min_and_max_are_keras_not_ptxs() -> None:
    # PTX min/max return the other operand for one NaN and may order ±0 either way: Kera's
    # NaN-propagating, -0 < +0 rule is compares and selects
    m = _module("pub fn f[N](x: &f64[N], y: &f64[N]) -> f64[N] { maximum(x, y) - minimum(x, y) }")
    text = P.compiled(m.graph, "f").selected.text
    assert not re.search(r"\b(min|max)\.(\S*)f64", text)
    assert "setp" in text and "selp" in text


def test_the_artifact_carries_the_fingerprint_and_the_report_speaks_of_tensor_cores() -> None:
    _ptxas()
    m = _module("pub fn mm[M, K, N](a: &f32[M, K], b: &f32[K, N]) -> f32[M, N] { matmul(a, b) }")
    other = _module(
        "pub fn mm[M, K, N](a: &f32[M, K], b: &f32[K, N]) -> f32[M, N] { matmul(a, b) + 1.0 }"
    )
    t = get("ptx")
    art = t.lower(m.graph, m.provenance, "mm")
    entry, threads, text = P.read(art.data, m.graph)
    assert entry == "mm" and threads >= 1 and m.graph.fingerprint().hex() in text
    with pytest.raises(P.ArtifactError):
        P.read(art.data, other.graph)
    report = t.report(m.graph, "mm")
    assert "tensor cores: not used" in report and "§8.1" in report
    assert "sm_80" in report and "registers" in report.lower()


def test_without_a_gpu_runs_say_so_and_all_still_works(tmp_path) -> None:
    from kera_core.backends.ptx import runtime as R

    t = get("ptx")
    why = t.cannot_run_here()
    if R.why_no_gpu() is None:
        assert why is None  # a GPU machine: scripts/gpu-check.sh runs there
        return
    assert why and "\n" not in why
    src = tmp_path / "f.kera"
    src.write_text("pub fn f[N](x: &f32[N]) -> f32 { sum(x) }\n")
    import subprocess
    import sys

    one = subprocess.run(
        [sys.executable, "-m", "kera_core", "run", str(src), "--target", "ptx", "--entry", "f"],
        capture_output=True,
        text=True,
    )
    assert one.returncode == 2 and "cannot run here" in one.stderr
    assert "Traceback" not in one.stderr
    every = subprocess.run(
        [sys.executable, "-m", "kera_core", "run", str(src), "--target", "all", "--entry", "f"],
        capture_output=True,
        text=True,
    )
    assert every.returncode == 0, every.stderr
    assert "target ptx skipped: cannot run here" in every.stderr


def test_the_launch_is_prepared_without_a_gpu() -> None:
    _ptxas()
    from kera_core.backends.ptx import check

    assert check.main(["--dry-run", "--programs", "3", "--jobs", "2"]) == 0


def test_float_remainder_is_an_exact_helper_that_assembles() -> None:
    """PTX has no exact remainder: float `%` calls an integer helper (its bits are checked on
    the emulator, tests/test_ptx_emulated.py)."""
    _ptxas()
    m = _module(
        "pub fn f(a: f32, b: f32) -> f32 { a % b }\n"
        "pub fn g[N](x: &f64[N], y: &f64[N]) -> f64[N] { x % y }\n"
    )
    texts = []
    for fn, helper in (("f", "k_fmod_f32"), ("g", "k_fmod_f64")):
        assert not P.unsupported(m.graph, fn)
        text = P.compiled(m.graph, fn).selected.text
        assert f".func (.param .b{helper[-2:]} fr) {helper}" in text
        assert f"call (fr), {helper}" in text  # not call.uni: it may run divergent
        texts.append(text)
    for arch in P.ARCHS:
        P.ptxas(P.batch(texts), arch)


def test_a_gpus_own_nan_comes_back_canonical() -> None:
    """Found on an H200: `div.rn` 0/0 and friends give NaN 0x7FFFFFFF (f32) and
    0x7FFF…F (f64); scalar results and printed values leave the kernel's cells as Kera's
    canonical NaN (semantics.md §3), like buffers do."""
    from kera_core.backends.ptx.runtime import _from_cell

    for t, bits, want in (
        ("f32", 0x7FFFFFFF, 0x7FC00000),
        ("f32", 0xFFC00001, 0x7FC00000),
        ("f64", 0x7FFFFFFFFFFFFFFF, 0x7FF8000000000000),
    ):
        v = _from_cell(t, bits)
        raw = int(np.asarray(v).view({"f32": np.uint32, "f64": np.uint64}[t]))
        assert raw == want, (t, hex(bits), hex(raw))
    assert _from_cell("f32", 0x80000000).tobytes() == np.float32(-0.0).tobytes()
    assert _from_cell("i32", 0xFFFFFFFF) == -1


GRID_CASES = """
pub fn total[N](x: &f32[N]) -> f32 { sum(x) }
pub fn mm[M, K, N](a: &f32[M, K], b: &f32[K, N]) -> f32[M, N] { matmul(a, b) }
pub fn scan[N](x: &mut f32[N]) -> f32[N] { for i in 1..N { x[i] = x[i] + x[i - 1]; } x * 2.0 }
pub fn scalar(a: f32) -> f32 { a * 2.0 }
"""


def test_the_kernel_is_a_grid_unless_stores_repeat_in_order() -> None:
    """Parallel work spreads over a cooperative grid (with the grid barrier); a loop that
    stores in order (a prefix sum) keeps one CTA, and the report says why; code with no
    mapped loop runs on one thread. The header carries the choice to the runner."""
    from kera_core.backends.ptx import runtime as R
    from kera_core.backends.ptx.select import sequential_effects

    m = _module(GRID_CASES)
    g = m.graph
    want = {"total": (True, 256), "mm": (True, 256), "scan": (False, 256), "scalar": (False, 1)}
    for name, (grid, threads) in want.items():
        sel = P.compiled(g, name).selected
        assert (sel.grid, sel.threads) == (grid, threads), name
        assert ("call.uni k_gsync;" in sel.text) == grid, name
        assert ("k_gsync" in sel.text) == grid, name
        art = P.artifact_text(g, name)
        assert R.grid_of(art) == grid, name
        assert P.read(art.encode(), g)[:2] == (name, threads)
    assert "stores" in sequential_effects(P.compiled(g, "scan").program)
    assert "cooperative launch" in P.report(g, "total")
    assert "one CTA because a loop in `scan` stores" in P.report(g, "scan")


def test_the_grid_lowering_shapes_reach_the_kernel() -> None:
    """The ptx target lowers with LoweringTarget(many_threads=True): the sum is parallel
    passes over lanes and tiles plus the level tree, matmul one loop over every output —
    each mapped to threads — and a dry run prepares a grid launch."""
    from kera_core.backends.ptx import runtime as R

    m = _module(GRID_CASES)
    loops = {li.var.split(".")[0]: li.mapped for li in P.compiled(m.graph, "total").selected.loops}
    assert loops == {"%lane": True, "%tile": True, "%run": True}, loops
    (mm,) = P.compiled(m.graph, "mm").selected.loops
    assert mm.var.startswith("%ij") and mm.mapped
    art = P.artifact_text(m.graph, "total")
    x = np.arange(5000, dtype=np.float32)
    launch = R.run(art, 256, m, "total", {"x": x}, dry_run=True)
    assert launch.grid and launch.threads == 256


def test_memory_spaces_are_separate_memories_on_the_gpu() -> None:
    """`copy_to`/`move_to` between spaces copy into a buffer of the new space (the CPU
    lowering only renames the value); a `pinned` buffer comes from the page-locked arena, a
    `unified` parameter is placed in managed memory by the runner."""
    from kera_core.backends.ptx import runtime as R
    from kera_core.backends.ptx import select as S
    from kera_core.loops import ir
    from kera_core.loops.lower import lower_program
    from kera_core.loops.target import CPU, GRID

    m = _module((ROOT / "examples" / "transfer.kera").read_text())
    g = m.graph

    def copies(target, fn):
        out = []

        def walk(stmts):
            for s in stmts:
                if isinstance(s, ir.Copy):
                    out.append((s.src.space, s.dst.space))
                for attr in ("body", "then", "orelse", "cond"):
                    inner = getattr(s, attr, None)
                    if isinstance(inner, list):
                        walk(inner)

        for lf in lower_program(g, fn, target).functions.values():
            walk(lf.body)
        return out

    assert copies(GRID, "stage") == [("host", "pinned")]
    assert copies(GRID, "upload") == [("host", "device")]
    assert ("device", "host") in copies(GRID, "scale_relu_roundtrip")
    # one memory: a transfer renames the value (a copy is made only where a returned value
    # must be a buffer of its own, as for any function), never into another space
    for fn in ("stage", "upload", "scale_relu_roundtrip"):
        assert all(a == b == "host" for a, b in copies(CPU, fn)), fn
    text = P.compiled(g, "stage").selected.text
    pinned_cursor = 8 * S.ARENA_CELLS["pinned"][0]
    assert f"+{pinned_cursor}];" in text  # the pinned arena's cursor
    x = np.ones(7, dtype=np.float32)
    art = P.artifact_text(g, "total_unified")
    launch = R.run(art, P.read(art.encode(), g)[1], m, "total_unified", {"x": x}, dry_run=True)
    assert [space for _, _, space in launch.buffers] == ["unified"]
