"""The Prometheus exporter-toolkit web-config file (``--web.config.file`` of node_exporter and friends):

    tls_server_config:
      cert_file: server.crt          # relative paths are relative to this file
      key_file: server.key
      client_auth_type: RequireAndVerifyClientCert
      client_ca_file: ca.crt
      min_version: TLS12
    http_server_config:
      headers: {Strict-Transport-Security: max-age=31536000}
    basic_auth_users:
      prometheus: $2b$12$...          # bcrypt hash (htpasswd -nBC 12 '' | tr -d ':\\n')

Loading checks everything an operator can get wrong (unknown keys, half a key pair, unreadable or
mismatched certificates, hashes bcrypt would refuse, options Python's ssl cannot honour) and raises
``WebConfigError`` naming each bad key, what it held and what is allowed. Nothing is silently ignored:
a security setting that cannot be enforced is an error, not a no-op. (``http2`` is accepted and
has no effect: this server speaks HTTP/1.1, which every Prometheus scrapes.)

Certificates and users are read once at start; restart the exporter to rotate them.
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bcrypt

from infersight.exporters.common.errors import InputFileError
from infersight.inputs import brief, key_path, read_yaml

TOP_LEVEL_KEYS = ("tls_server_config", "http_server_config", "basic_auth_users")
TLS_KEYS = ("cert_file", "key_file", "client_auth_type", "client_ca_file", "min_version", "max_version")
# Keys of the toolkit's format that Python's ssl module cannot honour the way Go's crypto/tls does.
TLS_UNSUPPORTED = (
    "cert",
    "key",
    "client_ca",
    "cipher_suites",
    "curve_preferences",
    "prefer_server_cipher_suites",
    "client_allowed_sans",
)
HTTP_KEYS = ("http2", "headers")
# The toolkit only lets these response headers be set.
ALLOWED_HEADERS = (
    "Content-Security-Policy",
    "Strict-Transport-Security",
    "X-Content-Type-Options",
    "X-Frame-Options",
    "X-XSS-Protection",
)
TLS_VERSIONS = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}
# client_auth_type values this server can enforce; RequestClientCert and RequireAnyClientCert ask for
# a certificate without verifying it, which Python's ssl cannot do.
CLIENT_AUTH = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
_BCRYPT = re.compile(r"^\$2[aby]\$(?P<cost>\d{2})\$(?P<salt>[./A-Za-z0-9]{22})[./A-Za-z0-9]{31}$")
BCRYPT_COSTS = range(4, 32)
_USERNAME = re.compile(r"^[^:\s]{1,128}$")


class WebConfigError(InputFileError):
    """The web-config file is invalid."""

    what = "web config"


@dataclass(frozen=True)
class TlsSettings:
    cert_file: Path
    key_file: Path
    client_auth_type: str = "NoClientCert"
    client_ca_file: Path | None = None
    min_version: str = "TLS12"
    max_version: str | None = None

    def ssl_context(self) -> ssl.SSLContext:
        """A server context; raises ssl.SSLError/OSError when files are unreadable or mismatched."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = TLS_VERSIONS[self.min_version]
        if self.max_version is not None:
            ctx.maximum_version = TLS_VERSIONS[self.max_version]
        ctx.load_cert_chain(certfile=str(self.cert_file), keyfile=str(self.key_file))
        ctx.verify_mode = CLIENT_AUTH[self.client_auth_type]
        if self.client_ca_file is not None:
            ctx.load_verify_locations(cafile=str(self.client_ca_file))
        return ctx


@dataclass(frozen=True)
class WebConfig:
    source: str = "<none>"
    tls: TlsSettings | None = None
    basic_auth_users: Mapping[str, bytes] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def auth_enabled(self) -> bool:
        return bool(self.basic_auth_users) or (self.tls is not None and self.tls.client_auth_type != "NoClientCert")


def _unknown_keys(section: str, data: Mapping[str, Any], allowed: tuple[str, ...]) -> list[tuple[str, str]]:
    return [
        (section + key_path(k), f"unknown key; allowed keys are {', '.join(allowed)}")
        for k in data
        if k not in allowed and not (section == "tls_server_config." and k in TLS_UNSUPPORTED)
    ]


def _mapping(problems: list[tuple[str, str]], path: str, value: Any) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        problems.append((path, f"must be a mapping, got {type(value).__name__}"))
        return {}
    return value


def _choice(problems: list[tuple[str, str]], path: str, value: Any, allowed: Mapping[str, Any]) -> str | None:
    if value is None:
        return None
    if value not in allowed:
        problems.append((path, f"{brief(value)} is not one of {', '.join(allowed)}"))
        return None
    return str(value)


