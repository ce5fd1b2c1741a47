"""A chain longer than the passes' room is K0108 on its function, never a crash, whatever
the thread and its C stack. (Found by fuzzing: `kera check` of `x + x + … + x` with
~16,000 links overflowed the main thread's 8 MiB C stack — a segmentation fault — below
the recursion limit; calls through C, such as `f(*args)` and properties, grow it.)"""

from __future__ import annotations

import subprocess
import sys
import threading

from kera_core.analysis import analyze
from kera_core.diagnostics.render import MAX_LINE
from kera_core.stack import DEEP_LIMIT, SMALL_STACK_LIMIT, _room, start_deep_thread


def chain(links: int) -> str:
    return "pub fn f(x: f32) -> f32 { " + " + ".join(["x"] * links) + " }\npub fn g() {}\n"


def _codes(src: str) -> set[str]:
    return {d.code for d in analyze(src).diagnostics}


def test_the_cli_reports_a_chain_past_any_room_as_k0108(tmp_path) -> None:
    path = tmp_path / "chain.kera"
    path.write_text(chain(40_000))
    r = subprocess.run(
        [sys.executable, "-m", "kera_core", "check", str(path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 1, (r.returncode, r.stderr[-300:])  # -11 was the crash
    out = r.stdout + r.stderr
    assert "K0108" in out and "Traceback" not in out
    # the excerpt of a 150,000-character line is a window around the span
    assert max(len(line) for line in out.splitlines()) < MAX_LINE + 20


def test_with_an_8_mib_hard_stack_limit_the_main_thread_gets_the_small_room(tmp_path) -> None:
    path = tmp_path / "chain.kera"
    path.write_text(chain(20_000))
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_STACK, (8 << 20, 8 << 20))\n"
        "from kera_core.stack import _room\n"
        "from kera_core.analysis import analyze\n"
        "codes = {d.code for d in analyze(open(sys.argv[1]).read()).diagnostics}\n"
        "print(_room(), sorted(codes))\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, (r.returncode, r.stderr[-300:])
    assert r.stdout.split()[0] == str(SMALL_STACK_LIMIT) and "K0108" in r.stdout


def test_each_thread_gets_the_room_its_stack_holds() -> None:
    assert _room() == DEEP_LIMIT  # the main thread: its limit raised (Linux)
    rooms: list[int] = []
    codes: list[set[str]] = []

    def small() -> None:
        rooms.append(_room())
        codes.append(_codes(chain(16_000)))

    t = threading.Thread(target=small)
    t.start()
    t.join()
    done = threading.Event()

    def deep() -> None:
        rooms.append(_room())
        codes.append(_codes(chain(10_000)))
        done.set()

    start_deep_thread(deep, "test-deep")
    assert done.wait(600)
    assert rooms == [SMALL_STACK_LIMIT, DEEP_LIMIT]
    assert "K0108" in codes[0]  # an 8 MiB thread: refused, not crashed
    assert "K0108" not in codes[1]  # a deep thread analyses 10,000 links


def test_a_chain_within_the_room_is_analysed_on_the_main_thread() -> None:
    assert "K0108" not in _codes(chain(12_000))
