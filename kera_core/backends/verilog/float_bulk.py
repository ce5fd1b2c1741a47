"""Millions of operands through the float units: a verilator harness, numpy operand
generation and a vectorised numpy reference (issue 21: "≥ 10⁶ random operands per unit,
half of them near boundaries, against numpy").

:func:`simulate` verilates one unit (its module as the top, the unit's parameters as
``-G`` overrides) with a generated C++ driver that reads the operand vectors from a binary
file (little-endian ``uint64`` per operand), drives one a cycle with a bubble every fifth
cycle (the operands on a bubble are garbage: the complement of the previous ones), checks
that ``valid_out`` rises exactly ``LATENCY`` cycles after each ``valid_in``, and writes the
results as ``uint64`` too. Builds are cached on disk like the kernels' (testbench.cache_dir).

:func:`vectors` makes the operands with numpy — half uniformly random bit patterns, half
near boundaries (see :data:`BOUNDARY_KINDS`) — and :func:`numpy_reference` computes the
expected bits with numpy's IEEE arithmetic and Kera's rules on top (canonical NaN, −0 < +0
in min/max, saturating float→int). numpy has no fma: binary32 fma is the exact binary64
product plus ``c`` by TwoSum, rounded to odd then once to binary32; binary64 fma is
:func:`float_ref.fma` (exact Python integers). :func:`fraction_reference` is an independent
``fractions.Fraction`` computation for fma, div and sqrt, used on samples.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

from . import float_ref as R
from . import testbench as TB
from .float_ref import Fmt
from .float_units import SOURCES, SimError, Unit

VERILATOR_FLAGS = (
    "--cc",
    "--exe",
    "--build",
    "-Wno-fatal",
    "-Wno-lint",
    "-Wno-style",
    "-Wno-UNOPTFLAT",
    "-j",
    "1",
)


def tools_missing() -> str | None:
    return TB.tools_missing("verilator")


def driver(u: Unit) -> str:
    """The C++ driver of the verilated ``u``: argv[1] operands in, argv[2] results out."""
    top = f"V{u.module}"
    nin, nout = len(u.inputs), len(u.outputs)

    def mask(w: int) -> str:
        return "~0ULL" if w == 64 else f"((1ULL << {w}) - 1)"

    put = "\n".join(
        f"      t->{n} = (v ? in[i * {nin} + {k}] : ~(uint64_t)t->{n}) & {mask(w)};"
        for k, (n, w) in enumerate(u.inputs)
    )
    get = "\n".join(
        f"      out[nout * {nout} + {k}] = t->{n};" for k, (n, _) in enumerate(u.outputs)
    )
    return f"""#include "{top}.h"
#include "verilated.h"
#include <cstdint>
#include <cstdio>
#include <vector>

