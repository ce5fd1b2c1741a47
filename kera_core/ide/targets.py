"""Fingerprints, lowering previews and compilation, through the target registry.

Targets are discovered from :mod:`kera_core.targets`; nothing here names one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kera_core import targets as registry
from kera_core.ide.hover import fingerprint_text
from kera_core.source import Span
from kera_core.workspace import Analysis, Document


class TargetError(Exception):
    """A request that cannot be served (unknown function or target, errors, unsupported)."""


def compilable_targets(a: Analysis, fn: str) -> list[str]:
    """Targets that can compile ``fn`` as the buffer stands (none if it has errors), by each
    target's cheap check where it has one (an action list is asked for on every cursor
    move); running the action makes the full check (:func:`_check`)."""
    if a.module is None or fn not in a.module.graph.functions:
        return []
    out = []
    for t in registry.available():
        check = getattr(t, "likely_unsupported", t.unsupported)
        try:
            if not check(a.module.graph, fn):
                out.append(t.name)
        except Exception:  # a target's bug hides its action, nothing more
            continue
    return out


def _check(a: Analysis, fn: str, target: str):
    if a.module is None:
        raise TargetError("the document was not analysed (see its diagnostics)")
    t = registry.get(target)
    if t is None:
        names = ", ".join(x.name for x in registry.available())
        raise TargetError(f"unknown target `{target}` (available: {names})")
    if fn not in a.module.env.fns and fn not in a.module.env.instances:
        raise TargetError(f"no function `{fn}` in this document")
    if a.module.env.fns.get(fn) is not None and a.module.env.fns[fn].is_generic:
        raise TargetError(f"`{fn}` is generic: compile one of its instances (`{fn}<f32>`, …)")
    if fn not in a.module.graph.functions:
        raise TargetError(f"`{fn}` has errors; fix them to compile it")
    why = t.unsupported(a.module.graph, fn)
    if why:
        raise TargetError(f"{target} cannot compile `{fn}`: " + "; ".join(why))
    return t


def lowering(a: Analysis, fn: str, target: str) -> dict:
    """The ``kera/lowering`` result: the target's preview text of ``fn``."""
    t = _check(a, fn, target)
    assert a.module is not None
    text = t.preview(a.module.graph, a.module.provenance, fn)
    return {
        "target": t.name,
        "function": fn,
        "text": text,
        "fingerprint": fingerprint_text(a.module.graph.functions[fn].hash),
        "graphFingerprint": fingerprint_text(a.module.graph.fingerprint()),
        "version": a.version,
    }


def fingerprint_report(doc: Document, a: Analysis) -> dict:
    """The ``kera/fingerprint`` result: fingerprints *as of the last save* (open counts as a
    save), whether the buffer changed since, and the current buffer's graph fingerprint."""
    saved = doc.saved
    fns = []
    fp = None
    if saved is not None:
        fp = fingerprint_text(saved.fingerprint) if saved.fingerprint is not None else None
        fns = [
            {"name": name, "fingerprint": fingerprint_text(h)}
            for name, h in sorted(saved.functions.items())
        ]
    current = a.fingerprint
    return {
        "fingerprint": fp,
        "functions": fns,
        "savedVersion": saved.version if saved is not None else None,
        "changedSinceSave": doc.changed_since_save,
        "version": a.version,
        "currentFingerprint": fingerprint_text(current) if current is not None else None,
    }


def compile_to(a: Analysis, fn: str, target: str, out_dir: str | os.PathLike) -> dict:
    """Build ``fn`` for ``target`` into ``out_dir``; the ``kera.compileToTarget`` result."""
    t = _check(a, fn, target)
    assert a.module is not None
    art = t.lower(a.module.graph, a.module.provenance, fn)
    stem = Path(_path_of(a.uri)).stem or "untitled"
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{stem}.{fn}{art.suffix}"
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(art.data)
    os.replace(tmp, path)
    return {
        "path": str(path),
        "fingerprint": fingerprint_text(art.fingerprint),
        "target": t.name,
        "function": fn,
        "bytes": len(art.data),
    }


def _path_of(uri: str) -> str:
    from urllib.parse import unquote, urlparse

    p = urlparse(uri)
    return unquote(p.path) if p.scheme in ("file", "") else p.path or uri


@dataclass(frozen=True)
class Lens:
    span: Span  # the function's name
    title: str
    function: str
    target: str


def code_lenses(a: Analysis) -> list[Lens]:
    """One lens per function and target that can compile it: ``fingerprint 3f9a1c2d… · keg``."""
    if a.module is None:
        return []
    out = []
    for sig in sorted(a.module.env.local_fns(), key=lambda s: s.span.start):
        for name in _graph_names(a, sig):
            f = a.module.graph.functions.get(name)
            if f is None:
                continue
            short = f.hash.hex()[:8]
            which = f"{name} " if name != sig.name else ""
            for target in compilable_targets(a, name):
                out.append(
                    Lens(sig.name_span, f"{which}fingerprint {short}… · {target}", name, target)
                )
    return out


def _graph_names(a: Analysis, sig) -> list[str]:
    """The graph functions of a function: itself, or the instances of a generic one."""
    if not sig.is_generic or a.module is None:
        return [sig.name]
    return [n for n, inst in a.module.env.instances.items() if inst.generic == sig.name]


@dataclass(frozen=True)
class CompileAction:
    title: str
    function: str
    target: str


def compile_actions(a: Analysis, span: Span) -> list[CompileAction]:
    """ "Compile `f` to <target>" for the function under the cursor/selection."""
    sig = a.sig_at(span.start)
    if sig is None:
        return []
    return [
        CompileAction(f"Compile `{name}` to {t}", name, t)
        for name in _graph_names(a, sig)
        for t in compilable_targets(a, name)
    ]
