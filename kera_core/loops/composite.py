"""The composites, expanded once into primitives exactly as docs/semantics.md defines them.

* §6 elementary functions (`exp`, `log`, `tanh`, `sigmoid`) as straight-line step lists on
  one scalar: the binary64 step lists of :mod:`kera_core.interp.mathfns` and the correctly
  rounded binary32 ones of :mod:`kera_core.interp.expolog32`, both run through
  :class:`EmitOps` (the interpreter runs the same code on numpy arrays); §6.8's exact
  functions (`floor`, `ceil`, `trunc`, `round`, `round_half_away`, `copysign`) from
  `roundeven`, compares, selects and the sign bit; §6.9's `exp2`, `log2`, `expm1`,
  `log1p`, `hypot`, `sin`, `cos`, `tan`, `atan2`, `pow`, `erf`, `erfc`: the step lists of
  :mod:`kera_core.interp.elementary`, run through :class:`EmitOps`;
* §7 reductions: the canonical sum (tiles of 1024, 16 lanes, the lane tree, the
  left-complete tile tree), `max`/`min`, `argmax`, `dot`, `mean`;
* §8 `matmul` (k in increasing order), `conv1d`, `softmax`, `layernorm`.

Each function takes an :class:`Emitter` and operands and appends code; element sources are
given as ``get(i) -> operand`` callbacks, so a reduction over a product (`dot`) or a
difference (`layernorm`) reads its elements without materialising them.
"""

from __future__ import annotations

from collections.abc import Callable

from kera_core.interp import elementary, expolog32, mathfns
from kera_core.interp.reduce import LANES, TILE
from kera_core.loops.emit import Emitter, imm
from kera_core.loops.ir import BITS, Check, If, Imm, Operand, Var, While, is_signed

_FMT = {
    # name: (int type of the same width, unsigned type, mantissa bits, bias, canonical NaN)
    "f32": ("i32", "u32", 23, 127, 0x7FC00000),
    "f64": ("i64", "u64", 52, 1023, 0x7FF8000000000000),
}

Get = Callable[[Operand], Operand]


def fbits(t: str, bits: int) -> Imm:
    return Imm(t, bits)


def fconst(t: str, x: float) -> Imm:
    return imm(t, x)


def nan(t: str) -> Imm:
    return Imm(t, _FMT[t][4])


def inf(t: str, negative: bool = False) -> Imm:
    return Imm(
        t,
        (0xFF800000 if negative else 0x7F800000)
        if t == "f32"
        else (0xFFF0000000000000 if negative else 0x7FF0000000000000),
    )


# --- §6.2-§6.5 ------------------------------------------------------------------------------


def exp(e: Emitter, x: Operand, t: str) -> Var:
    if t == "f32":
        return expolog32.exp(EmitOps(e), x)
    return mathfns.exp_steps(EmitOps(e), x)


def log(e: Emitter, x: Operand, t: str) -> Var:
    if t == "f32":
        return expolog32.log(EmitOps(e), x)
    return mathfns.log_steps(EmitOps(e), x)


def tanh(e: Emitter, x: Operand, t: str) -> Var:
    if t == "f32":
        return expolog32.tanh(EmitOps(e), x)
    return mathfns.tanh_steps(EmitOps(e), x)


def sigmoid(e: Emitter, x: Operand, t: str) -> Var:
    if t == "f32":
        return expolog32.sigmoid(EmitOps(e), x)
    return mathfns.sigmoid_steps(EmitOps(e), x)


UNARY = {"exp": exp, "log": log, "tanh": tanh, "sigmoid": sigmoid}


# --- §6.8 the exact functions ---------------------------------------------------------------


def _sign_mask(t: str) -> Imm:
    return imm(_FMT[t][1], 1 << (BITS[t] - 1))


def _with_sign_of(e: Emitter, m: Operand, x: Operand, t: str) -> Var:
    """m's magnitude with x's sign bit: float((bits(m) & ~SIGN) | (bits(x) & SIGN))."""
    ut = _FMT[t][1]
    sign = _sign_mask(t)
    mag = e.op("and", e.op("bitcast", m, to=ut), imm(ut, (1 << BITS[t]) - 1 - sign.bits))
    s = e.op("and", e.op("bitcast", x, to=ut), sign)
    return e.op("bitcast", e.op("or", mag, s), to=t)


