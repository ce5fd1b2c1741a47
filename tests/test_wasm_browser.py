"""The wasm target in a real browser: headless Chromium gives wasmtime's and the interpreter's bytes.

For every supported exported function of a few examples (saxpy, dot, softmax, layernorm,
matmul, bits, portfolio; ordinary and adversarial seeded inputs, and reductions across
several 1024-element tiles) and for checked errors, the test writes the `.wasm` artifacts
and a `cases.json` (each argument in the ABI's form: dimensions and scalars as the bytes
of their WebAssembly value, tensors as their raw bytes) into a temporary folder with
`tests/browser/` (index.html, harness.js), serves it on 127.0.0.1 from a thread, and
loads the page in headless Chromium. The harness instantiates each module with
`WebAssembly.instantiate` (no imports), writes the tensors into blocks from
`kera_alloc`, calls the export, reads the results (tensors at the returned addresses)
and POSTs their bytes as hex back to the server (they are also shown in the
page); a trap hands back `kera_error`. Python then checks, per case, that the
browser's bytes and result digest equal wasmtime's and the interpreter's, and that a
trap carries the interpreter's error code.

Skipped when Chromium is not installed, except under CI (`CI=true`), where it fails:
CI must install it (`apt-get install -y chromium`).
"""

from __future__ import annotations

import base64
import glob
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from kera_core.analysis import analyze
from kera_core.backends.wasm.runtime import ERRORS
from kera_core.cli.run import _resolve_dims
from kera_core.interp import InterpError, run_function
from kera_core.interp.api import entry_signature
from kera_core.interp.digest import result_digest
from kera_core.interp.gen import InputGenerator
from kera_core.interp.values import dtype_of, value_in
from kera_core.ir.types import Tensor, strip_ref
from kera_core.targets.wasm import TARGET
from tests.tools import tool_missing

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, "tests", "browser")
EXAMPLES = ["saxpy", "dot", "softmax", "layernorm", "matmul", "bits", "portfolio"]
TILED = [("dot", "dot_builtin"), ("dot", "cosine"), ("saxpy", "saxpy")]
TILED_SIZE = 3 * 1024 + 17
ERRORS_SRC = """
pub fn read[N](x: &f32[N], i: i64) -> f32 { x[i] }
pub fn quot(a: i32, b: i32) -> i32 { a / b }
pub fn biggest[N](x: &f32[N]) -> f32 { max(x) }
"""
ERROR_CASES = [
    ("read", {"x": np.arange(4, dtype=np.float32), "i": 4}),
    ("read", {"x": np.arange(4, dtype=np.float32), "i": 3}),
    ("quot", {"a": 7, "b": 0}),
    ("quot", {"a": -(2**31), "b": -1}),
    ("biggest", {"x": np.zeros(0, np.float32)}),
]
TIMEOUT_S = 60


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _module(src: str):
    a = analyze(src)
    assert not a.has_errors, [str(d) for d in a.diagnostics if d.is_error]
    return a.module


def _seeded(m, name: str, seed: int, adversarial: bool, size: int | None = None):
    sig = entry_signature(m, name)
    user = {n: size for n in sig.dim_names} if size is not None else {}
    dims, _ = _resolve_dims(sig, user, {})
    gen = InputGenerator(seed, adversarial)
    inputs = {p: gen.value(t, dims) for p, t in sig.value_params}
    return inputs, {sig.dim_names[i]: n for i, n in dims.items()}


def _valtype(p) -> str:
    if p.is_float:
        return "f64" if p.name == "f64" else "f32"
    return "i64" if p.bits == 64 else "i32"


def _scalar_hex(p, v) -> str:
    vt = _valtype(p)
    if vt == "f32":
        return np.asarray(v, dtype="<f4").tobytes().hex()
    if vt == "f64":
        return np.asarray(v, dtype="<f8").tobytes().hex()
    width = 8 if vt == "i64" else 4
    return (int(v) & ((1 << (8 * width)) - 1)).to_bytes(width, "little").hex()


def abi_case(m, name: str, inputs: dict, dims: dict) -> tuple[list, list]:
    """The export's arguments and result layout, as `runtime.run_wasm` passes and reads them."""
    sig = entry_signature(m, name)
    fn = sig.function
    params: list[dict] = []
    for i in range(fn.type.n_dims):
        n = dims[sig.dim_names[i]]
        params.append({"t": "i64", "hex": int(n).to_bytes(8, "little", signed=True).hex()})
    for (pname, t0), t in zip(sig.value_params, fn.type.params, strict=True):
        v = value_in(t0, inputs[pname], f"input `{pname}`")
        t = strip_ref(t)
        if isinstance(t, Tensor):
            dt = np.dtype(dtype_of(t.elem)).newbyteorder("<")
            raw = np.ascontiguousarray(v, dtype=dt).tobytes()
            params.append({"t": "tensor", "b64": base64.b64encode(raw).decode()})
        else:
            params.append({"t": _valtype(t), "hex": _scalar_hex(t, v)})
    outputs: list[dict] = []
    for kind, i in fn.outputs:
        t = fn.type.result if kind == "result" else strip_ref(fn.type.params[i])
        if isinstance(t, Tensor):
            outputs.append({"t": "tensor"})  # size filled in from the reference result
        else:
            outputs.append({"t": _valtype(t), "w": np.dtype(dtype_of(t)).itemsize})
    return params, outputs


def _outcome(fn):
    try:
        r = fn()
    except InterpError as e:
        return e.code
    return [(o.key, str(o.type), o.raw) for o in r.outputs], r.digest()


