"""Web config (exporter-toolkit format) parsing errors, and TLS + basic auth actually enforced by a
running exporter on a free loopback port with a certificate made in the test."""

from __future__ import annotations

import http.client
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import bcrypt
import pytest

from infersight.exporters.common.server import MetricsServer, ServeError, exposure_warnings
from infersight.exporters.common.webconfig import WebConfig, WebConfigError, load_web_config, parse_web_config
from infersight.exporters.gpu.exporter import GpuExporter, GpuExporterOptions
from infersight.exporters.gpu.fake import FakeBackend
from infersight.exporters.gpu.scenario import load_scenario
from infersight.stack.process import wait_until

from .standins import CertFiles, https_get, make_certs

PASSWORD = "correct horse"
HASH = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> CertFiles:
    return make_certs(tmp_path_factory.mktemp("certs"))


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "web.yml"
    path.write_text(text)
    return path


def problems_of(path: Path) -> dict[str, str]:
    with pytest.raises(WebConfigError) as info:
        load_web_config(path)
    assert str(path) in str(info.value)
    return dict(info.value.problems)


# --- parsing -------------------------------------------------------------------------------------
def test_full_config_loads_with_paths_relative_to_the_file(tmp_path: Path, certs: CertFiles) -> None:
    (tmp_path / "tls").mkdir()
    for f in (certs.cert, certs.key, certs.ca):
        (tmp_path / "tls" / f.name).write_bytes(f.read_bytes())
    web = load_web_config(
        write(
            tmp_path,
            f"""
tls_server_config:
  cert_file: tls/server.crt
  key_file: tls/server.key
  client_auth_type: VerifyClientCertIfGiven
  client_ca_file: tls/ca.crt
  min_version: TLS13
http_server_config:
  http2: true
  headers:
    X-Frame-Options: deny
basic_auth_users:
  prometheus: {HASH}
""",
        )
    )
    assert web.tls is not None and web.tls.cert_file == tmp_path / "tls/server.crt"
    assert web.tls.min_version == "TLS13"
    assert web.basic_auth_users == {"prometheus": HASH.encode()}
    assert web.headers == {"X-Frame-Options": "deny"}
    assert web.auth_enabled


def test_empty_file_is_plain_http_without_auth(tmp_path: Path) -> None:
    web = load_web_config(write(tmp_path, ""))
    assert web.tls is None and not web.auth_enabled


@pytest.mark.parametrize(
    ("text", "path", "says"),
    [
        ("tls_config: {}\n", "tls_config", "allowed keys are tls_server_config, http_server_config"),
        ("tls_server_config: {certfile: a}\n", "tls_server_config.certfile", "allowed keys are cert_file"),
        (
            "tls_server_config: {cipher_suites: [TLS_AES_128_GCM_SHA256]}\n",
            "tls_server_config.cipher_suites",
            "not supported",
        ),
        ("tls_server_config: {min_version: TLS14}\n", "tls_server_config.min_version", "TLS10, TLS11, TLS12, TLS13"),
        (
            "tls_server_config: {client_auth_type: RequireAnyClientCert}\n",
            "tls_server_config.client_auth_type",
            "NoClientCert",
        ),
        ("tls_server_config: {cert_file: /nonexistent.crt}\n", "tls_server_config.cert_file", "not a readable file"),
        ("tls_server_config: {client_auth_type: RequireAndVerifyClientCert}\n", "tls_server_config", "need cert_file"),
        ("http_server_config: {http2: maybe}\n", "http_server_config.http2", "true or false"),
        (
            "http_server_config: {headers: {Server: x}}\n",
            "http_server_config.headers.Server",
            "Strict-Transport-Security",
        ),
        ("http_server_config: {gzip: true}\n", "http_server_config.gzip", "allowed keys are http2, headers"),
        ("basic_auth_users: [alice]\n", "basic_auth_users", "must be a mapping"),
        ("basic_auth_users: {'a:b': x}\n", "basic_auth_users.a:b", "without ':'"),
        ("- just a list\n", "(root)", "must be a mapping"),
        ("key: [unclosed\n", "(file)", "not valid YAML"),
    ],
)
def test_each_mistake_is_named(tmp_path: Path, text: str, path: str, says: str) -> None:
    problems = problems_of(write(tmp_path, text))
    assert path in problems, problems
    assert says in problems[path]


def test_plaintext_password_is_rejected_without_echoing_it(tmp_path: Path) -> None:
    with pytest.raises(WebConfigError) as info:
        load_web_config(write(tmp_path, "basic_auth_users:\n  alice: hunter2-plaintext\n"))
    assert "bcrypt" in str(info.value) and "hunter2-plaintext" not in str(info.value)


def test_half_a_key_pair_and_missing_ca(tmp_path: Path, certs: CertFiles) -> None:
    problems = problems_of(write(tmp_path, f"tls_server_config: {{cert_file: {certs.cert}}}\n"))
    assert "both cert_file and key_file" in problems["tls_server_config.key_file"]
    text = (
        f"tls_server_config: {{cert_file: {certs.cert}, key_file: {certs.key}, "
        "client_auth_type: RequireAndVerifyClientCert}\n"
    )
    problems = problems_of(write(tmp_path, text))
    assert (
        "required when client_auth_type is RequireAndVerifyClientCert" in problems["tls_server_config.client_ca_file"]
    )


