"""HTTP basic auth against the web config's bcrypt hashes.

bcrypt is deliberately slow (~0.1-0.3 s at cost 10-12), so, like exporter-toolkit, verified
credentials are cached by a SHA-256 of (user, password, hash): a scraper presenting the same
credentials every 15 s pays for bcrypt once. Unknown users still cost one bcrypt run, so response
time does not reveal which user names exist.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Mapping

import bcrypt

# A valid hash of a random password, checked for unknown users to equalise timing.
_DUMMY_HASH = bcrypt.hashpw(b"infersight-no-such-user", bcrypt.gensalt(rounds=10))


class BasicAuth:
    def __init__(self, users: Mapping[str, bytes], cache_size: int = 256):
        self._users = dict(users)
        self._cache: OrderedDict[bytes, bool] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return bool(self._users)

    def check(self, authorization: str | None) -> bool:
        """True when the Authorization header carries a known user and its password."""
        if not self._users:
            return True
        creds = _decode(authorization)
        if creds is None:
            return False
        user, password = creds
        hashed = self._users.get(user)
        known = hashed is not None
        target = hashed if hashed is not None else _DUMMY_HASH
        key = hashlib.sha256(b"\0".join((user.encode(), password.encode(), target))).digest()
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return cached and known
        ok = bcrypt.checkpw(password.encode(), target)
        with self._lock:
            self._cache[key] = ok
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return ok and known


def _decode(authorization: str | None) -> tuple[str, str] | None:
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "basic" or not token:
        return None
    try:
        raw = base64.b64decode(token.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, sep, password = raw.partition(":")
    return (user, password) if sep else None