def build_cases(folder: str) -> dict[str, dict]:
    """Write the artifacts and cases.json; return, per case id, the two reference outcomes."""
    runs = []  # (module, fn name, inputs, dims, label)
    for ex in EXAMPLES:
        with open(os.path.join(ROOT, "examples", f"{ex}.kera"), encoding="utf-8") as f:
            m = _module(f.read())
        for fn in m.graph.exported():
            if TARGET.unsupported(m.graph, fn.name):
                continue
            for adversarial in (False, True):
                inputs, dims = _seeded(m, fn.name, 1, adversarial)
                runs.append((m, fn.name, inputs, dims, f"{ex}:{fn.name}:{int(adversarial)}"))
            if (ex, fn.name) in TILED:
                inputs, dims = _seeded(m, fn.name, 2, False, TILED_SIZE)
                runs.append((m, fn.name, inputs, dims, f"{ex}:{fn.name}:tiled"))
    em = _module(ERRORS_SRC)
    for k, (name, inputs) in enumerate(ERROR_CASES):
        dims = {"N": len(inputs["x"])} if "x" in inputs else {}
        runs.append((em, name, inputs, dims, f"errors:{name}:{k}"))

    cases, refs, wasm_files = [], {}, {}
    for m, name, inputs, dims, label in runs:
        key = (id(m), name)
        if key not in wasm_files:
            art = TARGET.lower(m.graph, m.provenance, name)
            fname = f"m{len(wasm_files)}.wasm"
            with open(os.path.join(folder, fname), "wb") as f:
                f.write(art.data)
            wasm_files[key] = (fname, art)
        fname, art = wasm_files[key]
        interp = _outcome(lambda: run_function(m, name, inputs, dims))  # noqa: B023
        wt = _outcome(
            lambda: TARGET.run(art, m.graph, name, inputs, dims, provenance=m.provenance)  # noqa: B023
        )
        params, outputs = abi_case(m, name, inputs, dims)
        if not isinstance(interp, str):
            for o, (_, _, raw) in zip(outputs, interp[0], strict=True):
                if o["t"] == "tensor":
                    o["n"] = len(raw)
        else:
            for o in outputs:
                o.setdefault("n", 0)
        cases.append(
            {"id": label, "wasm": fname, "export": name, "params": params, "outputs": outputs}
        )
        refs[label] = {"interp": interp, "wasmtime": wt}
    with open(os.path.join(folder, "cases.json"), "w", encoding="utf-8") as f:
        json.dump(cases, f)
    for name in ("index.html", "harness.js"):
        shutil.copy(os.path.join(PAGE, name), folder)
    return refs


class _Handler(SimpleHTTPRequestHandler):
    extensions_map = {
        **SimpleHTTPRequestHandler.extensions_map,
        ".wasm": "application/wasm",
        ".js": "text/javascript",
    }

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        n = int(self.headers.get("Content-Length", "0"))
        self.server.posted = self.rfile.read(n).decode()  # type: ignore[attr-defined]
        self.send_response(204)
        self.end_headers()
        self.server.got.set()  # type: ignore[attr-defined]

    def log_message(self, *args) -> None:
        pass


def run_in_browser(exe: str, folder: str) -> dict:
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Handler, directory=folder))
    server.got = threading.Event()  # type: ignore[attr-defined]
    server.posted = None  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    profile = tempfile.mkdtemp(prefix="kera-chromium-")
    url = f"http://127.0.0.1:{server.server_address[1]}/index.html"
    cmd = [
        exe,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
        url,
    ]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        # The page POSTs its results; Chromium (not in --dump-dom mode, which returns at
        # the load event, before the asynchronous harness is done) then gets stopped.
        got = server.got.wait(TIMEOUT_S)  # type: ignore[attr-defined]
        if not got:
            os.killpg(proc.pid, signal.SIGKILL)
            _, err = proc.communicate()
            pytest.fail(f"no result from Chromium in {TIMEOUT_S} s: {(err or '')[-2000:]}")
        return json.loads(server.posted)  # type: ignore[attr-defined]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
        server.shutdown()
        server.server_close()
        shutil.rmtree(profile, ignore_errors=True)


def test_wasm_in_headless_chromium(tmp_path) -> None:
    exe = chromium()
    if exe is None:
        tool_missing("Chromium is not installed (apt-get install -y chromium)")
    folder = str(tmp_path)
    refs = build_cases(folder)
    assert len(refs) >= 40
    got = run_in_browser(exe, folder)
    assert "error" not in got, got["error"]
    assert "Chrome" in got["userAgent"]
    assert set(got["cases"]) == set(refs)
    traps = 0
    for label, ref in refs.items():
        case = got["cases"][label]
        assert "error" not in case, (label, case["error"])
        interp, wt = ref["interp"], ref["wasmtime"]
        assert wt == interp, label
        if isinstance(interp, str):  # a checked error: the trap carries its code
            assert "trap" in case, (label, case)
            assert ERRORS[case["trap"]][0] == interp, (label, case)
            traps += 1
            continue
        entries = interp[0]
        raws = [bytes.fromhex(h) for h in case["out"]]
        assert raws == [raw for _, _, raw in entries], label
        digest = result_digest([(k, t, raw) for (k, t, _), raw in zip(entries, raws, strict=True)])
        assert digest == interp[1] == wt[1], label
    assert traps == 3


def test_the_page_is_in_the_repository() -> None:
    assert sorted(os.path.basename(p) for p in glob.glob(os.path.join(PAGE, "*"))) == [
        "harness.js",
        "index.html",
    ]
