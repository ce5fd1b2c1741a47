"""The semantics version (kera_core/ir/semantics.py, docs/graph.md "Semantics versions"):
versioned opcodes change exactly the fingerprints of graphs using a changed operation, and
every artifact records the version it was built under (the `.keg` side: test_keg_errors.py).
"""

from __future__ import annotations

import json
import struct

import pytest

from kera_core.analysis import analyze
from kera_core.ir.semantics import REVISIONS, SEMANTICS_VERSION, hashed_opcode, revision
from kera_core.ir.types import PRIMS, Tensor
from kera_core.native import artifact
from tests.tools import tool_missing


def fingerprint(src: str) -> str:
    a = analyze(src)
    assert not a.has_errors, [str(d) for d in a.diagnostics if d.is_error]
    return a.module.graph.fingerprint().hex()


# fingerprints under semantics version 1 (before kera_core/ir/semantics.py existed)
V1 = {
    "pub fn f(x: f32) -> f32 { exp(x) }": (
        "89e9325bdf3886f3e3dca8c4be6680b6a76f98965df286ac0844efa64eef80ab"
    ),
    "pub fn f(x: f64) -> f64 { exp(x) }": (
        "4a95c338e49ec98814cb73a4e915918ec110c44d1a142247b05be84ef172cfb6"
    ),
    "pub fn f[N](x: &f32[N]) -> f32[N] { softmax(x) }": (
        "1ee056cf1d7054f789dd10ff1ff46c781d4a106669d28c1b445473eda61514e0"
    ),
}


# fingerprints under semantics version 2 (f64 `tanh` and `sigmoid` changed in version 3)
V2 = {
    "pub fn f(x: f64) -> f64 { tanh(x) }": (
        "7a3063fcbfc45dea4884cc708596cfeaa863946d8f591faf9790f244a7fd9761"
    ),
    "pub fn f(x: f64) -> f64 { sigmoid(x) }": (
        "7d58975a6d4dde600421c9beb4e37567dcbbf6aca2991cfcabc5c478c948c900"
    ),
    "pub fn f(x: f32) -> f32 { tanh(x) }": (
        "74724bc470d063005e784e688e0a92fc951f2fd3e667a11a3054b43000e2172a"
    ),
}


def test_a_changed_operation_changes_the_fingerprint_and_nothing_else_does() -> None:
    assert SEMANTICS_VERSION == 3
    assert (
        fingerprint("pub fn f(x: f32) -> f32 { exp(x) }")
        != V1["pub fn f(x: f32) -> f32 { exp(x) }"]
    )
    assert (
        fingerprint("pub fn f[N](x: &f32[N]) -> f32[N] { softmax(x) }")
        != V1["pub fn f[N](x: &f32[N]) -> f32[N] { softmax(x) }"]
    )
    # binary64 exp kept its bits, so its graph keeps its fingerprint
    src = "pub fn f(x: f64) -> f64 { exp(x) }"
    assert fingerprint(src) == V1[src]
    # version 3: binary64 tanh and sigmoid moved, binary32 tanh (last changed in 2) did not
    for src, before in V2.items():
        moved = "f64" in src
        assert (fingerprint(src) != before) == moved, src


@pytest.mark.parametrize("op", ["exp", "log", "tanh", "sigmoid", "softmax"])
def test_the_versioned_opcodes(op: str) -> None:
    f32, f64 = Tensor(PRIMS["f32"], ()), Tensor(PRIMS["f64"], ())
    assert revision(op, (f32,)) == 2 and hashed_opcode(op, (f32,)) == f"{op}@2"
    assert revision(op, (PRIMS["f32"],)) == 2
    r64 = 3 if op in ("tanh", "sigmoid") else 1  # binary64 tanh, sigmoid: version 3
    assert revision(op, (f64,)) == r64 and revision(op, (PRIMS["f64"],)) == r64
    assert hashed_opcode(op, (f64,)) == (op if r64 == 1 else f"{op}@{r64}")
    assert hashed_opcode("add", (f32,)) == "add" and hashed_opcode("exp2", (f32,)) == "exp2"
    # a version's changes are never above the version
    assert all(r <= SEMANTICS_VERSION for t in REVISIONS.values() for r in t.values())
    # the same function with f32 and f64 hashes differently
    srcs = {t: f"pub fn f[N](x: &{t}[N]) -> {t}[N] {{ {op}(x) }}" for t in ("f32", "f64")}
    assert fingerprint(srcs["f32"]) != fingerprint(srcs["f64"])


SRC = "pub fn f[N](x: &f32[N]) -> f32[N] { sigmoid(x) * 2.0 }\n"


def _graph():
    return analyze(SRC).module.graph


def test_native_artifacts_record_the_version() -> None:
    from kera_core.backends.arm64 import compile as A
    from kera_core.backends.x86_64 import compile as X

    g = _graph()
    for data, magic, what in (
        (X.build(g, "f", X.isa_for("sse2"))[0], X.MAGIC, "x86_64"),
        (A.build(g, "f")[0], A.MAGIC, "arm64"),
    ):
        header, _ = artifact.unpack(magic, what, data, g.fingerprint())
        assert header["semantics"] == SEMANTICS_VERSION
        # a newer version than this Kera implements is refused; an older one (the field
        # absent: version 1) is read, since a changed operation changed the fingerprint
        at = len(magic) + 32
        (n,) = struct.unpack_from("<I", data, at)
        for version, ok in ((SEMANTICS_VERSION + 1, False), (None, True)):
            h = dict(header)
            if version is None:
                del h["semantics"]
            else:
                h["semantics"] = version
            hb = json.dumps(h, sort_keys=True).encode()
            edited = data[:at] + struct.pack("<I", len(hb)) + hb + data[at + 4 + n :]
            if ok:
                artifact.unpack(magic, what, edited, g.fingerprint())
            else:
                with pytest.raises(artifact.ArtifactError, match="semantics version"):
                    artifact.unpack(magic, what, edited, g.fingerprint())


def test_text_artifacts_record_the_version() -> None:
    from kera_core.backends.ptx import compile as P
    from kera_core.backends.verilog import compile as V

    g = _graph()
    for mod, text in ((P, P.artifact_text(g, "f")), (V, V.artifact_text(g, "f"))):
        assert f"\n// semantics {SEMANTICS_VERSION}\n" in text
        mod.read(text.encode(), g)
        newer = text.replace(
            f"// semantics {SEMANTICS_VERSION}\n", f"// semantics {SEMANTICS_VERSION + 1}\n"
        )
        with pytest.raises(mod.ArtifactError, match="semantics version"):
            mod.read(newer.encode(), g)
        mod.read(text.replace(f"// semantics {SEMANTICS_VERSION}\n", "").encode(), g)


def test_wasm_modules_record_the_version() -> None:
    try:
        from kera_core.backends.wasm import assemble, lower_wat, read_fingerprint, read_semantics
    except ImportError:
        tool_missing("the wasm target needs wasmtime")
    g = _graph()
    data = assemble(lower_wat(g, "f"), g.fingerprint())
    assert read_semantics(data) == SEMANTICS_VERSION
    assert read_fingerprint(data) == g.fingerprint()
