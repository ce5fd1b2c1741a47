"""Fake targets for tests/test_same_bits.py, declared with ``kera_core.targets.declare``
(by the test's fixture) so that the same-bits child process imports them too.

* ``flip``: the interpreter's result plus one printed character: a different digest;
* ``slow``: sleeps for ``SLOW_S`` seconds, then answers like the interpreter;
* ``crash``: ends its process at once (as a crash of JIT-run machine code would);
* ``picky``: refuses every function.
"""

from __future__ import annotations

import os
import time
from types import SimpleNamespace

from kera_core.interp import run_function
from kera_core.targets import Artifact, register

NAMES = ("flip", "slow", "crash", "picky")
SLOW_S = 30.0


class Fake:
    suffix = ".fake"
    description = "a fake target for tests"
    supports_max_steps = True

    def __init__(self, name: str) -> None:
        self.name = name

    def unsupported(self, graph, fn=None) -> list[str]:
        return ["picky refuses everything"] if self.name == "picky" else []

    def lower(self, graph, provenance, fn=None) -> Artifact:
        return Artifact(self.name, b"", graph.fingerprint(), self.suffix)

    def preview(self, graph, provenance, fn) -> str:
        return ""

    def run(self, artifact, graph, fn, inputs, dims=None, *, provenance=None, stdout=None,
            max_steps=None):  # fmt: skip
        if self.name == "crash":
            os._exit(3)
        if self.name == "slow":
            time.sleep(SLOW_S)
        source = SimpleNamespace(graph=graph, provenance=provenance)
        r = run_function(source, fn, inputs, dims, max_steps=max_steps)
        if self.name == "flip":
            r.printed += "!"
            r.has_io = True
        return r


def register_all() -> None:
    for name in NAMES:
        register(Fake(name))


register_all()  # on import: what the registry's declare() expects of a target's module