def _nan_out(e: Emitter, x: Operand, out: Operand, t: str) -> Var:
    return e.op("select", e.op("ne", x, x), nan(t), out)


def floor(e: Emitter, x: Operand, t: str) -> Var:
    """r = roundeven(x); r > x ? r − 1 : r (r − 1 is exact: r > x only below 2^p)."""
    r = e.op("roundeven", x)
    out = e.op("select", e.op("gt", r, x), e.op("sub", r, fconst(t, 1.0)), r)
    return _nan_out(e, x, out, t)


def ceil(e: Emitter, x: Operand, t: str) -> Var:
    """r = roundeven(x); r < x ? r + 1 : r, with x's sign bit (ceil(−0.7) = −0)."""
    r = e.op("roundeven", x)
    c = e.op("select", e.op("lt", r, x), e.op("add", r, fconst(t, 1.0)), r)
    return _nan_out(e, x, _with_sign_of(e, c, x, t), t)


def trunc(e: Emitter, x: Operand, t: str) -> Var:
    """floor(|x|) with x's sign bit."""
    a = e.op("abs", x)
    r = e.op("roundeven", a)
    m = e.op("select", e.op("gt", r, a), e.op("sub", r, fconst(t, 1.0)), r)
    return _nan_out(e, x, _with_sign_of(e, m, x, t), t)


def round_even(e: Emitter, x: Operand, t: str) -> Var:
    """roundeven(x) (the sign of zero kept: roundeven(−0.5) = −0)."""
    return _nan_out(e, x, e.op("roundeven", x), t)


def round_half_away(e: Emitter, x: Operand, t: str) -> Var:
    """r = roundeven(|x|); a tie rounded down (|x| − r = 0.5, exact) goes up: r + 1; x's
    sign bit."""
    a = e.op("abs", x)
    r = e.op("roundeven", a)
    tie_down = e.op("eq", e.op("sub", a, r), fconst(t, 0.5))
    m = e.op("select", tie_down, e.op("add", r, fconst(t, 1.0)), r)
    return _nan_out(e, x, _with_sign_of(e, m, x, t), t)


def copysign(e: Emitter, x: Operand, y: Operand, t: str) -> Var:
    """x's magnitude with y's sign bit; a NaN y counts as positive; NaN x: NaN."""
    ut = _FMT[t][1]
    sign = _sign_mask(t)
    s = e.op("and", e.op("bitcast", y, to=ut), sign)
    s = e.op("select", e.op("ne", y, y), imm(ut, 0), s)
    mag = e.op("and", e.op("bitcast", x, to=ut), imm(ut, (1 << BITS[t]) - 1 - sign.bits))
    return _nan_out(e, x, e.op("bitcast", e.op("or", mag, s), to=t), t)


EXACT_UNARY = {
    "floor": floor,
    "ceil": ceil,
    "trunc": trunc,
    "round": round_even,
    "round_half_away": round_half_away,
}


# --- §6.9 the elementary functions: interp/elementary.py's step lists, emitted -----------------


class EmitOps:
    """kera_core.interp.elementary's interface of primitives, appending loop primitives (the
    interpreter runs the same step lists through ``elementary.NumpyOps``)."""

    def __init__(self, e: Emitter) -> None:
        self.e = e

    @staticmethod
    def c(v, t: str = "f64") -> Imm:
        return imm(t, v)

    def _op(name: str):  # noqa: N805 - builds the methods below
        def f(self, *args):
            return self.e.op(name, *args)

        return f

    add, sub, mul, div, sqrt = _op("add"), _op("sub"), _op("mul"), _op("div"), _op("sqrt")
    abs, neg, roundeven = _op("abs"), _op("neg"), _op("roundeven")
    lt, le, gt, ge, eq, ne = _op("lt"), _op("le"), _op("gt"), _op("ge"), _op("eq"), _op("ne")
    and_, or_, xor, not_ = _op("and"), _op("or"), _op("xor"), _op("not")
    select = _op("select")
    del _op

    def shl(self, a: Operand, n: int | Operand) -> Var:
        return self.e.op("shl", a, imm(a.type, n) if isinstance(n, int) else n)

    def shr(self, a: Operand, n: int | Operand) -> Var:
        return self.e.op("shr", a, imm(a.type, n) if isinstance(n, int) else n)

    def bitcast(self, a: Operand, to: str) -> Var:
        return self.e.op("bitcast", a, to=to)

    def convert(self, a: Operand, to: str) -> Var:
        return self.e.op("convert", a, to=to)


