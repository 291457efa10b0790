"""Faults and bad input for the exporters' web config and basic auth: passwords bcrypt cannot take,
and hashes that look like bcrypt but that bcrypt refuses. Both must end in a 401 or a load error,
never in an HTTP 500 with a traceback."""

from __future__ import annotations

import base64
import http.client
from collections.abc import Iterator
from pathlib import Path

import bcrypt
import pytest
from prometheus_client import CollectorRegistry, Gauge

from infersight.exporters.common import auth
from infersight.exporters.common.auth import BasicAuth
from infersight.exporters.common.server import MetricsServer
from infersight.exporters.common.webconfig import WebConfigError, load_web_config, parse_web_config

PASSWORD_72 = "p" * 72  # bcrypt's limit, in bytes
HASH_72 = bcrypt.hashpw(PASSWORD_72.encode(), bcrypt.gensalt(rounds=4)).decode()
GOOD_SALT = HASH_72[7:29]


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.fixture
def server() -> Iterator[MetricsServer]:
    registry = CollectorRegistry()
    Gauge("secret_value", "only for authenticated scrapers", registry=registry).set(42)
    web = parse_web_config({"basic_auth_users": {"prometheus": HASH_72}}, "web.yml", Path("."))
    srv = MetricsServer(registry, "127.0.0.1", 0, web, "test").start()
    try:
        yield srv
    finally:
        srv.stop()


def get(port: int, authorization: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/metrics", headers={"Authorization": authorization})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


# --- passwords bcrypt cannot hash ----------------------------------------------------------------
@pytest.mark.parametrize("user", ["prometheus", "mallory"])
@pytest.mark.parametrize("password", ["p" * 73, "x" * 4096, "é" * 40], ids=["73-bytes", "4096-bytes", "80-utf8-bytes"])
def test_a_password_over_72_bytes_is_401_without_data_or_traceback(
    server: MetricsServer, capfd: pytest.CaptureFixture[str], user: str, password: str
) -> None:
    status, body = get(server.port, basic(user, password))
    assert status == 401
    assert b"secret_value" not in body
    assert "Traceback" not in capfd.readouterr().err
    # and the right credentials still work afterwards
    assert get(server.port, basic("prometheus", PASSWORD_72))[0] == 200


def test_a_long_password_is_not_truncated_into_a_match() -> None:
    """bcrypt only reads 72 bytes; accepting the first 72 would let any suffix in."""
    assert not BasicAuth({"prometheus": HASH_72.encode()}).check(basic("prometheus", PASSWORD_72 + "-anything"))


@pytest.mark.parametrize("user", ["prometheus", "mallory"])
def test_a_long_password_still_pays_one_bcrypt_run(monkeypatch: pytest.MonkeyPatch, user: str) -> None:
    """Rejecting it without hashing would answer faster than a wrong password does, and so tell the
    caller that the length, not the password, was the problem."""
    runs: list[tuple[bytes, bytes]] = []
    real = bcrypt.checkpw

    def counting(password: bytes, hashed: bytes) -> bool:
        runs.append((password, hashed))
        return real(password, hashed)

    monkeypatch.setattr(auth.bcrypt, "checkpw", counting)
    assert not BasicAuth({"prometheus": HASH_72.encode()}).check(basic(user, "q" * 100))
    assert len(runs) == 1 and len(runs[0][0]) <= 72
    assert runs[0][1] == (HASH_72.encode() if user == "prometheus" else auth._DUMMY_HASH)


# --- hashes bcrypt refuses -----------------------------------------------------------------------
def hash_with(cost: str = "04", salt: str = GOOD_SALT) -> str:
    return f"$2b${cost}${salt}{HASH_72[29:]}"


@pytest.mark.parametrize(
    ("hashed", "says"),
    [
        (hash_with(salt="z" * 22), "salt"),
        (hash_with(salt=GOOD_SALT[:21] + "Z"), "salt"),  # the last salt character's 4 unused bits are set
        (hash_with(cost="03"), "cost 03"),
        (hash_with(cost="32"), "cost 32"),
        (hash_with(cost="99"), "cost 99"),
    ],
    ids=["bad-salt", "salt-unused-bits", "cost-03", "cost-32", "cost-99"],
)
def test_a_hash_bcrypt_refuses_is_refused_at_load(tmp_path: Path, hashed: str, says: str) -> None:
    with pytest.raises(ValueError):
        bcrypt.checkpw(b"x", hashed.encode())  # the premise: bcrypt itself rejects it
    path = tmp_path / "web.yml"
    path.write_text(f"basic_auth_users:\n  alice: '{hashed}'\n")
    with pytest.raises(WebConfigError) as info:
        load_web_config(path)
    (line,) = [line for line in str(info.value).splitlines() if "basic_auth_users.alice" in line]
    assert says in line
    assert hashed not in str(info.value) and hashed[29:] not in str(info.value)


def test_every_hash_bcrypt_makes_still_loads() -> None:
    for cost in (4, 10, 12):
        for prefix in (b"2a", b"2b"):
            hashed = bcrypt.hashpw(b"pw", bcrypt.gensalt(rounds=cost, prefix=prefix)).decode()
            web = parse_web_config({"basic_auth_users": {"u": hashed}}, "web.yml", Path("."))
            assert web.basic_auth_users == {"u": hashed.encode()}
    # htpasswd -B writes $2y$, which bcrypt reads as $2b$
    web = parse_web_config({"basic_auth_users": {"u": "$2y$" + HASH_72[4:]}}, "web.yml", Path("."))
    assert BasicAuth(web.basic_auth_users).check(basic("u", PASSWORD_72))


# --- errors never echo a whole input ------------------------------------------------------------
HUGE = "A" * 5000


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({"tls_server_config": {"cert_file": "c.pem", "key_file": "k.pem", "min_version": HUGE}}, "min_version"),
        ({"tls_server_config": {"cert_file": "c.pem", "key_file": "k.pem", "client_auth_type": HUGE}}, "client_auth"),
        ({"tls_server_config": {"cert_file": HUGE, "key_file": "k.pem"}}, "tls_server_config.cert_file"),
        ({"tls_server_config": {"cert_file": [HUGE] * 50, "key_file": "k.pem"}}, "tls_server_config.cert_file"),
        ({"http_server_config": {"http2": {HUGE: HUGE}}}, "http_server_config.http2"),
        ({HUGE: 1}, "AAAA"),
        ({"basic_auth_users": {HUGE: "x"}}, "basic_auth_users.AAAA"),
        ({"http_server_config": {"headers": {HUGE: "x"}}}, "http_server_config.headers.AAAA"),
    ],
    ids=["min_version", "client_auth_type", "file-path", "file-list", "http2", "top-key", "user-name", "header"],
)
def test_errors_show_an_excerpt_never_the_whole_value(tmp_path: Path, data: dict[str, object], path: str) -> None:
    with pytest.raises(WebConfigError) as info:
        parse_web_config(data, "web.yml", tmp_path)
    message = str(info.value)
    assert path in message  # still names where the problem is
    assert "AAAAAAAAAA" in message  # and an excerpt of what is there
    assert len(message) < 600, message
