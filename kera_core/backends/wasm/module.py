"""The WebAssembly module around the selected functions: memory, the allocator, the error
global, `print`'s descriptors, helper functions and the exported entry.

Memory: addresses below 1024 are scratch (a printed buffer's dimensions); `print`
descriptors follow as data; the heap starts after them, 16-byte aligned. The allocator is
a stack of blocks, each after a 16-byte header ``[previous block, freed]``:
``kera_alloc(nbytes)`` pushes one (growing the memory as needed; R0009 when it cannot),
``$kera_free`` marks a block freed and pops every freed block from the top — so the loop
program's temporaries, freed at their last use (not always in reverse order of
allocation), give their memory back as soon as everything above them is gone, and a loop
whose iterations free what they allocate runs in constant memory. A block's contents are
undefined (the loop program writes every element before reading it); ``poison=True``
builds fill each block with 0xA5 bytes, so tests catch a read of memory never written.

The export ``<entry>`` calls the entry function and canonicalises every float it hands
back (scalars, and every element of its result buffers and ``&mut`` parameters), the
"canonicalise where bits leave the program" clause of docs/semantics.md §3.
"""

from __future__ import annotations

import json

from kera_core.backends.wasm import softfloat
from kera_core.backends.wasm.select import (
    NAN_BITS,
    FunctionSelector,
    NotSelected,
    canon,
    const,
    fname,
    wtype,
)
from kera_core.loops import ir
from kera_core.loops.ir import FLOATS

HEAP_BASE = 1024
MAX_MEMORY = 4294901760  # 65535 pages: the largest a 32-bit memory can grow to

ALLOCATOR = """\
  (func $kera_fail (param $code i32)
    (global.set $err (local.get $code))
    unreachable)
  (func $kera_alloc (export "kera_alloc") (param $n i64) (result i32)
    (local $h i32) (local $p i32) (local $end i64) (local $have i64)
    (local.set $h (i32.and (i32.add (global.get $hp) (i32.const 15)) (i32.const -16)))
    (local.set $p (i32.add (local.get $h) (i32.const 16)))
    (local.set $end (i64.add (i64.extend_i32_u (local.get $p)) (local.get $n)))
    (if (i64.gt_u (local.get $end) (i64.const {max}))
      (then (call $kera_fail (i32.const 9))))
    (local.set $have (i64.shl (i64.extend_i32_u (memory.size)) (i64.const 16)))
    (if (i64.gt_u (local.get $end) (local.get $have))
      (then
        (if (i32.eq (memory.grow (i32.wrap_i64 (i64.shr_u
              (i64.add (i64.sub (local.get $end) (local.get $have)) (i64.const 65535))
              (i64.const 16)))) (i32.const -1))
          (then (call $kera_fail (i32.const 9))))))
    (i32.store (local.get $h) (global.get $top))
    (i32.store offset=4 (local.get $h) (i32.const 0))
    (global.set $top (local.get $h))
    (global.set $hp (i32.wrap_i64 (local.get $end))){poison}
    (local.get $p))
  (func $kera_free (param $p i32)
    (i32.store offset=4 (i32.sub (local.get $p) (i32.const 16)) (i32.const 1))
    (block $done (loop $pop
      (br_if $done (i32.eqz (global.get $top)))
      (br_if $done (i32.eqz (i32.load offset=4 (global.get $top))))
      (global.set $hp (global.get $top))
      (global.set $top (i32.load (global.get $top)))
      (br $pop))))"""

POISON = """
    (memory.fill (local.get $p) (i32.const 0xA5) (i32.wrap_i64 (local.get $n)))"""

CLAMP = """\
  (func $clamp_i32 (param $x i32) (param $lo i32) (param $hi i32) (result i32)
    (select (local.get $lo)
      (select (local.get $hi) (local.get $x) (i32.gt_s (local.get $x) (local.get $hi)))
      (i32.lt_s (local.get $x) (local.get $lo))))"""


