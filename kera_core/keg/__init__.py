"""The `.keg` file: a graph (and optionally its provenance) as canonical, verified bytes.

``write_keg(graph, provenance)`` gives the same bytes for the same graph;
``read_keg(data)`` rebuilds it, recomputing every hash, and raises only
:class:`KegError`. The format is specified byte by byte in docs/keg.md.
"""

from kera_core.keg.errors import KINDS, KegError
from kera_core.keg.format import FORMAT_VERSION, MAGIC
from kera_core.keg.reader import KegFile, read_keg
from kera_core.keg.writer import write_keg


def is_keg(data: bytes) -> bool:
    """Whether ``data`` claims to be a `.keg` file (starts with the magic)."""
    return data[:4] == MAGIC


def fingerprint_lines_of(graph) -> list[str]:
    """What `kera fingerprint` prints: the graph hash, then one line per exported function."""
    lines = [f"sha3-256:{graph.fingerprint().hex()}"]
    lines += [f"fn {f.name} sha3-256:{f.hash.hex()}" for f in graph.exported()]
    return lines


__all__ = [
    "FORMAT_VERSION",
    "KINDS",
    "MAGIC",
    "KegError",
    "KegFile",
    "fingerprint_lines_of",
    "is_keg",
    "read_keg",
    "write_keg",
]
