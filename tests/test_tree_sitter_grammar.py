"""The tree-sitter grammar in ``grammar/`` (tree-sitter-kera).

1. ``tree-sitter test`` passes: the corpus in ``grammar/test/corpus`` and the highlight
   assertions in ``grammar/test/highlight``.
2. The generated ``grammar/src`` is up to date with ``grammar/grammar.js``.
3. The grammar agrees with the core parser (the source of truth for the syntax) on whether
   an input has syntax errors: every example, every parser-corpus case and the snippets below.
4. The highlights, locals and folds queries compile and capture what an editor needs.

The tree-sitter CLI is ``tools/tree-sitter`` (0.22.6). Where it cannot run, 1 and 2 are
skipped — or fail when the ``CI`` environment variable is ``true``. The language is the
installed ``tree_sitter_kera`` binding when it matches ``grammar/src/parser.c``, otherwise
``parser.c`` and ``scanner.c`` compiled here with the system C compiler.
"""

from __future__ import annotations

import ctypes
import filecmp
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kera_core import parse
from tests.tools import tool_missing

tree_sitter = pytest.importorskip("tree_sitter")

ROOT = Path(__file__).resolve().parent.parent
GRAMMAR = ROOT / "grammar"
CLI = ROOT / "tools" / "tree-sitter"

GENERATED = ("src/parser.c", "src/grammar.json", "src/node-types.json")


# --- the tree-sitter CLI ------------------------------------------------------------------


@pytest.fixture(scope="session")
def cli_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An environment for the CLI (a private config dir), once the CLI is known to run."""
    if shutil.which("node") is None:
        tool_missing("node is not installed (the tree-sitter CLI needs it)")
    env = dict(os.environ)
    env["TREE_SITTER_DIR"] = str(tmp_path_factory.mktemp("tree-sitter-config"))
    env["TREE_SITTER_LIBDIR"] = str(tmp_path_factory.mktemp("tree-sitter-lib"))
    try:
        # The first call of the wrapper fetches the CLI, which can take a while.
        probe = subprocess.run(
            [str(CLI), "--version"], env=env, capture_output=True, text=True, timeout=600
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        tool_missing(f"the tree-sitter CLI cannot run: {exc}")
    if probe.returncode != 0:
        tool_missing(f"the tree-sitter CLI cannot run: {probe.stderr.strip()[-500:]}")
    return env


def _run_cli(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(CLI), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_tree_sitter_test_passes(cli_env: dict[str, str]) -> None:
    result = _run_cli(["test"], GRAMMAR, cli_env)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    assert "✗" not in output, output[-6000:]


def test_generated_sources_are_up_to_date(cli_env: dict[str, str], tmp_path: Path) -> None:
    copy = tmp_path / "grammar"
    copy.mkdir()
    for name in ("grammar.js", "package.json", "tree-sitter.json"):
        shutil.copy2(GRAMMAR / name, copy / name)
    shutil.copytree(GRAMMAR / "src", copy / "src")
    result = _run_cli(["generate", "--no-bindings"], copy, cli_env)
    assert result.returncode == 0, (result.stdout + result.stderr)[-6000:]
    stale = [f for f in GENERATED if not filecmp.cmp(GRAMMAR / f, copy / f, shallow=False)]
    assert not stale, (
        f"{', '.join(stale)} out of date: run `../tools/tree-sitter generate --no-bindings` "
        "in grammar/ and commit the result"
    )


# --- the language -------------------------------------------------------------------------


def _parser_c_counts() -> tuple[int, int]:
    text = (GRAMMAR / "src" / "parser.c").read_text(encoding="utf-8")
    state, symbol, alias = (
        int(re.search(rf"#define {name} (\d+)", text).group(1))
        for name in ("STATE_COUNT", "SYMBOL_COUNT", "ALIAS_COUNT")
    )
    return state, symbol + alias


def _installed_language() -> object | None:
    """The installed binding's language if it was built from this grammar, else None."""
    try:
        import tree_sitter_kera
    except ImportError:
        return None
    lang = tree_sitter.Language(tree_sitter_kera.language())
    if (lang.parse_state_count, lang.node_kind_count) != _parser_c_counts():
        return None  # an old build: use the sources instead
    return lang


