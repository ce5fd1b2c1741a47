"""A generator of random well-typed *imperative* Kera programs.

`tests/programs.py` draws expression-style functions; this module draws the shapes the
wasm backend's loop lowering cares about: `let mut` tensors (`zeros()`, `full(v)`, copies
`x * 1.0`) carried through `for` loops (`0..N`, `1..N`, `0..N - 1`, `0..=N - 1`,
`N / 2..N`, reversed and stepped ranges `(0..N).rev()`, `(0..N).step_by(k)`,
`(0..N - 1).step_by(k).rev()`, `(N / 2..N).rev().step_by(k)` — `k` constant, a positive
expression, larger than `N`, or rarely `N % 3` (0: R0011) —, constant round counts),
element loops `for v in y` / `&y` / `(expression)` (whose body never assigns `y`: it is
borrowed for the loop) and `while` loops with a counter, nested loops,
element updates at the induction variable and at other indices (`y[0]`, `y[N - 1 - i]`),
updates under `if`/`else` (branches that update, that do nothing, that reassign the
whole tensor), old values read before and after updates, elementwise temporaries used
once or twice, reductions (`sum`/`mean`/`dot`/`max`/`min`) inside and outside loops,
structs (scalar fields and a nested struct) rebuilt or field-updated each iteration,
scalar accumulators, tuples (built, read with `.0`/`.1`, taken apart by `let` patterns with
`mut` and `_`, nested, and returned by functions whose callers destructure them), calls to
earlier functions (by `&` and `&mut`, a `&mut` parameter passed on by name), borrows held
in variables (`let r = &mut y;` written and passed through while `y` goes unnamed,
`let v = &y;` read), views of whole tensors in their place (`&mut y[..]`, `&y[0..N]`,
`&mut y[..N]`) and one-element slices written (`y[i..i + 1] += v`), `swap` of two tensors (owned or `&mut`) or two scalars, early exits
(`break`, `continue`, `return` inside loops), `loop` with a `break` at its top, `match`
on an integer (literals, `p | q`, ranges, `_`) or a `bool` as a value, entries of the
constant table `TAB`, recursive helpers (one function, or two
in a cycle, with an early `return` at depth 0 — sometimes past the depth limit), `while` conditions that read carried
values, straight-line loops reading and writing only at `i` (the optimizer's `lanes`
shape, vectorised by the backend), elementwise scalar builtins, casts, comparisons and,
for `i32`, bitwise operators, shifts, `/` and `%`. Each nested block ends by adding what
it declared into a function-wide `acc` that the result depends on, and the result
depends on every top-level variable: a graph keeps only what its result needs.

Every program is drawn directly as source text. Loops are bounded: `for` loops run over
ranges inside `0..N`, over short constant ranges, or (outermost only) over the constant
`ROUNDS` (3 by default; ``render(prog, rounds=300)`` makes those loops long, for memory
tests), and every `while` loop
increments its counter first thing in its body, so `continue` cannot make it spin.
Element indices are always in range: an index is an induction variable of a loop over
a sub-range of `0..N` (or an expression of it that stays inside), or `0`/`N - 1` under a
loop or an `if N > 0` guard. Checked errors can still occur (`max`/`min`/`mean` of an
empty tensor, integer division by zero), and the test compares their codes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from hypothesis import strategies as st

ELEMS = ["f32", "f64", "i32"]


def _lit(t: str, v: float) -> str:
    if t == "i32":
        return f"{int(v)}i32"
    s = repr(float(v))
    return f"{s}{t}"


@dataclass
class Env:
    """What a block may use. Lists are copied on entering a block (`child`)."""

    t: str  # element type of every tensor and scalar of the program
    tensors: list = field(default_factory=list)  # readable tensor names (x, z, locals)
    mut_tensors: list = field(default_factory=list)  # owned `let mut` tensors (assignable)
    ref_mut: list = field(default_factory=list)  # `&mut` parameters (assignable, not movable)
    scalars: list = field(default_factory=list)  # readable scalars of type t
    mut_scalars: list = field(default_factory=list)
    structs: list = field(default_factory=list)  # mutable struct variables of type S
    indices: list = field(default_factory=list)  # i64 expressions in 0..N (N >= 1 here)
    ints: list = field(default_factory=list)  # i64 loop variables (any value)
    loop_depth: int = 0  # loops enclosing this block
    n_loops: int = 0  # N-sized loops enclosing this block (cost control)
    in_loop: bool = False

    def child(self, **kw) -> Env:
        e = replace(
            self,
            tensors=list(self.tensors),
            mut_tensors=list(self.mut_tensors),
            ref_mut=list(self.ref_mut),
            scalars=list(self.scalars),
            mut_scalars=list(self.mut_scalars),
            structs=list(self.structs),
            indices=list(self.indices),
            ints=list(self.ints),
        )
        for k, v in kw.items():
            setattr(e, k, v)
        return e


class Gen:
    """Draws one program; `draw` is hypothesis's."""

    def __init__(self, draw, t: str, fns: list[dict]) -> None:
        self.draw = draw
        self.t = t
        self.fns = fns  # earlier functions: {"name", "ret", "mut"}
        self.counter = 0
        self.ret = "scalar"

    def fresh(self, p: str) -> str:
        self.counter += 1
        return f"{p}{self.counter}"

    def d(self, strat):
        return self.draw(strat)

    def choice(self, xs):
        return self.d(st.sampled_from(xs))

    @property
    def is_float(self) -> bool:
        return self.t != "i32"

    def one(self) -> str:
        return _lit(self.t, 1.0)

    def lit(self) -> str:
        if self.is_float:
            return _lit(self.t, self.choice([0.5, 2.0, -1.5, 3.0, 0.25, 1.0, -0.0]))
        return _lit(self.t, self.choice([1, 2, 3, -2, 0, 7]))

    # --- expressions -------------------------------------------------------------------

    def tensor(self, env: Env, depth: int) -> str:
        """An elementwise expression of type t[N] (a value, possibly a bare name)."""
        leaves = list(env.tensors)
        if depth <= 0 or self.d(st.integers(0, 3)) == 0:
            return self.choice(leaves)
        k = self.d(st.integers(0, 6))
        if k <= 1:
            op = self.choice(["+", "-", "*"] + (["/", "%"] if self.is_float else ["/", "%"]))
            rhs = self.tensor(env, depth - 1)
            if op in "/%" and not self.is_float and self.d(st.integers(0, 2)) > 0:
                rhs = self.choice(["3i32", "-2i32"])  # mostly no division by zero
            return f"({self.tensor(env, depth - 1)} {op} {rhs})"
        if k == 6:
            # casts and comparisons: fused, but never lane-wise
            e = self.tensor(env, depth - 1)
            if self.d(st.booleans()):
                return f"(({e} > {self.tensor(env, depth - 1)}) as {self.t})"
            via = {"f32": "f64", "f64": "f32", "i32": "f32"}[self.t]
            if self.t == "i32" and self.d(st.booleans()):
                op = self.choice(["&", "|", "^", "<<", ">>"])
                return f"({e} {op} {self.tensor(env, depth - 1)})"
            return f"({e} as {via} as {self.t})"
        if k == 2:
            op = self.choice(["+", "*", "-"])
            s = self.scalar(env, 0)
            if self.d(st.booleans()):
                return f"({s} {op} {self.tensor(env, depth - 1)})"
            return f"({self.tensor(env, depth - 1)} {op} {s})"
        if k == 3:
            fns = ["abs", "-"] + (["exp", "sqrt", "tanh", "sigmoid"] if self.is_float else [])
            f = self.choice(fns)
            if f == "-":
                return f"-({self.tensor(env, depth - 1)})"
            return f"{f}({self.tensor(env, depth - 1)})"
        if k == 4:
            f = self.choice(["minimum", "maximum"])
            other = self.tensor(env, depth - 1) if self.d(st.booleans()) else self.scalar(env, 0)
            return f"{f}({self.tensor(env, depth - 1)}, {other})"
        # a conditional elementwise blend through a scalar if
        c = self.cond(env)
        return (
            f"(if {c} {{ {self.owned(env, depth - 1)} }} else {{ {self.owned(env, depth - 1)} }})"
        )

    def owned(self, env: Env, depth: int) -> str:
        """A tensor value that moves nothing: a bare name becomes a copy `name * 1`."""
        e = self.tensor(env, depth)
        return f"{e} * {self.one()}" if e.isidentifier() else e

    def borrowed(self, env: Env, depth: int) -> str:
        e = self.tensor(env, depth)
        return e if e in ("x", "z") else f"&{e}"

    def reduction(self, env: Env, depth: int) -> str:
        fns = ["sum", "max", "min", "dot"] + (["mean"] if self.is_float else [])
        f = self.choice(fns)
        if f == "dot":
            return f"dot({self.borrowed(env, depth)}, {self.borrowed(env, depth)})"
        return f"{f}({self.borrowed(env, depth)})"

    def scalar(self, env: Env, depth: int) -> str:
        leaves = [lambda: "a", self.lit]
        if env.scalars:
            leaves.append(lambda: self.choice(env.scalars))
        if env.indices:
            leaves.append(lambda: f"{self.choice(env.tensors)}[{self.choice(env.indices)}]")
        if env.structs:
            leaves.append(lambda: f"{self.choice(env.structs)}.{self.choice(['u', 'inner.v'])}")
        if env.ints:
            leaves.append(lambda: f"({self.choice(env.ints)} as {self.t})")
            # an entry of the constant table (`render`), at an index kept in 0..8
            leaves.append(lambda: f"TAB[(({self.choice(env.ints)}) % 8 + 8) % 8]")
        leaves.append(lambda: self.reduction(env, min(depth, 1)))
        if depth <= 0 or self.d(st.integers(0, 2)) == 0:
            return self.choice(leaves)()
        k = self.d(st.integers(0, 4))
        if k <= 1:
            ints = ["/", "%", "&", "|", "^", "<<", ">>"]
            op = self.choice(["+", "-", "*"] + (["/", "%"] if self.is_float else ints))
            rhs = self.scalar(env, depth - 1)
            if op in "/%" and not self.is_float and self.d(st.integers(0, 3)) > 0:
                rhs = self.choice(["3i32", "-2i32", "7i32"])  # mostly no division by zero
            return f"({self.scalar(env, depth - 1)} {op} {rhs})"
        if k == 2:
            return f"-({self.scalar(env, depth - 1)})"
        if k == 3:
            fns = ["abs", "minimum", "maximum"]
            if self.is_float:
                fns += ["exp", "sqrt", "tanh", "sigmoid", "log", "fma"]
            f = self.choice(fns)
            n_args = {"minimum": 2, "maximum": 2, "fma": 3}.get(f, 1)
            args = ", ".join(self.scalar(env, depth - 1) for _ in range(n_args))
            return f"{f}({args})"
        if env.ints and self.d(st.integers(0, 2)) == 0:
            return self.match(env, depth)
        c = self.cond(env)
        return (
            f"(if {c} {{ {self.scalar(env, depth - 1)} }} else {{ {self.scalar(env, depth - 1)} }})"
        )

    def match(self, env: Env, depth: int) -> str:
        """A `match` on an integer (literals, `p | q`, ranges, `_`) or on a `bool`."""
        if self.d(st.integers(0, 3)) == 0:
            c = self.cond(env)
            a, b = self.scalar(env, depth - 1), self.scalar(env, depth - 1)
            return f"(match {c} {{ true => {a}, false => {b} }})"
        i = self.choice(env.ints)
        k = self.choice([3, 5, 7])
        pats = self.choice(
            [["0", "1 | 2", "-2..=-1"], ["0..=1", "3", "-4 | 4"], ["2", "-1", "0 | 1 | 3"]]
        )
        arms = [f"{p} => {self.scalar(env, depth - 1)}" for p in pats]
        arms.append(f"_ => {self.scalar(env, depth - 1)}")
        return f"(match ({i}) % {k} {{ {', '.join(arms)} }})"

    def cond(self, env: Env) -> str:
        k = self.d(st.integers(0, 3))
        if k == 0 and env.ints:
            i = self.choice(env.ints)
            return self.choice([f"{i} % 2 == 0", f"{i} > 1", f"{i} < N / 2"])
        op = self.choice([">", "<", ">=", "!="])
        return f"{self.scalar(env, 0)} {op} {self.scalar(env, 0)}"

    # --- statements ----------------------------------------------------------------------

    def block(self, env: Env, budget: int, observe: bool = True) -> list[str]:
        """Statements; a nested block then adds what it declared into `acc`, so that its
        work reaches the result (a graph keeps only what the result depends on)."""
        before = {*env.tensors, *env.scalars, *env.structs}
        out: list[str] = []
        n = self.d(st.integers(1, max(1, min(4, budget))))
        for _ in range(n):
            out += self.stmt(env, budget - 1)
        if observe and self.d(st.integers(0, 4)) > 0:
            e = self.observe(env, before)
            if e:
                out.append(f"acc = acc + {e};")
        return out

    def observe(self, env: Env, before: set[str]) -> str:
        """A scalar that depends on every variable declared since ``before``."""
        terms = [v for v in env.scalars if v not in before]
        for v in env.tensors:
            if v in before:
                continue
            if env.indices and self.d(st.booleans()):
                terms.append(f"{v}[{self.choice(env.indices)}]")
            else:
                terms.append(self.choice([f"sum(&{v})", f"dot(&{v}, x)"]))
        terms += [f"{v}.u + {v}.inner.v" for v in env.structs if v not in before]
        return " + ".join(terms)

    def new_tensor_init(self, env: Env) -> str:
        k = self.d(st.integers(0, 3))
        if k == 0:
            return "zeros()"
        if k == 1:
            return f"full({self.scalar(env, 0)})"
        if k == 2:
            return f"{self.choice(env.tensors)} * {self.one()}"
        return self.owned(env, 2)

    def stmt(self, env: Env, budget: int) -> list[str]:
        t = self.t
        kinds = ["let_tensor", "let_scalar", "temp", "acc", "assign_tensor"]
        if env.indices:
            kinds += ["update", "update", "update", "old", "if_update"]
        else:
            kinds += ["guard"]
        if env.structs:
            kinds += ["struct"]
        else:
            kinds += ["let_struct"]
        kinds += ["tuple"]
        if budget > 0 and env.loop_depth < 3:
            kinds += ["for", "for", "while", "loop", "rounds", "lanes", "lanes", "elements"]
        if budget > 0:
            kinds += ["if"]
        if env.in_loop:
            kinds += ["exit"]
        # a callee with a `ROUNDS` loop is called outside loops only (ROUNDS² iterations)
        callees = [f for f in self.fns if env.loop_depth == 0 or not f["rounds"]]
        if callees:
            kinds += ["call"]
        if env.mut_tensors or env.ref_mut:
            kinds += ["ref_var"]
        if len(env.mut_tensors + env.ref_mut) >= 2 or len(env.mut_scalars) >= 2:
            kinds += ["swap", "swap"]
        kind = self.choice(kinds)
        if kind == "let_tensor":
            y = self.fresh("y")
            init = self.new_tensor_init(env)
            env.tensors.append(y)
            env.mut_tensors.append(y)
            return [f"let mut {y}: {t}[N] = {init};"]
        if kind == "let_scalar":
            s = self.fresh("s")
            e = self.scalar(env, 2)
            env.scalars.append(s)
            env.mut_scalars.append(s)
            return [f"let mut {s}: {t} = {e};"]
        if kind == "temp":
            v = self.fresh("t")
            e = self.owned(env, 2)
            env.tensors.append(v)
            return [f"let {v} = {e};"]
        if kind == "acc":
            if not env.mut_scalars:
                return self.stmt(env, budget)
            s = self.choice(env.mut_scalars)
            op = self.choice(["=", "+=", "-=", "*="])
            return [f"{s} {op} {self.scalar(env, 2)};"]
        if kind == "assign_tensor":
            targets = env.mut_tensors + env.ref_mut
            if not targets:
                return self.stmt(env, budget)
            y = self.choice(targets)
            op = self.choice(["=", "=", "+=", "*="])
            return [f"{y} {op} {self.owned(env, 2) if op == '=' else self.tensor(env, 2)};"]
        if kind == "update":
            targets = env.mut_tensors + env.ref_mut
            if not targets:
                return self.stmt(env, budget)
            y = self.choice(targets)
            op = self.choice(["=", "=", "+=", "-="])
            i = self.choice(env.indices)
            if self.d(st.integers(0, 3)) == 0:  # a slice of one element, `i..i + 1`
                if op == "=":
                    return [f"{y}[{i}..{i} + 1] = {self.choice(env.tensors)}[{i}..{i} + 1];"]
                return [f"{y}[{i}..{i} + 1] {op} {self.scalar(env, 2)};"]
            return [f"{y}[{i}] {op} {self.scalar(env, 2)};"]
        if kind == "old":
            s = self.fresh("old")
            e = f"{self.choice(env.tensors)}[{self.choice(env.indices)}]"
            env.scalars.append(s)
            return [f"let {s}: {t} = {e};"]
        if kind == "if_update":
            targets = env.mut_tensors + env.ref_mut
            if not targets:
                return self.stmt(env, budget)
            y = self.choice(targets)
            i = self.choice(env.indices)
            c = self.cond(env)
            then = f"{y}[{i}] = {self.scalar(env, 1)};"
            k = self.d(st.integers(0, 3))
            if k == 0:
                return [f"if {c} {{", f"    {then}", "}"]
            if k == 1:
                other = f"{y}[{self.choice(env.indices)}] = {self.scalar(env, 1)};"
            elif k == 2:
                other = f"{y} = {self.owned(env, 1)};"
            else:
                other = ""
            return [
                f"if {c} {{",
                f"    {then}",
                "} else {",
                *([f"    {other}"] if other else []),
                "}",
            ]
        if kind == "guard":
            inner = env.child(indices=["0", "N - 1", "N / 2"])
            body = self.block(inner, max(1, budget))
            return ["if N > 0 {", *_ind(body), "}"]
        if kind == "let_struct":
            s = self.fresh("st")
            lit = self.struct_lit(env)
            env.structs.append(s)
            return [f"let mut {s} = {lit};"]
        if kind == "struct":
            s = self.choice(env.structs)
            k = self.d(st.integers(0, 3))
            if k == 0:
                return [f"{s} = {self.struct_lit(env, s)};"]
            if k == 1:
                return [f"{s}.u += {self.scalar(env, 1)};"]
            if k == 2:
                return [f"{s}.inner.v = {self.scalar(env, 1)};", f"{s}.n += 1;"]
            return [f"{s}.inner = In {{ v: {self.scalar(env, 1)}, c: {s}.inner.c + {s}.n }};"]
        if kind == "tuple":
            k = self.d(st.integers(0, 2))
            if k == 0:  # built and destructured at once, one name `mut`
                p, q = self.fresh("p"), self.fresh("q")
                e1, e2 = self.scalar(env, 1), self.scalar(env, 1)
                env.scalars += [p, q]
                env.mut_scalars.append(q)
                return [f"let ({p}, mut {q}) = ({e1}, {e2});"]
            if k == 1:  # held in a variable, read by field, nested with a 1-tuple
                tp = self.fresh("tp")
                e1, e2 = self.scalar(env, 1), self.scalar(env, 1)
                env.scalars += [f"{tp}.0", f"({tp}.1).0"]
                return [f"let {tp}: ({t}, ({t},)) = ({e1}, ({e2},));"]
            # a nested pattern with `_`, over a tuple of a scalar and an i64
            p, j = self.fresh("p"), self.fresh("k")
            e1, e2 = self.scalar(env, 1), self.scalar(env, 1)
            i = self.choice([*env.ints, "N"])
            env.scalars.append(p)
            env.ints.append(j)
            return [f"let (_, ({p}, {j})) = ({e1}, ({e2}, {i}));"]
        if kind == "elements":
            return self.element_loop(env, budget)
        if kind == "for":
            i = self.fresh("i")
            step = self.choice(["2", "3", "N / 4 + 1", "N + 5", "(N % 3)"])  # 0 rarely: R0011
            rng, extra = self.choice(
                [
                    ("0..N", [f"N - 1 - {i}", f"{i} / 2"]),
                    ("1..N", [f"{i} - 1", f"N - 1 - {i}"]),
                    ("0..N - 1", [f"{i} + 1", f"N - 1 - {i}"]),
                    ("0..=N - 1", [f"N - 1 - {i}"]),
                    ("N / 2..N", [f"N - 1 - {i}", f"{i} - N / 2"]),
                    # reversed and stepped ranges (language.md §6.9): subsets of 0..N
                    ("(0..N).rev()", [f"N - 1 - {i}", f"{i} / 2"]),
                    ("(1..=N - 1).rev()", [f"{i} - 1", f"N - 1 - {i}"]),
                    (f"(0..N).step_by({step})", [f"N - 1 - {i}", f"{i} / 2"]),
                    (f"(0..N - 1).step_by({step}).rev()", [f"{i} + 1", f"N - 1 - {i}"]),
                    (f"(N / 2..N).rev().step_by({step})", [f"N - 1 - {i}", f"{i} - N / 2"]),
                ]
            )
            if env.n_loops >= 1 and self.d(st.integers(0, 3)) > 0:
                # keep nested N-loops rare (N^2 iterations): loop over a short prefix
                return self.counted_for(env, budget, i, f"0..{self.choice(['2', '3'])}")
            body_env = env.child(
                indices=[*env.indices, i, *extra, "0", "N - 1"],
                ints=[*env.ints, i],
                loop_depth=env.loop_depth + 1,
                n_loops=env.n_loops + 1,
                in_loop=True,
            )
            body = self.block(body_env, budget)
            return [f"for {i} in {rng} {{", *_ind(body), "}"]
        if kind == "lanes":
            return self.lanes_loop(env)
        if kind == "rounds":
            r = self.fresh("r")
            rng = self.choice(["0..ROUNDS", "1..=ROUNDS", "0..ROUNDS - 1"])
            if env.loop_depth > 0:  # `ROUNDS` loops are outermost: ≤ ROUNDS · N iterations
                rng = self.choice(["0..2", "1..=2"])
            return self.counted_for(env, budget, r, rng)
        if kind == "while":
            w, j, body_env, bound = self.counter_loop(env)
            if self.d(st.booleans()):  # the condition reads the carried values too
                bound = f"{bound} && {self.cond(env)}"
            body = self.block(body_env, budget)
            return [
                f"let mut {w}: i64 = 0;",
                f"while {w} < {bound} {{",
                f"    let {j} = {w};",
                f"    {w} += 1;",
                *_ind(body),
                "}",
            ]
        if kind == "loop":  # `while`'s counter, its test a `break` at the top
            w, j, body_env, bound = self.counter_loop(env)
            body = self.block(body_env, budget)
            return [
                f"let mut {w}: i64 = 0;",
                "loop {",
                f"    if {w} >= {bound} {{",
                "        break;",
                "    }",
                f"    let {j} = {w};",
                f"    {w} += 1;",
                *_ind(body),
                "}",
            ]
        if kind == "if":
            c = self.cond(env)
            then = self.block(env.child(), budget)
            if self.d(st.booleans()):
                return [f"if {c} {{", *_ind(then), "}"]
            other = self.block(env.child(), budget)
            return [f"if {c} {{", *_ind(then), "} else {", *_ind(other), "}"]
        if kind == "exit":
            c = self.cond(env)
            k = self.d(st.integers(0, 2))
            if k == 0:
                return [f"if {c} {{", "    break;", "}"]
            if k == 1:
                return [f"if {c} {{", "    continue;", "}"]
            return [f"if {c} {{", f"    return {self.ret_value(env)};", "}"]
        if kind == "call":
            f = self.choice(callees)
            second = self.choice(env.tensors)
            args = [self.borrowed(env, 1), second if second in ("x", "z") else f"&{second}"]
            args.append(self.scalar(env, 1))
            if f["mut"]:
                if not env.mut_tensors and not env.ref_mut:
                    return self.stmt(env, budget)
                w = self.choice(env.mut_tensors + env.ref_mut)
                # exclusivity: no other argument may mention `w`
                args = [a_ if w not in _names(a_) else "x" for a_ in args[:2]]
                sc = self.scalar(env, 1)
                args.append(sc if w not in _names(sc) else "a")
                # a `&mut` parameter or reference variable is passed on by name, or reborrowed
                args.append(self.mut_arg(env, w))
            v = self.fresh("c")
            call = f"{f['name']}({', '.join(args)})"
            if f["ret"] == "tensor":
                env.tensors.append(v)
                return [f"let {v}: {t}[N] = {call};"]
            if f["ret"] == "struct":
                env.structs.append(v)
                return [f"let mut {v}: S = {call};"]
            if f["ret"] == "tuple":  # `({t}, (i64, {t}))`
                if self.d(st.booleans()):
                    v2, j = self.fresh("c"), self.fresh("k")
                    env.scalars += [v, v2]
                    env.mut_scalars.append(v)
                    env.ints.append(j)
                    return [f"let (mut {v}, ({j}, {v2})) = {call};"]
                env.scalars += [f"{v}.0", f"({v}.1).1"]
                env.ints.append(f"({v}.1).0")
                return [f"let {v} = {call};"]
            env.scalars.append(v)
            return [f"let {v}: {t} = {call};"]
        if kind == "swap":
            return self.swap(env)
        if kind == "ref_var":
            return self.ref_var(env, budget)
        raise AssertionError(kind)

    def counter_loop(self, env: Env) -> tuple[str, str, Env, str]:
        """A `while` or `loop` over a counter: its names (counter, iteration), its body's
        environment and its bound."""
        w = self.fresh("w")
        j = self.fresh("j")
        body_env = env.child(
            indices=[*env.indices, j, f"N - 1 - {j}", "0", "N - 1"],
            ints=[*env.ints, j],
            loop_depth=env.loop_depth + 1,
            n_loops=env.n_loops + 1,
            in_loop=True,
        )
        bound = self.choice(["N", "N - 1"]) if env.n_loops == 0 else "N / 8"
        return w, j, body_env, bound

    def element_loop(self, env: Env, budget: int) -> list[str]:
        """`for v in y { … }` over a tensor's elements (language.md §6.9). The tensor is
        borrowed for the whole loop, so the body may read it but not assign it."""
        v = self.fresh("v")
        y = self.choice(env.tensors)
        it = self.choice([y, f"&{y}"]) if y not in ("x", "z") else y
        if self.d(st.integers(0, 4)) == 0:
            it = f"({self.tensor(env, 1)})"  # an expression: evaluated once, before the loop
        if env.n_loops >= 1 and self.d(st.integers(0, 3)) > 0:
            return self.counted_for(env, budget, self.fresh("r"), "0..2")  # N² is slow
        held = _names(it)  # `(w)` borrows `w` too; a real expression borrows nothing
        body_env = env.child(
            scalars=[*env.scalars, v],
            mut_tensors=[t for t in env.mut_tensors if t not in held],
            ref_mut=[t for t in env.ref_mut if t not in held],
            loop_depth=env.loop_depth + 1,
            n_loops=env.n_loops + 1,
            in_loop=True,
        )
        body = self.block(body_env, budget)
        return [f"for {v} in {it} {{", *_ind(body), "}"]

    def mut_arg(self, env: Env, name: str) -> str:
        """`name` where `&mut` is wanted: `&mut name`, or a `&mut` borrow passed on as it is;
        a tensor also as a view of all of it."""
        if name in env.ref_mut and self.d(st.booleans()):
            return name
        tensor = name in env.mut_tensors or name in env.ref_mut
        return f"&mut {name}{self.whole_view() if tensor else ''}"

    def whole_view(self) -> str:
        """Nothing, or a slice of a whole `[N]` tensor (same type): `[..]`, `[0..N]`, `[..N]`."""
        return self.choice(["", "", "", "[..]", "[0..N]", "[..N]"])

    def swap(self, env: Env) -> list[str]:
        """`swap(&mut a, &mut b)` of two distinct tensors (owned or `&mut`) or scalars."""
        tensors = env.mut_tensors + env.ref_mut
        pool = tensors if len(tensors) >= 2 and self.d(st.booleans()) else env.mut_scalars
        if len(pool) < 2:
            pool = tensors
        a = self.choice(pool)
        b = self.choice([v for v in pool if v != a])
        return [f"swap({self.mut_arg(env, a)}, {self.mut_arg(env, b)});"]

    def ref_var(self, env: Env, budget: int) -> list[str]:
        """A borrow in a variable, used at once and then dead (non-lexical): `let r = &mut y;`
        and writes or calls through `r` — `y` itself unnamed meanwhile — or `let v = &y;`
        read by reductions."""
        y = self.choice(env.mut_tensors + env.ref_mut)
        t = self.t
        if self.d(st.integers(0, 2)) == 0:
            v = self.fresh("v")
            ty = f": &{t}[N]" if self.d(st.booleans()) else ""
            use = self.choice([f"sum({v})", f"dot({v}, x)", f"dot(x, &{v})"])
            return [f"let {v}{ty} = &{y}{self.whole_view()};", f"acc = acc + {use};"]
        r = self.fresh("r")
        ty = f": &mut {t}[N]" if self.d(st.booleans()) else ""
        inner = env.child(
            tensors=[n for n in env.tensors if n != y] + [r],
            mut_tensors=[n for n in env.mut_tensors if n != y],
            ref_mut=[n for n in env.ref_mut if n != y] + [r],
        )
        out = [f"let {r}{ty} = &mut {y}{self.whole_view()};"]
        kinds = ["assign_tensor", "call"] + (["update", "update"] if env.indices else [])
        for _ in range(self.d(st.integers(1, 2))):
            k = self.choice(kinds)
            if k == "call":
                callees = [
                    f for f in self.fns if f["mut"] and (env.loop_depth == 0 or not f["rounds"])
                ]
                if not callees:
                    k = "assign_tensor"
                else:
                    f = self.choice(callees)
                    arg = r if self.d(st.booleans()) else f"&mut {r}"
                    c = self.fresh("c")
                    call = f"{f['name']}(x, z, {self.scalar(inner, 1)}, {arg})"
                    if f["ret"] == "tensor":
                        out.append(f"let {c}: {t}[N] = {call};")
                        env.tensors.append(c)
                    elif f["ret"] == "struct":
                        out.append(f"let mut {c}: S = {call};")
                        env.structs.append(c)
                    elif f["ret"] == "tuple":  # `({t}, (i64, {t}))`
                        out.append(f"let {c}: ({t}, (i64, {t})) = {call};")
                        env.scalars += [f"{c}.0", f"({c}.1).1"]
                    else:
                        out.append(f"let {c}: {t} = {call};")
                        env.scalars.append(c)
                    continue
            if k == "update":
                op = self.choice(["=", "+=", "-="])
                out.append(f"{r}[{self.choice(env.indices)}] {op} {self.scalar(inner, 2)};")
            else:
                op = self.choice(["=", "+=", "*="])
                e = self.owned(inner, 2) if op == "=" else self.tensor(inner, 2)
                out.append(f"{r} {op} {e};")
        return out

    def lanes_loop(self, env: Env) -> list[str]:
        """`for i in lo..N { y[i] = f(x[i], y[i], a); … }`: the optimizer's `lanes` shape."""
        i = self.fresh("i")
        rng = self.choice(["0..N", "1..N", "0..N - 1", "N / 2..N"])
        targets = env.mut_tensors + env.ref_mut
        if not targets:
            return self.stmt(env, 0)
        locals_: list[str] = []
        body: list[str] = []

        def elem(depth: int) -> str:
            leaves = ["a", self.lit(), *locals_]
            leaves += [f"{v}[{i}]" for v in env.tensors]
            if depth <= 0 or self.d(st.integers(0, 2)) == 0:
                return self.choice(leaves)
            k = self.d(st.integers(0, 3))
            if k <= 1:
                op = self.choice(["+", "-", "*"] + (["/"] if self.is_float else []))
                return f"({elem(depth - 1)} {op} {elem(depth - 1)})"
            if k == 2:
                return f"-({elem(depth - 1)})"
            fns = ["abs", "minimum", "maximum"]
            if self.is_float:
                fns += ["exp", "sqrt", "tanh", "sigmoid", "log"]
            f = self.choice(fns)
            n_args = 2 if f in ("minimum", "maximum") else 1
            return f"{f}({', '.join(elem(depth - 1) for _ in range(n_args))})"

        for _ in range(self.d(st.integers(1, 3))):
            if self.d(st.integers(0, 2)) == 0:
                v = self.fresh("e")
                body.append(f"let {v}: {self.t} = {elem(2)};")
                locals_.append(v)
            else:
                y = self.choice(targets)
                op = self.choice(["=", "=", "+="])
                body.append(f"{y}[{i}] {op} {elem(2)};")
        return [f"for {i} in {rng} {{", *_ind(body), "}"]

    def counted_for(self, env: Env, budget: int, r: str, rng: str) -> list[str]:
        """A loop whose variable is no index: `ROUNDS`, or a short constant range in place
        of a second N-sized loop (N² iterations would be slow to interpret)."""
        body_env = env.child(ints=[*env.ints, r], loop_depth=env.loop_depth + 1, in_loop=True)
        body = self.block(body_env, budget)
        return [f"for {r} in {rng} {{", *_ind(body), "}"]

    def struct_lit(self, env: Env, old: str | None = None) -> str:
        n = f"{old}.n + 1" if old else "0"
        c = f"{old}.inner.c * 2" if old else "1"
        return (
            f"S {{ u: {self.scalar(env, 1)}, n: {n}, "
            f"inner: In {{ v: {self.scalar(env, 1)}, c: {c} }} }}"
        )

    def ret_value(self, env: Env) -> str:
        if self.ret == "tensor":
            # a borrow is not an owned result; a bare local would be moved out of a loop
            return self.owned(env, 2)
        if self.ret == "struct":
            return self.struct_lit(env)
        if self.ret == "tuple":
            return self.tuple_lit(env)
        return self.scalar(env, 2)

    def tuple_lit(self, env: Env, first: str = "") -> str:
        """A `({t}, (i64, {t}))` value."""
        i = self.choice([*env.ints, "N", "7"])
        return f"({first}{self.scalar(env, 2)}, ({i}, {self.scalar(env, 1)}))"

    def tail(self, env: Env) -> list[str]:
        """The last statements and the tail: the result depends on every top-level
        variable (through `acc`) and on what the nested blocks added to `acc`."""
        e = self.observe(env, {"x", "z", "a", "w", "acc"})
        out = [f"acc = acc + {e};"] if e else []
        if self.ret == "tensor":
            owned = list(env.mut_tensors)
            if owned and self.d(st.booleans()):
                y = self.choice(owned)
                return [*out, f"{y} = {y} + acc;", y]  # the carried tensor itself, moved
            return [*out, f"{self.ret_value(env)} + acc"]
        if self.ret == "struct":
            if env.structs and self.d(st.booleans()):
                v = self.choice(env.structs)
                return [*out, f"{v}.u += acc;", v]
            return [*out, self.struct_lit(env).replace("S { u: ", "S { u: acc + ", 1)]
        if self.ret == "tuple":
            return [*out, self.tuple_lit(env, "acc + ")]
        return [*out, f"acc + {self.scalar(env, 2)}"]


