"""The lazy views of a resumed lowering's uses and types (sema/spliced.py) against eager
lists and dicts moved edit by edit."""

import random

from kera_core.sema.env import Use
from kera_core.sema.spliced import MAX_CUTS, Cut, SplicedTypes, SplicedUses, merge_cuts
from kera_core.source import Span


class _Touched(Exception):
    pass


def _apply(pos: int, cut: Cut) -> int:
    if pos < cut.start:
        return pos
    if pos >= cut.end:
        return pos + cut.delta
    raise _Touched


def _through(pos: int, cuts) -> int:
    for c in cuts:
        pos = _apply(pos, c)
    return pos


def _random_cut(rng: random.Random, size: int, near: Cut | None) -> Cut:
    if near is not None and rng.random() < 0.7:  # typed on, deleted or retyped in one place
        lo = max(0, near.start - rng.randrange(3))
        hi = min(size, max(lo, near.end + near.delta + rng.randrange(-1, 3)))
        if rng.random() < 0.5:
            lo = hi = rng.randrange(near.start, near.end + near.delta + 1)
    else:
        lo = rng.randrange(size)
        hi = min(size, lo + rng.choice([0, 0, 1, 3]))
    delta = rng.randrange(-(hi - lo), 4)
    return Cut(lo, hi, delta)


def test_merged_cuts_move_every_position_as_the_cuts_one_by_one():
    rng = random.Random(3)
    merged_some = 0
    for _ in range(400):
        size = 200
        cuts: list[Cut] = []
        merged: tuple = ()
        for _ in range(rng.randrange(1, 8)):
            cut = _random_cut(rng, size, cuts[-1] if cuts else None)
            cuts.append(cut)
            before = len(merged)
            merged = merge_cuts(merged, cut)
            merged_some += len(merged) == before
            size += cut.delta
        for pos in range(210):
            try:
                want = _through(pos, cuts)
            except _Touched:
                continue
            # (a merged edit may cover text the separate ones left alone between them only
            # where that text was itself edited: never a position that survived them all)
            assert _through(pos, merged) == want, (pos, [(c.start, c.end, c.delta) for c in cuts])
    assert merged_some > 200


def _uses(n: int, rng: random.Random) -> list[Use]:
    out = []
    for i in range(n):
        at = 1000 + 10 * i
        start = rng.randrange(0, 900)
        d = Span(start, start + 3) if rng.random() < 0.5 else None
        out.append(Use(Span(at, at + 3), "local", d, f"x{i}"))
    return out


def _span_moved(s: Span | None, cut: Cut) -> Span | None:
    if s is None or s.end <= cut.start:
        return s
    assert s.start >= cut.end
    return s.shifted(cut.delta)


def test_spliced_uses_slice_and_move_as_lists_do():
    rng = random.Random(5)
    base = _uses(300, rng)
    view = SplicedUses.of(base)
    eager = list(base)
    for _ in range(40):
        # an edit before what is kept (below 950: among the definitions), then a slice
        lo_cut = rng.randrange(0, 950)
        cut = Cut(lo_cut, lo_cut + rng.choice([0, 1]), rng.randrange(-1, 3))
        if any(
            u.def_span and u.def_span.end > cut.start and u.def_span.start < cut.end for u in eager
        ):
            continue
        view = view.moved(cut)
        eager = [
            Use(u.span.shifted(cut.delta), u.kind, _span_moved(u.def_span, cut), u.name)
            for u in eager
        ]
        a, b = rng.randrange(3), len(eager) - rng.randrange(3)
        view, eager = view[a:b], eager[a:b]
        assert isinstance(view, SplicedUses)
        assert list(view) == eager
        assert len(view) == len(eager)
        if eager:
            i = rng.randrange(len(eager))
            assert view[i] == eager[i]
        assert [u.name for u in view.unmoved()] == [u.name for u in eager]
        assert all(len(part[3]) <= MAX_CUTS for part in view.parts)


def test_spliced_types_iterate_in_order_and_look_up_moved_keys():
    base1 = {(10 * i, 10 * i + 5, "E"): f"t{i}" for i in range(50)}
    base2 = {(1000 + 10 * i, 1005 + 10 * i, "E"): f"u{i}" for i in range(50)}
    view = SplicedTypes([(base1, 5, 20, 0), (base2, 0, 30, 7)])
    want = dict(list(base1.items())[5:20])
    want.update({(a + 7, b + 7, k): t for (a, b, k), t in list(base2.items())[:30]})
    assert list(view.items()) == list(want.items())
    assert len(view) == len(want) == 45
    assert view == want and dict(view) == want
    assert view[(1007, 1012, "E")] == "u0" and view.get((1000, 1005, "E")) is None
    sub = view.sliced(10, 20)
    assert list(sub.items()) == list(want.items())[10:20]
    assert list(sub.moved(-3).items()) == [
        ((a - 3, b - 3, k), t) for (a, b, k), t in list(want.items())[10:20]
    ]
