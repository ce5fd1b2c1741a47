"""End-to-end: refactorings as code actions with `codeAction/resolve` — extract a function
(from an expression, from statements), inline a `let`, add a missing effect up a 3-deep call
chain — and the refusals. Each edited text is analysed again (no errors), and the extracted
function's results are compared with the original's in the reference interpreter."""

# The `client` fixture is imported from test_lsp_harness and taken as a parameter.
# ruff: noqa: F811

from __future__ import annotations

import numpy as np
import pytest
import pytest_lsp
from lsprotocol import types as T
from pytest_lsp import LanguageClient, client_capabilities
from test_lsp_harness import (
    CONFIG,
    client,  # noqa: F401  (the fixture)
    doc_id,
    open_doc,
    pos,
    wait_diagnostics,
)

from kera_core.analysis import analyze
from kera_core.interp import run_function

pytestmark = pytest.mark.asyncio(loop_scope="module")

KERNEL = """\
pub fn kernel[N](x: &f32[N], y: &mut f32[N]) -> f32 {
    let mut s: f32 = 0.0;
    for i in 0..N {
        s += x[i] * x[i];
    }
    let t = s * 2.0 + 1.0;
    for i in 0..N {
        y[i] = y[i] * t + x[i];
    }
    sqrt(t) + y[0]
}
"""


def offset(text: str, p: T.Position) -> int:
    """A position (ASCII text: the same in every encoding) -> index into ``text``."""
    lines = text.split("\n")
    return sum(len(ln) + 1 for ln in lines[: p.line]) + p.character


def apply(text: str, edit: T.WorkspaceEdit, uri: str) -> str:
    if edit.document_changes:
        (tde,) = edit.document_changes
        assert tde.text_document.uri == uri
        edits = tde.edits
    else:
        edits = edit.changes[uri]
    spans = sorted(
        ((offset(text, e.range.start), offset(text, e.range.end), e.new_text) for e in edits),
        reverse=True,
    )
    for s, e, new in spans:
        text = text[:s] + new + text[e:]
    return text


def sel(text: str, needle: str, length: int | None = None) -> T.Range:
    """The range of ``needle`` (of its first ``length`` characters) in ``text``."""
    n = len(needle) if length is None else length
    return T.Range(start=pos(text, needle), end=pos(text, needle, n))


async def actions(client, uri, rng, only=None, diagnostics=()):
    res = await client.text_document_code_action_async(
        T.CodeActionParams(
            text_document=doc_id(uri),
            range=rng,
            context=T.CodeActionContext(diagnostics=list(diagnostics), only=only),
        )
    )
    return [a for a in res or [] if isinstance(a, T.CodeAction)]


async def resolved(client, act: T.CodeAction) -> T.CodeAction:
    if act.edit is not None:  # a client without resolve support gets the edit at once
        return act
    assert act.data is not None
    out = await client.code_action_resolve_async(act)
    assert out.edit is not None
    return out


def run(text: str, fn: str = "kernel"):
    m = analyze(text)
    assert not [d for d in m.diagnostics if d.is_error], m.diagnostics
    x = np.array([1.0, 2.0, 3.0, 0.5], dtype=np.float32)
    y = np.array([0.25, -1.0, 4.0, 2.0], dtype=np.float32)
    r = run_function(m.module, fn, {"x": x, "y": y})
    return r.digest()


async def extract(client, text: str, needle: str, length: int | None = None) -> str:
    uri = open_doc(client, text, "extract")
    assert [d for d in await wait_diagnostics(client, uri, 1)] == []
    acts = await actions(client, uri, sel(text, needle, length), only=["refactor.extract"])
    (act,) = acts
    assert act.kind == "refactor.extract.function" and act.title == "Extract function"
    act = await resolved(client, act)
    return apply(text, act.edit, uri)


async def test_extract_expression(client: LanguageClient):
    new = await extract(client, KERNEL, "s * 2.0 + 1.0")
    assert "    let t = extracted(s);\n" in new
    assert new.endswith("\n\nfn extracted(s: f32) -> f32 {\n    s * 2.0 + 1.0\n}\n")
    assert run(new) == run(KERNEL)


async def test_extract_statements_with_borrows_and_a_result(client: LanguageClient):
    stmts = "let mut s: f32 = 0.0;\n    for i in 0..N {\n        s += x[i] * x[i];\n    }"
    new = await extract(client, KERNEL, stmts)
    assert "    let mut s = extracted(x);\n" in new  # `x` is already a `&` borrow
    assert "fn extracted[N](x: &f32[N]) -> f32 {\n    let mut s: f32 = 0.0;\n" in new
    assert new.rstrip().endswith("    }\n    s\n}")
    assert run(new) == run(KERNEL)
    # a loop that writes one tensor and reads another: `&mut` and `&` borrows, no result
    loop = "for i in 0..N {\n        y[i] = y[i] * t + x[i];\n    }"
    new = await extract(client, KERNEL, loop)
    assert "    extracted(&mut y, t, x);\n" in new
    assert "fn extracted[N](y: &mut f32[N], t: f32, x: &f32[N]) {\n" in new
    assert run(new) == run(KERNEL)


