"""Byte-level constants of the `.keg` format (specified in docs/keg.md)."""

from __future__ import annotations

import hashlib
import struct
from enum import IntEnum

MAGIC = b"KEG\x00"
FORMAT_VERSION = 3  # 3: the first section's checksum covers the header's first 16 bytes too
OLDEST_FORMAT = 1  # 1: that u16 was reserved flags (0), and the semantics version is 1
#: from this format on, the u16 after the format version is the semantics version
SEMANTICS_FORMAT = 2
#: from this format on, the first section's checksum covers the header's fixed fields
COVERED_HEADER_FORMAT = 3
#: the header bytes a format-3 checksum covers: magic, format, semantics, schema, section
#: count (the fingerprint after them is checked against the graph itself)
COVERED_HEADER = 16

# magic, format version (u16), semantics version (u16; format 1: flags, 0), IR schema
# version (u32), section count (u32), graph fingerprint (32 bytes); all little-endian.
HEADER = struct.Struct("<4sHHII32s")
# section id (u32), offset (u64), length (u64), SHA3-256 of the section's bytes.
ENTRY = struct.Struct("<IQQ32s")

HASH_SIZE = 32


def section_checksum(body: bytes, header: bytes = b"") -> bytes:
    """SHA3-256 of a section's bytes, after ``header`` (the covered header bytes, for the
    first section of a format-3 file; empty otherwise)."""
    h = hashlib.sha3_256(header)
    h.update(body)
    return h.digest()


MAX_VARINT_BYTES = 10  # 70 bits: every u64 constant, zigzagged, fits
MAX_TYPE_DEPTH = 64  # nesting of types inside one type entry
MAX_ATTR_DEPTH = 16  # nesting of tuples inside one attribute value


class Section(IntEnum):
    STRINGS = 1
    TYPES = 2
    ATTRS = 3
    NODES = 4
    REGIONS = 5
    FUNCTIONS = 6
    PROVENANCE = 7


SECTION_NAMES = {s: s.name.lower() for s in Section}
REQUIRED = tuple(s for s in Section if s is not Section.PROVENANCE)

# Attribute value tags: the same numbers as the node encoding in docs/graph.md, but a
# string is a string-table index and a type a type-table index.
ATTR_INT, ATTR_STR, ATTR_BOOL, ATTR_BYTES, ATTR_TYPE, ATTR_TUPLE = 1, 2, 3, 4, 5, 6

# Smallest possible encoding of one entry, per table: bounds a count before any loop.
MIN_STRING = 1  # uvar length
MIN_TYPE = 2  # uvar length, tag
MIN_ATTR_SET = 1  # uvar pair count
MIN_ATTR_PAIR = 3  # key index, tag, payload
MIN_NODE = 5  # op, type count, input count, attr set, region count
MIN_VALUE = 2  # node index, output index
MIN_REGION = 2  # param count, yield count
MIN_FUNCTION = 5 + HASH_SIZE  # name, type, region, exported, output count, hash
MIN_OUTPUT = 2  # kind index, svar
MIN_PROV_FN = 10  # name, span (2), name span (2), dims, params, doc, span and name counts
MIN_SPAN = 2
MIN_NODE_SPANS = 2  # node index, span count
MIN_NODE_NAME = 2  # node index, string length
