"""The native artifact: what `kera build --target x86_64|arm64` writes.

``MAGIC`` (per target) · the graph fingerprint (32 bytes) · a little-endian u32 header length ·
the JSON header (``entry``, ``isa``, ``semantics``: the semantics version it was built under,
``functions``: ``[name, code bytes]`` in program order) · each function's code, concatenated. One format for every native target; each target names
its magic and what it is called in errors.
"""

from __future__ import annotations

import json
import struct

from kera_core.ir.semantics import SEMANTICS_VERSION


class ArtifactError(ValueError):
    """Bytes that are not this target's artifact, or not built from this graph."""


def pack(magic: bytes, fingerprint: bytes, entry: str, isa: str, codes) -> bytes:
    header = json.dumps(
        {
            "entry": entry,
            "isa": isa,
            "semantics": SEMANTICS_VERSION,
            "functions": [[n, len(c)] for n, c in codes],
        },
        sort_keys=True,
    ).encode()
    data = magic + fingerprint + struct.pack("<I", len(header)) + header
    return data + b"".join(c for _, c in codes)


def unpack(
    magic: bytes, what: str, data: bytes, fingerprint: bytes | None
) -> tuple[dict, list[tuple[str, bytes]]]:
    """The header and the functions' code, checked against ``fingerprint`` when given."""
    if not data.startswith(magic) or len(data) < len(magic) + 36:
        raise ArtifactError(f"not an {what} artifact")
    at = len(magic)
    if fingerprint is not None and data[at : at + 32] != fingerprint:
        raise ArtifactError("the artifact was not built from this graph (fingerprint differs)")
    (n,) = struct.unpack_from("<I", data, at + 32)
    try:
        header = json.loads(data[at + 36 : at + 36 + n])
    except ValueError:
        raise ArtifactError("the artifact's header is damaged") from None
    # an older version is fine: an operation whose bits changed since changed the fingerprint
    semantics = header.get("semantics", 1)  # artifacts from before the field: version 1
    if not isinstance(semantics, int) or semantics > SEMANTICS_VERSION:
        raise ArtifactError(
            f"the artifact was built under semantics version {semantics}; this Kera implements"
            f" up to {SEMANTICS_VERSION}"
        )
    at += 36 + n
    codes = []
    for name, size in header["functions"]:
        codes.append((name, data[at : at + size]))
        at += size
    if at != len(data):
        raise ArtifactError("the artifact's code does not match its header")
    return header, codes


def fingerprint_of(magic: bytes, what: str, data: bytes) -> bytes:
    if not data.startswith(magic):
        raise ArtifactError(f"not an {what} artifact")
    return data[len(magic) : len(magic) + 32]
