"""ARM64 fix-up kinds.  Each patches one little-endian instruction word at ``at``; the
displacement is measured from that instruction (``pc == at``).

=================  ==============================  ======  ==========================
kind               instructions                    field   range
=================  ==============================  ======  ==========================
``BRANCH26``       ``b``, ``bl``                   25:0    ±128 MiB, multiple of 4
``COND_BRANCH19``  ``b.cond``, ``cbz``, ``cbnz``   23:5    ±1 MiB, multiple of 4
``LOAD_LITERAL19`` ``ldr`` (literal), ``prfm``     23:5    ±1 MiB, multiple of 4
``TEST_BRANCH14``  ``tbz``, ``tbnz``               18:5    ±32 KiB, multiple of 4
``ADR21``          ``adr``                         30:29   ±1 MiB, any byte
                                                   + 23:5
=================  ==============================  ======  ==========================
"""

from __future__ import annotations

from ..buffer import FixupKind, FixupRangeError, check_signed


def _word(code: bytearray, at: int) -> int:
    return int.from_bytes(code[at : at + 4], "little")


def _store(code: bytearray, at: int, word: int) -> None:
    code[at : at + 4] = (word & 0xFFFFFFFF).to_bytes(4, "little")


def _scaled(kind: str, delta: int, bits: int) -> int:
    if delta % 4:
        raise FixupRangeError(f"{kind}: displacement {delta} is not a multiple of 4")
    imm = delta >> 2
    check_signed(kind, imm, bits)
    return imm & ((1 << bits) - 1)


def _field_patch(kind: str, bits: int, shift: int):
    mask = ((1 << bits) - 1) << shift

    def patch(code: bytearray, at: int, delta: int) -> None:
        imm = _scaled(kind, delta, bits)
        _store(code, at, (_word(code, at) & ~mask) | (imm << shift))

    return patch


def _patch_adr(code: bytearray, at: int, delta: int) -> None:
    check_signed("arm64 adr imm21", delta, 21)
    imm = delta & 0x1FFFFF
    word = _word(code, at) & ~((0x3 << 29) | (0x7FFFF << 5))
    _store(code, at, word | ((imm & 0x3) << 29) | ((imm >> 2) << 5))


BRANCH26 = FixupKind("arm64.imm26", 4, _field_patch("arm64 branch imm26", 26, 0))
COND_BRANCH19 = FixupKind("arm64.imm19", 4, _field_patch("arm64 conditional imm19", 19, 5))
LOAD_LITERAL19 = FixupKind("arm64.ldr_lit19", 4, _field_patch("arm64 literal imm19", 19, 5))
TEST_BRANCH14 = FixupKind("arm64.imm14", 4, _field_patch("arm64 test-branch imm14", 14, 5))
ADR21 = FixupKind("arm64.adr21", 4, _patch_adr)
