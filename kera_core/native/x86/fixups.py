"""x86-64 fix-up kinds: signed displacements relative to the end of the instruction."""

from __future__ import annotations

from ..buffer import FixupKind, check_signed


def _patch_rel8(code: bytearray, at: int, delta: int) -> None:
    check_signed("x86 rel8", delta, 8)
    code[at] = delta & 0xFF


def _patch_rel32(code: bytearray, at: int, delta: int) -> None:
    check_signed("x86 rel32", delta, 32)
    code[at : at + 4] = (delta & 0xFFFFFFFF).to_bytes(4, "little")


REL8 = FixupKind("x86.rel8", 1, _patch_rel8)
"""Short jumps and jcc: one signed byte."""

REL32 = FixupKind("x86.rel32", 4, _patch_rel32)
"""Near jumps, jcc, call and RIP-relative memory operands: a signed 32-bit field."""
