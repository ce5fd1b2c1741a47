"""The formatter: snapshots per construct, width breaking, comments, refusals, range
formatting, every example, deep input, and property tests over random programs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import kera_core
from kera_core.fmt import (
    FormatResult,
    check_formatted,
    deep_recursion,
    format_range,
    format_text,
)
from kera_core.fmt.check import comments, signature
from kera_core.source import Span, encode
from kera_core.syntax.lexer import lex

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").rglob("*.kera"))  # with the files of examples/pkg
CASES_DIR = Path(__file__).resolve().parent / "fmt_cases"
UPDATE = bool(os.environ.get("KERA_UPDATE_FMT_SNAPSHOTS"))

_n = settings.default.max_examples
FMT_SETTINGS = settings(
    max_examples=_n if _n > 100 else min(_n, 40),  # the `fuzz` profile keeps its count
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def parse(text: str) -> kera_core.Parse:
    """The front end's parse, with the formatter's recursion allowance (hashing a long
    `a + a + ...` chain's lazy green hashes recurses once per link)."""
    with deep_recursion():
        return kera_core.parse(text)


def fmt(text: str, width: int = 100) -> str:
    r = format_text(text, width)
    assert not r.diagnostics, r.diagnostics
    return r.text


def comment_texts(text: str) -> list[str]:
    return [t for _, t in comments(parse(text).green)]


CLOSERS = {")", "]", "}", ">"}


def tokens_modulo_style(text: str) -> list[str]:
    """Significant tokens, without trailing commas and the `;`s the style drops (empty
    statements, and after a block's `}`)."""
    lexed = lex(text)
    toks = [t for k, t in zip(lexed.kinds, lexed.texts, strict=True) if not k.is_trivia]
    out: list[str] = []
    for i, t in enumerate(toks):
        if t == "," and i + 1 < len(toks) and toks[i + 1] in CLOSERS:
            continue
        if t == ";" and out and out[-1] in (";", "{", "}"):
            continue
        out.append(t)
    return out


def assert_good(src: str, width: int = 100) -> FormatResult:
    """Formatting succeeds, parses, keeps comments and tokens, and is idempotent."""
    r = format_text(src, width)
    assert not r.diagnostics, r.diagnostics
    out = parse(r.text)
    assert not out.has_errors, out.diagnostics
    assert comment_texts(src) == comment_texts(r.text)
    assert tokens_modulo_style(src) == tokens_modulo_style(r.text)
    assert signature(parse(src).green) == signature(out.green)
    again = format_text(r.text, width)
    assert again.text == r.text, f"not idempotent:\n{r.text}\n---\n{again.text}"
    assert not again.changed
    assert r.text == "" or (r.text.endswith("\n") and not r.text.endswith("\n\n"))
    return r


# --- snapshots, one construct at a time ---------------------------------------------

CASES: list[tuple[str, str, str]] = [
    ("empty", "", ""),
    ("whitespace-only", "  \n\n\t\n", ""),
    ("fn", "fn   f( )  {}", "fn f() {}\n"),
    (
        "signature",
        "pub fn dot[N](a:&f32[N],b:&mut f32[N,4]@device)->f32!io,alloc{a}",
        "pub fn dot[N](a: &f32[N], b: &mut f32[N, 4] @device) -> f32 ! io, alloc {\n    a\n}\n",
    ),
    ("unit-return", "fn f()->(){}", "fn f() -> () {}\n"),
    (
        "tuples",
        "fn f(a:( f32 ,i64, ),b:(f32 ,),c:(f32))->(f32,(i64,)){let ( mut s,_,(k ,) )=( a.0 ,1,(2,),);(s,(k,),)}",
        "fn f(a: (f32, i64), b: (f32,), c: (f32)) -> (f32, (i64,)) {\n"
        "    let (mut s, _, (k,)) = (a.0, 1, (2,));\n    (s, (k,))\n}\n",
    ),
    (
        "long-tuple-breaks",
        "fn f(){let (first_long_name,second_long_name,third_long_name)=(aaaaaaaaaaaaaaaaaaaa,bbbbbbbbbbbbbbbbbbbbbbbbb,ccccccccccccccccc);}",
        "fn f() {\n    let (first_long_name, second_long_name, third_long_name) = (\n"
        "        aaaaaaaaaaaaaaaaaaaa,\n        bbbbbbbbbbbbbbbbbbbbbbbbb,\n        ccccccccccccccccc,\n"
        "    );\n}\n",
    ),
    (
        "tuple-comments",
        "fn f(){let t=(a, // first\n b,);}",
        "fn f() {\n    let t = (\n        a, // first\n        b,\n    );\n}\n",
    ),
    (
        "struct",
        "pub struct P{pub x:f32,y:f32[N],}",
        "pub struct P {\n    pub x: f32,\n    y: f32[N],\n}\n",
    ),
    ("struct-no-trailing-comma", "struct P{x:f32}", "struct P {\n    x: f32,\n}\n"),
    ("empty-struct", "struct E { }", "struct E {}\n"),
    ("const", "pub  const N:i64=4 ;", "pub const N: i64 = 4;\n"),
    (
        "items-blank-line",
        "fn a(){}\n\n\n\nfn b(){}\nstruct S{x:f32}",
        "fn a() {}\n\nfn b() {}\n\nstruct S {\n    x: f32,\n}\n",
    ),
    (
        "adjacent-consts",
        "const A: f32 = 1.0;\nconst B: f32 = 2.0;\nfn f() {}",
        "const A: f32 = 1.0;\nconst B: f32 = 2.0;\n\nfn f() {}\n",
    ),
    (
        "let",
        "fn f(){let x=1;let mut y:f32=2.0;let z:&mut f32[N]=&mut w;let u;}",
        "fn f() {\n    let x = 1;\n    let mut y: f32 = 2.0;\n    let z: &mut f32[N] = &mut w;\n"
        "    let u;\n}\n",
    ),
    (
        "operators",
        "fn f(){x=a+b*c-d/e%f;y+=1;z=a<<2|b>>1&c^d;w=!a&&b||c==d;v=-x;u=a!=b;}",
        "fn f() {\n    x = a + b * c - d / e % f;\n    y += 1;\n    z = a << 2 | b >> 1 & c ^ d;\n"
        "    w = !a && b || c == d;\n    v = -x;\n    u = a != b;\n}\n",
    ),
    (
        "postfix",
        "fn f(){g(a,b,)[i,j].x( );m[ i ]=t . y;}",
        "fn f() {\n    g(a, b)[i, j].x();\n    m[i] = t.y;\n}\n",
    ),
    (
        "cast-ref-prefix",
        "fn f(){let a=x as f64;let b=& &x;let c=- -x;let d=&mut y;let e=!!z;}",
        "fn f() {\n    let a = x as f64;\n    let b = & &x;\n    let c = - -x;\n    let d = &mut y;\n"
        "    let e = !!z;\n}\n",
    ),
    (
        "literals",
        'fn f(){let s="a  b";let h=0xFF_u8;let g=1.5e3;let t=true;let p=(x);}',
        'fn f() {\n    let s = "a  b";\n    let h = 0xFF_u8;\n    let g = 1.5e3;\n    let t = true;\n'
        "    let p = (x);\n}\n",
    ),
    (
        "arrays-struct-literals",
        "fn f(){let a=[1,2,3,];let e=[];let p=Point{x:1.0,y:2.0,};let q=Point{};}",
        "fn f() {\n    let a = [1, 2, 3];\n    let e = [];\n    let p = Point { x: 1.0, y: 2.0 };\n"
        "    let q = Point {};\n}\n",
    ),
    (
        "if-else",
        "fn f(){if a{b();}else if c{d();}else{e();}}",
        "fn f() {\n    if a {\n        b();\n    } else if c {\n        d();\n    } else {\n"
        "        e();\n    }\n}\n",
    ),
    (
        "if-value-one-line",
        "fn f(){let v=if c{1.0}else{2.0};g(if c {a} else {b});}",
        "fn f() {\n    let v = if c { 1.0 } else { 2.0 };\n    g(if c { a } else { b });\n}\n",
    ),
    (
        "if-tail-breaks",
        "fn f()->f32{if c{1.0}else{2.0}}",
        "fn f() -> f32 {\n    if c {\n        1.0\n    } else {\n        2.0\n    }\n}\n",
    ),
    (
        "if-value-without-else-breaks",
        "fn f(){let v=if c{1};}",
        "fn f() {\n    let v = if c {\n        1\n    };\n}\n",
    ),
    (
        "if-value-over-50-columns-breaks",
        "fn f(){let v=if condition_value{first_branch_value}else{second_value};}",
        "fn f() {\n    let v = if condition_value {\n        first_branch_value\n    } else {\n"
        "        second_value\n    };\n}\n",
    ),
    (
        "loops",
        "fn f(){for i in 0..n{s+=i;}while s>0{s-=1;break;}for j in 1..=n+1{continue;}}",
        "fn f() {\n    for i in 0..n {\n        s += i;\n    }\n    while s > 0 {\n        s -= 1;\n"
        "        break;\n    }\n    for j in 1..=n + 1 {\n        continue;\n    }\n}\n",
    ),
    (
        "return",
        "fn f(){return;}\nfn g()->f32{return 1.0;}",
        "fn f() {\n    return;\n}\n\nfn g() -> f32 {\n    return 1.0;\n}\n",
    ),
    (
        "block-value",
        "fn f(){let x={1};{}}",
        "fn f() {\n    let x = {\n        1\n    };\n    {}\n}\n",
    ),
    (
        "empty-statements-dropped",
        "fn f(){;;let x=1;;;x;;}",
        "fn f() {\n    let x = 1;\n    x;\n}\n",
    ),
    (
        "semicolon-after-block-statement",
        "fn f(){if a{};x();while b{};-y;for i in 0..n{};}",
        "fn f() {\n    if a {}\n    x();\n    while b {}\n    -y;\n    for i in 0..n {};\n}\n",
    ),
    (
        "blank-lines-between-statements",
        "fn f() {\n\n    a();\n\n\n\n    b();\n    c();\n\n}",
        "fn f() {\n    a();\n\n    b();\n    c();\n}\n",
    ),
    ("crlf", "fn f() {\r\n    a(); // c\r\n}\r\n", "fn f() {\n    a(); // c\n}\n"),
    ("tabs", "fn f() {\n\ta();\n}", "fn f() {\n    a();\n}\n"),
    ("final-newlines", "fn f() {}\n\n\n", "fn f() {}\n"),
]


@pytest.mark.parametrize(("src", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_snapshot(src: str, want: str) -> None:
    assert fmt(src) == want
    assert_good(src)


# --- comments ------------------------------------------------------------------------

COMMENT_CASES: list[tuple[str, str, str]] = [
    (
        "trailing-stays",
        "fn f() {\n    let x = 1;   // one\n    g(); /* two */\n}",
        "fn f() {\n    let x = 1; // one\n    g(); /* two */\n}\n",
    ),
    (
        "own-line-and-blank",
        "fn f() {\n    // a\n\n\n    // b\n    x();\n}",
        "fn f() {\n    // a\n\n    // b\n    x();\n}\n",
    ),
    (
        "doc-comments-stay-with-items",
        "/// doc f\nfn f() {}\n/// doc S\nstruct S {\n    /// doc x\n    x: f32,\n}",
        "/// doc f\nfn f() {}\n\n/// doc S\nstruct S {\n    /// doc x\n    x: f32,\n}\n",
    ),
    (
        "trailing-after-item-stays-on-its-line",
        "fn a() {} // after a\nfn b() {}",
        "fn a() {} // after a\n\nfn b() {}\n",
    ),
    (
        "line-comment-breaks-the-list",
        "fn f(a: f32, // first\n b: f32) {}",
        "fn f(\n    a: f32, // first\n    b: f32,\n) {}\n",
    ),
    (
        "comment-before-comma-moves-after-it",
        "fn f() { g(a // why a\n, b); }",
        "fn f() {\n    g(\n        a, // why a\n        b,\n    );\n}\n",
    ),
    (
        "inline-block-comment-stays-inline",
        "fn f() { g(a, /* b */ c); }",
        "fn f() {\n    g(a, /* b */ c);\n}\n",
    ),
    (
        "comment-in-dropped-trailing-comma",
        "fn f() { g(a, /* end */); }",
        "fn f() {\n    g(a /* end */);\n}\n",
    ),
    (
        "comment-in-binary",
        "fn f() { let y = a + // why\n b; }",
        "fn f() {\n    let y = a\n        + // why\n        b;\n}\n",
    ),
    (
        "comment-before-closing-brace",
        "fn f() {\n    a();\n    // last words\n}",
        "fn f() {\n    a();\n    // last words\n}\n",
    ),
    (
        "comment-only-block",
        "fn f() { // nothing yet\n}",
        "fn f() { // nothing yet\n}\n",
    ),
    (
        "comment-between-else",
        "fn f() { if a { b(); } // then\n else { c(); } }",
        "fn f() {\n    if a {\n        b();\n    } // then\n    else {\n        c();\n    }\n}\n",
    ),
    (
        "comment-on-dropped-semicolon",
        "fn f() {\n    a();\n    ; // stray\n}",
        "fn f() {\n    a();\n    // stray\n}\n",
    ),
    (
        "multi-line-block-comment-verbatim",
        "fn f() {\n        /* one\n      two */\n  a();\n}",
        "fn f() {\n    /* one\n      two */\n    a();\n}\n",
    ),
    (
        "line-comment-trailing-whitespace",
        "// header   \t\nfn f() {} //x  ",
        "// header\nfn f() {} //x\n",
    ),
    ("file-of-comments", "// a\n\n\n/* b */\n", "// a\n\n/* b */\n"),
    (
        "comments-in-types-and-params",
        "fn f(x: /* t */ f32[N /* n */], y: &mut /* m */ f32) {}",
        "fn f(x: /* t */ f32[N /* n */], y: &mut /* m */ f32) {}\n",
    ),
]


@pytest.mark.parametrize(
    ("src", "want"), [c[1:] for c in COMMENT_CASES], ids=[c[0] for c in COMMENT_CASES]
)
def test_comments(src: str, want: str) -> None:
    assert fmt(src) == want
    assert_good(src)


# --- width -------------------------------------------------------------------------


def test_call_that_fits_exactly_stays_on_one_line() -> None:
    arg = "a" * 80
    line = f"    call({arg}, bbbbbbb);"  # 100 columns
    assert len(line) == 100
    assert fmt(f"fn f() {{ call({arg}, bbbbbbb); }}") == f"fn f() {{\n{line}\n}}\n"
    assert fmt(f"fn f() {{ call({arg}, bbbbbbbb); }}") == (
        f"fn f() {{\n    call(\n        {arg},\n        bbbbbbbb,\n    );\n}}\n"
    )


def test_long_signature_breaks_parameters_not_types() -> None:
    src = (
        "pub fn price_calls[N](spot: &f64[N], strike: &f64[N], vol: &f64[N], rate: f64, "
        "years: f64) -> f64[N] { spot }"
    )
    assert fmt(src) == (
        "pub fn price_calls[N](\n    spot: &f64[N],\n    strike: &f64[N],\n    vol: &f64[N],\n"
        "    rate: f64,\n    years: f64,\n) -> f64[N] {\n    spot\n}\n"
    )


def test_long_binary_breaks_before_operators() -> None:
    src = (
        "fn f() { let total = first_weight * first_value + second_weight * second_value "
        "+ third_weight * third_value + bias; }"
    )
    assert fmt(src) == (
        "fn f() {\n    let total = first_weight * first_value\n        + second_weight * "
        "second_value\n        + third_weight * third_value\n        + bias;\n}\n"
    )


def test_nested_lists_break_outside_in() -> None:
    src = (
        "fn f() { outer(first_argument_value, inner(a, b), Point { x: 1.0, y: 2.0 }, "
        "[1.0, 2.0, 3.0], the_tail_argument); }"
    )
    assert fmt(src) == (
        "fn f() {\n    outer(\n        first_argument_value,\n        inner(a, b),\n"
        "        Point { x: 1.0, y: 2.0 },\n        [1.0, 2.0, 3.0],\n        the_tail_argument,\n"
        "    );\n}\n"
    )
    assert fmt(src, width=30) == (
        "fn f() {\n    outer(\n        first_argument_value,\n        inner(a, b),\n"
        "        Point {\n            x: 1.0,\n            y: 2.0,\n        },\n"
        "        [1.0, 2.0, 3.0],\n        the_tail_argument,\n    );\n}\n"
    )


def test_long_condition_puts_brace_on_its_own_line() -> None:
    src = (
        "fn f() { if first_condition_value > threshold_value && second_condition_value "
        "< other_threshold || the_flag_value { go(); } }"
    )
    assert fmt(src) == (
        "fn f() {\n    if first_condition_value > threshold_value && second_condition_value"
        " < other_threshold\n        || the_flag_value\n    {\n        go();\n    }\n}\n"
    )


@pytest.mark.parametrize("width", [100, 60, 30, 10])
def test_width_snapshot_is_stable_at_every_width(width: int) -> None:
    src = (CASES_DIR / "width.kera").read_text()
    r = assert_good(src, width)
    if width == 100:
        for line in r.text.splitlines():
            assert len(line) <= 100


# --- file snapshots -------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", sorted(p.name[: -len(".kera")] for p in CASES_DIR.glob("*.kera")
                   if not p.name.endswith(".expected.kera"))
)  # fmt: skip
def test_file_snapshot(name: str) -> None:
    """tests/fmt_cases/NAME.kera formats to NAME.expected.kera (regenerate with
    KERA_UPDATE_FMT_SNAPSHOTS=1)."""
    src = (CASES_DIR / f"{name}.kera").read_text()
    expected = CASES_DIR / f"{name}.expected.kera"
    out = assert_good(src).text
    if UPDATE:
        expected.write_text(out)
    assert out == expected.read_text()


# --- refusals and the safety net ------------------------------------------------------


@pytest.mark.parametrize(
    "src",
    ["fn f() { let x = ; }", "fn f( {", "struct S { x: }", 'fn f() { "open }', "fn f() { @ }"],
)
def test_syntax_errors_are_refused(src: str) -> None:
    r = format_text(src)
    assert r.text == src
    assert not r.changed and not r.edits
    assert [d.code for d in r.diagnostics] == ["K0602"]


def test_the_safety_net_refuses_to_lose_a_comment(monkeypatch: pytest.MonkeyPatch) -> None:
    import kera_core.fmt.rules as rules

    monkeypatch.setattr(rules, "trail_doc", lambda cms, space_before=True: "")
    src = "fn f() {\n    a(); // keep me\n}\n"
    r = format_text(src)
    assert r.text == src and not r.changed
    assert [d.code for d in r.diagnostics] == ["K0601"]


def test_the_safety_net_refuses_a_changed_program(monkeypatch: pytest.MonkeyPatch) -> None:
    import kera_core.fmt as fmt_api

    real = fmt_api.print_doc
    monkeypatch.setattr(fmt_api, "print_doc", lambda doc, w: real(doc, w).replace("a", "b"))
    src = "fn f() { a(); }\n"
    r = format_text(src)
    assert r.text == src
    assert [d.code for d in r.diagnostics] == ["K0601"]


def test_the_safety_net_refuses_output_that_does_not_parse(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import kera_core.fmt.exprs as exprs

    monkeypatch.setattr(exprs, "first_token_kind", lambda green: None)  # `& &x` -> `&&x`
    src = "fn f() { let r = & &x; }"
    r = format_text(src)
    assert r.text == src
    assert [d.code for d in r.diagnostics] == ["K0601"]
    assert "would not parse" in r.diagnostics[0].message


def test_unchanged_input_reports_no_change() -> None:
    src = "fn f() {}\n"
    r = format_text(src)
    assert r.text == src and not r.changed and not r.edits and r.ok


def test_check_formatted() -> None:
    assert check_formatted("fn f() {}\n") == []
    (d,) = check_formatted("fn f() {}\n\n\nfn g() {}\n")
    assert d.code == "K0603" and d.fix is not None
    assert [x.code for x in check_formatted("fn f( {")] == ["K0602"]


def test_edit_turns_input_into_output() -> None:
    src = "// héllo wörld\nfn  f(){ g( ) ; }  \n"
    r = format_text(src)
    data = encode(src)
    (e,) = r.edits
    assert (data[: e.span.start] + encode(e.new_text) + data[e.span.end :]).decode() == r.text


# --- range formatting -----------------------------------------------------------------

RANGE_SRC = """fn a( x:f32 ) {
    let y=x+1.0;
    if y>2.0 { return y; }
        let   z = y*2.0;  // keep
    z
}

fn   b() {   foo( 1,2 ); }
"""


def _span_of(needle: str, length: int | None = None) -> Span:
    start = encode(RANGE_SRC).index(encode(needle))
    return Span(start, start + (len(encode(needle)) if length is None else length))


def _apply(text: str, r: FormatResult) -> str:
    data = encode(text)
    for e in reversed(r.edits):
        data = data[: e.span.start] + encode(e.new_text) + data[e.span.end :]
    return data.decode()


def test_range_formats_only_the_statement_under_the_cursor() -> None:
    r = format_range(RANGE_SRC, _span_of("let y", 0))
    assert r.ok and r.changed
    assert r.text == RANGE_SRC.replace("let y=x+1.0;", "let y = x + 1.0;")
    assert _apply(RANGE_SRC, r) == r.text


def test_range_covering_two_statements() -> None:
    r = format_range(RANGE_SRC, _span_of("y>2.0 { return y; }\n        let"))
    assert r.text == RANGE_SRC.replace(
        "if y>2.0 { return y; }\n        let   z = y*2.0;  // keep",
        "if y > 2.0 {\n        return y;\n    }\n    let z = y * 2.0; // keep",
    )
    assert _apply(RANGE_SRC, r) == r.text


def test_range_in_a_signature_formats_the_whole_item() -> None:
    r = format_range(RANGE_SRC, _span_of("x:f32", 0))
    formatted_a = fmt(RANGE_SRC).split("\n\n")[0] + "\n"
    assert r.text.startswith(formatted_a)
    assert r.text.endswith("\nfn   b() {   foo( 1,2 ); }\n")  # the other item is untouched
    (e,) = r.edits
    assert e.span.end <= _span_of("fn   b").start


def test_range_over_the_file_matches_format_text() -> None:
    r = format_range(RANGE_SRC, Span(0, len(encode(RANGE_SRC))))
    assert r.text == fmt(RANGE_SRC)


def test_range_in_whitespace_changes_nothing() -> None:
    blank = RANGE_SRC.index("}\n\nfn") + 2
    r = format_range(RANGE_SRC, Span(blank, blank))
    assert r.ok and not r.changed and not r.edits and r.text == RANGE_SRC


def test_range_ignores_errors_elsewhere_but_not_inside() -> None:
    src = "fn a() { let x=1; }\n\nfn b() { let = ; }\n"
    ok = format_range(src, Span(10, 10))
    assert ok.ok and ok.text == src.replace("let x=1;", "let x = 1;")
    bad = format_range(src, Span(src.index("let ="), src.index("let =")))
    assert [d.code for d in bad.diagnostics] == ["K0602"] and bad.text == src


def test_range_keeps_crlf() -> None:
    src = "fn a() {\r\n    if x { y(); }\r\n}\r\n"
    r = format_range(src, Span(src.index("if"), src.index("if")))
    assert r.text == "fn a() {\r\n    if x {\r\n        y();\r\n    }\r\n}\r\n"


# --- the examples ---------------------------------------------------------------------

FIXTURES = [  # used when examples/ is empty
    "// header\n\n/// doc\npub fn f[N](x: &f32[N]) -> f32 {\n    let mut s = 0.0;\n"
    "    for i in 0..N {\n        s += x[i]; // accumulate\n    }\n    s\n}\n",
]


@pytest.mark.parametrize(
    "path", EXAMPLES or [None], ids=lambda p: str(p.relative_to(ROOT / "examples")) if p else "fixtures"
)  # fmt: skip
def test_examples_are_stable_and_keep_comments(path: Path | None) -> None:
    sources = [path.read_text(encoding="utf-8")] if path else FIXTURES
    for src in sources:
        r = assert_good(src)
        assert all(len(line) <= 100 for line in r.text.splitlines() if "//" not in line)


# --- deep and long input ----------------------------------------------------------------

DEEP = {
    "parens": "fn f() { let x = " + "(" * 90 + "x" + ")" * 90 + "; }",
    "blocks": "fn f() { " + "{ " * 90 + "x" + " }" * 90 + " }",
    "calls": "fn f() { let x = " + "f(" * 90 + "x" + ")" * 90 + "; }",
    "arrays": "fn f() { let x = " + "[" * 90 + "x" + "]" * 90 + "; }",
    "negations": "fn f() { let x = " + "- " * 90 + "x; }",
    "ref-types": "fn f(x: " + "& " * 80 + "f32) {}",
    "field-chain": "fn f() { let x = a" + ".b" * 3000 + "; }",
    "call-chain": "fn f() { let x = a" + "()" * 2000 + "; }",
    "cast-chain": "fn f() { let x = a" + " as f32" * 2000 + "; }",
    "sum": "fn f() { let x = a" + " + a" * 3000 + "; }",
    "mixed": "fn f() { let x = a" + " * b + c" * 1000 + "; }",
    "else-if": "fn f() { if a { x; } " + "else if b { y; } " * 40 + "else { z; } }",
    "many-statements": "fn f() { " + "x = 1; " * 1500 + "}",
}


@pytest.mark.parametrize("src", DEEP.values(), ids=DEEP.keys())
def test_deep_and_long_input(src: str) -> None:
    assert not parse(src).has_errors
    assert_good(src)


# --- property tests over random programs -----------------------------------------------

NAMES = ["a", "b", "x", "y", "n", "foo", "bar_1", "a_rather_long_identifier_for_width"]
TYPE_NAMES = ["f32", "f64", "i32", "u8", "Point", "bool"]
BIN_OPS = ["+", "-", "*", "/", "%", "&&", "||", "&", "|", "^", "<<", ">>"]
CMP_OPS = ["<", "<=", ">", ">=", "==", "!="]
ASSIGN_OPS = ["=", "+=", "-=", "*=", "/="]
SAFE_STMT_START = {"let", "if", "for", "while", "return", "break", "continue", "{", "!"}
SEPARATORS = (
    [" "] * 5
    + ["", "", "\n", "\n    ", "\n\n", "\n\n\n", "\t"]
    + [
        " /* c */ ",
        "/* c */",
        " // c\n",
        "// c\n",
        "\n// c\n",
        "\n\n// c\n\n",
        "\n/* c\n   more */\n",
        " /* a /* nested */ b */ ",
        "\n/// doc c\n",
    ]
)


def _parens(toks: list[str]) -> list[str]:
    return ["(", *toks, ")"]


def _commas(draw, elems: list[list[str]], trailing_ok: bool = True) -> list[str]:
    toks: list[str] = []
    for i, e in enumerate(elems):
        toks += ([","] if i else []) + e
    if elems and trailing_ok and draw(st.integers(0, 3)) == 0:
        toks.append(",")
    return toks


@st.composite
def types(draw, depth: int = 0) -> list[str]:
    r = draw(st.integers(0, 10 if depth < 2 else 4))
    if r <= 3:
        return [draw(st.sampled_from(TYPE_NAMES))]
    if r <= 5:
        dims = draw(st.lists(st.sampled_from(["N", "4", "M"]), min_size=1, max_size=3))
        return [draw(st.sampled_from(TYPE_NAMES)), "[", *_commas(draw, [[d] for d in dims]), "]"]
    if r == 6:
        return ["(", ")"]
    if r <= 8:
        return ["&"] + (["mut"] if draw(st.booleans()) else []) + draw(types(depth + 1))
    if r == 10:  # a tuple type: one element needs its comma
        elems = draw(st.lists(types(depth + 1), min_size=1, max_size=3))
        toks = ["(", *_commas(draw, elems)]
        return toks + ([","] if len(elems) == 1 and toks[-1] != "," else []) + [")"]
    inner = draw(types(depth + 1))
    return inner if "@" in inner else inner + ["@", draw(st.sampled_from(["device", "host"]))]


@st.composite
def exprs(draw, depth: int = 0, no_struct: bool = False) -> tuple[list[str], str]:
    """(tokens, shape) with shape in atom/cmp/bin/block/assign/other."""
    r = draw(st.integers(0, 6 if depth >= 3 else 24))
    if r <= 2:
        return [draw(st.sampled_from(NAMES))], "atom"
    if r <= 4:
        lits = ["1", "0", "42", "1.5", "2.0e3", "0xff", "1_000", '"s"', "true", "false"]
        return [draw(st.sampled_from(lits))], "atom"
    if r <= 6:
        return [draw(st.sampled_from(NAMES)), ".", draw(st.sampled_from(NAMES))], "atom"

    def sub(ns: bool = no_struct) -> tuple[list[str], str]:
        return draw(exprs(depth + 1, ns))

    if r <= 9:
        op = draw(st.sampled_from(BIN_OPS + CMP_OPS))
        (lt, lk), (rt, rk) = sub(), sub()
        wrap = ("cmp", "bin", "block", "assign") if op in CMP_OPS else ("cmp", "block", "assign")
        lt = _parens(lt) if lk in wrap else lt
        rt = _parens(rt) if rk in wrap else rt
        return lt + [op] + rt, "cmp" if op in CMP_OPS else "bin"
    if r == 10:
        t, k = sub()
        op = draw(st.sampled_from(["-", "!", "&", "&mut"]))
        return [op] + (t if k == "atom" else _parens(t)), "other"
    if r <= 12:
        args = draw(st.lists(exprs(depth + 1), max_size=4))
        name = draw(st.sampled_from(NAMES))
        return [name, "(", *_commas(draw, [a for a, _ in args]), ")"], "atom"
    if r == 13:
        args = draw(st.lists(exprs(depth + 1), min_size=1, max_size=3))
        name = draw(st.sampled_from(NAMES))
        return [name, "[", *_commas(draw, [a for a, _ in args]), "]"], "atom"
    if r == 14:
        t, k = sub()
        return (t if k == "atom" else _parens(t)) + ["as"] + draw(types()), "other"
    if r == 15:
        return _parens(sub()[0]), "atom"
    if r == 16:
        elems = draw(st.lists(exprs(depth + 1), max_size=5))
        return ["[", *_commas(draw, [a for a, _ in elems]), "]"], "atom"
    if r == 17:
        fields = draw(st.lists(st.tuples(st.sampled_from(NAMES), exprs(depth + 1)), max_size=3))
        toks = [draw(st.sampled_from(["Point", "S"])), "{"]
        toks += [*_commas(draw, [[n, ":", *e] for n, (e, _) in fields]), "}"]
        return (_parens(toks) if no_struct else toks), "atom"
    if r <= 19:
        c, a, b = sub(True)[0], sub()[0], sub()[0]
        return ["if", *c, "{", *a, "}", "else", "{", *b, "}"], "block"
    if r == 20:
        return draw(blocks(depth + 1)), "block"
    if r == 21:
        t, k = sub()
        return [draw(st.sampled_from(NAMES)), draw(st.sampled_from(ASSIGN_OPS)), *t], "assign"
    if r == 22:  # a tuple: one element needs its comma
        elems = [e for e, _ in draw(st.lists(exprs(depth + 1), min_size=1, max_size=4))]
        toks = ["(", *_commas(draw, elems)]
        return toks + ([","] if len(elems) == 1 and toks[-1] != "," else []) + [")"], "atom"
    if r == 23:
        return [draw(st.sampled_from(NAMES)), ".", draw(st.sampled_from(["0", "1", "12"]))], "atom"
    t, k = sub()
    return (t if k == "atom" else _parens(t)) + [".", draw(st.sampled_from(NAMES))], "atom"


@st.composite
def patterns(draw, depth: int = 0) -> list[str]:
    """A tuple pattern: `(a, mut b, _, (c,))`."""
    elems = []
    for _ in range(draw(st.integers(0, 3))):
        if depth < 2 and draw(st.integers(0, 3)) == 0:
            elems.append(draw(patterns(depth + 1)))
        else:
            name = draw(st.sampled_from([*NAMES, "_"]))
            elems.append((["mut"] if draw(st.booleans()) else []) + [name])
    toks = ["(", *_commas(draw, elems)]
    return toks + ([","] if len(elems) == 1 and toks[-1] != "," else []) + [")"]


@st.composite
def statements(draw, depth: int) -> tuple[list[str], bool]:
    """(tokens, block-like)."""
    r = draw(st.integers(0, 12 if depth < 3 else 7))
    if r <= 1:
        if draw(st.integers(0, 3)) == 0:
            toks = ["let", *draw(patterns())]
        else:
            toks = ["let"] + (["mut"] if draw(st.booleans()) else [])
            toks.append(draw(st.sampled_from(NAMES)))
        if draw(st.booleans()):
            toks += [":", *draw(types())]
        if draw(st.integers(0, 4)):
            toks += ["=", *draw(exprs(depth))[0]]
        return toks + [";"], False
    if r <= 3:
        t, k = draw(exprs(depth))
        return (_parens(t) if k == "block" else t) + [";"], False
    if r == 4:
        op = draw(st.sampled_from(ASSIGN_OPS))
        return [draw(st.sampled_from(NAMES)), op, *draw(exprs(depth))[0], ";"], False
    if r == 5:
        value = draw(exprs(depth))[0] if draw(st.booleans()) else []
        return ["return", *value, ";"], False
    if r == 6:
        kw = draw(st.sampled_from(["break", "continue", ";"]))
        return ([kw, ";"] if kw != ";" else [";"]), False
    if r == 7:
        return [draw(st.sampled_from(NAMES)), "(", ")", ";"], False
    if r <= 9:
        toks = ["if", *draw(exprs(depth + 1, True))[0], *draw(blocks(depth + 1))]
        while draw(st.integers(0, 2)) == 0:
            toks += ["else", "if", *draw(exprs(depth + 1, True))[0], *draw(blocks(depth + 1))]
        if draw(st.booleans()):
            toks += ["else", *draw(blocks(depth + 1))]
        return toks, True
    if r == 10:
        return ["while", *draw(exprs(depth + 1, True))[0], *draw(blocks(depth + 1))], True
    if r == 11:
        lo, hi = draw(exprs(depth + 2, True))[0], draw(exprs(depth + 2, True))[0]
        lo, hi = (_parens(lo) if len(lo) > 1 else lo), (_parens(hi) if len(hi) > 1 else hi)
        op = draw(st.sampled_from(["..", "..="]))
        name = draw(st.sampled_from(NAMES))
        return ["for", name, "in", *lo, op, *hi, *draw(blocks(depth + 1))], True
    return draw(blocks(depth + 1)), True


@st.composite
def blocks(draw, depth: int = 0) -> list[str]:
    stmts = draw(st.lists(statements(depth), max_size=5 if depth < 2 else 2))
    toks = ["{"]
    for i, (s, block_like) in enumerate(stmts):
        toks += s
        if block_like:
            nxt = stmts[i + 1][0][0] if i + 1 < len(stmts) else "}"
            if nxt not in SAFE_STMT_START and not nxt[0].isalnum() and nxt[0] != '"':
                toks.append(";")  # `if c {} -x` would be one expression
            elif draw(st.integers(0, 3)) == 0:
                toks.append(";")
    if draw(st.booleans()):
        t, k = draw(exprs(depth))
        if k == "block" and stmts and stmts[-1][1] and toks[-1] != ";":
            toks.append(";")
        toks += _parens(t) if k == "assign" else t
    return toks + ["}"]


@st.composite
def items(draw) -> list[str]:
    toks = ["pub"] if draw(st.integers(0, 3)) == 0 else []
    r = draw(st.integers(0, 5))
    name = draw(st.sampled_from(NAMES))
    if r <= 3:
        toks += ["fn", name]
        if draw(st.booleans()):
            dims = draw(st.lists(st.sampled_from(["N", "M", "K"]), min_size=1, max_size=3))
            toks += ["[", *_commas(draw, [[d] for d in dims]), "]"]
        params = draw(
            st.lists(st.tuples(st.booleans(), st.sampled_from(NAMES), types()), max_size=4)
        )
        toks += ["(", *_commas(draw, [(["mut"] if m else []) + [n, ":", *t] for m, n, t in params])]
        toks.append(")")
        if draw(st.booleans()):
            toks += ["->", *draw(types())]
        if draw(st.booleans()):
            effects = draw(
                st.lists(st.sampled_from(["io", "alloc", "gpu"]), min_size=1, max_size=3)
            )
            toks += ["!", *_commas(draw, [[e] for e in effects], trailing_ok=False)]
        return toks + draw(blocks())
    if r == 4:
        fields = draw(
            st.lists(st.tuples(st.booleans(), st.sampled_from(NAMES), types()), max_size=4)
        )
        toks += ["struct", name, "{"]
        toks += _commas(draw, [(["pub"] if p else []) + [n, ":", *t] for p, n, t in fields])
        return toks + ["}"]
    return toks + ["const", name.upper(), ":", *draw(types()), "=", *draw(exprs())[0], ";"]


PLAIN_SEPARATORS = [s for s in SEPARATORS if "/" not in s]


@st.composite
def programs(draw, comments: bool = True) -> str:
    """A well-formed program with random whitespace (and comments) between its tokens."""
    toks = [t for item in draw(st.lists(items(), min_size=1, max_size=4)) for t in item]
    pool = SEPARATORS if comments else PLAIN_SEPARATORS
    seps = draw(st.lists(st.sampled_from(pool), min_size=len(toks), max_size=len(toks)))
    for i, s in enumerate(seps):  # number the comments so that reordering shows
        seps[i] = s.replace("/ c", f"/ c{i}").replace("* c", f"* c{i}")
    text = "".join(t + s for t, s in zip(toks, seps, strict=True))
    lexed = lex(text)
    if [t for k, t in zip(lexed.kinds, lexed.texts, strict=True) if not k.is_trivia] != toks:
        # an empty separator glued two tokens into one: put spaces there
        text = "".join(t + (s or " ") for t, s in zip(toks, seps, strict=True))
    if draw(st.integers(0, 3)) == 0:
        text = text.replace("\n", "\r\n")
    return text


@FMT_SETTINGS
@given(programs(), st.sampled_from([100, 40, 20]))
def test_random_programs(src: str, width: int) -> None:
    assume(not parse(src).has_errors)
    r = assert_good(src, width)
    assert "\r" not in r.text
    if "/*" not in r.text:
        assert all(line == line.rstrip() for line in r.text.split("\n"))


@FMT_SETTINGS
@given(st.one_of(programs(), programs(comments=False)), st.data())
def test_random_ranges_touch_only_the_selection(src: str, data: st.DataObject) -> None:
    assume(not parse(src).has_errors)
    n = len(encode(src))
    a = data.draw(st.integers(0, n))
    b = data.draw(st.integers(a, min(n, a + 200)))
    r = format_range(src, Span(a, b))
    assert not r.diagnostics, r.diagnostics
    assert _apply(src, r) == r.text
    assert comment_texts(src) == comment_texts(r.text)
    if r.changed:
        assert not parse(r.text).has_errors
        (e,) = r.edits
        # items away from the selection are not touched
        for item in parse(src).tree.children():
            if item.span.end < a or item.span.start > b:
                assert e.span.end <= item.span.start or e.span.start >= item.span.end
    full = format_text(r.text)
    assert full.ok and format_text(full.text).text == full.text
    if not comment_texts(src):
        # Formatting the whole file afterwards gives the same as formatting it directly.
        # (Only without comments: where a comment goes depends on the layout around it,
        # so the two routes may settle on different, equally stable, placements.)
        assert full.text == format_text(src).text
