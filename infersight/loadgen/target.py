"""The target URL: loopback by default, and which model it serves.

Load goes only to this machine unless the operator says otherwise: a load generator pointed at
someone else's server by a typo is an incident.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import aiohttp

from infersight.loopback import is_loopback


class TargetError(ValueError):
    """The target URL is malformed, not allowed, or does not answer as an OpenAI server."""


def check_target(url: str, allow_remote: bool = False) -> str:
    """The base URL (scheme://host:port, no trailing slash) if it may receive load."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TargetError(f"--target {url!r} is not an http(s) URL such as http://127.0.0.1:8000")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise TargetError(
            f"--target {url!r}: give the server's base URL (http://HOST:PORT); /v1/... is added per endpoint"
        )
    try:
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError as exc:
        raise TargetError(f"--target {url!r}: {exc}") from None
    if not allow_remote and not is_loopback(parts.hostname):
        raise TargetError(
            f"--target {url!r} is not a loopback address; load goes to 127.0.0.0/8, ::1 or localhost "
            "unless you pass --allow-remote (only for a server you are responsible for)"
        )
    return f"{parts.scheme}://{parts.netloc}"


async def served_model(session: aiohttp.ClientSession, base_url: str, timeout_s: float = 10.0) -> str:
    """The first model id that ``GET /v1/models`` lists."""
    url = base_url + "/v1/models"
    try:
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=timeout_s)) as resp:
            if resp.status != 200:
                raise TargetError(f"GET {url} answered {resp.status}; pass --model NAME or fix the target")
            data = await resp.json(content_type=None)
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        raise TargetError(f"GET {url} failed ({type(exc).__name__}); is the server up? pass --model to skip") from None
    models = data.get("data") if isinstance(data, dict) else None
    if not models or not isinstance(models[0], dict) or not isinstance(models[0].get("id"), str):
        raise TargetError(f"GET {url} listed no model; pass --model NAME")
    return str(models[0]["id"])
