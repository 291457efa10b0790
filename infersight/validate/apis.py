"""Clients of the HTTP APIs the validator reads: Prometheus (alerts, rules, queries) and
Alertmanager (alerts). Every failure is an :class:`ApiError` naming the URL, never a traceback.

They go through the deploy commands' client: a redirect is named and never followed, a reply
that is not HTTP is one line, and each call ends within its timeout however slowly the server
sends (validate polls these servers for minutes)."""

from __future__ import annotations

import urllib.parse
from typing import Any

from infersight.deploy import http
from infersight.durations import Duration


class ApiError(RuntimeError):
    """A Prometheus or Alertmanager API call failed or answered something unexpected."""


class _Client:
    def __init__(self, url: str, timeout: float = 10.0):
        self.url = url.rstrip("/")
        self.timeout = timeout

    def _get(self, path: str, params: dict[str, str] | None = None) -> http.Response:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        try:
            return http.request("GET", f"{self.url}{path}{query}", deadline=http.Deadline.after(self.timeout))
        except http.RequestFailed as exc:
            raise ApiError(str(exc)) from None

    def _call(self, path: str, params: dict[str, str] | None = None) -> Any:
        answer = self._get(path, params)
        if answer.status != 200:
            raise ApiError(f"GET {self.url}{path} answered {answer.status}")
        if isinstance(answer.body, str) or answer.body is None:  # the client hands back text it cannot parse
            raise ApiError(f"GET {self.url}{path} did not answer JSON")
        return answer.body


class PrometheusApi(_Client):
    def _data(self, path: str, params: dict[str, str] | None = None) -> Any:
        answer = self._call(path, params)
        if not isinstance(answer, dict) or answer.get("status") != "success":
            error = answer.get("error") if isinstance(answer, dict) else answer
            raise ApiError(f"{self.url}{path}: {error}")
        return answer["data"]

    def ready(self) -> bool:
        try:
            return self._get("/-/ready").status == 200
        except ApiError:
            return False

    def alerts(self) -> list[dict[str, Any]]:
        """Pending and firing alerts (``/api/v1/alerts``)."""
        alerts: list[dict[str, Any]] = self._data("/api/v1/alerts")["alerts"]
        return alerts

    def alert_rules(self) -> list[dict[str, Any]]:
        """Every alerting rule loaded (``/api/v1/rules?type=alert``)."""
        groups = self._data("/api/v1/rules", {"type": "alert"})["groups"]
        return [rule for group in groups for rule in group["rules"] if rule.get("type") == "alerting"]

    def scrape_interval_s(self, instance: str) -> float | None:
        """How often the targets with this ``instance`` label are scraped (the longest; None: none is)."""
        path = "/api/v1/targets"
        try:
            active = self._data(path, {"state": "active"})["activeTargets"]
            found = [
                Duration.parse(t["scrapeInterval"]).total_seconds
                for t in active
                if t["labels"].get("instance") == instance
            ]
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise ApiError(f"{self.url}{path}: not a list of targets with their scrape intervals ({exc})") from None
        return max(found, default=None)

    def evaluation_interval_s(self, alert: str) -> float | None:
        """The evaluation interval of the rule group holding the alerting rule ``alert`` (None: none does)."""
        path = "/api/v1/rules"
        try:
            groups = self._data(path, {"type": "alert"})["groups"]
            found = [float(g["interval"]) for g in groups if any(r["name"] == alert for r in g["rules"])]
        except (KeyError, TypeError, ValueError) as exc:
            raise ApiError(f"{self.url}{path}: not a list of rule groups with their intervals ({exc})") from None
        return max(found, default=None)

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        params = {"query": expr} | ({"time": f"{at:.3f}"} if at is not None else {})
        result: list[dict[str, Any]] = self._data("/api/v1/query", params)["result"]
        return result

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
        params = {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
        result: list[dict[str, Any]] = self._data("/api/v1/query_range", params)["result"]
        return result


class AlertmanagerApi(_Client):
    def alerts(self) -> list[dict[str, Any]]:
        """Active alerts (``/api/v2/alerts``), silenced and inhibited ones included: they arrived."""
        answer = self._call("/api/v2/alerts", {"active": "true", "silenced": "true", "inhibited": "true"})
        if not isinstance(answer, list):
            raise ApiError(f"{self.url}/api/v2/alerts did not answer a list")
        return answer