int main(int argc, char** argv) {{
  if (argc != 3) return 2;
  FILE* fi = fopen(argv[1], "rb");
  if (!fi) return 3;
  fseek(fi, 0, SEEK_END);
  long bytes = ftell(fi);
  fseek(fi, 0, SEEK_SET);
  size_t n = bytes / (8 * {nin});
  std::vector<uint64_t> in(n * {nin} + 1), out(n * {nout} + 1);
  if (fread(in.data(), 8, n * {nin}, fi) != n * {nin}) return 4;
  fclose(fi);
  VerilatedContext ctx;
  {top}* t = new {top}{{&ctx}};
  t->clk = 0; t->rst = 1; t->valid_in = 0; t->eval();
  t->clk = 1; t->eval(); t->clk = 0; t->eval();
  t->rst = 0;
  uint64_t hist = 0;
  size_t i = 0, nout = 0, cyc = 0, bad = 0;
  while (nout < n && cyc < 2 * n + {u.latency} + 16) {{
    bool v = i < n && (cyc % 5) != 3;
    t->valid_in = v;
{put}
    if (v) i++;
    t->clk = 1; t->eval();
    t->clk = 0; t->eval();
    hist = (hist << 1) | (v ? 1 : 0);
    if ((uint64_t)t->valid_out != ((hist >> {u.latency - 1}) & 1)) bad++;
    if (t->valid_out) {{
{get}
      nout++;
    }}
    cyc++;
  }}
  FILE* fo = fopen(argv[2], "wb");
  if (!fo) return 5;
  fwrite(out.data(), 8, nout * {nout}, fo);
  fclose(fo);
  printf("END %zu %zu %zu\\n", nout, bad, cyc);
  t->final();
  delete t;
  return 0;
}}
"""


_BUILT: dict[str, str] = {}


def build(u: Unit) -> str:
    """The verilated driver of ``u`` (built once, cached on disk): the executable's path."""
    why = tools_missing()
    if why:
        raise SimError(why)
    cpp = driver(u)
    params = [f"-G{k}={v}" for k, v in u.params.items()]
    srcs = "".join(p.read_text() for p in SOURCES)
    salt = f"units {TB._VERSION[0]} {' '.join(VERILATOR_FLAGS)} {' '.join(params)} {u.module}"
    key = "u" + hashlib.sha3_256((salt + "\0" + srcs + cpp).encode()).hexdigest()[:24]
    got = _BUILT.get(key)
    if got is not None and os.path.exists(got):
        return got
    root = TB.cache_dir()
    if root is not None:
        exe = os.path.join(root, key, "sim")
        if os.path.exists(exe):
            os.utime(os.path.dirname(exe))
            _BUILT[key] = exe
            return exe
    d = os.path.join(TB._workdir(), key)
    os.makedirs(d, exist_ok=True)
    Path(d, "main.cpp").write_text(cpp)
    for p in SOURCES:
        shutil.copy(p, d)
    r = subprocess.run(
        [
            "verilator",
            *VERILATOR_FLAGS,
            *params,
            "--top-module",
            u.module,
            "-o",
            "sim",
            "main.cpp",
            *(p.name for p in SOURCES),
        ],
        capture_output=True,
        text=True,
        cwd=d,
        timeout=TB.TIMEOUT_S,
    )
    built = os.path.join(d, "obj_dir", "sim")
    if r.returncode != 0 or not os.path.exists(built):
        raise SimError(f"verilator failed for {u.name}:\n{r.stderr[-4000:]}\n{r.stdout[-2000:]}")
    exe = TB.publish_build(key, built)
    _BUILT[key] = exe
    return exe


def simulate(u: Unit, ops: list[np.ndarray], stats: dict | None = None) -> list[np.ndarray]:
    """Run the operand arrays ``ops`` (one ``uint64`` array per input port, equal lengths)
    through ``u`` in verilator; one ``uint64`` array per output port, in order. ``stats``,
    if given, receives ``build_s``, ``run_s`` and ``cycles``."""
    n = len(ops[0])
    t0 = time.perf_counter()
    exe = build(u)
    t1 = time.perf_counter()
    tmp = tempfile.mkdtemp(dir=TB._workdir())
    try:
        fin, fout = os.path.join(tmp, "in.bin"), os.path.join(tmp, "out.bin")
        np.stack([np.asarray(a, dtype=np.uint64) for a in ops], axis=1).astype("<u8").tofile(fin)
        r = subprocess.run([exe, fin, fout], capture_output=True, text=True, timeout=TB.TIMEOUT_S)
        t2 = time.perf_counter()
        if r.returncode != 0:
            raise SimError(f"{u.name}: the verilated driver failed ({r.returncode}):\n{r.stderr}")
        head = r.stdout.split()
        if len(head) != 4 or head[0] != "END":
            raise SimError(f"{u.name}: truncated simulation output {r.stdout!r}")
        nout, bad, cyc = (int(x) for x in head[1:])
        if nout != n:
            raise SimError(f"{u.name}: {nout} results for {n} vectors")
        if bad:
            raise SimError(f"{u.name}: valid_out off the {u.latency}-cycle latency {bad} times")
        res = np.fromfile(fout, dtype="<u8").reshape(n, len(u.outputs))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if stats is not None:
        stats.update(build_s=t1 - t0, run_s=t2 - t1, cycles=cyc)
    return [res[:, k].copy() for k in range(len(u.outputs))]


# --- operands ---------------------------------------------------------------------------------

U64 = np.uint64


def _u(x) -> np.ndarray:
    return np.asarray(x).astype(np.uint64)


