"""The Kera language server (``kera lsp``): a thin pygls layer over ``kera_core.workspace``
and ``kera_core.ide``. The protocol, custom requests and commands are documented in
docs/lsp.md."""

from __future__ import annotations

import argparse
import logging
import sys


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="kera lsp", description="Run the Kera language server.")
    add_arguments(ap)
    return run(ap.parse_args(argv))


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (the default)")
    ap.add_argument("--tcp", type=int, metavar="PORT", help="listen on 127.0.0.1:PORT instead")
    ap.add_argument("--host", default="127.0.0.1", help="address to listen on with --tcp")
    ap.add_argument("--log-file", metavar="PATH", help="write the server's log here")
    ap.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"])


def run(args) -> int:
    from kera_core.workspace import warm_up
    from kera_lsp.server import IdleGC, create_server

    target = {"filename": args.log_file} if args.log_file else {"stream": sys.stderr}
    logging.basicConfig(
        level=getattr(logging, args.log_level),
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
        **target,
    )
    server = create_server()
    server.worker.idle_gc = IdleGC()  # this process is the server's: collect when idle
    # the first job: load what an analysis loads on first use, while the client initializes
    server.worker.submit(warm_up).add_done_callback(_warm_up_done)
    if args.tcp is not None:
        server.start_tcp(args.host, args.tcp)
    else:
        server.start_io()
    # docs/lsp.md: exit code 0 after `shutdown`, 1 when the client exits (or leaves) without it
    return 0 if getattr(server.protocol, "_shutdown", False) else 1


def _warm_up_done(fut) -> None:
    if fut.exception() is not None:  # the first real open then pays for what it loads
        logging.getLogger("kera_lsp").error("the warm-up failed", exc_info=fut.exception())