def _compiled_language(out: Path) -> object:
    """Compile grammar/src into a shared library and load it through ctypes."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        tool_missing("no C compiler to build grammar/src/parser.c")
    src = GRAMMAR / "src"
    lib_path = out / "kera.so"
    cmd = [cc, "-shared", "-fPIC", "-O1", "-std=c11", "-I", str(src)]
    cmd += [str(src / "parser.c"), str(src / "scanner.c"), "-o", str(lib_path)]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    lib = ctypes.CDLL(str(lib_path))
    lib.tree_sitter_kera.restype = ctypes.c_void_p
    capsule_new = ctypes.pythonapi.PyCapsule_New
    capsule_new.restype = ctypes.py_object
    capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    lang = tree_sitter.Language(capsule_new(lib.tree_sitter_kera(), _CAPSULE_NAME, None))
    _KEEP_ALIVE.append(lib)
    return lang


_CAPSULE_NAME = b"tree_sitter.Language"
_KEEP_ALIVE: list[ctypes.CDLL] = []


@pytest.fixture(scope="session")
def language(tmp_path_factory: pytest.TempPathFactory) -> object:
    if sys.platform == "win32":
        pytest.skip("the ctypes fallback builds a POSIX shared library")
    return _installed_language() or _compiled_language(tmp_path_factory.mktemp("kera-ts"))


@pytest.fixture(scope="session")
def ts_parser(language: object) -> object:
    return tree_sitter.Parser(language)


# --- agreement with the core parser -------------------------------------------------------

EXAMPLES = sorted((ROOT / "examples").glob("*.kera"))
CORPUS_DIR = ROOT / "tests" / "corpus"
CORPUS = sorted(CORPUS_DIR.glob("**/*.kera"))

# Corpus cases whose only errors tree-sitter legitimately accepts: the core diagnostic codes
# each is allowed to report, and why tree-sitter does not report them.
EXCLUDED: dict[str, tuple[frozenset[str], str]] = {
    "err/054_invalid_utf8_in_trivia": (
        frozenset({"K0001"}),
        "tree-sitter reads invalid UTF-8 in comments and strings as U+FFFD; only the core "
        "lexer validates the encoding",
    ),
    "err/057_byte_order_mark": (
        frozenset({"K0002"}),
        "the tree-sitter runtime skips a byte-order mark at the start of the input",
    ),
    "err/059_too_deep_parens": (
        frozenset({"K0108"}),
        "a nesting limit of the recursive-descent core parser; tree-sitter has none",
    ),
    "err/060_too_deep_blocks": (
        frozenset({"K0108"}),
        "a nesting limit of the recursive-descent core parser; tree-sitter has none",
    ),
    "err/061_too_deep_prefix": (
        frozenset({"K0108"}),
        "a nesting limit of the recursive-descent core parser; tree-sitter has none",
    ),
}


def _fn(body: str) -> str:
    return "fn f() {\n" + body + "\n}\n"


# Inputs both parsers accept.
GOOD = [
    "",
    "pub fn f[N, M,](mut x: f32[N, 4], y: &mut f32[N] @device,) -> f32[N] @host ! io, time {}",
    "fn f() -> () ! io {}",
    "fn f[]() {}",
    "fn bool(f32: i64) -> f32 { let u8 = f32; u8 }",
    "fn fnord(iff: i64, lettuce: i64, _: i64, as_: i64) {}",
    "struct S {}",
    "pub struct S { a: i32, pub b: f32[3] @pinned, }",
    "const N: i64 = -4 * 2;",
    "fn f(x: & &f32, y: () @device, z: f32[], w: Point[N,], v: f32[4u32]) {}",
    "/// doc\n//// plain\n/* a /* nested */ b */ /**/ /*/ */ fn f() {}",
    "fn f() {\r\n\tlet x = 1;\r\n}\r\n",
    "fn f() {\x0b\x0c}",
    _fn("let x; let mut y: i32 = 1; ;;"),
    _fn("x"),
    _fn("{ } { } if a {} else if b {} else {} for i in 0..n {} while c {} x"),
    _fn("if a { 1 } else { 2 }; -x;"),
    _fn("if a { 1 } else { 2 }\n(x);"),
    _fn("let y = if a { 1 } else { 2 } + 3;"),
    _fn("if a { b } else { c }"),
    _fn("a = b = c; a += b -= c; a <<= 1; b >>= 2; c &= d; e |= f; g ^= h;"),
    _fn("a..b; a..=b; (a..b)..c; a..b = c; a = b..c;"),
    _fn("x = a || b && c | d ^ e & f << g + h * i as T;"),
    _fn("x = (a < b) == c; y = a < b && c < d; z = a < b .. c < d;"),
    _fn("x = -a * -b; y = !!a; z = - -a; w = & &a; v = &mut a; u = a && b; t = a & &b;"),
    _fn("x = y as f32 as i64; z = w as f32[N] @device; v = u as &mut f32;"),
    _fn("x = -a.b[1](2).c; y = f()(); z = a[]; w = a[1, 2,]; g(); g(1,);"),
    _fn("x = 1.x; y = 1..2; z = 1.5..2.5; w = (); v = (1); u = [1, [2, 3],]; t = [];"),
    _fn("x = { let y = 1; y };"),
    _fn("return; return 1; return -1; return (1); return {}; return return; return x = 1;"),
    _fn("x = a + return b * c; break(1); continue.x; x = break;"),
    _fn("let p = P { x: 1, y: Q { z: 2 }, }; let e = E {}; let v = P { a: 1 }.a;"),
    _fn("if p == (P { x: 1 }) {} while f(P {}) {} if a[P {}] {} for i in g(P {}) {}"),
    _fn("if x {} {} if P {} {} while P {} {} for i in P {} {}"),
    _fn("if {} {} if return {} {} if break {} if a = b {} if -a {}"),
    _fn("x = [0, 42, 1_000, 0xFF_u8, 0o17, 0b1010, 7i8, 3f32, 0x1f32, 1.0, 1e10, 2.5E-3];"),
    _fn("x = [1_000.5e+2, 1.0f32, 3.0_f32, 1e+5f64, 1.5e+_3];"),
    _fn(
        'print("a\\n\\t\\r\\0\\\\\\"\\\'"); print("\\u{3A3} x"); print(""); print("a /* b */ // c");'
    ),
    _fn("x = 1 /* one */ + // two\n 2;"),
    _fn("loop { break; } loop {} let x = loop { continue; };"),
    _fn("let y = match x { 0 => 1, 1 | 2 => 2, -5..=-1 => { 7 } K => 9, _ => 3 };"),
    _fn("match x { true => {} false => {}, } match (x) { _ => 1 }"),
    _fn("match a + b { 1.5 => 1, 0..=9 | 20..=29 => a, _ => { b } }"),
]

# Inputs both parsers reject.
BAD = [
    "fn f(,) {}",
    "fn f[,]() {}",
    "fn f(x) {}",
    "fn f(x: ) {}",
    "fn f {}",
    "fn f();",
    "fn () {}",
    "fn fn() {}",
    "fn f(if: i32) {}",
    "fn f() ! io, {}",
    "fn f() ! {}",
    "struct S { a: i32 b: f32 }",
    "struct S;",
    "pub struct S {};",
    "const N = 4;",
    "const N: i64 = 4",
    "pub let x = 1;",
    "pub",
    "fn f(x: &&f32) {}",
    "fn f(x: f32 @) {}",
    "fn f(x: f32 @a @b) {}",
    "fn f(x: f32[1.5]) {}",
    "fn f(x: f32[N][M]) {}",
    "fn f(x: (f32)) {}",
    "fn f(x: mut) {}",
    "fn f() {} /* unterminated",
    "fn f() { x = a /* unterminated ; }",
    "fn f() { let é = 1; }",
    "fn f() {\u00a0}",
    _fn("let x = 1"),
    _fn("let = 1;"),
    _fn("let if = 1;"),
    _fn("x y"),
    _fn("{ 1 } + 2"),
    _fn("if a { 1 } else { 2 } + 3;"),
    _fn("if a {} .x;"),
    _fn("if a {} else x"),
    _fn("fn g() {}"),
    _fn("{ fn }"),
    _fn("x = fn;"),
    _fn("x = as;"),
    _fn("a..b..c;"),
    _fn("..b;"),
    _fn("a..;"),
    _fn("a < b < c;"),
    _fn("a < b == c;"),
    _fn("a && b < c < d;"),
    _fn("a < b as T < c;"),
    _fn("&&a;"),
    _fn("&mut;"),
    _fn("a &&= b;"),
    _fn("a ||= b;"),
    _fn("x as f32[N][0];"),
    _fn("x as f32(1);"),
    _fn("x as f32.y;"),
    _fn("x as;"),
    _fn("a(1 2);"),
    _fn("a.0;"),
    _fn("a.;"),
    _fn("x = (1, 2);"),
    _fn("x = [,];"),
    _fn("break 1;"),
    _fn("let p = P { x };"),
    _fn("let p = P { x: 1 y: 2 };"),
    _fn("let p = P { , };"),
    _fn("let p = P { x: };"),
    _fn("P {}"),
    _fn("if p == P { x: 1 } {}"),
    _fn("if x { a: 1 } {}"),
    _fn("for in x {}"),
    _fn("for mut i in x {}"),
    _fn("x = 12abc; y = 0b102; z = 1.5u8; w = 0x; v = 1.0e;"),
    _fn("x = 1e_5;"),
    _fn("x = 1e+;"),
    _fn("x = 1i128;"),
    _fn("x = 1as;"),
    _fn('print("\\q");'),
    _fn('print("\\u{}");'),
    _fn('print("\\u{1234567}");'),
    _fn('print("abc);'),
    _fn('print("a\\\nb");'),
    _fn("x = 'a';"),
    _fn("x = $;"),
    _fn("x = a # b;"),
    _fn("x = a ? b;"),
    _fn("x = a :: b;"),
    _fn("x = a => b;"),
    _fn("x = a -> b;"),
    _fn("let loop = 1;"),
    _fn("let match = 1;"),
    _fn("x = loop + 1;"),
    _fn("loop x;"),
    _fn("match x { 1 => 2 3 => 4 }"),
    _fn("match x { 1 => 2 _ => 3 }"),
    _fn("match x { 1 .. 2 => 3 }"),
    _fn("match x { a + 1 => 2 }"),
    _fn("match x { 1 = 2 }"),
    _fn("match x;"),
    _fn("match { 1 => 2 }"),
]


def _case_id(path: Path) -> str:
    if path.is_relative_to(CORPUS_DIR):
        return path.relative_to(CORPUS_DIR).with_suffix("").as_posix()
    return path.relative_to(ROOT).as_posix()


def _ts_has_error(ts_parser: object, data: bytes) -> bool:
    return ts_parser.parse(data).root_node.has_error


def _error_lines(ts_parser: object, data: bytes) -> list[str]:
    """Where tree-sitter found errors, for failure messages."""
    out: list[str] = []

    def walk(node: object) -> Iterator[object]:
        yield node
        for child in node.children:
            yield from walk(child)

    for node in walk(ts_parser.parse(data).root_node):
        if node.is_error or node.is_missing:
            kind = "missing " + node.type if node.is_missing else "error"
            out.append(f"{kind} at {node.start_point.row + 1}:{node.start_point.column + 1}")
    return out[:5]


def _check_agreement(ts_parser: object, data: bytes, what: str) -> None:
    diagnostics = parse(data).diagnostics
    core = [f"{d.code} {d.span.start}..{d.span.end} {d.message}" for d in diagnostics]
    ts_error = _ts_has_error(ts_parser, data)
    assert ts_error == bool(diagnostics), (
        f"{what}: tree-sitter {'rejects' if ts_error else 'accepts'} it "
        f"{_error_lines(ts_parser, data)}, the core parser "
        f"{'rejects' if diagnostics else 'accepts'} it {core[:5]}"
    )


@pytest.mark.parametrize("path", EXAMPLES + CORPUS, ids=_case_id)
def test_agrees_with_core_parser_on_files(ts_parser: object, path: Path) -> None:
    data = path.read_bytes()
    excluded = EXCLUDED.get(_case_id(path))
    if excluded is not None:
        codes, reason = excluded
        reported = {d.code for d in parse(data).diagnostics}
        # The exclusion holds only while the core reports nothing but these codes.
        assert reported and reported <= codes, f"{_case_id(path)}: {sorted(reported)}"
        # ... and the disagreement is exactly the documented one: tree-sitter accepts it.
        assert not ts_parser.parse(data).root_node.has_error, reason
        return
    _check_agreement(ts_parser, data, _case_id(path))


@pytest.mark.parametrize("text", GOOD + BAD, ids=lambda s: repr(s)[:60])
def test_agrees_with_core_parser_on_snippets(ts_parser: object, text: str) -> None:
    expected = "accepted" if text in GOOD else "rejected"
    _check_agreement(ts_parser, text.encode(), f"{text!r} (meant to be {expected})")


def test_exclusions_name_existing_cases() -> None:
    missing = [name for name in EXCLUDED if not (CORPUS_DIR / f"{name}.kera").is_file()]
    assert not missing, f"EXCLUDED names corpus cases that no longer exist: {missing}"


# --- queries ------------------------------------------------------------------------------

QUERY_SOURCE = b"""\
/// Scales `x` on the device.
pub fn scale[N](a: f32, x: &mut f32[N] @device) -> Point ! transfer {
    let mut total: f32 = 0.0; // running sum
    for i in 0..N {
        x[i] = a * x[i];
        total += helper(x[i]);
    }
    print("done\\n");
    Point { x: total }
}