class _Gen:
    """Vectorised operand shapes for one format."""

    def __init__(self, f: Fmt, rng: np.random.Generator):
        self.f, self.rng = f, rng
        self.fmask = U64((1 << f.mw) - 1)
        self.emask = U64(f.emax_field)

    def bits(self, n: int, w: int | None = None) -> np.ndarray:
        w = self.f.bits if w is None else w
        x = self.rng.integers(0, 1 << 63, n, dtype=np.uint64, endpoint=True)
        x = x ^ (self.rng.integers(0, 2, n, dtype=np.uint64) << U64(63))
        return x if w == 64 else x & U64((1 << w) - 1)

    def sign(self, n: int) -> np.ndarray:
        return self.rng.integers(0, 2, n, dtype=np.uint64) << U64(self.f.bits - 1)

    def exp_of(self, x: np.ndarray) -> np.ndarray:
        return ((x >> U64(self.f.mw)) & self.emask).astype(np.int64)

    def with_exp(self, x: np.ndarray, e) -> np.ndarray:
        e = np.clip(np.asarray(e, dtype=np.int64), 0, self.f.emax_field - 1).astype(np.uint64)
        return (x & ~(self.emask << U64(self.f.mw))) | (e << U64(self.f.mw))

    def frac(self, n: int) -> np.ndarray:
        """Fractions: random, or with few significant bits (exact and halfway cases), or
        all ones / one bit at either end."""
        f, rng = self.f, self.rng
        fr = self.bits(n, f.mw)
        k = rng.integers(0, 5, n)
        low = rng.integers(0, f.mw + 1, n).astype(np.uint64)
        few = fr & ~((U64(1) << low) - U64(1)) if f.mw < 64 else fr
        fr = np.where(k == 1, few, fr)
        fr = np.where(k == 2, self.fmask ^ (self.bits(n, 2)), fr)
        fr = np.where(k == 3, self.bits(n, 2), fr)
        return fr

    def edge_float(self, n: int) -> np.ndarray:
        """A float with an exponent at an edge (subnormal, first normals, around 1, the
        top binades) or anywhere, with a shaped fraction."""
        f, rng = self.f, self.rng
        edges = np.array(
            [0, 0, 1, 2, f.bias - 1, f.bias, f.bias + 1, f.emax_field - 2, f.emax_field - 1],
            dtype=np.int64,
        )
        e = np.where(
            rng.random(n) < 0.6,
            edges[rng.integers(0, len(edges), n)],
            rng.integers(0, f.emax_field, n),
        )
        return self.sign(n) | (e.astype(np.uint64) << U64(f.mw)) | self.frac(n)

    def any_float(self, n: int) -> np.ndarray:
        """Half raw bit patterns (NaNs and infinities among them), half edge floats."""
        return np.where(self.rng.random(n) < 0.5, self.bits(n), self.edge_float(n))

    def ulps(self, x: np.ndarray, k: int = 3) -> np.ndarray:
        """x moved by a few units in the last place (within its sign; may reach inf/NaN
        encodings, which are operands too)."""
        d = self.rng.integers(-k, k + 1, len(x))
        mag = x & U64((1 << (self.f.bits - 1)) - 1)
        mag = np.clip(mag.astype(np.int64) + d, 0, self.f.inf).astype(np.uint64)
        return (x & U64(self.f.sign_bit)) | mag

    def mix(self, choices: list[np.ndarray]) -> np.ndarray:
        pick = self.rng.integers(0, len(choices), len(choices[0]))
        return np.choose(pick, choices)


def _np_types(f: Fmt):
    return (np.float32, np.uint32) if f.bits == 32 else (np.float64, np.uint64)


def as_float(f: Fmt, x: np.ndarray) -> np.ndarray:
    ft, ut = _np_types(f)
    return np.asarray(x, dtype=np.uint64).astype(ut).view(ft)


def as_bits(f: Fmt, y: np.ndarray) -> np.ndarray:
    """Float array → uint64 bits with every NaN the canonical NaN."""
    ft, ut = _np_types(f)
    y = np.asarray(y, dtype=ft)
    b = y.view(ut).astype(np.uint64)
    return np.where(np.isnan(y), U64(f.cnan), b)