def _names(e: str) -> set[str]:
    import re

    return set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", e))


def _ind(lines: list[str]) -> list[str]:
    return ["    " + ln for ln in lines]


@st.composite
def imperative_function(draw, t: str, index: int, earlier: list[dict]):
    g = Gen(draw, t, earlier)
    g.ret = draw(st.sampled_from(["tensor", "tensor", "scalar", "struct", "tuple"]))
    mut = draw(st.booleans())
    env = Env(t=t, tensors=["x", "z"], scalars=["a", "acc"], mut_scalars=["acc"])
    params = [f"x: &{t}[N]", f"z: &{t}[N]", f"a: {t}"]
    if mut:
        params.append(f"w: &mut {t}[N]")
        env.tensors.append("w")
        env.ref_mut.append("w")
    body = [f"let mut acc: {t} = {_lit(t, 0)};"]
    helpers = ""
    if draw(st.integers(0, 5)) == 0:  # a recursive helper, its depth bounded by an argument
        helpers, call = recursive_helper(draw, t, index)
        body.append(f"acc = acc + {call};")
    body += g.block(env, draw(st.integers(2, 4)), observe=False)
    body += g.tail(env)
    ret = {"tensor": f"{t}[N]", "scalar": t, "struct": "S", "tuple": f"({t}, (i64, {t}))"}[g.ret]
    name = f"f{index}"
    vis = "pub " if index == 0 or draw(st.booleans()) else ""
    text = helpers + "\n".join(
        [f"{vis}fn {name}[N]({', '.join(params)}) -> {ret} {{", *_ind(body), "}"]
    )
    rounds = "ROUNDS" in text or any(f["rounds"] for f in earlier if f["name"] in text)
    return {"name": name, "ret": g.ret, "mut": mut, "text": text, "rounds": rounds}


