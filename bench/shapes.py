"""Generated programs of one shape each, sized by ``n``: one per expression, statement
and type form. The depth tests (tests/test_depth.py) and the scaling benchmark
(bench/scaling.py) share them.

``NESTED`` forms nest brackets, blocks or prefixes (the parser caps them at MAX_DEPTH,
K0108); ``CHAINS`` are long flat sequences that build deep trees without nesting
(binary operators, postfix chains, `else if` ladders) or long lists.
"""

from __future__ import annotations


def fn(body: str, params: str = "a: i64", ret: str = "i64", pre: str = "") -> str:
    return f"{pre}pub fn f({params}) -> {ret} {{\n    {body}\n}}\n"


def nest(open_: str, close: str, inner: str, n: int) -> str:
    return open_ * n + inner + close * n


S = "struct S { s: i64 }\n"
T = "struct T { t: T2 }\nstruct T2 { v: i64 }\n"

NESTED = {
    "paren": lambda n: fn(nest("(", ")", "a", n)),
    "call": lambda n: fn(nest("g(", ")", "a", n), pre="fn g(a: i64) -> i64 { a }\n"),
    "neg": lambda n: fn("- " * n + "a"),
    "not": lambda n: fn("!" * n + "true", ret="bool"),
    "ref": lambda n: fn("let r = " + "& " * n + "a;\n    a"),
    "block": lambda n: fn(nest("{ ", " }", "a", n)),
    "if": lambda n: fn(nest("if a > 0 { ", " } else { 0 }", "a", n)),
    "rightbin": lambda n: fn(nest("a + (", ")", "a", n)),
    "cmp": lambda n: fn(nest("(a < ", ")", "a", n), ret="bool"),
    "index": lambda n: fn(nest("x[", "]", "0", n), "x: i64[4]"),
    "array": lambda n: fn("let x = " + nest("[", "]", "a", n) + ";\n    a"),
    "struct": lambda n: fn(nest("S { s: ", " }", "a", n), pre=S),
    "for": lambda n: fn(nest("for i in 0..4 { ", " }", "", n) + "\n    a"),
    "while": lambda n: fn(nest("while a > 0 { ", " }", "", n) + "\n    a"),
    "loop": lambda n: fn(nest("loop { ", " break; }", "", n) + "\n    a"),
    "match": lambda n: fn(nest("match a { 0 => ", ", _ => 1 }", "a", n)),
    "return": lambda n: fn("return " * n + "a"),
    "tyref": lambda n: fn("a", "a: i64, b: " + "& " * n + "f32"),
    "unclosed_paren": lambda n: fn("(" * n + "a"),
    "unclosed_block": lambda n: "fn f() {" + "{" * n,
    "unclosed_index": lambda n: fn("x[" * n, "x: i64[4]"),
}

CHAINS = {
    "add": lambda n: fn(" + ".join(["a"] * n)),
    "mul": lambda n: fn(" * ".join(["a"] * n)),
    "and": lambda n: fn(" && ".join(["a > 0"] * n), ret="bool"),
    "or": lambda n: fn(" || ".join(["a > 0"] * n), ret="bool"),
    "const": lambda n: fn(" + ".join(["1"] * n)),
    "field": lambda n: fn("s" + ".s" * n + ".v", "s: S", pre=S),
    "postfix_index": lambda n: fn("x" + "[0]" * n, "x: i64[4]"),
    "cast": lambda n: fn("a" + " as i64" * n),
    "calls": lambda n: fn(" + ".join(["g(a)"] * n), pre="fn g(a: i64) -> i64 { a }\n"),
    "else_if": lambda n: fn(
        "if a == 0 { 0 } "
        + "".join(f"else if a == {i} {{ {i} }} " for i in range(1, n))
        + "else { 1 }"
    ),
    "index_list": lambda n: fn("x[" + ", ".join(["0"] * n) + "]", "x: i64[4]"),
    "args": lambda n: fn("g(" + ", ".join(["a"] * n) + ")", pre="fn g(a: i64) -> i64 { a }\n"),
    "array_long": lambda n: fn("let x = [" + ", ".join(["a"] * n) + "];\n    a"),
    "lets": lambda n: fn("".join(f"let v{i} = a;\n    " for i in range(n)) + "a"),
    "let_chain": lambda n: fn(
        "let v0 = a;\n    "
        + "".join(f"let v{i} = v{i - 1} + 1;\n    " for i in range(1, n))
        + f"v{n - 1}"
    ),
    "assign": lambda n: fn("let mut m = a;\n    " + "m = m + 3;\n    " * n + "m"),
    "shape": lambda n: fn("a", "a: i64, b: f32" + "[2]" * n),
    "range": lambda n: fn("for i in " + "0.." * n + "4 { }\n    a"),
    "fns": lambda n: "".join(f"pub fn f{i}(a: i64) -> i64 {{ a + {i} }}\n" for i in range(n)),
    "lets_ifs": lambda n: fn(
        "let mut m = a;\n    "
        + "".join(f"let v{i} = m;\n    if v{i} > {i} {{ m = m + 1; }}\n    " for i in range(n))
        + "m"
    ),
    "loops": lambda n: fn("let mut m = a;\n    " + "for i in 0..4 { m = m + i; }\n    " * n + "m"),
    "call_seq": lambda n: (
        "pub fn f0(a: i64) -> i64 { a }\n"
        + "".join(f"pub fn f{i}(a: i64) -> i64 {{ f{i - 1}(a) }}\n" for i in range(1, n))
    ),
    # constants naming the one before (once, and twice: the latter was exponential)
    "const_chain": lambda n: (
        "const C0: i64 = 1;\n"
        + "".join(f"const C{i}: i64 = C{i - 1} + {i};\n" for i in range(1, n))
        + fn(f"a + C{n - 1}")
    ),
    "const_twice": lambda n: (
        "const C0: i64 = 1;\n"
        + "".join(f"const C{i}: i64 = C{i - 1} + C{i - 1};\n" for i in range(1, n))
        + fn(f"a + C{n - 1}")
    ),
    "match_arms": lambda n: fn(
        "match a {\n"
        + "".join(f"        {i} => {i % 7},\n" for i in range(n))
        + "        _ => 0,\n    }"
    ),
    "match_alts": lambda n: fn(
        "match a { " + " | ".join(str(i) for i in range(n)) + " => 1, _ => 0 }"
    ),
    "table": lambda n: (
        f"const T: i64[{n}] = ["
        + ", ".join(str(i % 9) for i in range(n))
        + "];\n"
        + fn(f"T[a % {n}]")
    ),
    "struct_chain": lambda n: (
        "".join(f"struct S{i} {{ a: S{i + 1} }}\n" for i in range(n))
        + f"struct S{n} {{ a: i64 }}\n"
        + fn("a", "a: i64, s: S0")
    ),
}


DEEP_CHAINS = frozenset(
    {"add", "mul", "and", "or", "const", "field", "postfix_index", "cast", "calls", "else_if"}
    | {"let_chain", "assign", "range"}
)
"""The chains that make a deep syntax tree or a deep graph (the rest are long, not deep)."""
