"""Front-end benchmark: lex + parse throughput, incremental edit latency, formatter time.

Anchors measured in the same process: parso parsing Python source of the same byte size,
and the tree-sitter Kera grammar parsing the same file.

    python bench/frontend.py            # 20k-line file; edits on 2k/20k/200k lines
    python bench/frontend.py --quick    # smaller sizes (a smoke run)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.corpus import generate, python_source  # noqa: E402
from kera_core.source import Span  # noqa: E402
from kera_core.syntax.lexer import lex  # noqa: E402
from kera_core.syntax.parse import parse  # noqa: E402
from kera_core.syntax.reparse import TextEdit, reparse  # noqa: E402


def best(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def phases(text: str, repeat: int = 5) -> dict[str, float]:
    """Best ms of each stage of a cold parse: lexing, the grammar's events, the tree."""
    from kera_core.stack import deep_recursion
    from kera_core.syntax.builder import TreeBuilder, significant
    from kera_core.syntax.parse import _DEFAULT_CACHE
    from kera_core.syntax.parser import grammar
    from kera_core.syntax.parser.parser import Parser

    out: dict[str, list[float]] = {}
    for _ in range(repeat):
        t0 = time.perf_counter()
        lexed = lex(text)
        t1 = time.perf_counter()
        sig = significant(lexed.kinds)
        p = Parser(list(map(lexed.kinds.__getitem__, sig)))
        with deep_recursion(quiet_gc=True):
            grammar.source_file(p)
        t2 = time.perf_counter()
        with deep_recursion(quiet_gc=True):
            TreeBuilder(lexed, _DEFAULT_CACHE, 0, sig).run(p.events, p.errors)
        t3 = time.perf_counter()
        for k, v in (("lex", t1 - t0), ("events", t2 - t1), ("tree", t3 - t2)):
            out.setdefault(k, []).append(v * 1000)
    return {k: min(v) for k, v in out.items()}


def edit_latency(text: str, samples: int = 40) -> dict[str, float]:
    """Median ms for one-character edits inside function bodies, per strategy."""
    p = parse(text)
    anchors = [i for i in range(len(text)) if text.startswith("let ", i)]
    step = max(1, len(anchors) // samples)
    results: dict[str, list[float]] = {}
    for a in anchors[::step][:samples]:
        for where, ins in ((a + 5, "q"), (a, "x;")):  # inside an identifier; a new statement
            edit = TextEdit(Span(where, where), ins)
            new_text = text[:where] + ins + text[where:]  # the editor's buffer already has it
            t0 = time.perf_counter()
            new, how = reparse(p, edit, new_text=new_text)
            results.setdefault(how, []).append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            reparse(p, edit)
            results.setdefault(how + " (+splice text)", []).append(
                (time.perf_counter() - t0) * 1000
            )
    return {k: statistics.median(v) for k, v in results.items()}


def tree_sitter_parser():
    try:
        import tree_sitter
        import tree_sitter_kera
    except ImportError:
        return None
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_kera.language()))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    main_lines = 2_000 if args.quick else 20_000
    text = generate(main_lines)
    raw = text.encode()
    mb = len(raw) / 1e6
    print(f"file: {text.count(chr(10))} lines, {len(raw) / 1e3:.0f} kB")

    t_lex = best(lambda: lex(text), repeat=5)
    t_parse = best(lambda: parse(text), repeat=5)
    print(f"lex              {t_lex * 1000:8.1f} ms   {mb / t_lex:6.2f} MB/s")
    print(f"lex+parse+tree   {t_parse * 1000:8.1f} ms   {mb / t_parse:6.2f} MB/s")
    stages = phases(text)
    print("  stages (best ms): " + ", ".join(f"{k} {v:.0f}" for k, v in stages.items()))

    import parso

    py = python_source(len(raw))
    t_parso = best(lambda: parso.parse(py), repeat=5)
    print(f"parso (same size){t_parso * 1000:8.1f} ms   {mb / t_parso:6.2f} MB/s"
          f"   kera/parso time ratio {t_parse / t_parso:.2f}"
          f" (kera throughput {t_parso / t_parse:.2f}x parso's)")  # fmt: skip

    ts = tree_sitter_parser()
    if ts is not None:
        t_ts = best(lambda: ts.parse(raw))
        print(f"tree-sitter kera {t_ts * 1000:8.1f} ms   {mb / t_ts:6.2f} MB/s"
              f"   kera/tree-sitter time ratio {t_parse / t_ts:.1f}")  # fmt: skip
    else:
        print("tree-sitter kera: binding not installed (pip install ./grammar)")

    try:
        from kera_core.fmt import format_text

        t_fmt = best(lambda: format_text(text), repeat=1)
        print(f"format           {t_fmt * 1000:8.1f} ms   {mb / t_fmt:6.2f} MB/s")
    except ImportError:
        print("format: formatter not available")

    print("\none-character edit inside a function body -> new tree (median ms)")
    sizes = (200, 2_000, 20_000) if args.quick else (2_000, 20_000, 200_000)
    for n in sizes:
        lat = edit_latency(generate(n))
        cols = "  ".join(f"{k}: {v:6.2f} ms" for k, v in sorted(lat.items()))
        print(f"  {n:>7} lines   {cols}")


if __name__ == "__main__":
    main()