class Module:
    """The module of one program's entry function (``program.functions[entry]``) and every
    function it calls."""

    def __init__(self, program: ir.Program, entry: str, *, vectors: bool = True, poison=False):
        self.program = program
        self.entry = entry
        self.vectors = vectors
        self.poison = poison
        self.helpers: dict[str, str] = {}
        self.data = bytearray()
        self.descriptors: dict[str, tuple[int, int]] = {}

    def helper(self, name: str) -> str:
        """``$name``, a helper function emitted once per module."""
        if name not in self.helpers:
            self.helpers[name] = CLAMP if name == "clamp_i32" else softfloat.TEXT[name]()
        return f"${name}"

    def descriptor(self, desc: dict) -> tuple[int, int]:
        """The address and length of a `print` descriptor (JSON) in the data segment."""
        text = json.dumps(desc, separators=(",", ":"))
        got = self.descriptors.get(text)
        if got is None:
            raw = text.encode()
            got = self.descriptors[text] = (HEAP_BASE + len(self.data), len(raw))
            self.data += raw
        return got

    def text(self) -> str:
        funcs = []
        for lf in self.program.functions.values():
            try:
                funcs.append(FunctionSelector(lf, self).select())
            except NotSelected as e:
                raise NotSelected(f"`{lf.name}`: {e}") from None
        heap = (HEAP_BASE + len(self.data) + 15) & ~15
        lines = ["(module"]
        if self.data:
            lines.append('  (import "kera" "print" (func $kera_print (param i32 i32 i64 i32)))')
        lines += [
            '  (memory (export "memory") 1)',
            f'  (global $hp (export "kera_heap") (mut i32) (i32.const {heap}))',
            '  (global $top (export "kera_top") (mut i32) (i32.const 0))',
            '  (global $err (export "kera_error") (mut i32) (i32.const 0))',
        ]
        if self.data:
            lines.append(f'  (data (i32.const {HEAP_BASE}) "{_wat_bytes(bytes(self.data))}")')
        lines.append(
            ALLOCATOR.replace("{max}", str(MAX_MEMORY)).replace(
                "{poison}", POISON if self.poison else ""
            )
        )
        lines += self.helpers.values()
        lines += funcs
        lines.append(self.export())
        lines.append(")")
        return "\n".join(lines) + "\n"

    def export(self) -> str:
        """The exported entry: its parameters passed on, its results canonicalised."""
        lf = self.program.functions[self.entry]
        params, args = [], []
        for x in [*lf.dims, *(x for g in lf.params for x in g)]:
            name = f"$b{x.id}" if isinstance(x, ir.Buf) else f"$v{x.id}"
            wt = "i32" if isinstance(x, ir.Buf) else wtype(x.type)
            params.append(f"(param {name} {wt})")
            args.append(f"(local.get {name})")
        results = [x for g in lf.results for x in g]
        shapes = [s for g in lf.result_shapes for s in g]
        locals_ = []
        body = [f"    (call {fname(lf.name)} {' '.join(args)})"]
        for k in reversed(range(len(results))):
            x = results[k]
            wt = "i32" if isinstance(x, ir.Buf) else wtype(x.type)
            locals_.append(f"(local $r{k} {wt})")
            body.append(f"    local.set $r{k}")
        locals_.append("(local $i i32) (local $end i32)")
        for k, x in enumerate(results):
            if isinstance(x, ir.Buf) and x.elem in FLOATS:
                body += _canon_buffer(f"$r{k}", x.elem, shapes[k], lf.dims)
        out = []
        for k, x in enumerate(results):
            if not isinstance(x, ir.Buf) and x.type in FLOATS:
                out.append(canon(x.type, f"(local.get $r{k})"))
            else:
                out.append(f"(local.get $r{k})")
        rtypes = ["i32" if isinstance(x, ir.Buf) else wtype(x.type) for x in results]
        head = f'  (func $export (export "{self.entry}") ' + " ".join(params)
        if rtypes:
            head += " (result " + " ".join(rtypes) + ")"
        return "\n".join(
            [head, "    " + " ".join(locals_), *body, *(f"    {o}" for o in out), "  )"]
        )


def _size(d, dims: list) -> str:
    """One dimension of a result's shape as an i64 expression over the export's parameters:
    a constant, a dimension, or a dimension expression (checked on entry: exact, >= 0)."""
    if isinstance(d, ir.Imm):
        return const("i64", d.bits)
    if isinstance(d, ir.DimSize):
        e = d.expr
        acc = f"(i64.const {e.const})"
        for k, c in e.terms:
            acc = f"(i64.add {acc} (i64.mul (i64.const {c}) (local.get $v{dims[k].id})))"
        return acc if e.div == 1 else f"(i64.div_s {acc} (i64.const {e.div}))"
    return f"(local.get $v{d.id})"


def _canon_buffer(ptr: str, t: str, shape: tuple, dims: list) -> list[str]:
    """Canonicalise the NaNs of the float buffer at local ``ptr`` in place: 16 bytes a step
    (``bitselect`` of the canonical NaN where a lane is unordered), then element by element."""
    w = 4 if t == "f32" else 8
    shp = "f32x4" if t == "f32" else "f64x2"
    count = "(i64.const 1)"
    for d in shape:
        count = f"(i64.mul {count} {_size(d, dims)})"
    nan = const(t, NAN_BITS[t])
    x = f"({t}.load (local.get $i))"
    vx = "(v128.load (local.get $i))"
    return [
        f"    (local.set $i (local.get {ptr}))",
        f"    (local.set $end (i32.add (local.get {ptr}) "
        f"(i32.wrap_i64 (i64.mul {count} (i64.const {w})))))",
        "    (block $vd (loop $vl",
        "      (br_if $vd (i32.gt_u (i32.add (local.get $i) (i32.const 16)) (local.get $end)))",
        f"      (v128.store (local.get $i) (v128.bitselect ({shp}.splat {nan}) {vx} "
        f"({shp}.ne {vx} {vx})))",
        "      (local.set $i (i32.add (local.get $i) (i32.const 16)))",
        "      (br $vl)))",
        "    (block $sd (loop $sl",
        "      (br_if $sd (i32.ge_u (local.get $i) (local.get $end)))",
        f"      ({t}.store (local.get $i) (select {nan} {x} ({t}.ne {x} {x})))",
        f"      (local.set $i (i32.add (local.get $i) (i32.const {w})))",
        "      (br $sl)))",
    ]


def _wat_bytes(p: bytes) -> str:
    return "".join("\\" + format(b, "02x") for b in p)
