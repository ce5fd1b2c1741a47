"""Kera's own Verilog float units (issue 21 item 1), tested like HardFloat against TestFloat:
every special-value pair (triple for fma) plus random operands (half near boundaries) run
through one iverilog simulation per unit, raw result bits compared with the exact reference
(kera_core/backends/verilog/float_ref.py), which is itself checked against numpy.

KERA_FUZZ_UNITS=N (default 2000) sets the random operands per unit in iverilog.

The bulk tests (test_unit_bulk_operands) run every unit in verilator through a C++ driver
(kera_core/backends/verilog/float_bulk.py): KERA_VERILOG_UNITS_COUNT operands per unit
(default 100,000; KERA_VERILOG_UNITS_FULL=1: 1,000,000; KERA_VERILOG_UNITS_SEED picks
another set), half near boundaries, compared with numpy vectorised; samples also against
float_ref and, for fma/div/sqrt, Fractions."""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import numpy as np
import pytest

from kera_core.backends.verilog import float_bulk as B
from kera_core.backends.verilog import float_ref as R
from kera_core.backends.verilog import float_units as U
from kera_core.backends.verilog import float_vectors as V
from tests.tools import tool_missing

COUNT = int(os.environ.get("KERA_FUZZ_UNITS", "2000"))
BATCH = 200_000


def _need_iverilog() -> None:
    why = U.tools_missing()
    if why:
        tool_missing(why)


@pytest.mark.parametrize("name", sorted(U.UNITS))
def test_unit_matches_reference(name: str) -> None:
    _need_iverilog()
    u = U.UNITS[name]
    vecs = V.special_vectors(u) + V.random_vectors(u, COUNT, 0)
    for i in range(0, len(vecs), BATCH):
        chunk = vecs[i : i + BATCH]
        got = U.simulate(u, chunk)
        exp = U.reference(u, chunk)
        bad = [(v, g, e) for v, g, e in zip(chunk, got, exp, strict=True) if g != e]
        assert not bad, (
            f"{name}: {len(bad)} mismatches, first {[[hex(x) for x in t] for t in bad[0]]}"
        )


PIPELINED = [
    (name, lat)
    for name, u in sorted(U.UNITS.items())
    if u.kind in U.CUTS
    for lat in range(1, len(U.CUTS[u.kind]) + 3)
    if lat != u.latency
]


@pytest.mark.parametrize("name,lat", PIPELINED, ids=[f"{n}-L{lat}" for n, lat in PIPELINED])
def test_pipelined_unit_at_every_latency(name: str, lat: int) -> None:
    """add, mul and fma have register stages cut into their datapaths (U.CUTS): at every
    LATENCY from 1 to every cut plus an output register, one operation accepted per cycle
    (the test bench's bubble every fifth cycle), valid_out exactly LATENCY cycles later,
    the same bits (a sample of the special values and random operands)."""
    _need_iverilog()
    u = U.at_latency(U.UNITS[name], lat)
    vecs = V.special_vectors(u)[:: 7 if u.kind == "fma" else 1] + V.random_vectors(u, 500, lat)
    got = U.simulate(u, vecs)
    exp = U.reference(u, vecs)
    bad = [(v, g, e) for v, g, e in zip(vecs, got, exp, strict=True) if g != e]
    assert not bad, f"{name} L{lat}: {len(bad)} mismatches, first {bad[0]}"


FULL = os.environ.get("KERA_VERILOG_UNITS_FULL", "") not in ("", "0")
BULK = int(os.environ.get("KERA_VERILOG_UNITS_COUNT", "") or (1_000_000 if FULL else 100_000))
BULK_SEED = int(os.environ.get("KERA_VERILOG_UNITS_SEED", "0"))


def _hexes(xs) -> list[str]:
    return [hex(int(x)) for x in xs]


