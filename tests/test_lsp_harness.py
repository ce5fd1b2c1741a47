"""Shared pytest-lsp harness for the language-server tests (fixtures are imported by the
``test_lsp_*`` modules), plus a smoke test of the handshake.

Every end-to-end test runs twice: with the capabilities pytest-lsp ships for VS Code and
for Neovim (which negotiates UTF-8 positions, so both position encodings are exercised).
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as T
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

ROOT = Path(__file__).resolve().parent.parent
CLIENTS = ["visual-studio-code", "neovim"]

SAMPLE = """\
/// A point in the plane.
struct Point { x: f32, y: f32 }

/// The scale every kernel uses.
const SCALE: f32 = 2.0;

/// y <- a*x + y
pub fn saxpy[N](a: f32, x: &f32[N], y: &mut f32[N]) {
    for i in 0..N {
        y[i] = a * x[i] + y[i];
    }
}

pub fn norm2(p: Point) -> f32 {
    let s = p.x * p.x + p.y * p.y;
    let mut t = s * SCALE;
    t = t + 1.0;
    sqrt(t)
}

pub fn upload[N](x: f32[N] @host) -> f32[N] @device ! transfer {
    let d = move_to(x, device);
    d
}
"""


def _record_publish(client: LanguageClient, params: T.PublishDiagnosticsParams):
    client.diagnostics[params.uri] = params.diagnostics
    client.published.append(params)  # type: ignore[attr-defined]


def _converter():
    """pygls' converter, except that a CodeAction carrying a Command is not mistaken for a
    bare Command (lsprotocol's hook checks for a `command` key, clients check its type)."""
    conv = default_converter()

    def code_action_or_command(obj, _):
        if isinstance(obj.get("command"), str):
            return conv.structure(obj, T.Command)
        return conv.structure(obj, T.CodeAction)

    conv.register_structure_hook(T.Command | T.CodeAction, code_action_or_command)
    return conv


def _record_code_lens_refresh(client: LanguageClient, params: None) -> None:
    client.code_lens_refreshes += 1  # type: ignore[attr-defined]


def _record_registration(client: LanguageClient, params: T.RegistrationParams):
    """`client/registerCapability` (the server's file watchers): accepted, and recorded."""
    client.registrations.append(params)  # type: ignore[attr-defined]


def make_client() -> LanguageClient:
    client = LanguageClient(converter_factory=_converter)
    features = dict(DEFAULT_CLIENT_FEATURES)
    features[T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = _record_publish
    features[T.CLIENT_REGISTER_CAPABILITY] = _record_registration  # features/workspace.py
    # the server asks for new code lenses when a same-bits check ends (features/same_bits.py)
    features[T.WORKSPACE_CODE_LENS_REFRESH] = _record_code_lens_refresh
    register_lsp_features(client, features)
    client.published = []  # type: ignore[attr-defined]
    client.registrations = []  # type: ignore[attr-defined]
    client.code_lens_refreshes = 0  # type: ignore[attr-defined]
    return client


CONFIG = ClientServerConfig(
    server_command=[sys.executable, str(ROOT / "kera_lsp" / "__main__.py")],
    client_factory=make_client,
    server_env={**os.environ, "PYTHONPATH": str(ROOT), "KERA_LSP_TEST_HOOKS": "1"},
)


@pytest_lsp.fixture(config=CONFIG, params=CLIENTS, scope="module")
async def client(lsp_client: LanguageClient, request, tmp_path_factory):
    root = tmp_path_factory.mktemp("ws")
    lsp_client.root = root  # type: ignore[attr-defined]
    lsp_client.client_name = request.param  # type: ignore[attr-defined]
    lsp_client.init_result = await lsp_client.initialize_session(  # type: ignore[attr-defined]
        T.InitializeParams(
            capabilities=client_capabilities(request.param),
            root_uri=root.as_uri(),
            initialization_options={"kera": {"outputDir": "out", "diagnosticsDelay": 20}},
        )
    )
    yield
    await lsp_client.shutdown_session()


_counter = [0]


def new_uri(client: LanguageClient, stem: str = "doc") -> str:
    _counter[0] += 1
    return (client.root / f"{stem}{_counter[0]}.kera").as_uri()  # type: ignore[attr-defined]


def utf8(client: LanguageClient) -> bool:
    enc = getattr(client, "_encoding", None)
    return enc == "utf-8"


def open_doc(client: LanguageClient, text: str, stem: str = "doc", version: int = 1) -> str:
    uri = new_uri(client, stem)
    client.text_document_did_open(
        T.DidOpenTextDocumentParams(
            text_document=T.TextDocumentItem(
                uri=uri, language_id="kera", version=version, text=text
            )
        )
    )
    return uri


async def wait_diagnostics(
    client: LanguageClient, uri: str, version: int, timeout: float = 10.0
) -> list[T.Diagnostic]:
    """The diagnostics published for ``uri`` at ``version`` (waiting for them)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        for p in reversed(client.published):  # type: ignore[attr-defined]
            if p.uri == uri and p.version == version:
                return list(p.diagnostics)
        await asyncio.sleep(0.01)
    raise AssertionError(f"no diagnostics for {uri} v{version}")


def pos(text: str, needle: str, delta: int = 0, utf8_cols: bool = False) -> T.Position:
    """The LSP position of ``needle`` (+ delta chars) in ``text``."""
    i = text.index(needle) + delta
    line = text.count("\n", 0, i)
    start = text.rfind("\n", 0, i) + 1
    seg = text[start:i]
    col = len(seg.encode("utf-8")) if utf8_cols else len(seg.encode("utf-16-le")) // 2
    return T.Position(line=line, character=col)


def doc_id(uri: str) -> T.TextDocumentIdentifier:
    return T.TextDocumentIdentifier(uri=uri)


def encoding_of(result: T.InitializeResult | None, client: LanguageClient) -> str:
    return "utf-8" if client.client_name == "neovim" else "utf-16"  # type: ignore[attr-defined]


@pytest.mark.asyncio(loop_scope="module")
async def test_handshake_and_capabilities(client: LanguageClient):
    uri = open_doc(client, SAMPLE)
    diags = await wait_diagnostics(client, uri, 1)
    assert diags == []
