"""Loopback addresses: where tests and load go by default, and what needs no warning."""

from __future__ import annotations

import ipaddress

LOOPBACK = "127.0.0.1"


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and the literal name localhost. Other names are not resolved on
    purpose: a DNS answer must not decide where load goes."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
