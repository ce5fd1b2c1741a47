"""Module-level environment: structs, constants and function signatures, and type resolution.

Everything a function body needs to know about the rest of the file lives here,
so lowering one function depends only on its own text and this table.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kera_core.diagnostics import Diagnostic, error, quoted
from kera_core.ir.node import Function
from kera_core.ir.types import (
    EFFECTS,
    PRIMS,
    SPACES,
    UNIT,
    Dim,
    DimError,
    DimExpr,
    FnType,
    Prim,
    Ref,
    Struct,
    Sym,
    Tensor,
    Type,
    TypeParam,
    dim_add,
    dim_scale,
    holds_tensor,
    scalar_struct,
    soa_of,
    tuple_type,
)
from kera_core.sema import literals
from kera_core.source import Span
from kera_core.syntax import ast
from kera_core.syntax.kinds import SyntaxKind as K

if TYPE_CHECKING:
    from kera_core.sema.lower import LoweredFn

MAX_DIM_SIZE = (1 << 31) - 1
"""Largest fixed dimension size in a type (language.md §16)."""


def did_you_mean(name: str, candidates) -> str:
    close = difflib.get_close_matches(name, sorted(set(candidates)), n=1, cutoff=0.6)
    return f"; did you mean `{close[0]}`?" if close else ""


@dataclass(frozen=True)
class Use:
    """One resolved name: where it is used and what it refers to.

    Locals (`kind` local/param/loop/dim) carry the definition's span; module items
    (fn/struct/const/field) are named, and their spans come from the current
    :class:`ModuleEnv`, so a cached function's uses stay right when other items move.
    """

    span: Span
    kind: str
    def_span: Span | None = None
    name: str = ""
    owner: str = ""  # the struct, for a field

    def __init__(
        self, span: Span, kind: str, def_span: Span | None = None, name: str = "", owner: str = ""
    ) -> None:
        # what the generated ``__init__`` does with five ``object.__setattr__`` calls, as
        # stores into the instance's dict (at half the cost): one use per name read
        d = self.__dict__
        d["span"] = span
        d["kind"] = kind
        d["def_span"] = def_span
        d["name"] = name
        d["owner"] = owner

    def shifted(self, delta: int) -> Use:
        return Use(
            self.span.shifted(delta),
            self.kind,
            self.def_span.shifted(delta) if self.def_span is not None else None,
            self.name,
            self.owner,
        )


@dataclass
class FnSig:
    name: str
    type: FnType
    dim_names: tuple[str, ...]
    param_names: tuple[str, ...]
    exported: bool
    span: Span
    name_span: Span
    doc: str
    ast: ast.Fn
    uses: list[Use] = field(default_factory=list)  # names in the signature, absolute
    # A generic function (`fn f<T: Float>`): its element-type parameters, whose
    # TypeParams ``type`` mentions, and their declarations' spans. An instance
    # (`f<f32>`) has the same ``type_params`` and its ``type_args``, and ``generic``
    # names the generic function; its ``type`` has them substituted.
    type_params: tuple[TypeParam, ...] = ()
    type_param_spans: tuple[Span, ...] = ()
    type_args: tuple[Prim, ...] = ()
    generic: str = ""

    @property
    def has_effects(self) -> bool:
        return bool(self.type.effects)

    @property
    def is_generic(self) -> bool:
        return bool(self.type_params) and not self.type_args

    def type_names(self) -> dict[str, tuple[Type, Span]]:
        """What each type parameter's name means in this signature's body: the
        TypeParam in a generic signature, the type argument in an instance."""
        vals = self.type_args or self.type_params
        return {
            tp.name: (v, sp)
            for tp, v, sp in zip(self.type_params, vals, self.type_param_spans, strict=True)
        }


def instance_name(generic: str, args) -> str:
    """`axpy<f32>`: the graph name of a generic function's instance."""
    return f"{generic}<{', '.join(a.name for a in args)}>"


@dataclass
class ConstDef:
    name: str
    type: Type | None
    value: ast.Expr | None
    span: Span
    name_span: Span | None = None


@dataclass(frozen=True)
class Imported:
    """One item a `use` brings into a file of a package (sema/package.py): ``local`` is
    the name it has here (the alias, if any), ``name`` the one it has in ``module``,
    whose file ``path`` defines it at ``def_span``; ``use_span`` is the local name in
    the `use` declaration."""

    kind: str  # "fn" | "struct" | "const"
    local: str
    name: str
    module: str
    path: str
    def_span: Span
    use_span: Span


