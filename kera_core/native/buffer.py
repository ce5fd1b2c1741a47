"""The code buffer: bytes, labels, fix-ups, a constant pool and alignment.

Labels may be referenced before or after they are bound; every reference is a :class:`Fixup`
resolved in :meth:`CodeBuffer.finish`.  What a fix-up writes is ISA data: a
:class:`FixupKind` is a name, the number of bytes it patches and a ``patch`` function that
receives the displacement ``target - pc`` (``pc`` is the reference point the ISA measures
from: the end of the instruction on x86, the instruction itself on ARM64) and writes it,
raising :class:`FixupRangeError` when it does not fit.  The x86 kinds live in
``kera_core.native.x86.fixups``, the ARM64 kinds in ``kera_core.native.arm64.fixups``.

Constants (vector literals, masks) go to a pool placed after the code; each is aligned to the
requested power of two (16/32/64 for xmm/ymm/zmm loads) and identical bytes share one entry.
The pool is aligned in the finished image, so the image must be loaded at an address aligned
to the largest constant alignment (a page-aligned JIT mapping always is).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass


class BufferError(ValueError):
    """Misuse of a :class:`CodeBuffer` (label bound twice, never bound, bad alignment...)."""


class FixupRangeError(BufferError):
    """A fix-up's displacement does not fit its field."""


@dataclass(frozen=True)
class Label:
    id: int
    name: str

    def __repr__(self) -> str:
        return f"Label({self.name})"


@dataclass(frozen=True)
class FixupKind:
    """``patch(code, at, delta)`` writes displacement ``delta`` into ``code`` at ``at``."""

    name: str
    size: int
    patch: Callable[[bytearray, int, int], None]


@dataclass(frozen=True)
class Fixup:
    at: int  # offset of the patched field / instruction word
    kind: FixupKind
    label: Label
    pc: int  # reference point the displacement is measured from


@dataclass(frozen=True)
class FinishedCode:
    code: bytes  # code, padding, constant pool
    labels: dict[Label, int]  # every bound label and pool constant -> offset
    code_size: int  # bytes before the constant pool
    alignment: int  # the image must be loaded at an address aligned to this

    def offset(self, label: Label) -> int:
        try:
            return self.labels[label]
        except KeyError:
            raise BufferError(f"{label!r} is not bound in this code") from None


def check_signed(kind: str, value: int, bits: int) -> None:
    """Raise :class:`FixupRangeError` unless ``value`` fits a signed ``bits``-bit field."""
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if not lo <= value <= hi:
        raise FixupRangeError(f"{kind}: displacement {value} does not fit in [{lo}, {hi}]")


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


