"""Finding a package on disk: its manifest, its source directory, its files and their
module names (language.md, "Modules").

A package is a directory. Its files are the `.kera` files under the source directory,
at any depth; `a/b.kera` is module `a::b`. A manifest, `kera.toml` in the package's
directory, is optional::

    [package]
    name = "signal"   # the package's name (default: the directory's name)
    src = "src"       # the source directory, relative to the manifest (default: ".")
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kera_core.source import decode

if TYPE_CHECKING:
    from kera_core.sema.package import SourceUnit

# `tomllib` and the package analysis are imported where a package is read: `kera check
# FILE` asks only `is_package_path` (start-up, tests/test_cli_startup.py).

MANIFEST = "kera.toml"
_KEYS = {"name", "src"}


class ManifestError(Exception):
    """A package that cannot be read: a bad manifest, no files, an unreadable file."""


@dataclass(frozen=True)
class PackageSource:
    name: str
    root: str  # the package's directory
    src: str  # the source directory
    units: tuple[SourceUnit, ...]


def is_package_path(path: str) -> bool:
    """Is ``path`` a package (a directory, or a manifest) rather than one file?"""
    return os.path.isdir(path) or os.path.basename(path) == MANIFEST


def module_name(rel: str) -> str:
    """`a/b.kera` (relative to the source directory) -> `a::b`."""
    stem = rel[: -len(".kera")] if rel.endswith(".kera") else rel
    return "::".join(p for p in stem.replace(os.sep, "/").split("/") if p)


def read_manifest(path: str) -> tuple[str | None, str]:
    """(name or None, source directory relative to the manifest) of a `kera.toml`."""
    import tomllib

    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise ManifestError(f"{path}: no such file") from None
    except OSError as e:
        raise ManifestError(f"{path}: cannot read: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise ManifestError(f"{path}: invalid TOML: {e}") from None
    pkg = data.get("package")
    if not isinstance(pkg, dict):
        raise ManifestError(f"{path}: expected a [package] table")
    extra = set(data) - {"package"}
    if extra:
        raise ManifestError(f"{path}: unknown table(s): {', '.join(sorted(extra))}")
    unknown = set(pkg) - _KEYS
    if unknown:
        raise ManifestError(
            f"{path}: unknown key(s) in [package]: {', '.join(sorted(unknown))} "
            f"(known: {', '.join(sorted(_KEYS))})"
        )
    name = pkg.get("name")
    src = pkg.get("src", ".")
    if name is not None and (not isinstance(name, str) or not name):
        raise ManifestError(f"{path}: [package] name must be a non-empty string")
    if not isinstance(src, str) or not src:
        raise ManifestError(f"{path}: [package] src must be a non-empty string")
    return name, src


def load_package(path: str) -> PackageSource:
    """The package at ``path``: a directory (with or without a manifest) or a manifest."""
    if os.path.basename(path) == MANIFEST and not os.path.isdir(path):
        root = os.path.dirname(path) or "."
        manifest = path
    elif os.path.isdir(path):
        root = path
        manifest = os.path.join(path, MANIFEST)
        if not os.path.exists(manifest):
            manifest = None
    else:
        raise ManifestError(f"{path}: not a directory or a {MANIFEST}")
    name, src = (None, ".") if manifest is None else read_manifest(manifest)
    src_dir = os.path.normpath(os.path.join(root, src))
    if not os.path.isdir(src_dir):
        raise ManifestError(f"{manifest}: source directory {src_dir} does not exist")
    if name is None:
        name = os.path.basename(os.path.abspath(root))
    from kera_core.sema.package import SourceUnit

    units = []
    for rel in package_files(src_dir):
        full = os.path.join(src_dir, rel)
        shown = os.path.normpath(
            os.path.join(path if os.path.isdir(path) else root, os.path.relpath(full, root))
        )
        try:
            with open(full, "rb") as f:
                raw = f.read()
        except OSError as e:
            raise ManifestError(f"{full}: cannot read: {e.strerror}") from None
        units.append(SourceUnit(module_name(rel), shown, decode(raw)))
    if not units:
        raise ManifestError(f"{src_dir}: no .kera files in the package")
    return PackageSource(name, root, src_dir, tuple(units))


def package_files(src_dir: str) -> list[str]:
    """The `.kera` files under ``src_dir`` (relative, sorted; hidden directories skipped)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(src_dir):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for f in filenames:
            if f.endswith(".kera"):
                out.append(os.path.relpath(os.path.join(dirpath, f), src_dir))
    return sorted(out)
