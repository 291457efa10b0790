"""The synthetic fleet in one process: every target on one port, one path each
(``/engines/<i>/metrics``, ``/nodes/<n>/metrics``, ``/moe/<i>/metrics``); ``/-/ready`` answers
once the templates are built. Run as ``python -m infersight.fleet.server --servers N --models M
--port P``; it serves until SIGTERM."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType

from infersight.fleet import templates, topology
from infersight.stack.ports import LOOPBACK

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class FleetHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # a thousand targets are scraped in one burst

    def __init__(self, port: int, targets: dict[str, templates.Template], started: float):
        self.targets = targets
        self.started = started
        super().__init__((LOOPBACK, port), _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: FleetHTTPServer

    def do_GET(self) -> None:
        if self.path == "/-/ready":
            self._answer(200, b"ready\n")
            return
        template = self.server.targets.get(self.path)
        if template is None:
            self._answer(404, b"no such target\n")
            return
        self._answer(200, template.render(time.time() - self.server.started))

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # a line per scrape would flood the log
        pass


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m infersight.fleet.server")
    p.add_argument("--servers", type=int, required=True)
    p.add_argument("--models", type=int, required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--seed", type=int, default=12)
    args = p.parse_args(argv)
    started = time.time()
    fleet = topology.build(args.servers, args.models, args.seed)
    server = FleetHTTPServer(args.port, templates.all_targets(fleet, started), started)

    def stop(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