def recursive_helper(draw, t: str, index: int) -> tuple[str, str]:
    """A function that calls itself (or two that call each other) ``d`` levels deep, with an
    early `return` as the base case, reading the tensor it is lent by `&`: its text and a
    call of it from ``f{index}``. ``d`` is small, or rarely past the depth limit (R0012,
    docs/semantics.md §9) when ``N > 0``."""
    depth = draw(st.sampled_from([0, 1, 2, 3, 6, 6, 1100]))
    scale = _lit(t, draw(st.sampled_from([1.0, 2.0, 3.0])))
    mutual = draw(st.booleans())
    r, q = f"r{index}", f"q{index}"
    other = q if mutual else r

    def fn(name: str, callee: str) -> list[str]:
        return [
            f"fn {name}[N](x: &{t}[N], a: {t}, d: i64) -> {t} {{",
            "    if d <= 0 || N == 0 {",
            "        return a;",
            "    }",
            f"    x[d % N] * {scale} + {callee}(x, a, d - 1)",
            "}",
        ]

    lines = fn(r, other) + ([""] + fn(q, r) if mutual else [])
    return "\n".join(lines) + "\n\n", f"{r}(x, a, {depth})"


@st.composite
def imperative_program(draw):
    """A program: its element type and its functions (callees first)."""
    t = draw(st.sampled_from([*ELEMS, "f32"]))
    k = draw(st.integers(1, 3))
    fns: list[dict] = []
    for i in range(k):
        fns.append(draw(imperative_function(t, k - 1 - i, list(fns))))
    return {"t": t, "fns": fns}


def render(prog: dict, rounds: int = 3) -> str:
    t = prog["t"]
    table = ", ".join(_lit(t, v) for v in (1.5, -2.0, 0.25, 3.0, -0.5, 7.0, 0.0, -1.25))
    head = [
        f"const ROUNDS: i64 = {rounds};",
        f"const TAB: {t}[8] = [{table}];",
        f"struct In {{ v: {t}, c: i64 }}",
        f"struct S {{ u: {t}, n: i64, inner: In }}",
    ]
    return "\n".join(head) + "\n\n" + "\n\n".join(f["text"] for f in prog["fns"]) + "\n"
