"""`kera check -j N` (kera_core/jobs.py): the same output as one process, whatever N.

Each file is checked with its functions shared among 2 and 3 processes (``min_bytes=0``
splits even a small file) and must give ``analyze``'s diagnostics exactly — the same
objects in the same order; the command's stdout, stderr and exit status must be the
same bytes for ``-j 1``, ``-j 2`` and ``-j 3``. Inputs: every example, the generated
corpus at a few sizes, files with errors of every stage (syntax, types, ownership,
functions defined twice, generic and recursive functions, a callee that does not lower),
and randomly mutated programs. A child that dies, a fork that fails and a system without
fork all fall back to the serial path.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from bench.corpus import _renamed, generate
from kera_core import jobs
from kera_core.analysis import analyze
from kera_core.cli import main
from kera_core.sema import lower_module
from kera_core.syntax.parse import parse

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.kera"))
OWNERSHIP_ERRORS = sorted((ROOT / "tests" / "ownership_corpus" / "err").glob("*.kera"))

# every stage's errors, with calls between the functions that have them
STAGES = """
struct P { x: f32, y: f32 }
const K: f32 = 2.5;
const BAD: i32 = 1.5;
fn leaf(a: f32) -> f32 { a * K }
fn broken(a: f32) -> f32 { a + true }
fn uses_broken(a: f32) -> f32 { broken(a) * 2.0 + leaf(a) }
fn uses_broken_again(a: f32) -> f32 { let b = uses_broken(a); b + "s" }
fn twice(a: f32) -> f32 { a }
fn twice(a: f32) -> f32 { a + 1.0 }
fn calls_twice(a: f32) -> f32 { twice(a) + leaf(a) }
fn even(n: i32) -> bool { if n == 0 { true } else { odd(n - 1) } }
fn odd(n: i32) -> bool { if n == 0 { false } else { even(n - 1) } }
fn odd_bad(n: i32) -> bool { if n == 0 { 1 } else { odd_bad(n - 1) } }
fn gen_rec<T: Float>(x: T) -> T { gen_rec(x) }
fn scale<T: Num>(x: T, k: T) -> T { x * k }
fn half<T: Num>(x: T) -> T { x + 1.0 }
fn use_scale(a: f32, b: i32) -> f32 { let q = scale(b, half(b)); scale(a, a) + half(a) }
fn moved[N](x: f32[N]) -> f32 { let y = x; sum(&x) + sum(&y) }
fn moved_caller[N](x: f32[N]) -> f32 { moved(x) + leaf(1.0) }
fn syntax(a: f32) -> f32 { let = a + ; a }
fn after_syntax(a: f32) -> f32 { syntax(a) + unknown(a) }
fn point(p: P) -> f32 { p.x + p.z }
fn good(a: f32) -> f32 { a * 3.0 }
fn misuses_good(a: f32) -> f32 { good(a) + "s" }
fn misuses_good_too(a: f32) -> bool { good(a) }
fn moves_after_good[N](x: f32[N]) -> f32 { let y = x; good(sum(&x)) + sum(&y) }
"""


def _ownership_errors() -> str:
    """The ownership corpus's error files, each with its items renamed apart, and the
    first five again as they are (their functions defined twice: K0202)."""
    renamed = [_renamed(p.read_text(), f"_{k}") for k, p in enumerate(OWNERSHIP_ERRORS)]
    return "\n".join(renamed + [p.read_text() for p in OWNERSHIP_ERRORS[:5]] * 2)


def _all_examples() -> str:
    return "\n".join(p.read_text() for p in EXAMPLES)


def _same(text: str, ks=(2, 3)) -> None:
    ref = analyze(text).diagnostics
    for k in ks:
        assert jobs.check_split(text, k, min_bytes=0) == ref, k


def _shares(text: str, k: int) -> list[frozenset[str]] | None:
    got = []

    def split(plan):
        got.append(jobs.partition(plan, k, 0))
        return frozenset()

    lower_module(parse(text), split=split)
    return got[0]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_each_example(path):
    _same(path.read_text())


def test_examples_together_and_stage_errors():
    text = _all_examples() + STAGES
    codes = {d.code for d in analyze(text).diagnostics}
    # what the file is there to cover: syntax, types, K0202, K0322, ownership, constants
    assert {"K0202", "K0322"} <= codes and len(codes) >= 8, codes
    _same(text)
    _same(STAGES)


def test_ownership_errors_concatenated():
    """The ownership corpus's error files in one file: ownership errors everywhere, and
    many names defined more than once (K0202)."""
    text = _ownership_errors()
    diags = analyze(text).diagnostics
    assert sum(d.code == "K0202" for d in diags) >= 5
    assert sum(d.code.startswith("K04") for d in diags) > 50
    _same(text)


@pytest.mark.parametrize("lines", [300, 3000])
def test_generated_corpus(lines):
    _same(generate(lines))


def test_shares_are_closed_under_calls_and_cover_every_function():
    text = _all_examples() + STAGES
    p = parse(text)
    seen = {}

    def split(plan):
        seen["plan"] = plan
        return None

    lower_module(p, split=split)
    plan = seen["plan"]
    shares = jobs.partition(plan, 3, 0)
    assert shares is not None and len(shares) == 3
    everywhere = frozenset.intersection(*shares)  # helpers lowered in every share
    assert sorted(n for s in shares for n in s - everywhere) == sorted(set(plan.order) - everywhere)
    for s in shares:
        for n in s:
            assert all(c in s for c in plan.callees[n] if c in plan.callees), n
    # a caller and its callee, and each recursive component, in the same share
    home = {n: i for i, s in enumerate(shares) for n in s}
    assert home["even"] == home["odd"] and home["uses_broken_again"] == home["broken"]


def test_small_file_and_one_component_are_not_split():
    assert _shares((ROOT / "examples" / "saxpy.kera").read_text(), 2) is not None
    seen = []

    def split(plan):
        seen.append(jobs.partition(plan, 2))
        return None

    lower_module(parse(_all_examples()), split=split)
    assert seen == [None]  # under SPLIT_BYTES
    chain = "\n".join(
        f"fn f{i}(a: f32) -> f32 {{ {f'f{i - 1}(a) + ' if i else ''}{'a * 2.0 + ' * 200}a }}"
        for i in range(40)
    )
    seen.clear()
    lower_module(parse(chain), split=split)
    assert seen == [None]  # one chain of calls: one component, nothing to share


def _hub_file(broken_helper: bool) -> str:
    """Forty functions that all call one helper (itself calling another), and a few
    that call each other: one weakly connected component."""
    body = "a + true" if broken_helper else "inner(a) * 2.0"
    out = ["fn inner(a: f32) -> f32 { a + 1.0 }", f"fn helper(a: f32) -> f32 {{ {body} }}"]
    for i in range(40):
        bad = ' + "s"' if i % 7 == 0 else ""
        prev = f" + f{i - 1}(a)" if i % 5 == 4 else ""
        out.append(f"fn f{i}(a: f32) -> f32 {{ let b = helper(a){prev}; b * {i}.5{bad} }}")
    out.append("fn moves[N](x: f32[N]) -> f32 { let y = x; helper(sum(&x)) + sum(&y) }")
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("broken_helper", [False, True])
def test_helper_called_everywhere_is_lowered_in_every_share(broken_helper):
    text = _hub_file(broken_helper)
    shares = _shares(text, 3)
    assert shares is not None and len(shares) == 3
    assert frozenset.intersection(*shares) == ({"helper"} if broken_helper else {"helper", "inner"})
    assert len(analyze(text).diagnostics) >= (7 if not broken_helper else 2)
    _same(text)


def test_mutated_programs():
    """Random edits of a file of examples: half-typed code, broken calls, unbalanced
    brackets; every version split in 2 and 3 gives the serial diagnostics."""
    rng = random.Random(17)
    pieces = ["x", "1", "2.5", ";", "{", "}", "(", ")", " + ", "\n", "let q = 2.0;",
              "&mut ", "return ", "f32", "[", "]", ",", "fn ", "é"]  # fmt: skip
    base = _all_examples() + STAGES
    for _ in range(25):
        text = base
        for _ in range(rng.randrange(1, 6)):
            i = rng.randrange(len(text) + 1)
            j = min(len(text), i + rng.choice([0, 0, 1, 2, 7]))
            text = text[:i] + (rng.choice(pieces) if rng.random() < 0.8 else "") + text[j:]
        _same(text)


def test_package_file_is_checked_serially():
    text = "use other::thing;\n" + STAGES
    _same(text)


def test_check_texts_shares_out_files(monkeypatch):
    calls = []
    for name in ("check_split", "_whole_files"):
        real = getattr(jobs, name)
        monkeypatch.setattr(jobs, name, lambda *a, _n=name, _f=real: calls.append(_n) or _f(*a))
    examples = [p.read_text() for p in EXAMPLES]
    big = _all_examples() * 2 + STAGES
    for texts, how in (
        (examples + [STAGES, _ownership_errors(), ""], ["_whole_files"]),  # they balance
        (examples + [big], ["_whole_files", "check_split"]),  # the small whole, the big split
    ):
        ref = [analyze(t).diagnostics for t in texts]
        for k in (2, 3):
            calls.clear()
            assert jobs.check_texts(texts, k, min_bytes=4000) == ref
            assert calls == how, k
            assert jobs.check_texts(texts, k, min_bytes=0) == ref
        assert jobs.check_texts(texts, 1) == ref


def test_a_dead_child_falls_back(monkeypatch):
    text = _all_examples() + STAGES
    ref = analyze(text).diagnostics
    parent = os.getpid()
    share = jobs._share

    def dying(module, p):
        if os.getpid() != parent:
            os._exit(3)
        return share(module, p)

    monkeypatch.setattr(jobs, "_share", dying)
    assert jobs.check_split(text, 3, min_bytes=0) == ref
    texts = [p.read_text() for p in EXAMPLES]
    monkeypatch.setattr(
        jobs, "analyze", lambda t: os._exit(3) if os.getpid() != parent else analyze(t)
    )
    assert jobs.check_texts(texts, 3, min_bytes=10**6) == [analyze(t).diagnostics for t in texts]


def test_fork_fails_or_is_missing(monkeypatch):
    text = _all_examples() + STAGES
    ref = analyze(text).diagnostics
    real = os.fork
    forks = []

    def second_fails():
        forks.append(1)
        if len(forks) > 1:
            raise OSError(11, "Resource temporarily unavailable")
        return real()

    monkeypatch.setattr(os, "fork", second_fails)
    assert jobs.check_split(text, 3, min_bytes=0) == ref  # one child; the parent does the rest
    forks.clear()
    texts = [p.read_text() for p in EXAMPLES]
    assert jobs.check_texts(texts, 3, min_bytes=10**6) == [analyze(t).diagnostics for t in texts]
    monkeypatch.setattr(jobs, "can_fork", lambda: False)
    assert jobs.check_split(text, 3, min_bytes=0) == ref
    assert jobs.check_texts([text], 3, min_bytes=0) == [ref]


def test_pack_round_trip():
    text = _all_examples() + STAGES + _ownership_errors()
    diags = analyze(text).diagnostics
    assert any(d.related for d in diags) and any(d.fix for d in diags)
    assert [jobs.unpack(jobs.pack(d)) for d in diags] == diags


# --- the command ---------------------------------------------------------------------


def _check(argv, capsys) -> tuple[int, str, str]:
    code = main(["check", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_command_output_is_the_same_for_every_j(capsys, tmp_path):
    big = tmp_path / "big.kera"
    big.write_text(generate(3000) + STAGES)  # over SPLIT_BYTES: split
    errs = tmp_path / "errs.kera"
    errs.write_text(_ownership_errors())
    files = [str(p) for p in EXAMPLES] + [str(errs), str(big), str(ROOT / "examples" / "pkg")]
    for argv in (files, [str(big)], [str(big), "--format", "json"], files + ["--format", "json"]):
        serial = _check(["-j", "1", *argv], capsys)
        assert serial[0] == 1 and serial[1] and (serial[2] or "json" in argv)
        for k in ("2", "3"):
            assert _check(["-j", k, *argv], capsys) == serial, (k, argv)
        assert _check(["--jobs=2", *argv], capsys) == serial
        assert _check(argv, capsys) == serial  # the default: every usable processor
    ok = [str(p) for p in EXAMPLES]
    assert _check(["-j", "2", *ok], capsys) == _check(["-j", "1", *ok], capsys)


@pytest.mark.parametrize("bad", ["0", "-3", "two"])
def test_jobs_must_be_a_positive_number(bad, capsys):
    with pytest.raises(SystemExit) as e:
        main(["check", "-j", bad, str(EXAMPLES[0])])
    assert e.value.code == 2
    assert "-j/--jobs" in capsys.readouterr().err


def test_usable_cores():
    n = jobs.usable_cores()
    assert n >= 1
    if hasattr(os, "sched_getaffinity"):
        assert n == len(os.sched_getaffinity(0))
