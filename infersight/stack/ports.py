"""Free loopback ports."""

from __future__ import annotations

import socket

from infersight.loopback import LOOPBACK

__all__ = ["LOOPBACK", "free_port"]


# Ports already handed out in this process. The kernel readily hands the same free port to two
# bind(0) calls in a row, so two services created back to back (Prometheus and its Alertmanager)
# could otherwise be given one port, and the second to start would find the first answering there.
_handed_out: set[int] = set()
_ATTEMPTS = 1000


def free_port() -> int:
    """A port the kernel just handed out on 127.0.0.1 (released again for the caller to bind),
    never one this process was handed before."""
    for _ in range(_ATTEMPTS):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((LOOPBACK, 0))
            port = int(s.getsockname()[1])
        if port not in _handed_out:
            _handed_out.add(port)
            return port
    raise OSError(f"no fresh loopback port after {_ATTEMPTS} tries ({len(_handed_out)} already handed out)")
