"""The environment variables: the switch, the port, the address, the interval, the web config."""

from __future__ import annotations

from pathlib import Path

import pytest

from infersight.exporters.moe.settings import (
    ADDR_VAR,
    DEFAULT_PORT,
    ENABLE_VAR,
    INTERVAL_VAR,
    PER_EXPERT_VAR,
    PORT_VAR,
    WEB_CONFIG_VAR,
    WINDOW_VAR,
    Settings,
    SettingsError,
    from_env,
)


@pytest.mark.parametrize("value", ["", "0", "false", "OFF", "no"])
def test_off_values_disable_and_nothing_else_is_validated(value: str) -> None:
    s = from_env({ENABLE_VAR: value, PORT_VAR: "not-a-port"})
    assert s == Settings(enabled=False)


def test_unset_is_off() -> None:
    assert not from_env({}).enabled


@pytest.mark.parametrize("value", ["1", "true", "Yes", " on "])
def test_on_values_enable_with_defaults(value: str) -> None:
    s = from_env({ENABLE_VAR: value})
    assert s.enabled and s.base_port == DEFAULT_PORT and s.addr == "127.0.0.1" and s.interval_s == 1.0
    assert s.window_s == 300.0  # the bundle's default moe.window
    assert s.per_expert  # the dashboard's per-expert panels read the counters
    assert s.web.basic_auth_users == {} and s.web.tls is None


def test_values_are_read() -> None:
    s = from_env({ENABLE_VAR: "1", PORT_VAR: "9900", ADDR_VAR: "0.0.0.0", INTERVAL_VAR: "0.5", WINDOW_VAR: "60"})
    assert (s.base_port, s.addr, s.interval_s, s.window_s) == (9900, "0.0.0.0", 0.5, 60.0)
    assert s.port_for(3) == 9903


@pytest.mark.parametrize(("value", "expected"), [("0", False), ("off", False), ("1", True), ("", True)])
def test_per_expert_counters_can_be_switched_off(value: str, expected: bool) -> None:
    assert from_env({ENABLE_VAR: "1", PER_EXPERT_VAR: value}).per_expert is expected


@pytest.mark.parametrize(
    ("var", "value", "message"),
    [
        (ENABLE_VAR, "maybe", "is not a switch; use 1/true/yes/on or 0/false/no/off"),
        (PER_EXPERT_VAR, "some", "is not a switch; use 1/true/yes/on or 0/false/no/off"),
        (PORT_VAR, "http", "is not an integer; use a TCP port 1-65535"),
        (PORT_VAR, "70000", "out of range; use a TCP port 1-65535"),
        (PORT_VAR, "0", "out of range"),
        (ADDR_VAR, "example.org", "is not an IP address"),
        (INTERVAL_VAR, "soon", "is not a number"),
        (INTERVAL_VAR, "0", "out of range; use 0.05 to 3600 seconds"),
        (INTERVAL_VAR, "nan", "out of range"),
        (WINDOW_VAR, "5m", "is not a number; use seconds"),
        (WINDOW_VAR, "0.5", "out of range; use 1 to 86400 seconds"),
        (WINDOW_VAR, "inf", "out of range"),
    ],
)
def test_bad_values_name_the_variable_the_value_and_what_is_allowed(var: str, value: str, message: str) -> None:
    env = {ENABLE_VAR: "1", var: value}
    with pytest.raises(SettingsError, match=var) as info:
        from_env(env)
    assert repr(value) in str(info.value)
    assert message in str(info.value)


def test_port_plus_local_rank_past_65535_is_an_error() -> None:
    s = from_env({ENABLE_VAR: "1", PORT_VAR: "65535"})
    assert s.port_for(0) == 65535
    with pytest.raises(SettingsError, match="exceeds 65535"):
        s.port_for(1)


def test_web_config_is_loaded_and_its_errors_are_settings_errors(tmp_path: Path) -> None:
    good = tmp_path / "web.yml"
    good.write_text("http_server_config:\n  headers:\n    X-Frame-Options: deny\n")
    assert from_env({ENABLE_VAR: "1", WEB_CONFIG_VAR: str(good)}).web.headers == {"X-Frame-Options": "deny"}
    bad = tmp_path / "bad.yml"
    bad.write_text("tls_server_config: {cert_file: missing.crt}\n")
    with pytest.raises(SettingsError, match=WEB_CONFIG_VAR):
        from_env({ENABLE_VAR: "1", WEB_CONFIG_VAR: str(bad)})
