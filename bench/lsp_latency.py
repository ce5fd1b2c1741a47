"""Language-server latency through a real server process (stdio), on a generated file.

    python bench/lsp_latency.py                 # 5k lines, 30 edit pairs
    python bench/lsp_latency.py --lines 1000 --samples 10
    python bench/lsp_latency.py --lines 50000 --edits-only
    python bench/lsp_latency.py --long-function 5000 --edits-only --samples 5

Measures, end to end (client send -> client receive: the time the message has arrived and
its JSON is parsed, before pygls turns it into lsprotocol objects — a step of this Python
client, 10–60 ms for the 50k-line file's ~300 diagnostics, that an editor does not take;
it is reported apart as "client: pygls structuring a publication"):

* a one-character edit inside a function body -> the ``publishDiagnostics`` of that version
  (edits are spaced past the debounce window, as single keystrokes; a typing burst is
  measured separately: its diagnostics arrive ``kera.diagnosticsDelay`` after the last key).
  The edits come in pairs, a digit typed then deleted: the deletion returns to a text the
  server has analysed before, which it answers from its per-content cache
  (``Document._recent``), so the two kinds are reported apart — "new text" is the one a
  keystroke usually costs;
* a one-character edit in a signature (a parameter's name), a struct (a field's name) and
  a constant (its value), typed then deleted, each -> its diagnostics;
* the open -> the first diagnostics (a large file's syntax diagnostics come first) and ->
  the complete ones;
* hover and completion at identifiers in function bodies, once the analysis is current;
* the requests added for issue 18 (highlights, type definition, call hierarchy, inlay hints
  and semantic tokens of a 60-line screen, on-type formatting, full and delta semantic
  tokens, pulled diagnostics full and unchanged, completion resolve);
* the workspace index and refactorings (``workspace/symbol`` over the open file and the
  indexed ``examples/`` folder, ``references``, ``codeAction`` at a cursor and on a
  selection, ``codeAction/resolve`` of extract function and inline let — each resolve
  re-lowers the edited text to check it);
* the server's resident memory after opening the file.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import sys
import time
from pathlib import Path

from lsprotocol import types as T
from pygls.lsp.client import LanguageClient

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.corpus import generate, long_function  # noqa: E402
from kera_core.syntax import ast  # noqa: E402
from kera_core.syntax.parse import parse  # noqa: E402

URI = "file:///bench/lsp_latency.kera"


# what is typed where: after group 1, a letter to a parameter's name in a signature and to
# a struct's first field's name, a digit to a constant's value
ITEM_SITES = [
    ("signature", r"\n(?:pub )?fn \w+(?:\[[\w, ]*\])?\((\w+):", "q"),
    ("struct", r"\nstruct \w+ \{\s*(\w+):", "q"),
    ("constant", r"\nconst \w+: \w+ = (\d+)", "7"),
    # a letter typed where a body's statement starts (`llet`, `lfor`: a syntax error)
    ("statement's first letter", r";\n(    )[a-z]", "l"),
]


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def position(text: str, i: int) -> T.Position:
    line = text.count("\n", 0, i)
    return T.Position(line=line, character=i - (text.rfind("\n", 0, i) + 1))  # ASCII text


def body_anchors(text: str):
    """Float literals and identifiers inside function bodies, spread over the file."""
    root = ast.SourceFile(parse(text).tree)
    floats, idents = [], []
    for fn in root.functions():
        body = fn.body
        if body is None:
            continue
        s, e = body.span.start, body.span.end
        seg = text[s:e]
        floats += [s + m.start() for m in re.finditer(r"(?<![\w.])\d+\.\d+", seg)]
        idents += [s + m.start() for m in re.finditer(r"(?<![\w.])[a-z_][a-z0-9_]*\b", seg)]
    return floats, idents


class Client(LanguageClient):
    def __init__(self):
        super().__init__("kera-bench", "0")
        self.published: dict[int, float] = {}
        self.arrivals: dict[int, list[float]] = {}  # every publication of each version
        self.waiters: dict[int, asyncio.Future] = {}
        # when each version's publishDiagnostics arrived as JSON, before pygls turns it into
        # lsprotocol objects (see _timed_structure), and how long that took each time
        self.raw_arrivals: dict[int, float] = {}
        self.structure_ms: list[float] = []
        structure = self.protocol.structure_message

        def _timed_structure(data):
            if data.get("method") != T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS:
                return structure(data)
            t = time.perf_counter()
            version = (data.get("params") or {}).get("version")
            if version is not None:
                self.raw_arrivals.setdefault(version, t)
            out = structure(data)
            self.structure_ms.append((time.perf_counter() - t) * 1000)
            return out

        self.protocol.structure_message = _timed_structure


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=5000)
    ap.add_argument("--samples", type=int, default=30, help="edit pairs (insert + delete)")
    ap.add_argument("--queries", type=int, default=100, help="hovers and completions")
    ap.add_argument("--delay", type=int, default=None, help="kera.diagnosticsDelay in ms")
    ap.add_argument("--server-log", metavar="PATH", help="the server's DEBUG log goes here")
    ap.add_argument(
        "--edits-only", action="store_true", help="measure the edits only (no queries after)"
    )
    ap.add_argument(
        "--no-size-limits",
        action="store_true",
        help="run the server with workspace.MAX_PARSE_BYTES/MAX_SEMA_BYTES raised from 10 MiB"
        " to 20 MB",
    )
    ap.add_argument(
        "--long-function",
        type=int,
        metavar="LINES",
        help="the file is one function of LINES lines (bench/corpus.py long_function)",
    )
    args = ap.parse_args()

    text = long_function(args.long_function) if args.long_function else generate(args.lines)
    floats, idents = body_anchors(text)
    client = Client()

    @client.feature(T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_publish(ls: Client, params: T.PublishDiagnosticsParams):
        if params.version is None:
            return
        t = ls.raw_arrivals.pop(params.version, None) or time.perf_counter()
        ls.published[params.version] = t
        ls.arrivals.setdefault(params.version, []).append(t)
        fut = ls.waiters.pop(params.version, None)
        if fut is not None and not fut.done():
            fut.set_result(params)

    async def until(version: int, timeout: float = 60.0):
        if version in client.published:
            return client.published[version]
        fut = asyncio.get_running_loop().create_future()
        client.waiters[version] = fut
        await asyncio.wait_for(fut, timeout)
        return client.published[version]

    log = ["--log-file", args.server_log, "--log-level", "DEBUG"] if args.server_log else []
    if args.no_size_limits:
        start = (
            "import sys, kera_core.workspace as W, kera_lsp;"
            " W.MAX_PARSE_BYTES = W.MAX_SEMA_BYTES = 20_000_000; sys.exit(kera_lsp.main())"
        )
        await client.start_io(sys.executable, "-c", start, *log, cwd=str(ROOT))
    else:
        await client.start_io(sys.executable, "-m", "kera_lsp", *log, cwd=str(ROOT))
    pid = client._server.pid  # type: ignore[union-attr]
    opts = {} if args.delay is None else {"kera": {"diagnosticsDelay": args.delay}}
    caps = T.ClientCapabilities(  # code actions resolved lazily, as VS Code and Neovim do
        text_document=T.TextDocumentClientCapabilities(
            code_action=T.CodeActionClientCapabilities(
                data_support=True,
                resolve_support=T.ClientCodeActionResolveOptions(properties=["edit"]),
            )
        )
    )
    examples = ROOT / "examples"  # indexed in the background (workspace/symbol)
    await client.initialize_async(
        T.InitializeParams(
            capabilities=caps,
            initialization_options=opts,
            workspace_folders=[T.WorkspaceFolder(uri=examples.as_uri(), name="examples")],
        )
    )
    client.initialized(T.InitializedParams())

    def cpu_s() -> float:  # the server's user + system CPU time so far
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    open_cpu0 = cpu_s()  # (what start-up work still runs then counts too)
    t0 = time.perf_counter()
    client.text_document_did_open(
        T.DidOpenTextDocumentParams(
            text_document=T.TextDocumentItem(uri=URI, language_id="kera", version=1, text=text)
        )
    )
    cold = await until(1) - t0
    # a large file publishes its syntax diagnostics first, then the complete set
    for _ in range(6000):
        if len(client.arrivals.get(1, ())) >= (2 if len(text.encode()) >= 64 * 1024 else 1):
            break
        await asyncio.sleep(0.01)
    cold_full = client.arrivals[1][-1] - t0
    open_cpu_ms = (cpu_s() - open_cpu0) * 1000  # the server's CPU, open -> complete
    version = 1

    def send(start: int, end: int, new: str) -> float:
        nonlocal version, text
        version += 1
        rng = T.Range(start=position(text, start), end=position(text, end))
        text = text[:start] + new + text[end:]
        t = time.perf_counter()
        client.text_document_did_change(
            T.DidChangeTextDocumentParams(
                text_document=T.VersionedTextDocumentIdentifier(uri=URI, version=version),
                content_changes=[T.TextDocumentContentChangePartial(range=rng, text=new)],
            )
        )
        return t

    # single keystrokes
    cpu0 = cpu_s()
    edit_ms = []
    new_text_ms = []  # a text never analysed before: what a keystroke usually costs
    undone_ms = []  # back to the text before the pair: answered from the per-content cache
    step = max(1, len(floats) // args.samples)
    for k in floats[::step][: args.samples]:
        at = text.index(".", k) + 1
        for start, end, new in ((at, at, "5"), (at, at + 1, "")):
            t = send(start, end, new)
            ms = (await until(version) - t) * 1000
            edit_ms.append(ms)
            (new_text_ms if new else undone_ms).append(ms)
            await asyncio.sleep(0.3)

    edit_cpu_ms = (cpu_s() - cpu0) * 1000 / len(edit_ms)

    # one character typed then deleted in a signature, a struct, a constant
    item_rows = []
    for what, pattern, key in ITEM_SITES:
        sites = [m.end(1) for m in re.finditer(pattern, text)]
        typed = []
        for at in sites[:: max(1, len(sites) // args.samples)][: args.samples]:
            for start, end, new in ((at, at, key), (at, at + 1, "")):
                t = send(start, end, new)
                ms = (await until(version) - t) * 1000
                if new:
                    typed.append(ms)
                await asyncio.sleep(0.3)
        if typed:
            item_rows.append((f"edit in a {what} -> diagnostics (new text)", typed))

    # a typing burst: 8 keys 40 ms apart; latency from the last key
    at = text.index(".", floats[len(floats) // 2]) + 1
    for i in range(8):
        t = send(at + i, at + i, "7")
        await asyncio.sleep(0.04)
    burst_ms = (await until(version) - t) * 1000
    send(at, at + 8, "")
    await until(version)

    if args.edits_only:
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()
        print(f"kera lsp latency: {text.count(chr(10))} lines, {len(text.encode()) / 1024:.0f} kB,"
              f" {len(edit_ms)} edits{' (size limits raised)' if args.no_size_limits else ''}")  # fmt: skip
        print(f"{'measure':<44} {'p50 ms':>9} {'p95 ms':>9} {'max ms':>9}")
        for name, xs in edit_rows(edit_ms, new_text_ms, undone_ms) + item_rows:
            print(f"{name:<44} {statistics.median(xs):>9.1f} {pct(xs, 0.95):>9.1f} {max(xs):>9.1f}")
        print(f"{'server CPU per edit (mean, incl. idle work)':<44} {edit_cpu_ms:>9.1f}")
        print(f"{'client: pygls structuring a publication':<44} {statistics.median(client.structure_ms):>9.1f} {pct(client.structure_ms, 0.95):>9.1f} {max(client.structure_ms):>9.1f}")  # fmt: skip
        print(f"{'typing burst (8 keys) -> diagnostics':<44} {burst_ms:>9.1f}")
        print(f"{'open -> first diagnostics (cold)':<44} {cold * 1000:>9.1f}")
        print(f"{'open -> complete diagnostics (cold)':<44} {cold_full * 1000:>9.1f}")
        print(f"{'server CPU, open -> complete (cold)':<44} {open_cpu_ms:>9.1f}")
        return

    async def timed(coro) -> float:
        t = time.perf_counter()
        await coro
        return (time.perf_counter() - t) * 1000

    step = max(1, len(idents) // args.queries)
    picks = idents[::step][: args.queries]
    hover_ms = [
        await timed(
            client.text_document_hover_async(
                T.HoverParams(
                    text_document=T.TextDocumentIdentifier(uri=URI), position=position(text, i + 1)
                )
            )
        )
        for i in picks
    ]
    completion_ms = [
        await timed(
            client.text_document_completion_async(
                T.CompletionParams(
                    text_document=T.TextDocumentIdentifier(uri=URI), position=position(text, i + 1)
                )
            )
        )
        for i in picks
    ]
    extra = await newer_requests(client, text, picks, timed)
    extra += await workspace_requests(client, text, picks, timed)
    status = Path(f"/proc/{pid}/status").read_text()
    rss = {k: int(re.search(rf"{k}:\s+(\d+)", status).group(1)) / 1024 for k in ("VmRSS", "VmHWM")}

    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()

    n_lines = text.count("\n")
    print(
        f"kera lsp latency: {n_lines} lines, {len(text.encode()) / 1024:.0f} kB, {len(edit_ms)} edits, {len(picks)} queries"
    )
    print(f"{'measure':<44} {'p50 ms':>9} {'p95 ms':>9} {'max ms':>9}")
    rows = [
        *edit_rows(edit_ms, new_text_ms, undone_ms),
        *item_rows,
        ("hover", hover_ms),
        ("completion", completion_ms),
    ]
    rows += extra
    for name, xs in rows:
        print(f"{name:<44} {statistics.median(xs):>9.1f} {pct(xs, 0.95):>9.1f} {max(xs):>9.1f}")
    print(f"{'server CPU per edit (mean, incl. idle work)':<44} {edit_cpu_ms:>9.1f}")
    print(f"{'client: pygls structuring a publication':<44} {statistics.median(client.structure_ms):>9.1f} {pct(client.structure_ms, 0.95):>9.1f} {max(client.structure_ms):>9.1f}")  # fmt: skip
    print(f"{'typing burst (8 keys) -> diagnostics':<44} {burst_ms:>9.1f}")
    print(f"{'open -> first diagnostics (cold)':<44} {cold * 1000:>9.1f}")
    print(f"{'open -> complete diagnostics (cold)':<44} {cold_full * 1000:>9.1f}")
    print(f"{'server CPU, open -> complete (cold)':<44} {open_cpu_ms:>9.1f}")
    print(f"{'server RSS now / peak (MiB)':<44} {rss['VmRSS']:>9.1f} {rss['VmHWM']:>9.1f}")


def edit_rows(all_ms: list, new_text_ms: list, undone_ms: list) -> list[tuple[str, list]]:
    return [
        ("one-char edit -> publishDiagnostics (all)", all_ms),
        ("  typed: a new text", new_text_ms),
        ("  deleted: back to a text seen (cached)", undone_ms),
    ]


async def newer_requests(client, text: str, picks: list[int], timed) -> list[tuple[str, list]]:
    """Latencies of the requests added for issue 18, at the same identifiers."""
    doc = T.TextDocumentIdentifier(uri=URI)
    at = [position(text, i + 1) for i in picks]

    def screen(p: T.Position) -> T.Range:  # ~60 lines around p, as an editor asks
        return T.Range(
            start=T.Position(line=max(0, p.line - 30), character=0),
            end=T.Position(line=p.line + 30, character=0),
        )

    rows: list[tuple[str, list]] = []

    async def each(name, make):
        rows.append((name, [await timed(make(p)) for p in at]))

    await each(
        "documentHighlight",
        lambda p: client.text_document_document_highlight_async(
            T.DocumentHighlightParams(text_document=doc, position=p)
        ),
    )
    await each(
        "typeDefinition",
        lambda p: client.text_document_type_definition_async(
            T.TypeDefinitionParams(text_document=doc, position=p)
        ),
    )
    await each(
        "prepareCallHierarchy",
        lambda p: client.text_document_prepare_call_hierarchy_async(
            T.CallHierarchyPrepareParams(text_document=doc, position=p)
        ),
    )
    await each(
        "inlayHint (60 lines)",
        lambda p: client.text_document_inlay_hint_async(
            T.InlayHintParams(text_document=doc, range=screen(p))
        ),
    )
    await each(
        "semanticTokens/range (60 lines)",
        lambda p: client.text_document_semantic_tokens_range_async(
            T.SemanticTokensRangeParams(text_document=doc, range=screen(p))
        ),
    )
    await each(
        "onTypeFormatting (`;`, not one)",
        lambda p: client.text_document_on_type_formatting_async(
            T.DocumentOnTypeFormattingParams(
                text_document=doc,
                position=p,
                ch=";",
                options=T.FormattingOptions(tab_size=4, insert_spaces=True),
            )
        ),
    )
    n = min(len(at), 20)
    full = await client.text_document_semantic_tokens_full_async(
        T.SemanticTokensParams(text_document=doc)
    )
    rows.append(
        (
            "semanticTokens/full",
            [
                await timed(
                    client.text_document_semantic_tokens_full_async(
                        T.SemanticTokensParams(text_document=doc)
                    )
                )
                for _ in range(n)
            ],
        )
    )
    full = await client.text_document_semantic_tokens_full_async(
        T.SemanticTokensParams(text_document=doc)
    )
    rows.append(
        (
            "semanticTokens/full/delta (no change)",
            [
                await timed(
                    client.text_document_semantic_tokens_full_delta_async(
                        T.SemanticTokensDeltaParams(
                            text_document=doc, previous_result_id=full.result_id
                        )
                    )
                )
                for _ in range(n)
            ],
        )
    )
    first = await client.text_document_diagnostic_async(
        T.DocumentDiagnosticParams(text_document=doc)
    )
    rows.append(
        (
            "textDocument/diagnostic (full)",
            [
                await timed(
                    client.text_document_diagnostic_async(
                        T.DocumentDiagnosticParams(text_document=doc)
                    )
                )
                for _ in range(n)
            ],
        )
    )
    rows.append(
        (
            "textDocument/diagnostic (unchanged)",
            [
                await timed(
                    client.text_document_diagnostic_async(
                        T.DocumentDiagnosticParams(
                            text_document=doc, previous_result_id=first.result_id
                        )
                    )
                )
                for _ in range(n)
            ],
        )
    )
    item = T.CompletionItem(label="exp", data={"uri": URI, "kind": "builtin", "label": "exp"})
    rows.append(
        (
            "completionItem/resolve",
            [await timed(client.completion_item_resolve_async(item)) for _ in range(n)],
        )
    )
    return rows


async def workspace_requests(client, text: str, picks: list[int], timed) -> list[tuple[str, list]]:
    """Latencies of the workspace index and the refactorings (issue 18, items 3 and 4)."""
    doc = T.TextDocumentIdentifier(uri=URI)
    rows: list[tuple[str, list]] = []
    queries = ["norm", "splmx", "fill_uniform", "Gains", "x", "", "GOLDEN", "relu", "zzq"] * 3
    rows.append(
        (
            "workspace/symbol",
            [
                await timed(client.workspace_symbol_async(T.WorkspaceSymbolParams(query=q)))
                for q in queries
            ],
        )
    )
    at = [position(text, i + 1) for i in picks]
    rows.append(
        (
            "references",
            [
                await timed(
                    client.text_document_references_async(
                        T.ReferenceParams(
                            text_document=doc,
                            position=p,
                            context=T.ReferenceContext(include_declaration=True),
                        )
                    )
                )
                for p in at
            ],
        )
    )

    def action(rng: T.Range, only=("quickfix", "refactor")):
        return client.text_document_code_action_async(
            T.CodeActionParams(
                text_document=doc,
                range=rng,
                context=T.CodeActionContext(diagnostics=[], only=list(only) if only else None),
            )
        )

    rows.append(("codeAction (cursor)", [await timed(action(T.Range(start=p, end=p))) for p in at]))
    # everything an editor asks for with no filter: the "compile `f` to …" actions too (each
    # target's cheap check, `likely_unsupported`, for the function under the cursor)
    rows.append(
        (
            "codeAction (cursor, all kinds)",
            [await timed(action(T.Range(start=p, end=p), only=None)) for p in at],
        )
    )
    # `let name = init;` all over the file: extract the initializer, inline the binding
    lets = [m for m in re.finditer(r"\blet ([a-z_][a-z0-9_]*)(?:: [^=]+)? = ([^;\n]+);", text)]
    lets = lets[:: max(1, len(lets) // 30)][:30]
    sel_ms, extract_ms, inline_ms = [], [], []
    for m in lets:
        rng = T.Range(start=position(text, m.start(2)), end=position(text, m.end(2)))
        t = time.perf_counter()
        acts = await action(rng)
        sel_ms.append((time.perf_counter() - t) * 1000)
        for a in acts or []:
            if getattr(a, "kind", None) == "refactor.extract.function":
                try:
                    extract_ms.append(await timed(client.code_action_resolve_async(a)))
                except Exception:  # refused after checking: still timed below
                    pass
        p = position(text, m.start(1))
        for a in await action(T.Range(start=p, end=p)) or []:
            if getattr(a, "kind", None) == "refactor.inline":
                try:
                    inline_ms.append(await timed(client.code_action_resolve_async(a)))
                except Exception:
                    pass
    rows.append(("codeAction (selection)", sel_ms))
    if extract_ms:
        rows.append((f"resolve extract function ({len(extract_ms)})", extract_ms))
    if inline_ms:
        rows.append((f"resolve inline let ({len(inline_ms)})", inline_ms))
    return rows


if __name__ == "__main__":
    asyncio.run(main())
