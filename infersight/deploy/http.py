"""A small JSON-over-HTTP client for the deploy commands (stdlib only).

Errors never raise for an HTTP status: callers decide what a 403 or 404 means. A server that
cannot be reached raises :class:`Unreachable` with the URL and the reason.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from infersight.loopback import is_loopback


class Unreachable(OSError):
    """The server did not answer (refused, DNS, timeout, TLS)."""


@dataclass(frozen=True)
class Response:
    status: int
    body: Any  # parsed JSON, or the text when the answer is not JSON

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def message(self) -> str:
        """What the server said, for an error line."""
        if isinstance(self.body, dict):
            return str(self.body.get("message") or self.body.get("error") or self.body)
        return str(self.body).strip()[:300]


def request(
    method: str, url: str, body: Any = None, headers: dict[str, str] | None = None, timeout: float = 15
) -> Response:
    data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Accept", "application/json")
    if body is not None:
        req.add_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        req.add_header(name, value)
    # Loopback never goes through an HTTP proxy from the environment.
    host = urllib.parse.urlsplit(url).hostname or ""
    handlers = [urllib.request.ProxyHandler({})] if is_loopback(host) else []
    opener = urllib.request.build_opener(*handlers)
    try:
        with opener.open(req, timeout=timeout) as resp:
            return Response(resp.status, _parse(resp.read()))
    except urllib.error.HTTPError as exc:
        return Response(exc.code, _parse(exc.read()))
    except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
        reason = getattr(exc, "reason", exc)
        raise Unreachable(f"cannot reach {url}: {reason}") from None


def _parse(raw: bytes) -> Any:
    text = raw.decode("utf-8", "replace")
    try:
        return json.loads(text) if text.strip() else None
    except json.JSONDecodeError:
        return text
