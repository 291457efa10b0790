"""Free loopback ports."""

from __future__ import annotations

import socket

from infersight.loopback import LOOPBACK

__all__ = ["LOOPBACK", "free_port"]


def free_port() -> int:
    """A port the kernel just handed out on 127.0.0.1 (released again for the caller to bind)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])
