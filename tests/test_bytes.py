"""Bytes: invalid UTF-8 anywhere (comments, doc comments, strings, names, numbers,
whitespace) never reaches an encoder that raises, and every diagnostic's span is an exact
byte range of the file — K0001 exactly on the bad bytes."""

from __future__ import annotations

import contextlib
import io
import json
import random
from pathlib import Path

import pytest

from kera_core.analysis import analyze
from kera_core.cli import main
from kera_core.fmt import format_text
from kera_core.ide import hover, outline, tokens
from kera_core.source import decode
from kera_core.workspace import Workspace

ROOT = Path(__file__).resolve().parent.parent
BASE = (
    b"/// doc @\n"
    b"pub struct S@ { pub v: f32 }\n"
    b"// comment @\n"
    b"const K@: i64 = 1@2;\n"
    b"pub fn f@(x@: f32) -> f32 {\n"
    b'    print("text @");\n'
    b"    let y@ = x * 2.0; /* block @ */\n"
    b"    y@\n"
    b"}\n"
)
BAD = [
    b"\xff",
    b"\xc3",
    b"\xe2\x82",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\x80\x80",
    b"\xc0\xaf",
]


def sites() -> list[tuple[int, bytes]]:
    marks = [i for i, c in enumerate(BASE) if c == ord("@")]
    return [(m, bad) for m in marks for bad in BAD]


def with_bad(mark: int, bad: bytes) -> tuple[bytes, int]:
    data = BASE[:mark] + bad + BASE[mark + 1 :]
    data = data.replace(b"@", b"")
    return data, mark - BASE[:mark].count(b"@")


def check_spans(diags, size: int) -> None:
    for d in diags:
        assert 0 <= d.span.start <= d.span.end <= size, d


@pytest.mark.parametrize("mark, bad", sites())
def test_invalid_utf8_at_every_site(mark: int, bad: bytes, tmp_path) -> None:
    data, at = with_bad(mark, bad)
    a = analyze(data)
    check_spans(a.diagnostics, len(data))
    k1 = [d for d in a.diagnostics if d.code == "K0001"]
    assert k1 and k1[0].span.start == at and k1[0].span.end <= at + len(bad), k1
    assert "K0901" not in {d.code for d in a.diagnostics}
    f = format_text(data)
    assert "K0901" not in {d.code for d in f.diagnostics}
    doc = Workspace().open("file:///b.kera", decode(data))
    wa = doc.analysis()
    check_spans(wa.diagnostics, len(data))
    tokens.semantic_tokens(wa)
    outline.document_symbols(wa)
    hover.hover(wa, at, doc)
    path = tmp_path / "b.kera"
    path.write_bytes(data)
    for args in (["check", "--format", "json"], ["fingerprint"], ["graph", "--json"], ["fmt"]):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            rc = main([*args, str(path)])
        assert rc in (0, 1, 2) and "Traceback" not in out.getvalue(), out.getvalue()[-400:]
        if args[0] == "check":
            rows = json.loads(out.getvalue())
            assert rows and all("K0901" not in json.dumps(r) for r in rows)


def test_random_bytes_in_every_example() -> None:
    rng = random.Random(12)
    for path in sorted((ROOT / "examples").glob("*.kera")):
        src = path.read_bytes()
        for _ in range(6):
            i = rng.randrange(len(src))
            junk = bytes(rng.randrange(0x80, 0x100) for _ in range(rng.randrange(1, 4)))
            data = src[:i] + junk + src[i:]
            a = analyze(data)
            check_spans(a.diagnostics, len(data))
            assert "K0901" not in {d.code for d in a.diagnostics}, (path, i, junk)
            try:
                data.decode("utf-8")
                valid = True
            except UnicodeDecodeError:
                valid = False
            assert any(d.code == "K0001" for d in a.diagnostics) != valid
