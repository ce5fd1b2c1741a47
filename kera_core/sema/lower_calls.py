"""Calls: user functions (with symbolic-dimension unification) and builtins, with effects."""

from __future__ import annotations

from kera_core.diagnostics import Edit, Fix, Related
from kera_core.ir import ops
from kera_core.ir.dims import at_path, binding_plan, solve
from kera_core.ir.dims import value as dims_value
from kera_core.ir.node import Node
from kera_core.ir.types import (
    BOUNDS,
    I64,
    SPACES,
    TOKEN,
    DimError,
    DimExpr,
    Prim,
    RangeType,
    Ref,
    Struct,
    Sym,
    Tensor,
    Type,
    TypeParam,
    Unit,
    display_dim,
    elem_of,
    has_type_params,
    instantiate,
    is_soa,
    strip_ref,
    substitute,
)
from kera_core.sema import literals
from kera_core.sema.env import FnSig, Use, did_you_mean, instance_name
from kera_core.sema.frames import ERR_VAL, Val
from kera_core.source import Span
from kera_core.syntax import ast

TOKEN_VAR = "$token"

# builtin name -> (arity, kind)
BUILTINS: dict[str, tuple[int, str]] = {
    **{n: (1, "unary") for n in ("exp", "log", "sqrt", "tanh", "sigmoid", "abs", "softmax")},
    # the exact functions (docs/semantics.md §6.8): floats only, elementwise
    **{n: (1, "unary") for n in ("floor", "ceil", "trunc", "round", "round_half_away")},
    # the elementary functions of docs/semantics.md §6.9: floats only, elementwise
    **{n: (1, "unary") for n in ("exp2", "log2", "expm1", "log1p", "sin", "cos", "tan")},
    **{n: (1, "unary") for n in ("erf", "erfc")},
    **{n: (2, "elementwise") for n in ("minimum", "maximum", "copysign", "hypot")},
    **{n: (2, "elementwise") for n in ("atan2", "pow")},
    "fma": (3, "elementwise"),
    **{n: (1, "reduce") for n in ("sum", "max", "min", "mean", "argmax", "argmin")},
    **{n: (2, "pair") for n in ("dot", "matmul", "conv1d")},
    "layernorm": (2, "layernorm"),
    "zeros": (0, "fill"),
    "full": (1, "fill"),
    # shape operations (docs/semantics.md §7.7); arity: the fewest arguments
    "transpose": (1, "transpose"),
    "reshape": (1, "shape_to"),
    "broadcast_to": (1, "shape_to"),
    "outer": (2, "outer"),
    "concat": (2, "join"),
    "stack": (2, "join"),
    "where": (3, "where"),
    "clone": (1, "clone"),
    "arange": (0, "arange"),
    "linspace": (2, "linspace"),
    "move_to": (2, "transfer"),
    "copy_to": (2, "transfer"),
    "print": (1, "print"),
    "swap": (2, "swap"),  # lowered by sema/lower_refs.py: no node, two variables rebound
}
# the methods a range has (language.md §6.9), with the form to write for a tensor instead
RANGE_METHODS = {"rev": "0..N).rev(", "step_by": "0..N).step_by(k"}
# builtins that take one more, optional argument: the axis to work along (a constant)
AXIS_BUILTINS = frozenset({"sum", "max", "min", "mean", "argmax", "argmin", "softmax", "layernorm"})
# builtins taking a variable number of arguments: (fewest, most or None) — checked by kind
VARIADIC = {"transpose": (1, None), "concat": (2, None), "stack": (2, None), "arange": (0, 2)}


# `x.m(args)` as Rust writes them -> (the Kera expression, how many arguments)
RUST_METHODS = {
    "max": ("maximum({}, {})", 1),
    "min": ("minimum({}, {})", 1),
    "powf": ("pow({}, {})", 1),
    "mul_add": ("fma({}, {}, {})", 2),
    "clamp": ("minimum(maximum({}, {}), {})", 2),
    "ln": ("log({})", 0),
    "atan2": ("atan2({}, {})", 1),
    "hypot": ("hypot({}, {})", 1),
}