@dataclass(frozen=True)
class ImportedConst:
    """A constant a `use` brings into a file: its definition and the environment of the
    file that defines it (its initializer's names resolve there), under ``name``.

    A use of it lowers the initializer in place, exactly as a use of a constant of the
    same file does, so the user's hash does not depend on which file the constant is in;
    ``digest`` (the hash of its lowered value, ``b""`` for a constant that failed in its
    own file) is what the importing file's caches see of it."""

    name: str
    const: ConstDef
    env: ModuleEnv
    digest: bytes


@dataclass
class Imports:
    """What a file of a package sees of other files: the imported items by local name,
    the signatures of the imported functions (and of each instance of an imported
    generic one) and their lowered functions, and the imported structs."""

    items: dict[str, Imported] = field(default_factory=dict)
    fns: dict[str, FnSig] = field(default_factory=dict)
    instances: dict[str, FnSig] = field(default_factory=dict)
    functions: dict[str, Function] = field(default_factory=dict)
    structs: dict[str, Struct] = field(default_factory=dict)
    consts: dict[str, ImportedConst] = field(default_factory=dict)
    # the local names of the imports that failed (reported on the `use`, not at each use)
    failed: frozenset[str] = frozenset()
    # every module of the package and its `pub` items as (name, kind): what a `use` can name
    modules: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    # this file's members of recursive components that cross files, by name, lowered with
    # the rest of their component by the package (sema/package.py): taken as they are
    members: dict[str, LoweredFn] = field(default_factory=dict)


@dataclass
class ModuleEnv:
    structs: dict[str, Struct] = field(default_factory=dict)
    struct_spans: dict[str, Span] = field(default_factory=dict)
    field_spans: dict[tuple[str, str], Span] = field(default_factory=dict)
    consts: dict[str, ConstDef] = field(default_factory=dict)
    fns: dict[str, FnSig] = field(default_factory=dict)
    # the instances of generic functions, by graph name (`axpy<f32>`): one per
    # combination of the types their bounds admit (language.md §3.1.1)
    instances: dict[str, FnSig] = field(default_factory=dict)
    # names in struct and const declarations, then in the constants' initializers
    # (consts.check_constants: in source order)
    uses: list[Use] = field(default_factory=list)
    bad_consts: set[str] = field(default_factory=set)  # reported once (sema/consts.py)
    const_values: dict[str, object] = field(default_factory=dict)  # sema/consts.constant_value
    # (the tables, their sizes, references, bad) of the constants, sema/consts._reference_graph
    const_graph: tuple | None = None
    # the items `use` brought in, by local name (sema/package.py): defined in other files
    imported: dict[str, Imported] = field(default_factory=dict)
    # the imported constants, by local name (their values are inlined where used)
    imported_consts: dict[str, ImportedConst] = field(default_factory=dict)
    # names whose `use` failed (K0209, K0210): a use of one is not reported again
    failed_imports: frozenset[str] = frozenset()
    # the package's modules and their `pub` items (Imports.modules; empty for a lone file)
    modules: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)

    def origin(self, kind: str, name: str) -> Imported | None:
        """The import a module item's name refers to (None: defined in this file)."""
        imp = self.imported.get(name)
        return imp if imp is not None and imp.kind == kind else None

    def const_named(self, name: str) -> tuple[ConstDef, ModuleEnv, str] | None:
        """The constant ``name`` denotes here, the environment its initializer resolves
        in and its name there: this file's own, or an imported one."""
        c = self.consts.get(name)
        if c is not None:
            return c, self, name
        ic = self.imported_consts.get(name)
        return (ic.const, ic.env, ic.name) if ic is not None else None

    def const_names(self) -> list[str]:
        """Every constant visible here (for suggestions)."""
        return [*self.consts, *self.imported_consts]

    def is_local(self, name: str) -> bool:
        """Is the function ``name`` defined in this file (not imported)?"""
        return name in self.fns and self.origin("fn", name) is None

    def local_fns(self) -> list[FnSig]:
        """The signatures of the functions this file defines (not the imported ones, whose
        spans are in their own files)."""
        if not self.imported:
            return list(self.fns.values())
        return [s for n, s in self.fns.items() if self.origin("fn", n) is None]

    def definition(self, use: Use) -> Span | None:
        """Where a use's target is defined, in the current file: for an imported item, its
        name in the `use` declaration (:attr:`imported` says where its module defines it)."""
        if use.def_span is not None:
            return use.def_span
        imp = self.origin(use.kind, use.name)
        if imp is not None:
            return imp.use_span
        if use.kind == "fn" and use.name in self.fns:
            return self.fns[use.name].name_span
        if use.kind == "struct":
            return self.struct_spans.get(use.name)
        if use.kind == "const" and use.name in self.consts:
            return self.consts[use.name].name_span
        if use.kind == "field":
            return self.field_spans.get((use.owner, use.name))
        return None


