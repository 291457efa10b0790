"""HTTP basic auth against the web config's bcrypt hashes.

bcrypt is deliberately slow (~0.1-0.3 s at cost 10-12), so, like exporter-toolkit, verified
credentials are cached by a SHA-256 of (user, password, hash): a scraper presenting the same
credentials every 15 s pays for bcrypt once. Unknown users still cost one bcrypt run, so response
time does not reveal which user names exist.

bcrypt reads at most 72 bytes of a password, and refuses longer ones. Such a password can match no
hash (accepting its first 72 bytes would let any suffix in), but it still pays one bcrypt run on
those 72 bytes, so its 401 takes as long as a wrong password's.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping

import bcrypt

log = logging.getLogger(__name__)
MAX_PASSWORD_BYTES = 72
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
        secret = password.encode()
        hashed = self._users.get(user)
        # An unknown user or an over-long password is checked all the same (timing) and then refused.
        eligible = hashed is not None and len(secret) <= MAX_PASSWORD_BYTES
        target = hashed if hashed is not None else _DUMMY_HASH
        key = hashlib.sha256(b"\0".join((user.encode(), secret, target))).digest()
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return cached and eligible
        try:
            ok = bcrypt.checkpw(secret[:MAX_PASSWORD_BYTES], target)
        except ValueError as exc:  # the web config refuses hashes bcrypt cannot read; never answer 500
            log.warning("basic auth: bcrypt refused the stored hash of %r: %s", user, exc)
            ok = False
        with self._lock:
            self._cache[key] = ok
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return ok and eligible


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
