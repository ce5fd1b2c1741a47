"""What each fuzz harness feeds and what it asserts. One function per input surface;
each takes the fuzzer's bytes and raises AssertionError on a broken invariant (any other
exception is a finding too). Run them with `python fuzz/run.py TARGET` (atheris) or,
without atheris, over a corpus with `python fuzz/run.py TARGET --replay DIR`."""

from __future__ import annotations

import contextlib
import io
import os
import tempfile

from kera_core.analysis import analyze
from kera_core.fmt import format_text
from kera_core.keg import KegError, read_keg
from kera_core.source import decode
from kera_core.syntax.parse import parse
from kera_core.workspace import Change, Workspace


def _spans_inside(diags, size: int) -> None:
    for d in diags:
        assert 0 <= d.span.start <= d.span.end <= size, d
        assert d.code != "K0901", d


def parser(data: bytes) -> None:
    p = parse(data)
    assert str(p.tree) == decode(data)  # lossless, whatever the bytes
    _spans_inside(p.diagnostics, len(data))


def formatter(data: bytes) -> None:
    r = format_text(data)
    _spans_inside(r.diagnostics, len(data))
    if r.ok and r.changed:
        again = format_text(r.text)
        assert again.ok and not again.changed, "formatting is not idempotent"


def checker(data: bytes) -> None:
    a = analyze(data)
    _spans_inside(a.diagnostics, len(data))
    keys = [(d.code, d.span, d.message) for d in a.diagnostics]
    assert len(keys) == len(set(keys)), "a diagnostic is reported twice"


def keg(data: bytes) -> None:
    try:
        read_keg(data)
    except KegError:
        pass


def cli(data: bytes) -> None:
    from kera_core.cli import main

    fd, path = tempfile.mkstemp(suffix=".kera")
    try:
        os.write(fd, data)
        os.close(fd)
        for args in (["check", path], ["fingerprint", path], ["fmt", "--check", path]):
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                try:
                    rc = main(args)
                except SystemExit as e:
                    rc = e.code
            text = out.getvalue()
            assert rc in (0, 1, 2), (args, rc)
            assert "Traceback" not in text and "K0901" not in text, text[-500:]
    finally:
        os.unlink(path)


def sync(data: bytes) -> None:
    """Text and edits from the bytes: the document must equal the LSP model of the edits,
    and its analysis the final text's opened fresh."""
    from tests.test_sync_property import ENCODINGS, model_apply

    if len(data) < 2:
        return
    enc = ENCODINGS[data[0] % 3]
    text_end = 2 + data[1] % max(1, len(data) - 2)
    model = decode(data[2:text_end]).encode("utf-8", "replace").decode("utf-8", "replace")
    ws = Workspace()
    doc = ws.open("file:///f.kera", model, 1)
    rest = data[text_end:]
    version = 1
    while len(rest) >= 6:
        rng = tuple(b - 8 for b in rest[:4])
        n = rest[4] % 8
        new = rest[5 : 5 + n].decode("utf-8", "replace")
        rest = rest[5 + n :]
        version += 1
        ws.change("file:///f.kera", version, [Change(new, rng)], enc)
        model = model_apply(model, rng, new, enc)
        assert doc.text == model
    a = doc.analysis()
    fresh = Workspace().open("file:///g.kera", model, version).analysis()
    assert [(d.code, d.span) for d in a.diagnostics] == [
        (d.code, d.span) for d in fresh.diagnostics
    ]


TARGETS = {
    "parser": parser,
    "formatter": formatter,
    "checker": checker,
    "keg": keg,
    "cli": cli,
    "sync": sync,
}
