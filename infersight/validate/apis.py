"""Clients of the HTTP APIs the validator reads: Prometheus (alerts, rules, queries) and
Alertmanager (alerts). Every failure is an :class:`ApiError` naming the URL, never a traceback.

They go through the deploy commands' client: a redirect is named and never followed, a reply
that is not HTTP is one line, and each call ends within its timeout however slowly the server
sends (validate polls these servers for minutes)."""

from __future__ import annotations

import urllib.parse
from datetime import datetime
from typing import Any

from infersight.deploy import http
from infersight.durations import Duration


class ApiError(RuntimeError):
    """A Prometheus or Alertmanager API call failed or answered something unexpected."""


def parse_time(text: str) -> float:
    """An RFC 3339 time from Prometheus or Alertmanager (nanoseconds allowed) as Unix time."""
    text = text.strip().replace("Z", "+00:00")
    head, dot, rest = text.partition(".")
    if dot:  # Python parses at most microseconds: keep 6 digits of the fraction
        zone_at = next((k for k, c in enumerate(rest) if not c.isdigit()), len(rest))
        digits, zone = rest[:zone_at], rest[zone_at:]
        text = f"{head}.{digits[:6].ljust(6, '0')}{zone}"
    return datetime.fromisoformat(text).timestamp()


# The answers are checked here, once, so that callers can index them: an API that answers JSON of
# another shape is one ApiError naming the path, not a KeyError deep inside a report.
def _is_labels(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


def _is_number(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return isinstance(value, str)  # Prometheus writes sample values as strings


def _is_sample(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2 and _is_number(value[1])


def _checked_alerts(items: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(items, list) or not all(isinstance(a, dict) and _is_labels(a.get("labels")) for a in items):
        raise ApiError(f"{where}: not a list of alerts with their labels")
    for alert in items:
        active = alert.get("activeAt")
        try:
            if active is not None:
                parse_time(active)
        except (AttributeError, TypeError, ValueError):
            raise ApiError(f"{where}: activeAt {str(active)[:40]!r} is not an RFC 3339 time") from None
    return items


def _field(data: Any, key: str, where: str) -> Any:
    if not isinstance(data, dict) or key not in data:
        raise ApiError(f"{where}: the answer's data has no {key!r}")
    return data[key]


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
            raise ApiError(f"{self.url}{path}: {' '.join(str(error)[:200].split())}")
        return answer.get("data")

    def _result(self, path: str, params: dict[str, str], sample: str) -> list[dict[str, Any]]:
        """A query's series, each with its labels and a ``sample`` ("value") or samples ("values")."""
        where = f"{self.url}{path}"
        result = _field(self._data(path, params), "result", where)

        def ok(series: Any) -> bool:
            if not isinstance(series, dict) or not _is_labels(series.get("metric")):
                return False
            got = series.get(sample)
            return _is_sample(got) if sample == "value" else isinstance(got, list) and all(map(_is_sample, got))

        if not isinstance(result, list) or not all(map(ok, result)):
            raise ApiError(f"{where}: not a list of series with their labels and {sample}")
        return result

    def ready(self) -> bool:
        try:
            return self._get("/-/ready").status == 200
        except ApiError:
            return False

    def alerts(self) -> list[dict[str, Any]]:
        """Pending and firing alerts (``/api/v1/alerts``)."""
        where = f"{self.url}/api/v1/alerts"
        return _checked_alerts(_field(self._data("/api/v1/alerts"), "alerts", where), where)

    def alert_rules(self) -> list[dict[str, Any]]:
        """Every alerting rule loaded (``/api/v1/rules?type=alert``)."""
        where = f"{self.url}/api/v1/rules"
        groups = _field(self._data("/api/v1/rules", {"type": "alert"}), "groups", where)
        if not isinstance(groups, list) or not all(
            isinstance(g, dict) and isinstance(g.get("rules"), list) and all(isinstance(r, dict) for r in g["rules"])
            for g in groups
        ):
            raise ApiError(f"{where}: not a list of rule groups with their rules")
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
        """An instant query's series; for vector expressions only (a scalar result is an ApiError)."""
        params = {"query": expr} | ({"time": f"{at:.3f}"} if at is not None else {})
        return self._result("/api/v1/query", params, "value")

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
        params = {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
        return self._result("/api/v1/query_range", params, "values")


class AlertmanagerApi(_Client):
    def alerts(self) -> list[dict[str, Any]]:
        """Active alerts (``/api/v2/alerts``), silenced and inhibited ones included: they arrived."""
        answer = self._call("/api/v2/alerts", {"active": "true", "silenced": "true", "inhibited": "true"})
        return _checked_alerts(answer, f"{self.url}/api/v2/alerts")
