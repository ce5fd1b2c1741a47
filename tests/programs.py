"""A generator of random well-typed Kera programs, renderable in equivalent spellings.

A program is drawn once as a structure; ``render`` then spells it with any local
names, any item order and any layout, all of which must give the same graph.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

SCALAR_FNS = ["sum", "max", "min", "mean"]
UNARY = ["exp", "tanh", "sigmoid", "abs", "sqrt"]
OPS = ["+", "-", "*", "/"]


@dataclass(frozen=True)
class Names:
    x: str = "x"
    y: str = "y"
    a: str = "a"
    dim: str = "N"
    local: str = "v"
    loop: str = "i"
    acc: str = "acc"
    tparam: str = "T"  # the element-type parameter of a generic function


@dataclass(frozen=True)
class Layout:
    indent: str = "    "
    space: str = " "
    comments: bool = False
    blank: str = "\n"


# A statement is a tuple; expressions are tuples rendered recursively.
def scalar_expr(depth: int, n_locals: int):
    leaves = [
        st.just(("a",)),
        st.builds(
            lambda v: ("lit", v),
            st.sampled_from(["1.0", "0.5", "2.25", "3.0", "f32::PI", "f32::EPSILON", "f32::MAX"]),
        ),
    ]
    if n_locals:
        leaves.append(st.builds(lambda i: ("local", i), st.integers(0, n_locals - 1)))
    leaves.append(st.builds(lambda f: ("reduce", f), st.sampled_from(SCALAR_FNS)))
    # a reduction of a slice: `sum(&x[1..])`, `max(x[..N - 1])`, `sum(&x[..])` (value or view)
    leaves.append(
        st.builds(
            lambda f, part, by_ref: ("slice_reduce", f, part, by_ref),
            st.sampled_from(SCALAR_FNS),
            st.sampled_from(["1..", "..N - 1", "..", "1..N", "0..N"]),
            st.booleans(),
        )
    )
    leaves.append(st.just(("dot",)))
    leaf = st.one_of(*leaves)
    if depth <= 0:
        return leaf
    sub = scalar_expr(depth - 1, n_locals)
    return st.one_of(
        leaf,
        st.builds(lambda o, l, r: ("bin", o, l, r), st.sampled_from(OPS), sub, sub),
        st.builds(lambda e: ("neg", e), sub),
        st.builds(lambda c, t, f: ("if", c, t, f), sub, sub, sub),
    )


def tensor_expr(depth: int):
    leaf = st.sampled_from([("x",), ("y",)])
    if depth <= 0:
        return leaf
    sub = tensor_expr(depth - 1)
    return st.one_of(
        leaf,
        st.builds(lambda o, l, r: ("tbin", o, l, r), st.sampled_from(["+", "-", "*"]), sub, sub),
        st.builds(lambda o, e: ("tscale", o, e), st.sampled_from(["+", "*"]), sub),
        st.builds(lambda f, e: ("tunary", f, e), st.sampled_from(UNARY), sub),
    )


@st.composite
def function(draw, index: int):
    n = draw(st.integers(1, 4))
    stmts = []
    for i in range(n):
        # a plain `let`, or the same local bound through a tuple: destructured, or held in
        # a tuple variable and read by field; or from a tuple holding a tensor (moved in,
        # then borrowed by field), or from a struct holding a fixed-size tensor (`Held`), or
        # from a tensor of structs (`Pt[N]`) filled by element and by field, then iterated
        kind = draw(st.sampled_from(["let", "let", "pair", "tuple", "held", "boxed", "soa"]))
        e = draw(scalar_expr(2, i))
        if kind == "let":
            stmts.append((kind, e))
        elif kind == "held":
            t = draw(tensor_expr(1))
            if t in (("x",), ("y",)):
                t = ("tscale", "+", t)  # a borrow is not an owned element
            stmts.append((kind, e, t))
        else:
            stmts.append((kind, e, draw(scalar_expr(1, i))))
    loop = draw(st.booleans())
    call = index > 0 and draw(st.booleans())
    tensor_result = draw(st.booleans())
    tail = draw(tensor_expr(2)) if tensor_result else draw(scalar_expr(1, n))
    if tail in (("x",), ("y",)):
        tail = ("tscale", "*", tail)  # a borrow is not an owned result
    return {
        "stmts": stmts,
        "loop": loop,
        "call": draw(st.integers(0, index - 1)) if call else None,
        "tensor": tensor_result,
        "tail": tail,
        "pub": index == 0 or draw(st.booleans()),
        # `fn f<T: Float>[N](x: &T[N], …)`: f32 spelled `T`, one instance per float type
        "generic": draw(st.booleans()),
    }


@st.composite
def program(draw):
    k = draw(st.integers(1, 3))
    prog = [draw(function(i)) for i in range(k)]
    for f in prog:  # a generic body calls generic functions only (its `T` may be f64)
        if f["generic"] and f["call"] is not None and not prog[f["call"]]["generic"]:
            f["call"] = None
    return prog


def _e(e, nm: Names, sp: str, elem: str = "f32") -> str:
    """An expression; ``elem`` is how `f32` is spelled (`T` in a generic function)."""
    tag = e[0]
    if tag == "a":
        return nm.a
    if tag == "lit":
        if "::" in e[1] and elem != "f32":  # `f32::PI` is an f32: converted to `T`
            return f"({e[1]} as {elem})"
        return e[1]
    if tag == "local":
        return f"{nm.local}{e[1]}"
    if tag == "reduce":
        return f"{e[1]}(&{nm.x})"
    if tag == "slice_reduce":
        _, f, part, by_ref = e
        part = part.replace("N", nm.dim)
        return f"{f}({'&' if by_ref else ''}{nm.x}[{part}])"
    if tag == "dot":
        return f"dot(&{nm.x},{sp}&{nm.y})"
    if tag == "bin":
        return f"({_e(e[2], nm, sp, elem)}{sp}{e[1]}{sp}{_e(e[3], nm, sp, elem)})"
    if tag == "neg":
        return f"-({_e(e[1], nm, sp, elem)})"
    if tag == "if":
        return f"(if {_e(e[1], nm, sp, elem)} > 0.0 {{ {_e(e[2], nm, sp, elem)} }} else {{ {_e(e[3], nm, sp, elem)} }})"
    if tag == "x":
        return nm.x
    if tag == "y":
        return nm.y
    if tag == "tbin":
        return f"({_e(e[2], nm, sp, elem)}{sp}{e[1]}{sp}{_e(e[3], nm, sp, elem)})"
    if tag == "tscale":
        return f"({nm.a}{sp}{e[1]}{sp}{_e(e[2], nm, sp, elem)})"
    if tag == "tunary":
        return f"{e[1]}({_e(e[2], nm, sp, elem)})"
    raise AssertionError(tag)


def render_fn(i: int, f: dict, nm: Names, lay: Layout, fname=lambda i: f"f{i}") -> str:
    ind, sp = lay.indent, lay.space
    generic = f.get("generic", False)
    t = nm.tparam if generic else "f32"
    ret = f"{t}[{nm.dim}]" if f["tensor"] else t
    vis = "pub " if f["pub"] else ""
    tparams = f"<{nm.tparam}:{sp}Float>" if generic else ""
    lines = []
    if lay.comments:
        lines.append(f"/// function {i}")
    lines.append(
        f"{vis}fn {fname(i)}{tparams}[{nm.dim}]({nm.x}:{sp}&{t}[{nm.dim}],{sp}{nm.y}:{sp}"
        f"&{t}[{nm.dim}],{sp}{nm.a}:{sp}{t})"
        f"{sp}->{sp}{ret}{sp}{{"
    )
    for j, (kind, e, *more) in enumerate(f["stmts"]):
        if lay.comments:
            lines.append(f"{ind}// local {j}")
        v = f"{nm.local}{j}"
        if kind == "pair":
            two = f"({_e(e, nm, sp, t)},{sp}{_e(more[0], nm, sp, t)})"
            lines.append(f"{ind}let ({v},{sp}{v}b):{sp}({t},{sp}{t}){sp}={sp}{two};")
            lines.append(f"{ind}let {v}{sp}={sp}{v}{sp}-{sp}{v}b;")
        elif kind == "tuple":
            two = f"({_e(e, nm, sp, t)},{sp}({_e(more[0], nm, sp, t)},))"
            lines.append(f"{ind}let {v}t:{sp}({t},{sp}({t},)){sp}={sp}{two};")
            lines.append(f"{ind}let {v}{sp}={sp}{v}t.0{sp}*{sp}({v}t.1).0;")
        elif kind == "boxed" and not generic:  # `Held` holds f32: a plain `let` in a generic
            lines.append(
                f"{ind}let mut {v}h{sp}={sp}Held{sp}{{ t:{sp}zeros(),{sp}s:{sp}{_e(more[0], nm, sp, t)} }};"
            )
            lines.append(f"{ind}{v}h.t[1]{sp}={sp}{_e(e, nm, sp, t)};")
            lines.append(f"{ind}let {v}{sp}={sp}sum(&{v}h.t){sp}*{sp}{v}h.s;")
        elif kind == "soa" and not generic:  # `Pt` holds f32: a plain `let` in a generic
            ps, lp = f"{v}s", nm.loop
            lines.append(f"{ind}let mut {ps}:{sp}Pt[{nm.dim}]{sp}={sp}zeros();")
            lines.append(f"{ind}for {lp} in 0..{nm.dim}{sp}{{")
            lines.append(
                f"{ind}{ind}{ps}[{lp}]{sp}={sp}Pt{sp}{{ p:{sp}{nm.x}[{lp}],{sp}q:{sp}{_e(e, nm, sp, t)} }};"
            )
            lines.append(f"{ind}{ind}{ps}[{lp}].p{sp}*={sp}{_e(more[0], nm, sp, t)};")
            lines.append(f"{ind}}}")
            lines.append(f"{ind}let mut {v}a:{sp}{t}{sp}={sp}0.0;")
            lines.append(f"{ind}for {lp} in &{ps}{sp}{{")
            lines.append(f"{ind}{ind}{v}a{sp}+={sp}{lp}.p{sp}*{sp}{lp}.q;")
            lines.append(f"{ind}}}")
            lines.append(f"{ind}let {v}{sp}={sp}{v}a;")
        elif kind == "held":
            two = f"({_e(more[0], nm, sp, t)},{sp}{_e(e, nm, sp, t)})"
            lines.append(f"{ind}let {v}h:{sp}({t}[{nm.dim}],{sp}{t}){sp}={sp}{two};")
            lines.append(f"{ind}let {v}{sp}={sp}sum(&{v}h.0){sp}*{sp}{v}h.1;")
        else:
            lines.append(f"{ind}let {v}:{sp}{t}{sp}={sp}{_e(e, nm, sp, t)};")
    if f["loop"]:
        lines.append(f"{ind}let mut {nm.acc}:{sp}{t}{sp}={sp}0.0;")
        lines.append(f"{ind}for {nm.loop} in 0..{nm.dim}{sp}{{")
        lines.append(f"{ind}{ind}{nm.acc}{sp}+={sp}{nm.x}[{nm.loop}]{sp}*{sp}{nm.a};")
        lines.append(f"{ind}}}")
    if f["call"] is not None:
        callee = f["call"]
        lines.append(f"{ind}let {nm.local}c{sp}={sp}{fname(callee)}({nm.x},{sp}{nm.y},{sp}{nm.a});")
    lines.append(f"{ind}{_e(f['tail'], nm, sp, t)}")
    lines.append("}")
    return "\n".join(lines)


HELD = "struct Held { t: f32[2], s: f32 }"  # for the `boxed` statements
PT = "struct Pt { p: f32, q: f32 }"  # for the `soa` statements: `Pt[N]`


def render(prog: list[dict], nm: Names = Names(), lay: Layout = Layout(), order=None) -> str:
    order = order if order is not None else list(range(len(prog)))
    parts = [render_fn(i, prog[i], nm, lay) for i in order]
    if any(k == "boxed" for f in prog for k, *_ in f["stmts"]):
        parts.insert(0, HELD)
    if any(k == "soa" and not f.get("generic") for f in prog for k, *_ in f["stmts"]):
        parts.insert(0, PT)
    return (lay.blank + "\n").join(parts) + "\n"
