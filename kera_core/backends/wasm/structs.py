"""Struct values in linear memory (docs/targets/wasm.md, "Structs").

A struct value is the `i32` address of an immutable block: one 8-byte slot per scalar
leaf, in declaration order, nested structs inline (their slots in place). A scalar sits at
the start of its slot in its natural width, little-endian. `struct` allocates and fills a
block; `field` loads a scalar or hands out the address of the nested block (blocks are
never written after they are built, so sharing is safe); `set_field` copies the block and
replaces the slot(s). Values are values, exactly as the interpreter's tuples.
"""

from __future__ import annotations

from kera_core.ir.types import Prim, Struct, Type, strip_ref

SLOT = 8


def leaves(t: Type) -> int:
    t = strip_ref(t)
    if isinstance(t, Struct):
        return sum(leaves(ft) for _, ft in t.fields)
    return 1


def size(t: Struct) -> int:
    return SLOT * leaves(t)


def offset(t: Struct, index: int) -> int:
    return SLOT * sum(leaves(ft) for _, ft in t.fields[:index])


def scalar_leaves(t: Struct, base: int = 0):
    """(byte offset, Prim) of every scalar leaf, in order."""
    off = base
    for _, ft in t.fields:
        ft = strip_ref(ft)
        if isinstance(ft, Struct):
            yield from scalar_leaves(ft, off)
            off += size(ft)
        else:
            yield off, ft
            off += SLOT


def fields_ok(t: Struct) -> bool:
    """Only scalars and structs of scalars are laid out."""
    for _, ft in t.fields:
        ft = strip_ref(ft)
        if isinstance(ft, Struct):
            if not fields_ok(ft):
                return False
        elif not isinstance(ft, Prim):
            return False
    return True


def _emit():
    from kera_core.backends.wasm import emit

    return emit


def _put(fe, st: Struct, base: str, index: int, v: str) -> None:
    emit = _emit()
    ft = strip_ref(st.fields[index][1])
    at = f"(i32.add {base} (i32.const {offset(st, index)}))"
    if isinstance(ft, Struct):
        fe.emit(f"memory.copy {at} {v} (i32.const {size(ft)})")
    else:
        fe.emit(emit.store(ft, at, v))


def _block(fe, st: Struct) -> str:
    p = fe.local("i32", "st")
    fe.emit(f"local.set {p} (call $kera_alloc (i64.const {size(st)}))")
    return p


def struct(fe, n, ins, tin, out: str) -> None:
    st = strip_ref(n.types[0])
    p = _block(fe, st)
    for k, v in enumerate(ins):
        _put(fe, st, f"(local.get {p})", k, v)
    fe.emit(f"local.set {out} (local.get {p})")


def field(fe, n, ins, tin, out: str) -> None:
    emit = _emit()
    st = strip_ref(tin[0])
    k = n.attr("index")
    ft = strip_ref(st.fields[k][1])
    at = f"(i32.add {ins[0]} (i32.const {offset(st, k)}))"
    if isinstance(ft, Struct):
        fe.emit(f"local.set {out} {at}")
    else:
        fe.emit(f"local.set {out} {emit.load(ft, at)}")


def set_field(fe, n, ins, tin, out: str) -> None:
    st = strip_ref(tin[0])
    p = _block(fe, st)
    fe.emit(f"memory.copy (local.get {p}) {ins[0]} (i32.const {size(st)})")
    _put(fe, st, f"(local.get {p})", n.attr("index"), ins[1])
    fe.emit(f"local.set {out} (local.get {p})")


def canon_code(st: Struct, addr: str, indent: str) -> list[str]:
    """Canonicalise every float leaf of the block at ``addr`` in place (at the export)."""
    from kera_core.backends.wasm import rt

    out = []
    for off, p in scalar_leaves(st):
        if not p.is_float:
            continue
        at = f"(i32.add {addr} (i32.const {off}))"
        tmp = "$cx_" + p.name
        out.append(f"{indent}(local.set {tmp} ({p.name}.load {at}))")
        out.append(f"{indent}({p.name}.store {at} {rt.canon(p, f'(local.get {tmp})', tmp)})")
    return out


OPS = {"struct": struct, "field": field, "set_field": set_field}