async def test_extract_owned_tensor_and_effects(client: LanguageClient):
    text = (
        "pub fn kernel[N](x: &f32[N], y: &mut f32[N]) -> f32 ! io {\n"
        "    let mut z: f32[N] = zeros();\n"
        "    for i in 0..N {\n"
        "        z[i] = x[i] + 1.0;\n"
        "    }\n"
        "    print(z[0]);\n"
        "    z[1] = 3.0;\n"
        "    y[0] = sum(z);\n"
        "    sum(z)\n"
        "}\n"
    )
    new = await extract(client, text, "print(z[0]);\n    z[1] = 3.0;")
    assert "    extracted(&mut z);\n" in new
    assert "fn extracted[N](z: &mut f32[N]) ! io {\n" in new
    assert run(new) == run(text)
    new = await extract(client, text, "sum(z)\n}", 6)  # `z` is only read: by `&`
    assert "fn extracted[N](z: &f32[N]) -> f32 {\n    sum(z)\n}" in new
    assert run(new) == run(text)


async def test_extract_refusals(client: LanguageClient):
    text = (
        "fn two(a: f32) -> f32 {\n"
        "    let mut p: f32 = a;\n"
        "    let mut q: f32 = a;\n"
        "    p += 1.0;\n"
        "    q += 2.0;\n"
        "    if p > q {\n"
        "        return p;\n"
        "    }\n"
        "    p * q + a * 3.0\n"
        "}\n"
    )
    uri = open_doc(client, text, "refuse")
    await wait_diagnostics(client, uri, 1)
    for needle in (
        "p += 1.0;\n    q += 2.0;",  # writes two values used later
        "if p > q {\n        return p;\n    }",  # leaves the function
        "* q + a",  # not a whole expression
        "+= 1.0;\n    q",  # not whole statements
        "p +=",  # the target of an assignment
        "two",  # the function's name
    ):
        assert await actions(client, uri, sel(text, needle), only=["refactor"]) == [], needle
    # but one statement that writes one value used later is fine
    assert len(await actions(client, uri, sel(text, "p += 1.0;"), only=["refactor"])) == 1


INLINE = """\
fn helper(a: f32) -> f32 {
    a * 0.5
}

pub fn kernel[N](x: &f32[N], y: &mut f32[N]) -> f32 {
    let k = x[0] + x[1];
    let h = helper(k);
    y[0] = k * 2.0;
    h + k
}
"""


async def test_inline_let(client: LanguageClient):
    uri = open_doc(client, INLINE, "inline")
    await wait_diagnostics(client, uri, 1)
    for at in (pos(INLINE, "k = x"), pos(INLINE, "k;") if "k;" in INLINE else pos(INLINE, "k)")):
        acts = await actions(client, uri, T.Range(start=at, end=at), only=["refactor.inline"])
        (act,) = acts
        assert act.title == "Inline `k`" and act.kind == "refactor.inline"
    act = await resolved(client, act)
    new = apply(INLINE, act.edit, uri)
    assert "let k" not in new
    assert "    let h = helper(x[0] + x[1]);\n" in new  # an argument needs no parentheses
    assert "    y[0] = (x[0] + x[1]) * 2.0;\n" in new
    assert "    h + (x[0] + x[1])\n" in new
    assert run(new) == run(INLINE)


async def test_inline_refusals(client: LanguageClient):
    text = (
        "fn noisy(a: f32) -> f32 ! io {\n"
        "    print(a);\n"
        "    a\n"
        "}\n"
        "fn f(a: f32) -> f32 ! io {\n"
        "    let mut m = a;\n"
        "    let n = noisy(a);\n"
        "    let mut b: f32 = a;\n"
        "    let c = b + 1.0;\n"
        "    b = 0.0;\n"
        "    let d: f32 = 2.0;\n"
        "    m = m + n + c + d + b;\n"
        "    m\n"
        "}\n"
    )
    uri = open_doc(client, text, "noinline")
    await wait_diagnostics(client, uri, 1)
    for needle in ("m = a", "n = noisy", "c = b", "d: f32", "a: f32) -> f32 ! io {\n    let"):
        at = pos(text, needle)
        got = await actions(client, uri, T.Range(start=at, end=at), only=["refactor.inline"])
        assert got == [], needle


CHAIN = """\
fn leaf(x: f32) {
    print(x);
}

fn mid(x: f32) -> f32 {
    leaf(x);
    x
}

fn top(x: f32) -> f32 ! transfer {
    mid(x) + mid(x)
}

pub fn entry(x: f32) -> f32 ! io, transfer {
    top(x)
}

pub fn other(x: f32) -> f32 ! transfer {
    top(x)
}
"""


