"""The server's manners over raw stdio: a request before `initialize` gets -32002 (and a
notification is dropped), `exit` without `shutdown` exits 1 (0 after it), and a `didChange`
whose version is null is applied."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class Raw:
    def __init__(self) -> None:
        self.p = subprocess.Popen(
            [sys.executable, "-m", "kera_lsp"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )

    def send(self, method: str, params=None, id: int | None = None) -> None:
        msg = {"jsonrpc": "2.0", "method": method, "params": params if params is not None else {}}
        if id is not None:
            msg["id"] = id
        body = json.dumps(msg).encode()
        self.p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.p.stdin.flush()

    def read(self) -> dict:
        n = None
        while True:
            line = self.p.stdout.readline()
            assert line, "the server closed its output"
            if line in (b"\r\n", b"\n"):
                break
            if line.lower().startswith(b"content-length:"):
                n = int(line.split(b":")[1])
        assert n is not None
        return json.loads(self.p.stdout.read(n))

    def wait_for(self, pred, timeout: float = 20.0) -> dict:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            msg = self.read()
            if pred(msg):
                return msg
        raise AssertionError("no such message")

    def initialize(self) -> None:
        self.send("initialize", {"capabilities": {}, "processId": None, "rootUri": None}, id=1)
        self.wait_for(lambda m: m.get("id") == 1)
        self.send("initialized")

    def close(self, timeout: float = 10) -> int:
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        return self.p.wait(timeout)


def test_requests_before_initialize_get_32002() -> None:
    s = Raw()
    uri = "file:///early.kera"
    s.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "kera",
                                                     "version": 1, "text": "fn f( {"}})  # fmt: skip
    s.send("textDocument/hover", {"textDocument": {"uri": uri},
                                  "position": {"line": 0, "character": 0}}, id=5)  # fmt: skip
    reply = s.wait_for(lambda m: m.get("id") == 5)
    assert reply["error"]["code"] == -32002
    s.initialize()  # the early didOpen was dropped: the document is not open
    s.send("textDocument/hover", {"textDocument": {"uri": uri},
                                  "position": {"line": 0, "character": 0}}, id=6)  # fmt: skip
    assert s.wait_for(lambda m: m.get("id") == 6).get("result") is None
    s.send("shutdown", id=7)
    s.wait_for(lambda m: m.get("id") == 7)
    s.send("exit")
    assert s.close() == 0


def test_exit_without_shutdown_exits_1() -> None:
    s = Raw()
    s.initialize()
    s.send("exit")
    assert s.close() == 1


def test_a_null_version_change_is_applied() -> None:
    s = Raw()
    s.initialize()
    uri = "file:///nullversion.kera"
    s.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "kera",
            "version": 3, "text": "pub fn f() -> i64 { 1 }\n"}})  # fmt: skip
    s.send("textDocument/didChange", {"textDocument": {"uri": uri, "version": None},
           "contentChanges": [{"text": "pub fn f() -> i64 { nope }\n"}]})  # fmt: skip
    diag = s.wait_for(
        lambda m: (
            m.get("method") == "textDocument/publishDiagnostics"
            and any("nope" in d["message"] for d in m["params"]["diagnostics"])
        )
    )
    assert diag["params"]["version"] == 4
    s.send("shutdown", id=2)
    s.wait_for(lambda m: m.get("id") == 2)
    s.send("exit")
    assert s.close() == 0


def test_an_ordinary_request_failure_is_not_a_traceback() -> None:
    s = Raw()
    s.initialize()
    uri = "file:///rename.kera"
    s.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "kera",
            "version": 1, "text": "pub fn f() -> i64 { 1 }\n"}})  # fmt: skip
    for i, (col, name) in enumerate([(20, "x"), (2, "y"), (7, "1bad")]):
        s.send("textDocument/rename", {"textDocument": {"uri": uri},
               "position": {"line": 0, "character": col}, "newName": name}, id=10 + i)  # fmt: skip
        reply = s.wait_for(lambda m, i=i: m.get("id") == 10 + i)
        assert reply["error"]["code"] == -32803
    s.send("shutdown", id=2)
    s.wait_for(lambda m: m.get("id") == 2)
    s.send("exit")
    assert s.close() == 0
    err = s.p.stderr.read().decode()
    assert "Traceback" not in err and "ERROR" not in err, err[-2000:]
