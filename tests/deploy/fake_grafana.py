"""A stand-in for Grafana's HTTP API on loopback that checks every request against Grafana's
documented API (Folder API, Dashboard API, Data source API): path, method, the bearer token and
the JSON body's shape. It answers as Grafana documents and records what it was sent.

No Grafana server can be installed here; the import command is verified against this."""

from __future__ import annotations

import contextlib
import http.server
import json
import re
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from .stub_server import reply_json, serve

_UID = {"type": "string", "pattern": "^[a-zA-Z0-9_-]{1,40}$"}

# POST /api/folders (Folder API): title required, uid optional.
FOLDER_BODY = {
    "type": "object",
    "properties": {"title": {"type": "string", "minLength": 1}, "uid": _UID, "parentUid": _UID},
    "required": ["title"],
    "additionalProperties": False,
}

# POST /api/dashboards/db (Dashboard API): the documented fields only.
DASHBOARD_BODY = {
    "type": "object",
    "properties": {
        "dashboard": {
            "type": "object",
            "properties": {
                "id": {"type": ["null", "integer"]},
                "uid": _UID,
                "title": {"type": "string", "minLength": 1},
                "panels": {"type": "array"},
                "schemaVersion": {"type": "integer"},
            },
            "required": ["uid", "title", "panels"],
        },
        "folderUid": _UID,
        "folderId": {"type": "integer"},
        "message": {"type": "string"},
        "overwrite": {"type": "boolean"},
        "refresh": {"type": "boolean"},
    },
    "required": ["dashboard"],
    "additionalProperties": False,
}


@dataclass
class FakeGrafana:
    token: str
    folders: dict[str, str] = field(default_factory=dict)  # uid -> title
    datasources: set[str] = field(default_factory=set)
    requests: list[tuple[str, str, Any]] = field(default_factory=list)  # (method, path, body)
    problems: list[str] = field(default_factory=list)  # requests the documented API would not accept
    dashboards: dict[str, dict[str, Any]] = field(default_factory=dict)  # uid -> {dashboard, folderUid}

    def __post_init__(self) -> None:
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _handle(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                fake.requests.append((method, self.path, body))
                if self.headers.get("Authorization") != f"Bearer {fake.token}":
                    reply_json(self, 401, {"message": "Unauthorized"})
                    return
                if method == "POST" and self.headers.get("Content-Type") != "application/json":
                    fake.problems.append(f"{method} {self.path}: Content-Type {self.headers.get('Content-Type')}")
                reply_json(self, *fake.route(method, self.path, body))

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

            def log_message(self, *args: object) -> None:
                pass

        self.handler = Handler
        self._serving: contextlib.AbstractContextManager[str] | None = None
        self.url = ""

    def __enter__(self) -> FakeGrafana:
        self._serving = serve(self.handler)
        self.url = self._serving.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._serving is not None
        self._serving.__exit__(None, None, None)

    def _invalid(self, what: str, schema: dict[str, Any], body: Any) -> str | None:
        try:
            jsonschema.validate(body, schema)
        except jsonschema.ValidationError as exc:
            self.problems.append(f"{what}: {exc.message}")
            return exc.message
        return None

    def route(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        if method == "GET" and path == "/api/folders":
            return 200, [{"id": i, "uid": uid, "title": t} for i, (uid, t) in enumerate(self.folders.items(), 1)]
        if method == "GET" and (m := re.fullmatch(r"/api/folders/([^/?]+)", path)):
            uid = m.group(1)
            if uid in self.folders:
                return 200, {"id": 1, "uid": uid, "title": self.folders[uid], "url": f"/dashboards/f/{uid}/"}
            return 404, {"message": "folder not found", "status": "not-found"}
        if method == "POST" and path == "/api/folders":
            if (error := self._invalid("POST /api/folders", FOLDER_BODY, body)) is not None:
                return 400, {"message": error}
            if body["title"] in self.folders.values():
                return 409, {"message": "a folder or dashboard in the general folder with the same name already exists"}
            uid = body.get("uid") or "generated"
            self.folders[uid] = body["title"]
            return 200, {"id": len(self.folders), "uid": uid, "title": body["title"], "url": f"/dashboards/f/{uid}/"}
        if method == "GET" and (m := re.fullmatch(r"/api/datasources/uid/([^/?]+)", path)):
            if m.group(1) in self.datasources:
                return 200, {"uid": m.group(1), "type": "prometheus", "name": "Prometheus"}
            return 404, {"message": "Data source not found"}
        if method == "POST" and path == "/api/dashboards/db":
            if (error := self._invalid("POST /api/dashboards/db", DASHBOARD_BODY, body)) is not None:
                return 400, {"message": error}
            if body.get("folderUid") not in self.folders:
                return 400, {"message": "folder not found"}
            uid = body["dashboard"]["uid"]
            if uid in self.dashboards and not body.get("overwrite"):
                return 412, {"message": "A dashboard with the same uid already exists", "status": "name-exists"}
            self.dashboards[uid] = body
            slug = re.sub(r"[^a-z0-9]+", "-", body["dashboard"]["title"].lower()).strip("-")
            return 200, {
                "id": len(self.dashboards),
                "uid": uid,
                "url": f"/d/{uid}/{slug}",
                "status": "success",
                "version": 1,
                "slug": slug,
            }
        self.problems.append(f"{method} {path} is not an endpoint this import should use")
        return 404, {"message": "Not found"}