def _parse_tls(problems: list[tuple[str, str]], data: Mapping[str, Any], base: Path) -> TlsSettings | None:
    path = "tls_server_config"
    problems.extend(_unknown_keys(f"{path}.", data, TLS_KEYS))
    for key in TLS_UNSUPPORTED:
        if data.get(key) not in (None, "", [], False):
            problems.append(
                (
                    f"{path}.{key}",
                    "is not supported by infersight's exporters (Python ssl); remove it or use *_file keys",
                )
            )

    def file(key: str) -> Path | None:
        value = data.get(key)
        if value in (None, ""):
            return None
        if not isinstance(value, str):
            problems.append((f"{path}.{key}", f"must be a file path, got {brief(value)}"))
            return None
        p = Path(value)
        p = p if p.is_absolute() else base / p
        try:
            readable = p.is_file()
        except OSError:  # a name too long for the file system
            readable = False
        if not readable:
            problems.append((f"{path}.{key}", f"{brief(str(p))} is not a readable file"))
        return p

    cert_path, private_key_path, ca_path = file("cert_file"), file("key_file"), file("client_ca_file")
    auth = _choice(problems, f"{path}.client_auth_type", data.get("client_auth_type"), CLIENT_AUTH) or "NoClientCert"
    min_v = _choice(problems, f"{path}.min_version", data.get("min_version"), TLS_VERSIONS) or "TLS12"
    max_v = _choice(problems, f"{path}.max_version", data.get("max_version"), TLS_VERSIONS)
    if cert_path is None and private_key_path is None:
        if ca_path is not None or auth != "NoClientCert":
            problems.append((path, "client certificate options need cert_file and key_file as well"))
        return None
    if cert_path is None or private_key_path is None:
        missing = "cert_file" if cert_path is None else "key_file"
        problems.append((f"{path}.{missing}", "is missing; TLS needs both cert_file and key_file"))
        return None
    if auth != "NoClientCert" and ca_path is None:
        problems.append((f"{path}.client_ca_file", f"is required when client_auth_type is {auth}"))
    if max_v is not None and TLS_VERSIONS[max_v] < TLS_VERSIONS[min_v]:
        problems.append((f"{path}.max_version", f"{max_v} is below min_version {min_v}"))
    settings = TlsSettings(cert_path, private_key_path, auth, ca_path, min_v, max_v)
    if not problems:
        try:
            settings.ssl_context()
        except (ssl.SSLError, OSError) as exc:
            problems.append(
                (path, f"cannot load {brief(str(cert_path))} / {brief(str(private_key_path))}: {brief(str(exc))}")
            )
    return settings


def _parse_users(problems: list[tuple[str, str]], data: Mapping[str, Any]) -> dict[str, bytes]:
    users: dict[str, bytes] = {}
    for name, hashed in data.items():
        path = key_path("basic_auth_users", name)
        if not isinstance(name, str) or not _USERNAME.match(name):
            problems.append((path, "user names must be 1-128 characters without ':' or spaces"))
        elif (problem := _bcrypt_problem(hashed)) is not None:
            problems.append((path, problem))
        else:
            users[name] = hashed.encode("ascii")
    return users


def _bcrypt_problem(hashed: Any) -> str | None:
    """Why bcrypt would refuse this hash at every request, or None. Never echoes the value: it may be
    a plaintext password pasted by mistake."""
    match = _BCRYPT.match(hashed) if isinstance(hashed, str) else None
    if match is None:
        return "must be a bcrypt hash ($2a$/$2b$/$2y$, 60 characters), not a plain password"
    cost = match["cost"]
    if int(cost) not in BCRYPT_COSTS:
        return f"bcrypt cost {cost} is outside 04 to 31; make a new hash (htpasswd -nBC 12 '')"
    try:  # the salt's rules are bcrypt's own; ask it, at the lowest cost rather than this hash's
        bcrypt.hashpw(b"", f"$2b$04${match['salt']}".encode("ascii"))
    except ValueError:
        return "bcrypt refuses this hash's salt (malformed); make a new hash (htpasswd -nBC 12 '')"
    return None


def _parse_headers(problems: list[tuple[str, str]], data: Mapping[str, Any]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for name, value in data.items():
        path = key_path("http_server_config", "headers", name)
        if name not in ALLOWED_HEADERS:
            problems.append((path, f"header not allowed; allowed headers are {', '.join(ALLOWED_HEADERS)}"))
        elif not isinstance(value, str) or "\n" in value or "\r" in value:
            problems.append((path, "must be a single-line string"))
        else:
            headers[name] = value
    return headers


def parse_web_config(data: Any, source: str, base: Path) -> WebConfig:
    """Validate already-parsed YAML; relative file paths resolve against ``base``."""
    problems: list[tuple[str, str]] = []
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise WebConfigError(source, [("(root)", f"must be a mapping with keys {', '.join(TOP_LEVEL_KEYS)}")])
    problems.extend(_unknown_keys("", data, TOP_LEVEL_KEYS))
    tls = _parse_tls(problems, _mapping(problems, "tls_server_config", data.get("tls_server_config")), base)
    http = _mapping(problems, "http_server_config", data.get("http_server_config"))
    problems.extend(_unknown_keys("http_server_config.", http, HTTP_KEYS))
    if "http2" in http and not isinstance(http["http2"], bool):
        problems.append(("http_server_config.http2", f"must be true or false, got {brief(http['http2'])}"))
    headers = _parse_headers(problems, _mapping(problems, "http_server_config.headers", http.get("headers")))
    users = _parse_users(problems, _mapping(problems, "basic_auth_users", data.get("basic_auth_users")))
    if problems:
        raise WebConfigError(source, problems)
    return WebConfig(source, tls, users, headers)


def load_web_config(path: Path) -> WebConfig:
    """Read and validate a web-config file. Raises only WebConfigError."""
    data = read_yaml(path, WebConfigError)
    return parse_web_config(data, str(path), path.parent)
