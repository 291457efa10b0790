"""The target URL: loopback by default, and which model it serves.

Load goes only to this machine unless the operator says otherwise: a load generator pointed at
someone else's server by a typo is an incident.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import aiohttp
import yarl

from infersight.loopback import is_loopback


class TargetError(ValueError):
    """The target URL is malformed, not allowed, or does not answer as an OpenAI server."""


def base_url(url: str, flag: str, example: str, allow_path: bool = False) -> str:
    """``url`` without a trailing slash if it is a plain http(s) URL; else TargetError naming ``flag``.

    Refused as well: credentials in the URL, and anything the HTTP clients could read differently
    from this check (a backslash, whitespace, control characters), so the host checked here is the
    host that receives the requests.
    """
    allowed = f"give an http(s) URL such as {example}"
    odd = next((c for c in url if c == "\\" or c.isspace() or not c.isprintable()), None)
    if odd is not None:
        what = "a backslash" if odd == "\\" else f"the character {odd!r}"
        raise TargetError(f"{flag} {url!r} contains {what}; {allowed}")
    try:
        parts = urlsplit(url)
        host = parts.hostname  # raises too, on a bracketed host that is no IPv6 address
    except ValueError:
        raise TargetError(f"{flag} {url!r} is not an http(s) URL; {allowed}") from None
    if parts.scheme not in ("http", "https") or not host:
        raise TargetError(f"{flag} {url!r} is not an http(s) URL; {allowed}")
    if "@" in parts.netloc:
        raise TargetError(f"{flag} {url!r} holds credentials (user@host); {allowed}")
    if parts.query or parts.fragment or (parts.path not in ("", "/") and not allow_path):
        raise TargetError(f"{flag} {url!r}: give the base URL only, such as {example}")
    try:
        parts.port  # noqa: B018 - raises on a bad port
        parsed = yarl.URL(url)  # aiohttp's own parser must agree on the host
    except ValueError as exc:
        raise TargetError(f"{flag} {url!r}: {exc}; {allowed}") from None
    if parts.hostname not in (parsed.host, parsed.raw_host):  # raw_host: the IDNA (xn--) spelling
        raise TargetError(f"{flag} {url!r}: the host is ambiguous; {allowed}")
    return url.rstrip("/")


def check_target(url: str, allow_remote: bool = False, flag: str = "--target") -> str:
    """The base URL (scheme://host:port, no trailing slash) if it may receive load."""
    base = base_url(url, flag, "http://127.0.0.1:8000")
    host = urlsplit(base).hostname or ""
    if not allow_remote and not is_loopback(host):
        raise TargetError(
            f"{flag} {url!r} is not a loopback address; load goes to 127.0.0.0/8, ::1 or localhost "
            "unless you pass --allow-remote (only for a server you are responsible for)"
        )
    return base


MAX_MODEL_LIST_BYTES = 1024 * 1024  # a server listing thousands of adapters stays far under it


async def _read_capped(stream: aiohttp.StreamReader, limit: int) -> bytes:
    """The body up to ``limit`` bytes (a read returns what has arrived, so read until EOF or the limit)."""
    raw = b""
    while len(raw) < limit and (chunk := await stream.read(limit - len(raw))):
        raw += chunk
    return raw


async def served_model(session: aiohttp.ClientSession, base_url: str, timeout_s: float = 10.0) -> str:
    """The first model id that ``GET /v1/models`` lists."""
    url = base_url + "/v1/models"
    try:
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=timeout_s), allow_redirects=False) as resp:
            if resp.status != 200:
                raise TargetError(f"GET {url} answered {resp.status}; pass --model NAME or fix the target")
            raw = await _read_capped(resp.content, MAX_MODEL_LIST_BYTES + 1)
    except TargetError:  # a ValueError too: it must not be taken for a failed read below
        raise
    except aiohttp.ClientResponseError:  # raised before any status: the reply was not HTTP
        raise TargetError(f"GET {url}: the reply is not HTTP; is --target the OpenAI server's address?") from None
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        raise TargetError(f"GET {url} failed ({type(exc).__name__}); is the server up? pass --model to skip") from None
    if len(raw) > MAX_MODEL_LIST_BYTES:
        raise TargetError(f"GET {url}: the answer is larger than 1 MiB, not a model list; pass --model NAME")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        raise TargetError(f"GET {url} failed (not JSON); is --target the OpenAI server's address?") from None
    models = data.get("data") if isinstance(data, dict) else None
    if (
        not isinstance(models, list)
        or not models
        or not isinstance(models[0], dict)
        or not isinstance(models[0].get("id"), str)
    ):
        raise TargetError(f"GET {url} listed no model; pass --model NAME")
    return str(models[0]["id"])