@pytest.mark.parametrize("name", sorted(U.UNITS))
def test_unit_bulk_operands(name: str) -> None:
    """BULK random operand vectors (half near boundaries: float_bulk.vectors) and every
    special-value vector through the unit in verilator (one build per unit, cached on
    disk), the raw result bits equal to numpy's (Kera's rules on top). The numpy
    reference is itself checked against float_ref on a sample of 2,000 (1,000 uniform,
    1,000 near boundaries), and for fma/div/sqrt against a Fraction computation on 300."""
    why = B.tools_missing()
    if why:
        tool_missing(why)
    u = U.UNITS[name]
    t0 = time.perf_counter()
    sp = V.special_vectors(u)
    rnd = B.vectors(u, BULK, BULK_SEED)
    ops = [
        np.concatenate([np.array([v[k] for v in sp], dtype=np.uint64), rnd[k]])
        for k in range(len(u.inputs))
    ]
    n = len(ops[0])
    stats: dict = {}
    got = B.simulate(u, ops, stats)
    exp = B.numpy_reference(u, ops)
    bad = np.zeros(n, dtype=bool)
    for g, e in zip(got, exp, strict=True):
        bad |= g != e
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        v = tuple(int(o[i]) for o in ops)
        raise AssertionError(
            f"{name}: {int(bad.sum())} of {n} mismatch; first operands {_hexes(v)}: "
            f"verilog {_hexes(g[i] for g in got)}, numpy {_hexes(e[i] for e in exp)}, "
            f"float_ref {_hexes(u.ref(*v))}"
        )
    h = len(sp) + BULK // 2
    pick = np.r_[len(sp) : len(sp) + 1000, h : h + 1000]
    pick = pick[pick < n]
    sample = [o[pick] for o in ops]
    for e, r in zip([x[pick] for x in exp], B.float_ref_reference(u, sample), strict=True):
        assert np.array_equal(e, r), f"{name}: numpy and float_ref disagree"
    if u.kind in ("fma", "div", "sqrt"):
        for j in range(0, len(pick), max(1, len(pick) // 300)):
            v = tuple(int(o[j]) for o in sample)
            want = B.fraction_reference(u, v)
            if want is not None:
                assert int(exp[0][pick[j]]) == want, f"{name}: Fraction says {_hexes([want])}"
    print(
        f"\n{name}: {n} vectors ({BULK} random), 0 mismatches; verilator build "
        f"{stats['build_s']:.1f} s, run {stats['run_s']:.2f} s ({stats['cycles']} cycles), "
        f"total {time.perf_counter() - t0:.1f} s"
    )


def _np(f: R.Fmt):
    return (np.float32, np.uint32) if f.bits == 32 else (np.float64, np.uint64)


def _canon(f: R.Fmt, arr) -> list[int]:
    ft, ut = _np(f)
    bits = arr.astype(ft).view(ut).astype(object)
    nan = np.isnan(arr)
    return [f.cnan if n else int(b) for b, n in zip(bits, nan, strict=True)]


@pytest.mark.parametrize("fmt", ["f32", "f64"])
def test_reference_agrees_with_numpy(fmt: str) -> None:
    f = R.FMTS[fmt]
    ft, ut = _np(f)
    with np.errstate(all="ignore"):
        for op in ("add", "mul", "div"):
            u = U.UNITS[f"{fmt}_{op}"]
            vecs = V.special_vectors(u) + V.random_vectors(u, 20000, 1)
            a = np.array([v[0] for v in vecs], dtype=ut).view(ft)
            b = np.array([v[1] for v in vecs], dtype=ut).view(ft)
            if op == "add":
                sub = np.array([v[2] for v in vecs], dtype=bool)
                want = _canon(f, np.where(sub, a - b, a + b))
            else:
                want = _canon(f, a * b if op == "mul" else a / b)
            assert [t[0] for t in U.reference(u, vecs)] == want, op
        u = U.UNITS[f"{fmt}_sqrt"]
        vecs = V.special_vectors(u) + V.random_vectors(u, 20000, 1)
        a = np.array([v[0] for v in vecs], dtype=ut).view(ft)
        assert [t[0] for t in U.reference(u, vecs)] == _canon(f, np.sqrt(a))
        other = R.F64 if fmt == "f32" else R.F32
        u = U.UNITS[f"{fmt}_to_{other.name}"]
        vecs = V.special_vectors(u) + V.random_vectors(u, 20000, 1)
        a = np.array([v[0] for v in vecs], dtype=ut).view(ft)
        assert [t[0] for t in U.reference(u, vecs)] == _canon(other, a.astype(_np(other)[0]))


def test_fma_reference_is_exact() -> None:
    """The fma reference against an independent Fraction computation."""
    from fractions import Fraction

    for fmt in ("f32", "f64"):
        f = R.FMTS[fmt]
        u = U.UNITS[f"{fmt}_fma"]
        for a, b, c in V.random_vectors(u, 3000, 2):
            if any(R.is_nan(f, x) or R.is_inf(f, x) for x in (a, b, c)):
                continue
            exact = R.to_fraction_key(f, a) * R.to_fraction_key(f, b) + R.to_fraction_key(f, c)
            got = R.fma(f, a, b, c)
            if exact == 0 or R.is_inf(f, got):
                continue
            # the result is the nearest float: no float lies strictly closer
            g = R.to_fraction_key(f, got)
            for nb in (got - 1, got + 1):
                if 0 <= nb < (1 << f.bits) and not R.is_nan(f, nb) and not R.is_inf(f, nb):
                    if R.sign(f, nb) == R.sign(f, got):
                        assert abs(R.to_fraction_key(f, nb) - exact) >= abs(g - exact) - Fraction(0)


def test_verilator_lints_every_unit() -> None:
    if shutil.which("verilator") is None:
        tool_missing("verilator not found (apt-get install verilator)")
    tops = sorted({u.module for u in U.UNITS.values()})
    for top in tops:
        r = subprocess.run(
            [
                "verilator",
                "--lint-only",
                "-Wno-fatal",
                "-Wno-WIDTH",
                "-Wno-UNUSED",
                "--top-module",
                top,
                *map(str, U.SOURCES),
            ],
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, f"{top}:\n{r.stderr}"
    for kind, cuts in U.CUTS.items():  # the pipelined units at every latency
        for lat in range(1, len(cuts) + 3):
            r = subprocess.run(
                [
                    "verilator",
                    "--lint-only",
                    "-Wno-fatal",
                    "-Wno-WIDTH",
                    "-Wno-UNUSED",
                    f"-GLATENCY={lat}",
                    "--top-module",
                    f"kera_fp_{kind}",
                    *map(str, U.SOURCES),
                ],
                capture_output=True,
                text=True,
            )
            assert r.returncode == 0, f"kera_fp_{kind} LATENCY={lat}:\n{r.stderr}"
            assert "%Error" not in r.stderr, r.stderr