def test_mismatched_key_is_caught_at_load(tmp_path: Path, certs: CertFiles) -> None:
    text = f"tls_server_config: {{cert_file: {certs.cert}, key_file: {certs.client_key}}}\n"
    problems = problems_of(write(tmp_path, text))
    assert "cannot load" in problems["tls_server_config"]


def test_unreadable_file(tmp_path: Path) -> None:
    assert "cannot read" in problems_of(tmp_path / "missing.yml")["(file)"]


def test_exposure_warnings() -> None:
    tls_and_auth = parse_web_config({"basic_auth_users": {"p": HASH}}, "x", Path("."))
    assert exposure_warnings("127.0.0.1", WebConfig()) == []
    assert exposure_warnings("::1", WebConfig()) == []
    (warning,) = exposure_warnings("0.0.0.0", WebConfig())
    assert "without authentication" in warning
    (warning,) = exposure_warnings("0.0.0.0", tls_and_auth)
    assert "clear text" in warning


# --- serving -------------------------------------------------------------------------------------
@pytest.fixture
def secured(tmp_path: Path, certs: CertFiles) -> Iterator[GpuExporter]:
    web = load_web_config(
        write(
            tmp_path,
            f"""
tls_server_config: {{cert_file: {certs.cert}, key_file: {certs.key}}}
http_server_config: {{headers: {{X-Content-Type-Options: nosniff}}}}
basic_auth_users: {{prometheus: "{HASH}"}}
""",
        )
    )
    backend = FakeBackend(load_scenario("steady"), "steady")
    exporter = GpuExporter(backend, GpuExporterOptions(port=0, interval_s=0.2, hostname="h", web=web)).start()
    wait_until(lambda: exporter.sampler.latest is not None, 10, "the first sample", interval=0.05)
    try:
        yield exporter
    finally:
        exporter.stop()


def test_tls_and_basic_auth_are_enforced(secured: GpuExporter, certs: CertFiles) -> None:
    port = secured.server.port
    assert secured.server.url.startswith("https://")
    status, headers, _ = https_get(port, certs.ca, None)
    assert status == 401 and headers["WWW-Authenticate"].startswith("Basic")
    assert https_get(port, certs.ca, ("prometheus", "wrong"))[0] == 401
    assert https_get(port, certs.ca, ("mallory", PASSWORD))[0] == 401
    assert https_get(port, certs.ca, ("prometheus", PASSWORD), path="/nope")[0] == 404
    status, headers, body = https_get(port, certs.ca, ("prometheus", PASSWORD))
    assert status == 200
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert b"DCGM_FI_DEV_FB_USED{" in body and b'infersight_exporter_info{backend="fake"' in body
    # The same (cached) credentials work again.
    assert https_get(port, certs.ca, ("prometheus", PASSWORD))[0] == 200


def test_plain_http_to_the_tls_port_gets_no_metrics(secured: GpuExporter) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", secured.server.port, timeout=10)
    try:
        conn.request("GET", "/metrics")
        got = conn.getresponse().read()
    except (http.client.HTTPException, ConnectionError):
        got = b""
    finally:
        conn.close()
    assert b"DCGM_FI_DEV_FB_USED" not in got
    # and the server still serves TLS clients afterwards
    assert secured.server.port and secured.sampler.latest is not None


def test_client_certificates_required(tmp_path: Path, certs: CertFiles) -> None:
    text = (
        f"tls_server_config: {{cert_file: {certs.cert}, key_file: {certs.key}, "
        f"client_auth_type: RequireAndVerifyClientCert, client_ca_file: {certs.ca}}}\n"
    )
    web = load_web_config(write(tmp_path, text))
    backend = FakeBackend(load_scenario("steady"), "steady")
    exporter = GpuExporter(backend, GpuExporterOptions(port=0, interval_s=0.2, hostname="h", web=web)).start()
    try:
        wait_until(lambda: exporter.sampler.latest is not None, 10, "the first sample", interval=0.05)
        with pytest.raises((ssl.SSLError, ConnectionError)):
            https_get(exporter.server.port, certs.ca, None)
        status, _, body = https_get(exporter.server.port, certs.ca, None, cert=(certs.client_cert, certs.client_key))
        assert status == 200 and b"DCGM_FI_DEV_FB_USED" in body
    finally:
        exporter.stop()


def test_port_in_use_is_a_clear_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = MetricsServer(object(), "127.0.0.1", port, WebConfig(), "t")  # type: ignore[arg-type]
        with pytest.raises(ServeError, match="already in use; choose another --port"):
            server.start()


def test_bad_bind_address_is_a_clear_error() -> None:
    with pytest.raises(ServeError, match="not an address of this machine"):
        MetricsServer(object(), "192.0.2.1", 0, WebConfig(), "t").start()  # type: ignore[arg-type]