def _boundary(u: Unit, g: _Gen, n: int) -> list[np.ndarray]:
    """``n`` operand vectors of ``u`` near boundaries."""
    f, rng, k = g.f, g.rng, u.kind
    if k in ("add", "cmp", "minmax"):
        a = g.any_float(n)
        # cancellation (b ≈ ±a), equal magnitudes (zeros of both signs), alignment around
        # MW (the sticky bit), results near overflow (two large operands)
        near = g.with_exp(g.bits(n), g.exp_of(a) + rng.choice([-2, -1, 0, 0, 1, 2], n))
        near = (near & ~U64(f.sign_bit)) | g.sign(n)
        align = g.with_exp(
            g.any_float(n), g.exp_of(a) - rng.choice([f.mw, f.mw + 1, f.mw + 2, f.mw + 3], n)
        )
        flip = g.ulps(a) ^ (g.sign(n))
        big = g.with_exp(g.edge_float(n), f.emax_field - 1 - rng.integers(0, 2, n))
        b = g.mix([near, align, flip, a ^ U64(f.sign_bit), big, g.any_float(n)])
        a = np.where(rng.random(n) < 0.15, g.with_exp(a, f.emax_field - 1), a)
        if k == "cmp":
            return [a, b]
        return [a, b, rng.integers(0, 2, n, dtype=np.uint64)]
    if k in ("mul", "div", "fma"):
        a = g.any_float(n)
        b = g.any_float(n)
        # exponents that put the result at an edge: overflow, the smallest normals, the
        # subnormals, below half the smallest subnormal
        target = rng.choice(
            np.array([f.emax_field, f.emax_field - 1, 1, 0, -1, -f.mw, -f.mw - 1, -f.mw - 2]), n
        ) + rng.integers(-1, 2, n)
        ea = g.exp_of(a)
        eb = target - ea + f.bias if k != "div" else ea - target + f.bias
        b = np.where(rng.random(n) < 0.6, g.with_exp(b, eb), b)
        if k == "mul" or k == "fma":
            # few-bit significands whose product has MW+2..MW+3 bits: exact ties
            ka = rng.integers(1, f.mw + 1, n).astype(np.uint64)
            kb = (U64(f.mw + 2) - ka + rng.integers(0, 2, n).astype(np.uint64)).clip(0, f.mw)
            ta = g.bits(n, f.mw) & ~((U64(1) << (U64(f.mw) - ka)) - U64(1))
            tb = g.bits(n, f.mw) & ~((U64(1) << (U64(f.mw) - kb)) - U64(1))
            tie = rng.random(n) < 0.3
            a = np.where(tie, (a & ~g.fmask) | ta, a)
            b = np.where(tie, (b & ~g.fmask) | tb, b)
        if k != "fma":
            return [a, b]
        # c: the negated rounded product a few ulps away (massive cancellation), a product
        # tiny against c or c tiny against the product (sticky), or anything
        with np.errstate(all="ignore"):
            p = as_bits(f, as_float(f, a) * as_float(f, b))
        canc = g.ulps(p ^ U64(f.sign_bit), 4)
        pe = g.exp_of(p)
        far = g.with_exp(g.any_float(n), pe + rng.choice([-f.mw - 3, -2 * f.mw, f.mw + 3], n))
        close = g.with_exp(g.any_float(n), pe + rng.integers(-3, 4, n))
        c = g.mix([canc, canc, far, close, g.any_float(n)])
        return [a, b, c]
    if k == "sqrt":
        # exact squares and their neighbours, edge exponents, few negatives
        x = g.any_float(n)
        r = g.edge_float(n) & ~U64(f.sign_bit)
        r = (r & ~g.fmask) | (r & g.fmask & ~((U64(1) << U64(f.mw // 2 + 1)) - U64(1)))
        with np.errstate(all="ignore"):
            sq = as_bits(f, as_float(f, r) * as_float(f, r))
        x = g.mix([x & ~U64(f.sign_bit), sq, g.ulps(sq, 2), g.edge_float(n) & ~U64(f.sign_bit)])
        x = np.where(rng.random(n) < 0.05, x | U64(f.sign_bit), x)
        return [x]
    if k == "f2i":
        iw = u.int_width
        # near integers and half-integers, near the saturation edges 2^(iw-1), 2^iw
        e = rng.choice(
            np.array([-2, -1, 0, 1, 2, 10, 23, 24, 30, 31, 32, 52, 53, 62, 63, 64, iw - 1, iw]),
            n,
        )
        e = np.where(rng.random(n) < 0.2, rng.integers(-5, 70, n), e)
        ef = np.clip(e + f.bias, 1, f.emax_field - 1).astype(np.uint64)
        fr = g.mix(
            [
                np.zeros(n, np.uint64),
                np.full(n, g.fmask, np.uint64),
                g.frac(n),
                g.bits(n, 2),
                (U64(1) << U64(f.mw - 1)) | g.bits(n, 1),
            ]
        )
        x = g.sign(n) | (ef << U64(f.mw)) | fr
        return [g.mix([x, g.ulps(x), g.ulps(x, 1)])]
    if k == "i2f":
        iw = u.int_width
        m = (1 << iw) - 1
        # a random bit length with the low bits shaped for ties below the precision,
        # around 2^24, 2^53, 2^(iw-1), 2^iw
        length = rng.integers(1, iw + 1, n).astype(np.uint64)
        v = g.bits(n, iw) >> (U64(iw) - length)
        t = rng.integers(1, min(iw, 45), n).astype(np.uint64)
        tie = (v >> t << t) | ((U64(1) << (t - U64(1))) * g.bits(n, 1))
        v = np.where(rng.random(n) < 0.5, tie, v)
        edges = np.array(
            [0, 1, 1 << 24, 1 << 53, 1 << (iw - 1), 1 << (iw - 2), m, 1 << (iw - 8)],
            dtype=np.uint64,
        )
        near = edges[rng.integers(0, len(edges), n)] + rng.integers(-4, 5, n).astype(np.uint64)
        v = np.where(rng.random(n) < 0.3, near, v)
        neg = (U64(0) - v) if iw == 64 else (U64(1 << iw) - v)
        v = np.where(rng.random(n) < 0.4, neg, v)
        return [v & U64(m)]
    if k == "cvt":
        fo = u.out_fmt
        assert fo is not None
        x = g.any_float(n)
        if fo.bits < f.bits:
            # around the narrow format's overflow threshold and subnormal range, and ties
            # at its precision
            e = rng.choice(
                np.array(
                    [
                        fo.emax_field - fo.bias,
                        fo.emax_field - fo.bias - 1,
                        1 - fo.bias,
                        -fo.bias,
                        -fo.bias - fo.mw // 2,
                        1 - fo.bias - fo.mw,
                        -fo.bias - fo.mw,
                        -fo.bias - fo.mw - 1,
                        0,
                    ]
                ),
                n,
            )
            drop = f.mw - fo.mw
            half = U64(1 << (drop - 1))
            fr = g.bits(n, f.mw)
            fr = g.mix(
                [
                    fr,
                    (fr & ~U64((1 << drop) - 1)) | half,
                    (fr & ~U64((1 << drop) - 1)) | (half - U64(1)),
                    (fr & ~U64((1 << drop) - 1)) | (half + U64(1)),
                    g.fmask ^ g.bits(n, 2),
                ]
            )
            y = (
                g.sign(n)
                | (np.clip(e + f.bias, 0, f.emax_field - 1).astype(np.uint64) << U64(f.mw))
                | fr
            )
            x = np.where(rng.random(n) < 0.8, y, x)
        return [x]
    raise ValueError(k)


def vectors(u: Unit, count: int, seed: int) -> list[np.ndarray]:
    """``count`` operand vectors of ``u`` (one uint64 array per input port): the first half
    uniformly random bit patterns, the second half near boundaries."""
    rng = np.random.default_rng([seed, *u.name.encode()])
    g = _Gen(u.fmt, rng)
    h = count // 2
    uni: list[np.ndarray] = []
    for _, w in u.inputs:
        iw = w if u.kind != "i2f" else u.int_width
        uni.append(g.bits(h, iw))
    bnd = _boundary(u, g, count - h)
    return [np.concatenate([a, b]).astype(np.uint64) for a, b in zip(uni, bnd, strict=True)]


# --- the numpy reference ----------------------------------------------------------------------


def _fma32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """binary32 fma, correctly rounded: the binary64 product is exact, p + c is s + t
    exactly (TwoSum), s rounded to odd (a sticky bit for t) then once to binary32."""
    a64, b64, c64 = a.astype(np.float64), b.astype(np.float64), c.astype(np.float64)
    p = a64 * b64
    s = p + c64
    bp = s - c64
    t = (p - bp) + (c64 - (s - bp))
    sb = s.view(np.uint64)
    fin = np.isfinite(s) & np.isfinite(t)
    odd = fin & (t != 0) & ((sb & U64(1)) == 0)
    # the exact value lies between s and its neighbour toward t: the odd one of the two
    toward = np.where((t > 0) == (s > 0), sb + U64(1), sb - U64(1))
    s = np.where(odd, toward.view(np.float64), s)
    return s.astype(np.float32)


def numpy_reference(u: Unit, ops: list[np.ndarray]) -> list[np.ndarray]:
    """The expected result bits of ``u`` for ``ops``, with numpy (binary64 fma: float_ref)."""
    f, k = u.fmt, u.kind
    with np.errstate(all="ignore"):
        if k == "add":
            a, b = as_float(f, ops[0]), as_float(f, ops[1])
            return [as_bits(f, np.where(ops[2] != 0, a - b, a + b))]
        if k == "mul":
            return [as_bits(f, as_float(f, ops[0]) * as_float(f, ops[1]))]
        if k == "div":
            return [as_bits(f, as_float(f, ops[0]) / as_float(f, ops[1]))]
        if k == "sqrt":
            return [as_bits(f, np.sqrt(as_float(f, ops[0])))]
        if k == "fma":
            if f.bits == 32:
                a, b, c = (as_float(f, x) for x in ops)
                return [as_bits(f, _fma32(a, b, c))]
            return [
                np.array(
                    [R.fma(f, int(x), int(y), int(z)) for x, y, z in zip(*ops, strict=True)],
                    dtype=np.uint64,
                )
            ]
        if k == "cmp":
            a, b = as_float(f, ops[0]), as_float(f, ops[1])
            un = np.isnan(a) | np.isnan(b)
            return [_u(a == b), _u(a < b), _u(a <= b), _u(un)]
        if k == "minmax":
            a, b = as_float(f, ops[0]), as_float(f, ops[1])
            # -0 < +0: compare (value, sign) lexicographically
            sa = (ops[0] >> U64(f.bits - 1)) != 0
            sb = (ops[1] >> U64(f.bits - 1)) != 0
            lt = (a < b) | ((a == b) & sa & ~sb)
            y = np.where(ops[2] != 0, np.where(lt, ops[1], ops[0]), np.where(lt, ops[0], ops[1]))
            nan = np.isnan(a) | np.isnan(b)
            return [np.where(nan, U64(f.cnan), y)]
        if k == "cvt":
            fo = u.out_fmt
            assert fo is not None
            return [as_bits(fo, as_float(f, ops[0]).astype(_np_types(fo)[0]))]
        if k == "f2i":
            iw, signed = u.int_width, u.int_signed
            x = as_float(f, ops[0]).astype(np.float64)
            lo, hi = R.int_range(iw, signed)
            t = np.trunc(x)
            big = t >= float(hi) + 1  # 2^(iw-1) or 2^iw: exact in binary64
            small = t < float(lo)
            nan = np.isnan(x)
            safe = np.where(big | small | nan, 0.0, t)
            hi_part = safe >= 2.0**63
            v = np.where(
                hi_part,
                (safe - 2.0**63).astype(np.int64).view(np.uint64) + U64(1 << 63),
                safe.astype(np.int64).view(np.uint64),
            )
            v = np.where(big, U64(hi & ((1 << 64) - 1)), v)
            v = np.where(small, U64(lo & ((1 << 64) - 1)), v)
            v = np.where(nan, U64(0), v)
            return [v & U64((1 << iw) - 1)]
        if k == "i2f":
            iw, signed = u.int_width, u.int_signed
            ft = _np_types(f)[0]
            v = ops[0]
            if signed:
                src = v.astype(np.uint32).view(np.int32) if iw == 32 else v.view(np.int64)
            else:
                src = v.astype(np.uint32) if iw == 32 else v
            return [as_bits(f, src.astype(ft))]
    raise ValueError(k)


def float_ref_reference(u: Unit, ops: list[np.ndarray]) -> list[np.ndarray]:
    """The expected bits from ``float_ref`` (exact Python integers), vector by vector."""
    rows = [u.ref(*(int(x) for x in v)) for v in zip(*ops, strict=True)]
    return [np.array([r[k] for r in rows], dtype=np.uint64) for k in range(len(u.outputs))]


# --- an independent Fraction reference for fma, div, sqrt --------------------------------------


def _frac(f: Fmt, x: int) -> Fraction:
    s, n, e = R.decode(f, x)
    v = Fraction(n) * Fraction(2) ** e
    return -v if s else v


def round_fraction(f: Fmt, v: Fraction, neg_zero: bool = False) -> int:
    """The nonzero-or-zero rational ``v`` rounded to nearest even in ``f`` (overflow to
    ±inf): a direct search over the float grid, independent of ``float_ref.round_scaled``."""
    if v == 0:
        return f.sign_bit if neg_zero else 0
    s = int(v < 0)
    m = abs(v)
    # the quantum of m's binade (at least the subnormal quantum)
    e = m.numerator.bit_length() - m.denominator.bit_length()
    while Fraction(2) ** e > m:
        e -= 1
    while Fraction(2) ** (e + 1) <= m:
        e += 1
    q = max(e - f.mw, 1 - f.bias - f.mw)
    scaled = m / Fraction(2) ** q
    k = scaled.numerator // scaled.denominator
    rest = scaled - k
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and k % 2 == 1):
        k += 1
    # k * 2^q: encode
    while k >= (1 << (f.mw + 1)):
        k >>= 1  # only after a carry: k == 2^(mw+1), exact
        q += 1
    if k >= (1 << f.mw):
        ef = q + f.mw + f.bias
        if ef >= f.emax_field:
            return (s << (f.bits - 1)) | f.inf
        return (s << (f.bits - 1)) | (ef << f.mw) | (k - (1 << f.mw))
    return (s << (f.bits - 1)) | k


def fraction_reference(u: Unit, v: tuple[int, ...]) -> int | None:
    """fma, div or sqrt of one finite operand vector by Fractions; None where an operand
    is NaN or infinite (or div by zero), left to the special-value tests."""
    f = u.fmt
    if any(R.is_nan(f, x) or R.is_inf(f, x) for x in v):
        return None
    if u.kind == "fma":
        a, b, c = v
        exact = _frac(f, a) * _frac(f, b) + _frac(f, c)
        if exact == 0:  # +0 unless the product and c are both -0 (zero product)
            prod_neg = R.sign(f, a) ^ R.sign(f, b)
            both = prod_neg and R.sign(f, c) and R.is_zero(f, c) and _frac(f, a) * _frac(f, b) == 0
            return round_fraction(f, exact, bool(both))
        return round_fraction(f, exact)
    if u.kind == "div":
        a, b = v
        if R.is_zero(f, b):
            return None
        q = _frac(f, a) / _frac(f, b)
        return round_fraction(f, q, bool(R.sign(f, a) ^ R.sign(f, b)))
    if u.kind == "sqrt":
        (a,) = v
        if R.sign(f, a) and not R.is_zero(f, a):
            return None
        if R.is_zero(f, a):
            return a
        x = _frac(f, a)
        # floor(sqrt(x) * 2^k) for k large: sqrt(x) lies in [r, r+1) * 2^-k; r + 1/2
        # rounds the same as sqrt(x) (r has far more bits than the format: no rounding
        # boundary strictly inside (r, r+1), and r + 1 itself is never reached)
        k = 2 * (f.mw + 8) - (x.numerator.bit_length() - x.denominator.bit_length()) // 2
        scaled = x * Fraction(4) ** k
        n = scaled.numerator // scaled.denominator
        r = _isqrt(n)
        exact = r * r == n and scaled.denominator == 1
        val = Fraction(r) if exact else Fraction(2 * r + 1, 2)
        return round_fraction(f, val / Fraction(2) ** k)
    raise ValueError(u.kind)


def _isqrt(n: int) -> int:
    import math

    return math.isqrt(n)