async def test_effect_quick_fix_up_the_chain(client: LanguageClient):
    uri = open_doc(client, CHAIN, "chain")
    diags = await wait_diagnostics(client, uri, 1)
    (d,) = [d for d in diags if d.code == "K0501"]
    acts = await actions(client, uri, d.range, only=["quickfix"], diagnostics=[d])
    single, chain = acts
    assert single.title == "add `io` to the effects of `leaf`" and not single.is_preferred
    assert chain.title == (
        "add `io` to the effects of `leaf` and its callers `mid`, `top`, `other`"
    )
    assert chain.is_preferred and chain.kind == T.CodeActionKind.QuickFix
    chain = await resolved(client, chain)
    new = apply(CHAIN, chain.edit, uri)
    assert "fn leaf(x: f32) ! io {" in new
    assert "fn mid(x: f32) -> f32 ! io {" in new
    assert "fn top(x: f32) -> f32 ! transfer, io {" in new
    assert "pub fn entry(x: f32) -> f32 ! io, transfer {" in new  # had it already
    assert "pub fn other(x: f32) -> f32 ! transfer, io {" in new
    assert [e for e in analyze(new).diagnostics if e.is_error] == []
    # one function, no callers: only the diagnostic's own fix
    text = "fn show(x: f32) {\n    print(x);\n}\n"
    uri = open_doc(client, text, "alone")
    (d,) = await wait_diagnostics(client, uri, 1)
    (only,) = await actions(client, uri, d.range, only=["quickfix"], diagnostics=[d])
    assert only.is_preferred and only.title == "add `io` to the effects of `show`"


async def test_resolve_of_a_stale_action_fails(client: LanguageClient):
    uri = open_doc(client, KERNEL, "stale")
    await wait_diagnostics(client, uri, 1)
    (act,) = await actions(client, uri, sel(KERNEL, "s * 2.0 + 1.0"), only=["refactor"])
    if act.edit is not None:
        return  # the client had the edit with the list: nothing to resolve
    client.text_document_did_change(
        T.DidChangeTextDocumentParams(
            text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[T.TextDocumentContentChangeWholeDocument(text=KERNEL + "\n")],
        )
    )
    with pytest.raises(Exception, match="changed since"):
        await client.code_action_resolve_async(act)


async def test_extract_refused_when_the_result_would_not_check(client: LanguageClient):
    """Offered (the selection is a whole expression), refused by resolve: `x` moved out of
    a borrow would not check (K0301/K0408)."""
    text = "pub fn f[N](x: f32[N]) -> f32[N] {\n    let y = x;\n    y\n}\n"
    uri = open_doc(client, text, "nocheck")
    assert await wait_diagnostics(client, uri, 1) == []
    (act,) = await actions(client, uri, sel(text, "x;", 1), only=["refactor"])
    with pytest.raises(Exception, match="would not check"):
        await client.code_action_resolve_async(act)


@pytest_lsp.fixture(config=CONFIG, scope="module")
async def eager(lsp_client: LanguageClient, tmp_path_factory):
    """A client that cannot resolve code actions (Emacs 29's capabilities)."""
    root = tmp_path_factory.mktemp("eager")
    lsp_client.root = root  # type: ignore[attr-defined]
    await lsp_client.initialize_session(
        T.InitializeParams(
            capabilities=client_capabilities("emacs"),
            root_uri=root.as_uri(),
            initialization_options={"kera": {"diagnosticsDelay": 20}},
        )
    )
    yield
    await lsp_client.shutdown_session()


async def test_edits_come_with_the_list_without_resolve(eager: LanguageClient):
    uri = open_doc(eager, KERNEL, "eager")
    await wait_diagnostics(eager, uri, 1)
    (act,) = await actions(eager, uri, sel(KERNEL, "s * 2.0 + 1.0"), only=["refactor"])
    assert act.edit is not None
    assert run(apply(KERNEL, act.edit, uri)) == run(KERNEL)
    text = "pub fn f[N](x: f32[N]) -> f32[N] {\n    let y = x;\n    y\n}\n"
    uri = open_doc(eager, text, "eager")
    await wait_diagnostics(eager, uri, 1)
    assert await actions(eager, uri, sel(text, "x;", 1), only=["refactor"]) == []  # no check
    uri = open_doc(eager, CHAIN, "eager")
    (d,) = [d for d in await wait_diagnostics(eager, uri, 1) if d.code == "K0501"]
    _, chain = await actions(eager, uri, d.range, only=["quickfix"], diagnostics=[d])
    assert chain.edit is not None and "! transfer, io {" in apply(CHAIN, chain.edit, uri)
