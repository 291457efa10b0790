"""The plugin's settings, read from the environment of each vLLM process.

vLLM starts its workers itself, so environment variables are the one channel that reaches every
process unchanged. A bad value is a :class:`SettingsError` naming the variable, the value and
what is allowed; the plugin logs it and stays off rather than stopping the inference server.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from infersight.exporters.common.webconfig import WebConfig, WebConfigError, load_web_config
from infersight.loopback import LOOPBACK

ENABLE_VAR = "INFERSIGHT_MOE_EXPORTER"
PORT_VAR = "INFERSIGHT_MOE_EXPORTER_PORT"
ADDR_VAR = "INFERSIGHT_MOE_EXPORTER_ADDR"
INTERVAL_VAR = "INFERSIGHT_MOE_EXPORTER_INTERVAL"
# The balance figures' window; the bundle's moe.window (5m by default) should be the same.
WINDOW_VAR = "INFERSIGHT_MOE_EXPORTER_WINDOW"
# Off drops the per-expert counters (layers x experts per rank); the alerts read only the
# per-layer gauges, the dashboard's per-expert panels go blank.
PER_EXPERT_VAR = "INFERSIGHT_MOE_EXPORTER_PER_EXPERT"
WEB_CONFIG_VAR = "INFERSIGHT_MOE_EXPORTER_WEB_CONFIG"  # exporter-toolkit web config: TLS, basic auth

DEFAULT_PORT = 9836  # the GPU exporter has 9835; worker ranks on one host add their local rank
DEFAULT_ADDR = LOOPBACK  # exposed only when asked, like the GPU exporter
DEFAULT_INTERVAL_S = 1.0
DEFAULT_WINDOW_S = 300.0

T = TypeVar("T")
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})


class SettingsError(ValueError):
    """An environment variable of the plugin holds a value it cannot use."""


@dataclass(frozen=True)
class Settings:
    enabled: bool = False
    base_port: int = DEFAULT_PORT
    addr: str = DEFAULT_ADDR
    interval_s: float = DEFAULT_INTERVAL_S
    window_s: float = DEFAULT_WINDOW_S
    per_expert: bool = True
    web: WebConfig = field(default_factory=WebConfig)

    def port_for(self, local_rank: int) -> int:
        """One port per worker on a host: the base port plus the worker's local rank."""
        port = self.base_port + local_rank
        if port > 65535:
            raise SettingsError(
                f"{PORT_VAR}={self.base_port} plus local rank {local_rank} exceeds 65535; choose a lower base port"
            )
        return port


def _switch(text: str) -> bool:
    value = text.lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError("is not a switch; use 1/true/yes/on or 0/false/no/off")


def _read(env: Mapping[str, str], var: str, default: T, parse: Callable[[str], T]) -> T:
    """``default`` when unset or blank; otherwise ``parse`` it. A ValueError from ``parse`` says what
    is wrong and what is allowed; it becomes a SettingsError naming the variable and its value."""
    raw = env.get(var)
    if raw is None or raw.strip() == "":
        return default
    try:
        return parse(raw.strip())
    except ValueError as exc:
        raise SettingsError(f"{var}={raw!r} {exc}") from None


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise ValueError("is not an integer; use a TCP port 1-65535") from None
    if not 1 <= port <= 65535:
        raise ValueError("is out of range; use a TCP port 1-65535")
    return port


def _addr(text: str) -> str:
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        raise ValueError("is not an IP address; use e.g. 127.0.0.1, 0.0.0.0 (all interfaces) or ::") from None


def _seconds(low: float, high: float, example: str) -> Callable[[str], float]:
    """A parser of a number of seconds within [low, high]."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"is not a number; use seconds, e.g. {example}") from None
        if not math.isfinite(value) or not low <= value <= high:
            raise ValueError(f"is out of range; use {low:g} to {high:g} seconds")
        return value

    return parse


_interval = _seconds(0.05, 3600, "1 or 0.5")
_window = _seconds(1, 86400, "300 (the bundle's moe.window)")


def _web(text: str) -> WebConfig:
    try:
        return load_web_config(Path(text))
    except WebConfigError as exc:
        raise ValueError(f"is not a usable web config: {exc}") from None


def from_env(env: Mapping[str, str]) -> Settings:
    """Parse the plugin's variables. When the switch is off, nothing else is read (or validated)."""
    if not _read(env, ENABLE_VAR, False, _switch):
        return Settings(enabled=False)
    return Settings(
        enabled=True,
        base_port=_read(env, PORT_VAR, DEFAULT_PORT, _port),
        addr=_read(env, ADDR_VAR, DEFAULT_ADDR, _addr),
        interval_s=_read(env, INTERVAL_VAR, DEFAULT_INTERVAL_S, _interval),
        window_s=_read(env, WINDOW_VAR, DEFAULT_WINDOW_S, _window),
        per_expert=_read(env, PER_EXPERT_VAR, True, _switch),
        web=_read(env, WEB_CONFIG_VAR, WebConfig(), _web),
    )