class Calls:
    """Mixin of :class:`kera_core.sema.lower.FnLowering` for calls."""

    def e_CallExpr(self, e: ast.CallExpr, expected):
        callee = e.callee
        if isinstance(callee, ast.FieldExpr) and callee.field is not None:
            m = callee.field.text
            if m in RANGE_METHODS:
                base_val = self.expr(callee.base, None)
                if base_val.is_err:
                    return ERR_VAL
                if isinstance(base_val.type, RangeType):
                    return self.range_method(e, m, base_val)
            # `x.clone()`, `x.sum()`: one error that says what to write instead
            base = callee.base.syntax.text.strip() if callee.base is not None else "x"
            args = [a.syntax.text.strip() for a in e.args]
            if m in RANGE_METHODS:
                hint = f"only a range has `.{m}()`: iterate `({RANGE_METHODS[m]})` and read `x[i]`"
            elif m in RUST_METHODS and len(args) == RUST_METHODS[m][1]:
                # Rust's float and integer methods, spelled as Kera's builtins
                hint = f"call `{RUST_METHODS[m][0].format(base, *args)}` instead"
            elif m in self.env.fns or m in BUILTINS:
                hint = f"call `{m}({', '.join([base, *args])})` instead"
            else:
                hint = f"and there is no function `{m}`"
            return self.err("K0112", e.span, f"methods are not in Kera (`.{m}()`): {hint}")
        ref = callee.name if isinstance(callee, ast.PathExpr) else None
        if ref is None:
            return self.err("K0315", e.span, "only named functions can be called")
        name = ref.text
        local = self.lookup(name)
        if local is not None:  # a local shadows functions and builtins (language.md §5)
            shadowed = (
                " (it shadows the function of that name)"
                if name in self.env.fns
                else " (it shadows the builtin of that name)"
                if name in BUILTINS
                else ""
            )
            return self.err("K0205", callee.span, f"`{name}` is a value, not a function{shadowed}")
        if name in self.env.fns:
            self.uses.append(Use(ref.span, "fn", name=name))
            return self.user_call(e, self.env.fns[name], expected)
        if name == "swap":
            return self.swap_call(e)
        if name in BUILTINS:
            return self.builtin_call(e, name, expected)
        if name in self.env.failed_imports:
            return ERR_VAL  # its `use` is reported (K0209, K0210)
        cands = [*self.env.fns, *BUILTINS]
        return self.err(
            "K0205", callee.span, f"cannot find function `{name}`" + did_you_mean(name, cands)
        )

    def range_method(self, e: ast.CallExpr, m: str, rng: Val) -> Val:
        """`r.rev()` and `r.step_by(k)` on a range `r` (language.md §6.9): a reversed or
        stepped range, `range_rev` / `range_step` in the graph; any chain of them works.
        `k` has the range's integer type; a constant `k <= 0` is K0307 here, any other is
        checked when the loop starts (R0011)."""
        args = e.args
        want = 0 if m == "rev" else 1
        if len(args) != want:
            what = "no arguments" if want == 0 else "one argument, the step"
            return self.err(
                "K0303", e.span, f"`.{m}()` takes {what}, found {len(args)} argument(s)"
            )
        if m == "rev":
            return self.op("range_rev", [rng], e.span)
        elem = rng.type.elem
        k = self.expr(args[0], elem)
        if k.is_err:
            return ERR_VAL
        if k.value is not None and k.type == elem:
            node = self.nodes.get(k.value.node)
            if node is not None and node.op == "const" and int(node.attr("value")) <= 0:
                return self.err(
                    "K0307",
                    args[0].span,
                    f"the step of `step_by` must be positive, found {int(node.attr('value'))}",
                )
        return self.op("range_step", [rng, k], e.span)

    # --- effects -----------------------------------------------------------------------
    def need_effect(self, effect: str, span: Span, what: str) -> bool:
        if effect in self.effects:
            return True
        fn = self.sig.ast
        lst = fn.effect_list
        if lst is not None:
            edit = Edit(Span(lst.span.end, lst.span.end), f", {effect}")
        else:
            anchor = fn.syntax.child_of_kind(ast.K.RET_TYPE) or fn.param_list
            at = anchor.span.end if anchor is not None else fn.name.span.end  # type: ignore[union-attr]
            edit = Edit(Span(at, at), f" ! {effect}")
        self.err(
            "K0501",
            span,
            f"{what} has the `{effect}` effect, which `{self.sig.name}` does not declare",
            fix=Fix(f"add `{effect}` to the effects of `{self.sig.name}`", (edit,)),
        )
        return False

    def _token(self) -> Val:
        b = self.lookup(TOKEN_VAR)
        assert b is not None
        return b.val

    def _effect_node(self, op: str, args: list[Val], span: Span, attrs: dict) -> Node | None:
        token = self._token()
        if any(a.is_err or a.value is None for a in args):
            return None
        try:
            types = ops.infer_named(op, (TOKEN, *(a.type for a in args)), attrs, self.sig.dim_names)
        except ops.TypeRuleError as ex:
            self.err(ex.code, span, str(ex))
            return None
        node = self.add(Node(op, (token.value, *(a.value for a in args)), types, attrs), span)
        self._set(TOKEN_VAR, Val(node.out(0), TOKEN))
        return node

    # --- user functions ------------------------------------------------------------------
    def user_call(self, e: ast.CallExpr, sig: FnSig, expected=None):
        args = e.args
        params = sig.type.params
        if len(args) != len(params):
            return self.err(
                "K0303",
                e.span,
                f"`{sig.name}` takes {len(params)} argument(s) but {len(args)} were given",
                related=(Related(sig.name_span, f"`{sig.name}` is defined here"),),
            )
        binding: dict = {}  # dimension index -> Dim; ("T", index) -> a type parameter's type
        vals: list[Val] = []
        mut_targets: list = []  # variable names, or views of them (lower_views.ViewTarget)
        ok = True
        steps, _ = binding_plan((*params, sig.type.result), sig.type.n_dims)
        actual: dict[int, Type] = {}  # argument -> its tensor, struct or tuple type, once checked
        done = 0  # steps carried out: in order, as far as the arguments known allow
        # An unsuffixed literal for a `T` parameter waits until the other arguments
        # have bound `T` (`axpy(2.0, &x, &mut y)` with `x: &f32[N]` passes 2.0 as f32).
        order = list(range(len(args)))
        if sig.is_generic:
            from kera_core.sema.lower import _is_untyped_literal

            late = [i for i in order if has_type_params(params[i]) and _is_untyped_literal(args[i])]
            order = [i for i in order if i not in late] + late
        got: dict[int, Val] = {}
        for i in order:
            pt, arg = params[i], args[i]
            if isinstance(pt, Ref) and pt.mutable:
                v, target = self.mut_borrow(
                    arg,
                    f"parameter `{sig.param_names[i]}` of `{sig.name}` is `&mut`: pass `&mut x`",
                )
                if v.is_err:
                    ok = False
                    continue
                mut_targets.append(target)  # type: ignore[arg-type]
            else:
                v = self.shared_reborrow(arg) if isinstance(pt, Ref) else None
                if v is None:
                    want = substitute(self._bound_types(pt, binding), binding)  # type: ignore[arg-type]
                    v = self.expr(arg, None if has_type_params(want) else want)
                if v.is_err:
                    ok = False
                    continue
            if not self.unify(pt, v.type, binding, arg, sig, i):
                ok = False
            elif isinstance(strip_ref(v.type), Tensor | Struct):
                actual[i] = strip_ref(v.type)
            while ok and done < len(steps) and steps[done].param in actual:
                ok = self.bind_step(steps[done], actual, binding, args, sig)
                done += 1
            got[i] = v
        vals = [got[i] for i in sorted(got)]
        if ok and any(s.solves is not None for s in steps[done:]):  # fixed by the result
            ok = self.bind_from_result(e, sig, steps[done:], actual, binding, expected)
        for eff in sig.type.effects:
            ok &= self.need_effect(eff, e.span, f"`{sig.name}`")
        if ok and sig.is_generic:
            args_t = tuple(binding[("T", t.index)] for t in sig.type_params)
            sig = self.env.instances[instance_name(sig.name, args_t)]
            params = sig.type.params  # `T` replaced: the outputs' types are the instance's
            self._note_instance(e, sig)
        callee = self.callees.get(sig.name)
        if not ok or callee is None:
            return ERR_VAL
        result = substitute(sig.type.result, binding)  # type: ignore[arg-type]
        outs: list[Type] = [TOKEN] if sig.type.effects else []
        has_result = not isinstance(result, Unit)
        if has_result:
            outs.append(result)
        outs += [
            substitute(strip_ref(p), binding) for p in params if isinstance(p, Ref) and p.mutable
        ]  # type: ignore[arg-type]
        inputs = ([self._token().value] if sig.type.effects else []) + [v.value for v in vals]
        attrs = {"callee": callee.hash, "fn": sig.type, "results": tuple(outs)}
        node = self.add(Node("call", tuple(inputs), tuple(outs), attrs), e.span)
        k = 0
        if sig.type.effects:
            self._set(TOKEN_VAR, Val(node.out(0), TOKEN))
            k = 1
        value = Val(node.out(k), result) if has_result else Val(None, result)
        k += 1 if has_result else 0
        for j, name in enumerate(mut_targets):
            self.store_back(name, Val(node.out(k + j), node.types[k + j]))
        return value

    @staticmethod
    def _bound_types(t: Type, binding: dict) -> Type:
        """``t`` with the type parameters bound so far replaced."""
        if not has_type_params(t):
            return t
        return instantiate(t, {k[1]: v for k, v in binding.items() if isinstance(k, tuple)})

    def _note_instance(self, e: ast.CallExpr, inst: FnSig) -> None:
        """Remember which instance a call of a generic function calls (hover shows it)."""
        callee = e.callee
        if isinstance(callee, ast.PathExpr) and callee.name is not None:
            span = callee.name.span
            for j in range(len(self.uses) - 1, -1, -1):
                u = self.uses[j]
                if u.span == span and u.kind == "fn":
                    self.uses[j] = Use(u.span, u.kind, u.def_span, u.name, inst.name)
                    break

    def _bind_type_param(
        self, tp: TypeParam, at: Type, binding: dict, arg: ast.Expr, sig: FnSig, i: int
    ) -> bool:
        """Bind `T` at a call from an argument's (element) type: it must be a type the bound
        admits (K0318) and the same as any earlier argument gave (K0301)."""
        decl = sig.type_param_spans[tp.index]
        related = (Related(decl, f"`{tp.name}: {tp.bound}` is declared here"),)
        pname = sig.param_names[i]
        bound = binding.get(("T", tp.index))
        if bound is not None:
            if bound == at:
                return True
            self.err(
                "K0301",
                arg.span,
                f"mismatched types: type parameter `{tp.name}` of `{sig.name}` is "
                f"{self.show(bound)} from an earlier argument, but `{pname}` gives {self.show(at)}",
                related=related,
            )
            return False
        if not tp.admits(at):
            admits = ", ".join(f"`{n}`" for n in BOUNDS[tp.bound])
            self.err(
                "K0318",
                arg.span,
                f"`{sig.name}` needs `{tp.name}: {tp.bound}` ({admits}), but `{pname}` makes "
                f"`{tp.name}` {self.show(at)}",
                related=related,
            )
            return False
        binding[("T", tp.index)] = at
        return True

    def unify(self, pt: Type, at: Type, binding: dict, arg: ast.Expr, sig: FnSig, i: int) -> bool:
        """Match an argument type against a parameter type, binding symbolic dimensions."""
        pname = sig.param_names[i]

        def declared() -> tuple[Related, ...]:  # made only for a diagnostic
            return (Related(sig.ast.params[i].span, f"parameter `{pname}` is declared here"),)

        def mismatch(extra: str = "", fix=None) -> bool:
            related = declared()
            self.err(
                "K0301",
                arg.span,
                f"mismatched types: `{sig.name}` expects `{pt.display(sig.dim_names)}` for `{pname}`,"
                f" found {self.show(at)}{extra}",
                related=related,
                fix=fix,
            )
            return False

        p, a = pt, at
        if isinstance(p, Ref):
            if not isinstance(a, Ref):
                fix = Fix("borrow it with `&`", (Edit(Span(arg.span.start, arg.span.start), "&"),))
                return (
                    mismatch(fix=fix)
                    if strip_ref(a) == strip_ref(substitute(p, binding))
                    or isinstance(strip_ref(a), Tensor)
                    else mismatch()
                )
            if a.mutable != p.mutable:
                return mismatch()
            p, a = p.inner, a.inner
        elif isinstance(a, Ref):
            return mismatch(" (pass the value, not a borrow)")
        return self._unify_value(p, a, binding, arg, sig, i, pt, mismatch)

    def _unify_value(self, p, a, binding, arg, sig: FnSig, i: int, pt, mismatch) -> bool:
        """``unify`` below the reference: a tuple's (or struct's) tensors one by one."""
        if isinstance(p, TypeParam):
            return self._bind_type_param(p, a, binding, arg, sig, i)
        if isinstance(p, Struct) and isinstance(a, Struct) and p != a:
            if p.name != a.name or [f for f, _ in p.fields] != [f for f, _ in a.fields]:
                return mismatch()
            return all(
                self._unify_value(pf, af, binding, arg, sig, i, pt, mismatch)
                for (_, pf), (_, af) in zip(p.fields, a.fields, strict=True)
            )
        if isinstance(p, Tensor):
            if not isinstance(a, Tensor) or a.rank != p.rank:
                return mismatch()
            if isinstance(p.elem, TypeParam):
                if not self._bind_type_param(p.elem, a.elem, binding, arg, sig, i):
                    return False
            elif a.elem != p.elem:
                return mismatch()
            if a.space != p.space:  # (a struct's or tuple's tensors are all in host memory)
                return self.space_mismatch(pt, a, p, arg, sig, i)
            for pd, ad in zip(p.shape, a.shape, strict=True):
                if isinstance(pd, int) and pd != ad:
                    return mismatch(f" (dimension {pd} differs)")
            return True  # symbolic dimensions: bound by the plan (`bind_step`)
        if p != a:
            return mismatch()
        return True

    def bind_from_result(self, e, sig: FnSig, steps, actual: dict, binding: dict, expected):
        """Bind the dimensions the arguments leave open from the type the call is expected
        to have: ``let y: f32[8] = f(x);`` fixes `M` of `fn f[N, M](…) -> f32[M]`. Only
        solving steps run on the result: a mismatch is the caller's type error, reported
        where the value is used."""
        r = len(sig.type.params)
        rt, want = strip_ref(sig.type.result), strip_ref(expected) if expected is not None else None
        if not (isinstance(rt, Tensor) and isinstance(want, Tensor) and want.rank == rt.rank):
            open_ = sorted({s.solves for s in steps if s.solves is not None})
            names = ", ".join(f"`{sig.dim_names[k]}`" for k in open_)
            self.err(
                "K0310",
                e.span,
                f"the arguments of `{sig.name}` do not fix its dimension(s) {names}: only the "
                f"result type `{sig.type.result.display(sig.dim_names)}` does, so give the call "
                f"an expected type (`let y: {sig.type.result.display(sig.dim_names)} = …` "
                "with sizes of this function)",
                related=(Related(sig.name_span, f"`{sig.name}` is defined here"),),
            )
            return False
        actual[r] = want
        args = list(e.args) + [e]
        for step in steps:
            if step.param == r and step.solves is None:
                continue
            if not self.bind_step(step, actual, binding, args, sig):
                return False
        return True

    def bind_step(self, step, actual: dict, binding: dict, args, sig: FnSig) -> bool:
        """Carry out one step of the callee's binding plan (docs/language.md §7.2) on the
        caller's dimensions: solve for a dimension, or check one already bound."""
        i = step.param
        ad = at_path(actual[i], step.path).shape[step.axis]
        if isinstance(step.dim, int):
            return True  # checked by `unify`
        mine = self.sig.dim_names
        if i < len(sig.param_names):
            pname = sig.param_names[i]
            related = (Related(sig.ast.params[i].span, f"parameter `{pname}` is declared here"),)
        else:  # the result, matched against the expected type
            pname = "its result"
            ret = sig.ast.ret_type
            related = (Related(ret.span, "the result type"),) if ret is not None else ()
        written = display_dim(step.dim, sig.dim_names)
        try:
            if step.solves is not None:
                got = solve(step, ad, binding.__getitem__)
                never = (
                    isinstance(got, DimExpr)
                    and got.div > 1
                    and all(c % got.div == 0 for _, c in got.terms)
                )
                if never or (isinstance(got, int) and got < 0):
                    raise DimError("")
                binding[step.solves] = got
                return True
            want = dims_value(step.dim, binding.__getitem__)
        except DimError:
            name = sig.dim_names[step.solves] if step.solves is not None else "dimension"
            self.err(
                "K0302",
                args[i].span,
                f"`{sig.name}` expects `{written}` for dimension {step.axis} of `{pname}`, "
                f"but it is {display_dim(ad, mine)}: no size of `{name}` gives that",
                related=related,
            )
            return False
        if want == ad:
            return True
        if isinstance(step.dim, Sym):
            self.err(
                "K0310",
                args[i].span,
                f"dimension `{written}` of `{sig.name}` is {display_dim(want, mine)} from an "
                f"earlier argument, but `{pname}` gives {display_dim(ad, mine)}",
                related=related,
            )
        else:
            self.err(
                "K0302",
                args[i].span,
                f"`{sig.name}` expects `{written}` = {display_dim(want, mine)} for dimension "
                f"{step.axis} of `{pname}`, but it is {display_dim(ad, mine)}",
                related=related,
            )
        return False

    def space_mismatch(self, pt, a, p, arg, sig: FnSig, i: int) -> bool:
        """K0406 for a value, K0407 for a borrow: the argument lives in another memory space."""
        borrowed = isinstance(pt, Ref)
        text = str(arg.syntax).strip()
        if borrowed and text.startswith("&"):
            text = text[1:].strip()
        new = f"&copy_to({text}, {p.space})" if borrowed else f"move_to({text}, {p.space})"
        title = f"transfer it: `{new}`"
        if "transfer" not in self.effects:
            title += " (needs the `transfer` effect)"
        what = "a borrow of `@" if borrowed else "a tensor in `@"
        pname = sig.param_names[i]
        self.err(
            "K0407" if borrowed else "K0406",
            arg.span,
            f"`{sig.name}` expects `{pt.display(sig.dim_names)}` for `{pname}`,"
            f" but this is {what}{a.space}` memory",
            related=(Related(sig.ast.params[i].span, f"parameter `{pname}` is declared here"),),
            fix=Fix(title, (Edit(arg.span, new),)),
        )
        return False

    # --- builtins --------------------------------------------------------------------------
    def builtin_call(self, e: ast.CallExpr, name: str, expected):
        arity, kind = BUILTINS[name]
        args = e.args
        with_axis = name in AXIS_BUILTINS and len(args) == arity + 1
        if name in VARIADIC:
            lo, hi = VARIADIC[name]
            if len(args) < lo or (hi is not None and len(args) > hi) or (hi, len(args)) == (2, 1):
                takes = {
                    "transpose": "1, or 1 and one axis per dimension,",
                    "concat": "2 or more (tensors, then the axis)",
                    "stack": "2 or more (tensors, then the axis)",
                    "arange": "0 or 2 (a start and a step)",
                }[name]
                return self.err(
                    "K0303",
                    e.span,
                    f"`{name}` takes {takes} argument(s) but {len(args)} were given",
                )
            return self.shape_call(e, name, kind, expected)
        if kind in ("shape_to", "outer", "where", "clone", "linspace") and len(args) == arity:
            return self.shape_call(e, name, kind, expected)
        if len(args) != arity and not with_axis:
            takes = f"{arity} or {arity + 1}" if name in AXIS_BUILTINS else f"{arity}"
            return self.err(
                "K0303", e.span, f"`{name}` takes {takes} argument(s) but {len(args)} were given"
            )
        if kind in ("unary", "reduce"):
            v = self.expr(args[0], expected if kind == "unary" and not with_axis else None)
            if with_axis and name in ("min", "max") and isinstance(strip_ref(v.type), Prim):
                # `min(a, b)` of two scalars, as C and Rust write it
                pair = "minimum" if name == "min" else "maximum"
                callee = e.callee
                fix = (
                    Fix(f"call `{pair}`", (Edit(callee.span, pair),))
                    if isinstance(callee, ast.PathExpr)
                    else None
                )
                return self.err(
                    "K0308",
                    e.span,
                    f"`{name}` reduces a tensor (its second argument is an axis); the "
                    f"{'smaller' if name == 'min' else 'larger'} of two values is "
                    f"`{pair}(a, b)`",
                    fix=fix,
                )
            attrs = self.axis_attr(name, args[-1], v) if with_axis else {}
            if attrs is None:
                return ERR_VAL
            return self.op(name, [v], e.span, attrs)
        if kind == "elementwise":
            vals = self._literal_aware(args, expected)
            return self.op(name, vals, e.span)
        if kind == "pair":
            a, b = self.pair(args[0], args[1], None)
            return self.op(name, [a, b], e.span)
        if kind == "layernorm":
            x = self.expr(args[0], None)
            eps = self.expr(args[1], elem_of(x.type) if not x.is_err else None)
            attrs = self.axis_attr(name, args[2], x) if with_axis else {}
            if attrs is None:
                return ERR_VAL
            return self.op(name, [x, eps], e.span, attrs)
        if kind == "fill":
            t = strip_ref(expected) if expected is not None else None
            if name == "zeros" and is_soa(t):  # a tensor of structs (§8.1)
                return self.soa_zeros(t, e.span)
            if is_soa(t):
                return self.err(
                    "K0301",
                    e.span,
                    f"`{name}` fills a tensor of numbers; a tensor of structs"
                    f" ({self.show(t)}) starts from `zeros()`",
                )
            if not isinstance(t, Tensor):
                return self.err(
                    "K0301",
                    e.span,
                    f"cannot infer the shape of `{name}()`: annotate it, e.g. `let y: f32[N] = {name}(…);`",
                )
            if name == "zeros":
                fill = self.const(t.elem, 0, e.span)
            else:
                fill = self.expr(args[0], t.elem)
            return self.op("full", [fill], e.span, {"type": t})
        if kind == "transfer":
            x = self.expr(args[0], None)
            sp = args[1]
            if not isinstance(sp, ast.PathExpr) or sp.name is None or sp.name.text not in SPACES:
                return self.err(
                    "K0203", sp.span, f"`{name}` needs a memory space: " + ", ".join(SPACES)
                )
            if not self.need_effect("transfer", e.span, f"`{name}`") or x.is_err:
                return ERR_VAL
            node = self._effect_node(name, [x], e.span, {"space": sp.name.text})
            return ERR_VAL if node is None else Val(node.out(1), node.types[1])
        if kind == "print":
            if not self.need_effect("io", e.span, "`print`"):
                return ERR_VAL
            arg = args[0]
            if isinstance(arg, ast.Literal) and arg.token.kind == ast.K.STRING:
                text = literals.unescape(arg.token.text[1:-1])
                node = self._effect_node("print", [], e.span, {"text": text})
            else:
                v = self.expr(arg, None)
                if v.is_err:
                    return ERR_VAL
                node = self._effect_node("print", [v], e.span, {})
            from kera_core.ir.types import UNIT

            return ERR_VAL if node is None else Val(None, UNIT)
        raise AssertionError(kind)  # pragma: no cover

    # --- shape operations (docs/semantics.md §7.7) -------------------------------------------
    def expected_tensor(self, e: ast.CallExpr, name: str, expected) -> Tensor | None:
        """The result type of an operation whose shape comes from the expected type (§6.2)."""
        t = strip_ref(expected) if expected is not None else None
        if isinstance(t, Tensor):
            return t
        self.err(
            "K0301",
            e.span,
            f"cannot infer the shape of `{name}(…)`: annotate it, e.g. "
            f"`let y: f32[N] = {name}(…);`",
        )
        return None

    def shape_call(self, e: ast.CallExpr, name: str, kind: str, expected):
        args = e.args
        if kind == "transpose":
            x = self.expr(args[0], None)
            xt = strip_ref(x.type) if not x.is_err else None
            axes = [self.const_axis(name, a) for a in args[1:]]
            if x.is_err or any(a is None for a in axes):
                return ERR_VAL
            if not isinstance(xt, Tensor):
                return self.op(name, [x], e.span, {"perm": ()})  # the rule reports it
            r = xt.rank
            if not axes:
                perm = tuple(range(r - 1, -1, -1))
            else:
                if len(axes) != r:
                    return self.err(
                        "K0316",
                        Span(args[1].span.start, args[-1].span.end),
                        f"`transpose` of {self.show(xt)} needs {r} axes (a permutation), "
                        f"found {len(axes)}",
                    )
                perm = tuple(a % r if -r <= a < r else r for a in axes)  # type: ignore[operator]
                if sorted(perm) != list(range(r)):
                    return self.err(
                        "K0316",
                        Span(args[1].span.start, args[-1].span.end),
                        f"the axes of `transpose` must be a permutation of 0 to {r - 1} "
                        f"(or -{r} to -1), found {', '.join(str(a) for a in axes)}",
                    )
            return self.op(name, [x], e.span, {"perm": perm})
        if kind == "shape_to":
            from kera_core.sema.lower import _is_untyped_literal

            t = self.expected_tensor(e, name, expected)
            x = self.expr(
                args[0], t.elem if t is not None and _is_untyped_literal(args[0]) else None
            )
            if t is None or x.is_err:
                return ERR_VAL
            return self.op(name, [x], e.span, {"type": t})
        if kind == "outer":
            a, b = self.pair(args[0], args[1], None)
            return self.op(name, [a, b], e.span)
        if kind == "where":
            c = self.expr(args[0], None)
            a, b = self.pair(args[1], args[2], elem_of(expected) if expected is not None else None)
            return self.op(name, [c, a, b], e.span)
        if kind == "clone":
            x = self.expr(args[0], None)
            return self.op(name, [x], e.span)
        if kind in ("arange", "linspace"):
            t = self.expected_tensor(e, name, expected)
            vals = [self.expr(a, t.elem if t is not None else None) for a in args]
            if t is None:
                return ERR_VAL
            return self.op(name, vals, e.span, {"type": t})
        assert kind == "join"
        xs = [self.expr(a, None) for a in args[:-1]]
        axis = self.const_axis(name, args[-1])
        if axis is None or any(x.is_err for x in xs):
            return ERR_VAL
        ts = [strip_ref(x.type) for x in xs]
        t0 = ts[0]
        if not all(isinstance(t, Tensor) for t in ts):
            bad = next(i for i, t in enumerate(ts) if not isinstance(t, Tensor))
            return self.err(
                "K0308",
                args[bad].span,
                f"`{name}` expects tensors, found {self.show(xs[bad].type)}",
            )
        r = t0.rank + (1 if name == "stack" else 0)  # type: ignore[union-attr]
        if not -r <= axis < r:
            return self.err(
                "K0316",
                args[-1].span,
                f"axis {axis} is out of range for `{name}` of {self.show(t0)}: "
                f"axes 0 to {r - 1}, or -{r} to -1 from the end",
            )
        axis %= r
        if name == "stack":
            return self.op(name, xs, e.span, {"axis": axis})
        dims = [t.shape[axis] if t.rank == r else 0 for t in ts]  # type: ignore[union-attr]
        if all(isinstance(d, int) for d in dims):
            shape = list(t0.shape)  # type: ignore[union-attr]
            shape[axis] = sum(dims)  # type: ignore[arg-type]
            out: Tensor | None = Tensor(t0.elem, tuple(shape), t0.space)  # type: ignore[union-attr]
        else:  # a symbolic length: the result's length along the axis is the expected type's
            out = self.expected_tensor(e, name, expected)
            if out is None:
                return ERR_VAL
        return self.op(name, xs, e.span, {"axis": axis, "type": out})

    def const_axis(self, name: str, arg: ast.Expr) -> int | None:
        """The value of an axis argument: an integer constant, else K0316 (None)."""
        a = self.expr(arg, I64)
        if a.is_err:
            return None
        t = strip_ref(a.type)
        value = _const_int(self.nodes, a.value) if isinstance(t, Prim) and t.is_int else None
        if value is None:
            what = (
                "a value known only at run time"
                if isinstance(t, Prim) and t.is_int
                else self.show(a.type)
            )
            self.err(
                "K0316",
                arg.span,
                f"the axis of `{name}` must be an integer constant (a literal or a `const`), "
                f"found {what}",
            )
        return value

    def axis_attr(self, name: str, arg: ast.Expr, x: Val) -> dict | None:
        """The attributes for ``name(x, …, axis)``: ``{"axis": a}`` with the axis counted from
        0 (a negative one counts from the end), ``{}`` for a vector (along its only axis is
        the whole-tensor form, one graph for both), None after a diagnostic."""
        value = self.const_axis(name, arg)
        if value is None:
            return None
        xt = strip_ref(x.type) if not x.is_err else None
        if not isinstance(xt, Tensor):
            return {}  # the operation's own type rule reports a non-tensor operand
        rank = xt.rank
        if not -rank <= value < rank:
            self.err(
                "K0316",
                arg.span,
                f"axis {value} is out of range for {self.show(xt)}: it has rank {rank} "
                f"(axes 0 to {rank - 1}, or -{rank} to -1 from the end)",
            )
            return None
        if rank == 1:
            return {}
        return {"axis": value % rank}

    def _literal_aware(self, args: list[ast.Expr], expected) -> list[Val]:
        from kera_core.sema.lower import _is_untyped_literal

        first = next((a for a in args if not _is_untyped_literal(a)), None)
        ctx = expected
        vals: dict[int, Val] = {}
        if first is not None:
            i = args.index(first)
            vals[i] = self.expr(first, expected)
            if not vals[i].is_err:
                ctx = elem_of(vals[i].type) or expected
        return [vals[i] if i in vals else self.expr(a, ctx) for i, a in enumerate(args)]


def _const_int(nodes: dict, v) -> int | None:
    """The value of an integer computed from constants only (literals, `const` items,
    `-`, `+`, `*`, `as` between integer types), else None."""
    n = nodes.get(v.node) if v is not None else None
    if n is None or not n.types or not isinstance(n.types[0], Prim) or not n.types[0].is_int:
        return None
    args = [_const_int(nodes, i) for i in n.inputs]
    if any(a is None for a in args):
        return None
    if n.op == "const":
        r = int(n.attr("value"))
    elif n.op == "neg":
        r = -args[0]
    elif n.op in ("add", "sub", "mul"):
        a, b = args
        r = a + b if n.op == "add" else a - b if n.op == "sub" else a * b
    elif n.op == "cast":
        r = args[0]
    else:
        return None
    t: Prim = n.types[0]
    r &= (1 << t.bits) - 1
    return r - (1 << t.bits) if t.is_signed and r >> (t.bits - 1) else r


def _prim(t) -> Prim | None:
    return t if isinstance(t, Prim) else None
