"""The result digest (docs/semantics.md §10): what `kera run` prints and targets compare."""

from __future__ import annotations

import hashlib

from kera_core.source import encode

DOMAIN = b"kera-result-v1\n"


def sha3(data: bytes) -> str:
    return hashlib.sha3_256(data).hexdigest()


def result_digest(entries: list[tuple[str, str, bytes]]) -> str:
    """SHA3-256 over DOMAIN, then per output: `key type\\n` and the SHA3-256 of its bytes.

    ``entries`` are (key, type as displayed, raw little-endian bytes) in output order. The
    key is positional — `result`, or `param<i>` for the final value of `&mut` parameter i —
    because parameter names are provenance and must not change a digest; a function with
    the `io` effect adds ("stdout", "text", UTF-8 of what it printed).
    """
    h = hashlib.sha3_256(DOMAIN)
    for name, type_text, raw in entries:
        h.update(encode(f"{name} {type_text}\n"))
        h.update(hashlib.sha3_256(raw).digest())
    return h.hexdigest()