class TypeResolver:
    """AST types -> IR types, given the dimension names in scope."""

    def __init__(
        self,
        env: ModuleEnv,
        dims: tuple[str, ...],
        diags: list[Diagnostic],
        uses: list[Use] | None = None,
        dim_spans: tuple[Span, ...] = (),
        type_names: dict[str, tuple[Type, Span]] | None = None,
        in_struct: str = "",
        in_const: str = "",
    ) -> None:
        self.env = env
        self.dims = dims
        self.diags = diags
        self.uses = uses if uses is not None else []
        self.dim_spans = dim_spans
        self.type_names = type_names or {}
        self.in_struct = in_struct  # resolving the fields of this struct (§8)
        self.in_const = in_const  # resolving the type of this constant (§3.3)

    def resolve(self, t: ast.Type | None) -> Type | None:
        if t is None:
            return None
        if isinstance(t, ast.UnitType):
            return UNIT
        if isinstance(t, ast.UnsupportedType):
            return None  # the parser reported it (K0112)
        if isinstance(t, ast.TupleType):
            return self._tuple(t)
        if isinstance(t, ast.RefType):
            inner = self.resolve(t.inner)
            return None if inner is None else Ref(inner, t.is_mut)
        if isinstance(t, ast.SpaceType):
            inner = self.resolve(t.inner)
            sp = t.space
            if inner is None or sp is None:
                return None
            if sp.text not in SPACES:
                self.diags.append(
                    error(
                        "K0203",
                        sp.span,
                        f"unknown memory space `@{sp.text}`; the spaces are "
                        + ", ".join(f"`@{s}`" for s in SPACES)
                        + did_you_mean(sp.text, SPACES),
                    )
                )
                return None
            if not isinstance(inner, Tensor):
                self.diags.append(
                    error("K0406", t.span, f"only tensors live in a memory space, not `{inner}`")
                )
                return None
            return Tensor(inner.elem, inner.shape, sp.text)
        if isinstance(t, ast.NamedType):
            return self._named(t.name)
        if isinstance(t, ast.TensorType):
            elem = t.elem
            base = self._named(elem.name if elem else None)
            if base is None:
                return None
            if isinstance(base, Struct) and not scalar_struct(base):
                what = "holds a tensor" if holds_tensor(base) else "has no fields"
                self.diags.append(
                    error(
                        "K0324",
                        t.span,
                        f"a tensor's elements are numbers or structs of numbers, but `{base}`"
                        f" {what}: a tensor of structs (§8.1) takes structs whose fields are"
                        " scalars or structs and tuples of scalars",
                    )
                )
                return None
            if not isinstance(base, Prim | TypeParam | Struct) or (
                isinstance(base, Prim) and base.name not in PRIMS
            ):
                self.diags.append(
                    error("K0301", t.span, f"tensor elements must be primitive, not `{base}`")
                )
                return None
            shape = []
            for d in t.dims:
                if d.child_of_kind(K.UNSUPPORTED) is not None:
                    return None  # `N % 2`: the parser reported it (K0112)
                dim = self._dim(d)
                if dim is None:
                    return None
                shape.append(dim)
            if isinstance(base, Struct):  # `Body[N]`: one tensor per field (§8.1)
                return soa_of(base, tuple(shape))
            return Tensor(base, tuple(shape))  # type: ignore[arg-type]
        return None

    def _tuple(self, t: ast.TupleType) -> Type | None:
        parts = t.elements
        if t.is_parenthesized:
            return self.resolve(parts[0])  # `(f32)` is `f32`
        elems: list[Type] = []
        for part in parts:
            et = self.resolve(part)
            if et is None:
                return None
            if not tuple_element_ok(et):
                self.diags.append(tuple_element_error(et, part.span, self.dims))
                return None
            elems.append(et)
        return tuple_type(tuple(elems)) if elems else UNIT

    def _dim(self, d) -> Dim | None:
        """One DIM node: a size, a dimension parameter, a dimension constant, or affine
        arithmetic over them with exact division by a number (§7.5); None after a
        diagnostic."""
        operand = next((c for c in d.children_with_tokens() if not c.kind.is_trivia), None)
        if operand is None:
            return None  # the parser reported the missing dimension
        value = self._dim_operand(operand)
        if value is None:
            return None
        if isinstance(value, DimExpr) and value.div > 1:
            if all(c % value.div == 0 for _, c in value.terms):
                return self._bad_dim(
                    d.span, f"`{value.display(self.dims)}` is never a whole number"
                )
        if isinstance(value, int):
            if value < 0:
                return self._bad_dim(d.span, f"this dimension is {value}, below zero")
            if value > MAX_DIM_SIZE:
                self.diags.append(
                    error(
                        "K0307",
                        d.span,
                        f"dimension size {value} is out of range (at most {MAX_DIM_SIZE})",
                    )
                )
                return None
        return value

    def _bad_dim(self, span: Span, message: str) -> None:
        self.diags.append(error("K0321", span, message))
        return None

    def _dim_operand(self, n) -> Dim | None:
        k = n.kind
        if k == K.INT:
            try:
                size = literals.int_value(n.text)
            except ValueError:
                size = None
            if size is None or size > MAX_DIM_SIZE:
                self.diags.append(
                    error(
                        "K0307",
                        n.span,
                        f"dimension size `{quoted(n.text)}` is out of range "
                        f"(at most {MAX_DIM_SIZE})",
                    )
                )
                return None
            return size
        if k == K.NAME_REF:
            return self._dim_name(n)
        if k == K.DIM_PAREN:
            inner = next(
                (
                    c
                    for c in n.children_with_tokens()
                    if not c.kind.is_trivia and c.kind not in (K.L_PAREN, K.R_PAREN)
                ),
                None,
            )
            return None if inner is None else self._dim_operand(inner)
        if k == K.DIM_BIN:
            parts = [c for c in n.children_with_tokens() if not c.kind.is_trivia]
            if len(parts) != 3:
                return None  # the parser reported the missing operand
            lhs, op, rhs = parts
            a = self._dim_operand(lhs)
            b = self._dim_operand(rhs)
            if a is None or b is None:
                return None
            return self._dim_op(a, op.kind, b, n.span, op.span)
        return None

    def _dim_op(self, a: Dim, op, b: Dim, span: Span, op_span: Span) -> Dim | None:
        divided = [x for x in (a, b) if isinstance(x, DimExpr) and x.div > 1]
        if op == K.STAR:
            if not isinstance(a, int) and not isinstance(b, int):
                return self._bad_dim(
                    span,
                    "a dimension is affine: multiply a dimension by a number (`2 * N`), "
                    "not by another dimension",
                )
            if divided:
                return self._bad_dim(
                    span,
                    "write the division last (`(2 * N) / 4`, not `2 * (N / 4)`): a product "
                    "of a quotient would not check that the quotient divides",
                )
            return dim_scale(a, b) if isinstance(b, int) else dim_scale(b, a)  # type: ignore[arg-type]
        if op == K.SLASH:
            if not isinstance(b, int):
                return self._bad_dim(span, "a dimension can only be divided by a number")
            if b == 0:
                return self._bad_dim(op_span, "division by zero in a dimension")
            try:
                return dim_scale(a, 1, b)
            except DimError:
                return self._bad_dim(span, f"{a} / {b} is not a whole number")
        # `+` and `-`: a quotient plus a number stays exactly as divisible; a quotient
        # plus another dimension would not be checked term by term
        if divided and not isinstance(a, int) and not isinstance(b, int):
            return self._bad_dim(
                span,
                "write the division last: `(N + M) / 2`, not `N / 2 + M / 2` — a sum of "
                "quotients would not check that each divides",
            )
        return dim_add(a, b, 1 if op == K.PLUS else -1)

    def _dim_name(self, ref) -> Dim | None:
        name = ref.text.strip()
        if name in self.dims:
            i = self.dims.index(name)
            if i < len(self.dim_spans):
                self.uses.append(Use(ref.span, "dim", self.dim_spans[i], name))
            return Sym(i)
        found = self.env.const_named(name)
        if found is not None:
            c, home, home_name = found
            self.uses.append(Use(ref.span, "const", name=name))
            if c.type is None:
                return None  # reported on the constant
            if not (isinstance(c.type, Prim) and c.type.is_int):
                return self._bad_dim(
                    ref.span,
                    f"constant `{name}` is `{c.type}`: a dimension constant has an integer type",
                )
            from kera_core.sema.consts import constant_value

            v = constant_value(home, home_name)
            if v is None:
                return None  # reported on the constant
            v = int(v)
            if v < 0 or v > MAX_DIM_SIZE:
                return self._bad_dim(
                    ref.span,
                    f"constant `{name}` is {v}: a dimension is between 0 and {MAX_DIM_SIZE}",
                )
            return v
        if self.in_struct:
            self.diags.append(
                error(
                    "K0323",
                    ref.span,
                    f"`{name}` is not a constant: the dimensions of a tensor field of"
                    f" `{self.in_struct}` are numbers or integer constants (`const {name}:"
                    " i64 = …;`); structs have no dimension parameters"
                    + did_you_mean(name, list(self.env.consts)),
                )
            )
            return None
        if self.in_const:
            self.diags.append(
                error(
                    "K0201",
                    ref.span,
                    f"unknown dimension `{name}`: the shape of constant `{self.in_const}` is"
                    f" given by numbers or integer constants (`const {name}: i64 = …;`)"
                    + did_you_mean(name, self.env.const_names()),
                )
            )
            return None
        hint = (
            f"; declare it: `fn f[{name}](…)`"
            if not self.dims
            else did_you_mean(name, [*self.dims, *self.env.const_names()])
        )
        self.diags.append(error("K0201", ref.span, f"unknown dimension `{name}`{hint}"))
        return None

    def _named(self, ref: ast.NameRef | None) -> Type | None:
        if ref is None:
            return None
        name = ref.text
        if name in self.type_names:
            t, decl = self.type_names[name]
            self.uses.append(Use(ref.span, "tparam", decl, name))
            return t
        if name in PRIMS:
            return PRIMS[name]
        if name in self.env.structs:
            self.uses.append(Use(ref.span, "struct", name=name))
            return self.env.structs[name]
        if name in self.env.failed_imports:
            return None  # its `use` is reported
        self.diags.append(
            error(
                "K0203",
                ref.span,
                f"unknown type `{name}`" + did_you_mean(name, [*PRIMS, *self.env.structs]),
            )
        )
        return None