class CodeBuffer:
    def __init__(self, name: str = "code"):
        self.name = name
        self._code = bytearray()
        self._ids = itertools.count()
        self._bound: dict[Label, int] = {}
        self._labels: list[Label] = []
        self._fixups: list[Fixup] = []
        self._pool: dict[bytes, tuple[Label, int]] = {}  # data -> (label, alignment)
        self._max_align = 1
        self._finished = False

    # -- bytes ------------------------------------------------------------------------------
    @property
    def offset(self) -> int:
        return len(self._code)

    def put(self, data: bytes) -> int:
        """Append ``data``; return the offset it starts at."""
        self._live()
        at = len(self._code)
        self._code += data
        return at

    def put_u32(self, word: int) -> int:
        """Append a little-endian 32-bit word (an ARM64 instruction)."""
        return self.put((word & 0xFFFFFFFF).to_bytes(4, "little"))

    def read(self, at: int, size: int) -> bytes:
        return bytes(self._code[at : at + size])

    def patch_bytes(self, at: int, data: bytes) -> None:
        if at < 0 or at + len(data) > len(self._code):
            raise BufferError(f"{self.name}: patch [{at}, {at + len(data)}) outside the code")
        self._code[at : at + len(data)] = data

    def align(self, alignment: int, filler: bytes = b"\x00") -> None:
        """Pad with repetitions of ``filler`` to a multiple of ``alignment`` (a power of two).
        Pass an ISA no-op / trap pattern as filler where the padding may be executed."""
        self._live()
        if not _is_pow2(alignment):
            raise BufferError(f"{self.name}: alignment {alignment} is not a power of two")
        pad = -len(self._code) % alignment
        if pad % len(filler):
            raise BufferError(
                f"{self.name}: {pad} bytes of padding is not a whole number of "
                f"{len(filler)}-byte fillers"
            )
        self._code += filler * (pad // len(filler))
        self._max_align = max(self._max_align, alignment)

    # -- labels -----------------------------------------------------------------------------
    def new_label(self, name: str | None = None) -> Label:
        i = next(self._ids)
        label = Label(i, name or f"L{i}")
        self._labels.append(label)
        return label

    def bind(self, label: Label) -> None:
        self._live()
        if label in self._bound:
            raise BufferError(f"{self.name}: {label!r} is already bound at {self._bound[label]}")
        if label not in self._labels:
            raise BufferError(f"{self.name}: {label!r} does not belong to this buffer")
        self._bound[label] = len(self._code)

    def is_bound(self, label: Label) -> bool:
        return label in self._bound

    def label_offset(self, label: Label) -> int:
        if label not in self._bound:
            raise BufferError(f"{self.name}: {label!r} is not bound yet")
        return self._bound[label]

    def add_fixup(self, kind: FixupKind, label: Label, *, at: int, pc: int) -> None:
        """Record that ``kind`` must be patched at ``at`` once ``label`` is known."""
        self._live()
        if at < 0 or at + kind.size > len(self._code):
            raise BufferError(
                f"{self.name}: fix-up {kind.name} at {at} lies outside the emitted code"
            )
        if label not in self._labels:
            raise BufferError(f"{self.name}: {label!r} does not belong to this buffer")
        self._fixups.append(Fixup(at, kind, label, pc))

    @property
    def fixups(self) -> tuple[Fixup, ...]:
        return tuple(self._fixups)

    # -- constants --------------------------------------------------------------------------
    def constant(self, data: bytes, align: int = 16) -> Label:
        """A label for ``data`` in the constant pool (deduplicated by content; an entry asked
        for again with a larger alignment is aligned to the larger one)."""
        self._live()
        if not _is_pow2(align):
            raise BufferError(f"{self.name}: constant alignment {align} is not a power of two")
        if not data:
            raise BufferError(f"{self.name}: empty constant")
        data = bytes(data)
        hit = self._pool.get(data)
        if hit is not None:
            label, old = hit
            self._pool[data] = (label, max(old, align))
            return label
        label = self.new_label(f"const{len(self._pool)}")
        self._pool[data] = (label, align)
        return label

    # -- finish -----------------------------------------------------------------------------
    def finish(self) -> FinishedCode:
        """Place the pool, resolve every fix-up, and return the image.  The buffer is then
        closed."""
        self._live()
        code_size = len(self._code)
        for data, (label, align) in self._pool.items():
            self.align(align)  # zero padding: the pool is never executed
            self._bound[label] = len(self._code)
            self._code += data
        for fx in self._fixups:
            if fx.label not in self._bound:
                raise BufferError(f"{self.name}: {fx.label!r} is referenced but never bound")
            delta = self._bound[fx.label] - fx.pc
            try:
                fx.kind.patch(self._code, fx.at, delta)
            except FixupRangeError as e:
                raise FixupRangeError(
                    f"{self.name}: reference at offset {fx.at} to {fx.label!r} "
                    f"(offset {self._bound[fx.label]}): {e}"
                ) from None
        self._finished = True
        return FinishedCode(bytes(self._code), dict(self._bound), code_size, self._max_align)

    def _live(self) -> None:
        if self._finished:
            raise BufferError(f"{self.name}: the buffer is finished")