def _elementary_unary(name: str):
    def emit(e: Emitter, x: Operand, t: str) -> Operand:
        return elementary.UNARY[name](EmitOps(e), x, t)

    return emit


def _elementary_binary(name: str):
    def emit(e: Emitter, x: Operand, y: Operand, t: str) -> Operand:
        return elementary.BINARY[name](EmitOps(e), x, y, t)

    return emit


ELEMENTARY_UNARY = {n: _elementary_unary(n) for n in elementary.UNARY}
ELEMENTARY_BINARY = {n: _elementary_binary(n) for n in elementary.BINARY}


# --- §7 reductions --------------------------------------------------------------------------


def canonical_sum(e: Emitter, n: Operand, get: Get, t: str) -> Var:
    """The canonical sum (§7.1) of the n elements get(0), …, get(n-1) of float type t, in
    the shape the target asks for (loops/target.py)."""
    if e.target.many_threads:
        return _canonical_sum_grid(e, n, get, t)
    return _canonical_sum_streaming(e, n, get, t)


TREE_LEVELS = 4  # the grid shape's level tree: levels combined per parallel pass


def _level_tree(e: Emitter, vals, m: Operand, combine) -> None:
    """Combine vals[0..m) in place by the left-complete tree of §7.1, level by level:
    at distance d = 1, 2, 4, … each vals[2d·k] takes combine(vals[2d·k], vals[2d·k + d])
    where that partner exists. (Every node of the left-complete tree covers an aligned run
    [2^l·k, min(2^l·(k+1), m)); pairing aligned runs level by level, an odd last run carried
    up unchanged, builds exactly those nodes.) The result is vals[0].

    One parallel loop does TREE_LEVELS levels: iteration k owns the aligned run of
    2^TREE_LEVELS values at distance d starting at vals[k·2^TREE_LEVELS·d] and does those
    levels inside it in order — the same combines on the same operands as one pass per
    level (a level only pairs values inside one such run), with a barrier every
    TREE_LEVELS levels instead of every level (17 levels at 10⁸ elements: 5 passes). 64
    levels cover any m < 2^63; a pass past m does nothing."""
    dist = e.var("i64", "dist")
    e.assign(dist, imm("i64", 1))
    runs = 1 << TREE_LEVELS
    with e.loop(imm("i64", 0), imm("i64", 64 // TREE_LEVELS), name="level"):
        with e.block() as then:
            span = e.op("mul", dist, imm("i64", runs))
            groups = e.op("div", e.op("add", m, e.op("sub", span, imm("i64", 1))), span)
            with e.loop(imm("i64", 0), groups, mark="parallel", name="run") as k:
                first = e.op("mul", k, span)
                for level in range(TREE_LEVELS):
                    step = 1 << level  # the distance inside the run, in units of dist
                    d = e.op("mul", dist, imm("i64", step))
                    for i in range(runs // (2 * step)):
                        a = (
                            first
                            if i == 0
                            else e.op("add", first, e.op("mul", dist, imm("i64", 2 * step * i)))
                        )
                        b = e.op("add", a, d)
                        with e.block() as has_partner:
                            e.store(vals, a, combine(e.load(vals, a), e.load(vals, b)))
                        e.emit(If(e.op("lt", b, m), has_partner, []))
            e.assign(dist, span)
        e.emit(If(e.op("lt", dist, m), then, []))


GROUPS_AHEAD = 8  # the grid shape's lane pass: groups read ahead of their adds


def _canonical_sum_grid(e: Emitter, n: Operand, get: Get, t: str) -> Var:
    """§7.1 for many threads: lane totals, tile totals, then the tile tree, each pass one
    ``parallel`` loop (the tree one per level) over a buffer; the same bits as the stream."""
    return _grid_reduce(e, n, get, t, "add", fconst(t, 0.0))


def _grid_reduce(e: Emitter, n: Operand, get: Get, t: str, op: str, start: Imm) -> Var:
    """The grid shape of a reduction by ``op`` laid out as §7.1's sum: lane j of tile q
    combines ``start`` with elements base + 16·g + j in order of g, then (j < rest) the
    partial group's element (one parallel iteration per lane: a warp reads two tiles'
    groups as two contiguous runs); one parallel iteration per tile combines its 16 lanes
    by the lane tree; the level tree combines the tiles. With ``add`` and +0 this is the
    canonical sum; `maximum`/`minimum` with their identity give max/min (any order is
    exact for those). ``start`` is also the result of no elements."""
    from kera_core.loops.ir import Alloc, Free

    tiles = e.op("div", e.op("add", n, imm("i64", TILE - 1)), imm("i64", TILE))
    slots = e.op("mul", tiles, imm("i64", LANES))
    lanes = e.buf(t, slots, name="lanes")
    e.emit(Alloc(lanes))
    with e.loop(imm("i64", 0), slots, mark="parallel", name="lane") as q:
        ti = e.op("div", q, imm("i64", LANES))
        j = e.op("sub", q, e.op("mul", ti, imm("i64", LANES)))
        base = e.op("mul", ti, imm("i64", TILE))
        end = e.op("minimum", e.op("add", base, imm("i64", TILE)), n)
        full = e.op("div", e.op("sub", end, base), imm("i64", LANES))
        lane = e.var(t, "lane")
        e.assign(lane, start)
        # GROUPS_AHEAD groups' elements are read before they are combined (in order of g,
        # as ever): a thread keeps that many loads in flight instead of one
        ahead = imm("i64", GROUPS_AHEAD)
        blocks = e.op("div", full, ahead)
        with e.loop(imm("i64", 0), blocks, name="g8") as g8:
            first = e.op("add", base, e.op("mul", g8, imm("i64", GROUPS_AHEAD * LANES)))
            at = e.op("add", first, j)
            xs = [get(e.add_i(at, imm("i64", u * LANES))) for u in range(GROUPS_AHEAD)]
            for x in xs:
                e.op(op, lane, x, into=lane)
        with e.loop(e.op("mul", blocks, ahead), full, name="g") as g:
            at = e.op("add", base, e.op("mul", g, imm("i64", LANES)))
            e.op(op, lane, get(e.op("add", at, j)), into=lane)
        tail = e.op("add", e.op("add", base, e.op("mul", full, imm("i64", LANES))), j)
        with e.block() as one_more:
            e.op(op, lane, get(tail), into=lane)
        e.emit(If(e.op("lt", tail, end), one_more, []))
        e.store(lanes, q, lane)
    totals = e.buf(t, tiles, name="tiles")
    e.emit(Alloc(totals))
    with e.loop(imm("i64", 0), tiles, mark="parallel", name="tile") as ti:
        first = e.op("mul", ti, imm("i64", LANES))
        acc = [e.load(lanes, e.add_i(first, imm("i64", j))) for j in range(LANES)]
        width = LANES
        while width > 1:
            width //= 2
            acc = [e.op(op, acc[j], acc[j + width]) for j in range(width)]
        e.store(totals, ti, acc[0])
    e.emit(Free(lanes))
    _level_tree(e, totals, tiles, lambda a, b: e.op(op, a, b))
    total = e.var(t, "total")
    e.assign(total, start)
    with e.block() as some:
        e.assign(total, e.load(totals, imm("i64", 0)))
    e.emit(If(e.op("gt", tiles, imm("i64", 0)), some, []))
    e.emit(Free(totals))
    return total


def _canonical_sum_streaming(e: Emitter, n: Operand, get: Get, t: str) -> Var:
    """§7.1 in one pass: tiles summed as they come, the tile tree as a binary counter."""
    zero = fconst(t, 0.0)
    total = e.var(t, "sum")
    e.assign(total, zero)
    # the tile tree as a binary counter: a stack of (block size, block total), merged while
    # the two on top have equal sizes, then folded from the top (= the left-complete tree)
    depth = 64
    vals = e.buf(t, imm("i64", depth), name="tree")
    sizes = e.buf("i64", imm("i64", depth), name="sizes")
    from kera_core.loops.ir import Alloc, Free

    lanesum = e.buf(t, imm("i64", LANES), name="lanes")
    e.emit(Alloc(vals))
    e.emit(Alloc(sizes))
    e.emit(Alloc(lanesum))
    sp = e.var("i64", "sp")
    e.assign(sp, imm("i64", 0))
    tiles = e.op("div", e.op("add", n, imm("i64", TILE - 1)), imm("i64", TILE))
    with e.loop(imm("i64", 0), tiles, name="tile") as ti:
        base = e.op("mul", ti, imm("i64", TILE))
        end = e.op("minimum", e.op("add", base, imm("i64", TILE)), n)
        full = e.op("div", e.op("sub", end, base), imm("i64", LANES))
        # lane j adds elements base + 16·g + j in order of g; the lanes are independent (a
        # `lanes` loop: a backend runs them as vectors, each lane's chain kept in order)
        with e.loop(imm("i64", 0), imm("i64", LANES), mark="lanes", name="lane") as j:
            lane = e.var(t, "lane")
            e.assign(lane, zero)
            with e.loop(imm("i64", 0), full, name="g") as g:
                at = e.op("add", base, e.op("mul", g, imm("i64", LANES)))
                e.op("add", lane, get(e.op("add", at, j)), into=lane)
            e.store(lanesum, j, lane)
        # the tile's last partial group: lanes 0 … rest-1 take one element more
        tail = e.op("add", base, e.op("mul", full, imm("i64", LANES)))
        with e.loop(imm("i64", 0), e.op("sub", end, tail), name="rest") as j:
            e.store(lanesum, j, e.op("add", e.load(lanesum, j), get(e.op("add", tail, j))))
        width = LANES
        acc = [e.load(lanesum, imm("i64", j)) for j in range(LANES)]
        while width > 1:
            width //= 2
            acc = [e.op("add", acc[j], acc[j + width]) for j in range(width)]
        e.store(vals, sp, acc[0])
        e.store(sizes, sp, imm("i64", 1))
        e.op("add", sp, imm("i64", 1), into=sp)
        # merge equal blocks on top
        with e.block() as cond:
            two = e.op("ge", sp, imm("i64", 2))
            a_at = e.op("sub", sp, imm("i64", 2))
            b_at = e.op("sub", sp, imm("i64", 1))
            # sizes are read only when two blocks exist (index 0 otherwise: harmless)
            sa = e.load(sizes, e.op("select", two, a_at, imm("i64", 0)))
            sb = e.load(sizes, e.op("select", two, b_at, imm("i64", 0)))
            test = e.op("and", two, e.op("eq", sa, sb))
        with e.block() as body:
            a_at2 = e.op("sub", sp, imm("i64", 2))
            b_at2 = e.op("sub", sp, imm("i64", 1))
            merged = e.op("add", e.load(vals, a_at2), e.load(vals, b_at2))
            e.store(vals, a_at2, merged)
            e.store(sizes, a_at2, e.op("add", e.load(sizes, a_at2), e.load(sizes, b_at2)))
            e.op("sub", sp, imm("i64", 1), into=sp)
        e.emit(While(cond, test, body))
    # fold the blocks from the top: S = B[k-1]; S = B[j] + S for j = k-2 … 0
    with e.block() as then:
        top = e.op("sub", sp, imm("i64", 1))
        e.assign(total, e.load(vals, top))
        with e.loop(imm("i64", 1), sp, name="fold") as j:
            at = e.op("sub", top, j)
            e.op("add", e.load(vals, at), total, into=total)
    e.emit(If(e.op("gt", sp, imm("i64", 0)), then, []))
    e.emit(Free(vals))
    e.emit(Free(sizes))
    e.emit(Free(lanesum))
    return total


def int_sum(e: Emitter, n: Operand, get: Get, t: str) -> Var:
    total = e.var(t, "sum")
    e.assign(total, imm(t, 0))
    with e.loop(imm("i64", 0), n, name="k") as k:
        e.op("add", total, get(k), into=total)
    return total


def total(e: Emitter, n: Operand, get: Get, t: str) -> Var:
    if t in _FMT:
        return canonical_sum(e, n, get, t)
    return int_sum(e, n, get, t)


def nonempty(e: Emitter, n: Operand, what: str, node: bytes | None) -> None:
    e.emit(Check(e.op("gt", n, imm("i64", 0)), "R0004", f"`{what}` of an empty tensor", node))


def mean(e: Emitter, n: Operand, get: Get, t: str, node: bytes | None) -> Var:
    if t in _FMT:
        s = canonical_sum(e, n, get, t)
        return e.op("div", s, e.op("convert", n, to=t))
    nonempty(e, n, "mean", node)
    s = int_sum(e, n, get, t)
    return e.op("div", s, e.op("convert", n, to=t))


def fold_extreme(e: Emitter, n: Operand, get: Get, t: str, which: str) -> Var:
    """max (which="maximum") or min of n >= 1 elements: NaN-propagating, -0 < +0 (so
    associative and commutative: every order, and every shape, gives the same bits)."""
    if e.target.many_threads:
        return _fold_extreme_grid(e, n, get, t, which)
    from kera_core.loops.ir import Alloc, Free

    acc = e.var(t, which[:3])
    # n >= 16: 16 lanes, lane j folding elements 16·g + j in order of g (a `lanes` loop:
    # vector code on a target with vectors), then the lanes and the last n mod 16 elements
    with e.block() as lanewise:
        part = e.buf(t, imm("i64", LANES), name="part")
        e.emit(Alloc(part))
        groups = e.op("div", n, imm("i64", LANES))
        with e.loop(imm("i64", 0), imm("i64", LANES), mark="lanes", name="lane") as j:
            lane = e.var(t, "lane")
            e.assign(lane, get(j))
            with e.loop(imm("i64", 1), groups, name="g") as g:
                e.op(which, lane, get(e.op("add", e.op("mul", g, imm("i64", LANES)), j)), into=lane)
            e.store(part, j, lane)
        e.assign(acc, e.load(part, imm("i64", 0)))
        for j in range(1, LANES):
            e.op(which, acc, e.load(part, imm("i64", j)), into=acc)
        e.emit(Free(part))
        with e.loop(e.op("mul", groups, imm("i64", LANES)), n, name="k") as k:
            e.op(which, acc, get(k), into=acc)
    with e.block() as sequential:
        e.assign(acc, get(imm("i64", 0)))
        with e.loop(imm("i64", 1), n, name="k") as k:
            e.op(which, acc, get(k), into=acc)
    e.emit(If(e.op("ge", n, imm("i64", LANES)), lanewise, sequential))
    return acc


def _fold_extreme_grid(e: Emitter, n: Operand, get: Get, t: str, which: str) -> Var:
    """fold_extreme for many threads: the sum's grid layout (:func:`_grid_reduce`) started
    from the identity of ``which`` (−inf for max, +inf for min; an integer type's extreme),
    so a lane with no elements changes nothing; n >= 1, so the result is an element."""
    if t in _FMT:
        start = inf(t, negative=which == "maximum")
    else:
        bits = BITS[t]
        signed = is_signed(t)
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        start = imm(t, lo if which == "maximum" else hi)
    return _grid_reduce(e, n, get, t, which, start)


def _order_key(e: Emitter, x: Operand, t: str) -> Var:
    """The unsigned key of §7.5's total order (-inf < … < -0 < +0 < … < +inf < NaN)."""
    _, ut, _, _, _ = _FMT[t]
    sign = imm(ut, 1 << (64 if t == "f64" else 32) - 1)
    b = e.op("bitcast", x, to=ut)
    neg = e.op("ne", e.op("and", b, sign), imm(ut, 0))
    key = e.op("select", neg, e.op("not", b), e.op("or", b, sign))
    return e.op("select", e.op("ne", x, x), imm(ut, -1), key)


def _min_key(e: Emitter, x: Operand, t: str) -> Var:
    """The key of argmin's order (NaN < -inf < … < -0 < +0 < … < +inf): §7.5's key with
    NaN moved to 0 (no number's key is 0: -inf's is the smallest, 0x007F…F)."""
    ut = _FMT[t][1]
    return e.op("select", e.op("ne", x, x), imm(ut, 0), _order_key(e, x, t))


def argmax(e: Emitter, n: Operand, get: Get, t: str, which: str = "argmax") -> Var:
    """argmax (or ``which="argmin"``) of n >= 1 elements: the lowest index of the best key."""
    best = e.var("i64", "arg")
    e.assign(best, imm("i64", 0))
    first = get(imm("i64", 0))
    if t in _FMT:
        key_fn = _order_key if which == "argmax" else _min_key
        key_of = lambda v: key_fn(e, v, t)  # noqa: E731
    else:
        key_of = lambda v: v  # noqa: E731
    kt = _FMT[t][1] if t in _FMT else t
    best_key = e.var(kt, "key")
    e.assign(best_key, key_of(first))
    with e.loop(imm("i64", 1), n, name="k") as k:
        kx = key_of(get(k))
        better = e.op("gt" if which == "argmax" else "lt", kx, best_key)
        e.op("select", better, k, best, into=best)
        e.op("select", better, kx, best_key, into=best_key)
    return best