def tuple_element_ok(t: Type) -> bool:
    """Tuples hold what structs hold: numbers, bools, host tensors, structs and tuples."""
    return isinstance(t, Prim | Struct) or (isinstance(t, Tensor) and t.space == "host")


def tuple_element_error(t: Type, span: Span, dims: tuple[str, ...] = ()) -> Diagnostic:
    shown = t.display(dims)
    if isinstance(t, Tensor):
        msg = (
            f"a tuple's tensors live in host memory, not `@{t.space}` (`{shown}`):"
            " pass a tensor in another space on its own"
        )
        return error("K0323", span, msg)
    return error(
        "K0301",
        span,
        f"a tuple holds numbers, bools, tensors, structs and tuples, not `{shown}`",
    )


def resolve_effects(fn: ast.Fn, diags: list[Diagnostic]) -> tuple[str, ...]:
    seen: list[str] = []
    for e in fn.effects:
        tok = e.token_of_kind(K.IDENT)
        if tok is None:
            continue
        if tok.text not in EFFECTS:
            diags.append(
                error(
                    "K0502",
                    tok.span,
                    f"unknown effect `{tok.text}`; the effects are "
                    + ", ".join(f"`{x}`" for x in EFFECTS)
                    + did_you_mean(tok.text, EFFECTS),
                )
            )
        elif tok.text in seen:
            diags.append(error("K0503", tok.span, f"effect `{tok.text}` is listed twice"))
        else:
            seen.append(tok.text)
    return tuple(sorted(seen))