struct Point {
    pub x: f32,
}
"""


def _query(language: object, name: str) -> object:
    return tree_sitter.Query(language, (GRAMMAR / "queries" / name).read_text(encoding="utf-8"))


def _captures(language: object, ts_parser: object, name: str) -> dict[str, set[str]]:
    tree = ts_parser.parse(QUERY_SOURCE)
    found = tree_sitter.QueryCursor(_query(language, name)).captures(tree.root_node)
    return {cap: {node.text.decode() for node in nodes} for cap, nodes in found.items()}


@pytest.mark.parametrize("name", ["highlights.scm", "locals.scm", "folds.scm"])
def test_query_compiles(language: object, name: str) -> None:
    assert _query(language, name).pattern_count > 0


def test_highlights(language: object, ts_parser: object) -> None:
    caps = _captures(language, ts_parser, "highlights.scm")
    assert caps["function"] == {"scale"}
    assert {"helper", "print"} <= caps["function.call"] | caps.get("function.builtin", set())
    assert caps["type.builtin"] == {"f32"}
    assert caps["type"] == {"Point"}
    assert {"fn", "let", "struct"} <= caps["keyword"] | caps["keyword.function"]
    assert {"for", "in"} <= caps["keyword.repeat"]
    assert {"pub", "mut"} <= caps["keyword.modifier"]
    assert {"a", "x", "N"} <= caps["variable.parameter"]
    assert {"device", "transfer"} <= caps["attribute"]
    assert caps["comment.documentation"] == {"/// Scales `x` on the device."}
    assert caps["comment"] == {"// running sum"}
    assert {"0.0"} == caps["number.float"]
    assert {"\\n"} == caps["string.escape"]


def test_locals(language: object, ts_parser: object) -> None:
    caps = _captures(language, ts_parser, "locals.scm")
    assert caps["local.definition"] == {"N", "a", "x", "total", "i"}
    assert {"total", "helper", "x", "i", "a"} <= caps["local.reference"]
    assert len(caps["local.scope"]) >= 3


def test_folds(language: object, ts_parser: object) -> None:
    tree = ts_parser.parse(QUERY_SOURCE)
    folds = tree_sitter.QueryCursor(_query(language, "folds.scm")).captures(tree.root_node)
    kinds = {node.type for node in folds["fold"]}
    assert {"block", "parameters", "field_declaration_list", "field_initializer_list"} <= kinds
