"""The server's idle-time garbage collection (kera_lsp.server.IdleGC)."""

from __future__ import annotations

import gc
import time

from kera_lsp.server import IdleGC, Worker


def test_full_collections_wait_for_an_idle_worker():
    before = gc.get_threshold()
    worker = Worker()
    idle = IdleGC(idle_s=0.05, busy_s=0.01)
    try:
        assert gc.get_threshold()[:2] == before[:2] and gc.get_threshold()[2] > 10**6
        worker.idle_gc = idle
        worker.submit(lambda: [[i] for i in range(200_000)]).result()  # promotes objects
        deadline = time.monotonic() + 5
        while idle.collections == 0 and time.monotonic() < deadline:
            worker.submit(lambda: None).result()  # wakes the worker with the new timeout
            time.sleep(0.1)
        assert idle.collections >= 1
        assert worker.submit(lambda: 42).result() == 42  # jobs still run, in order
    finally:
        worker.stop()
        idle.uninstall()
    assert gc.get_threshold() == before
