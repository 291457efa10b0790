"""What a fleet run measures on a running Prometheus: rule-group cost, rule health, head series by
origin, Prometheus' own counters and RSS, and the cost of dashboard queries (Prometheus'
``stats=all``: samples loaded and evaluation time)."""

from __future__ import annotations

import json
import re
import statistics
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import promql_parser
import yaml

from infersight import lint, promql

# A full-width panel on a 1920-pixel screen: Grafana asks for about this many points.
FULL_WIDTH_POINTS = 1800


class PrometheusAPI:
    """The few read-only calls a measurement needs, with Prometheus' answer or its error."""

    def __init__(self, url: str, timeout: float = 120):
        self.url = url
        self.timeout = timeout
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def raw(self, path: str, params: Mapping[str, str] | None = None) -> bytes:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        with self._opener.open(f"{self.url}{path}{query}", timeout=self.timeout) as resp:
            data: bytes = resp.read()
            return data

    def api(self, path: str, params: Mapping[str, str] | None = None) -> Any:
        try:
            body = self.raw(path, params)
        except urllib.error.HTTPError as exc:  # Prometheus answers query errors with 4xx and a JSON body
            body = exc.read() or b"{}"
        try:
            answer = json.loads(body)
        except ValueError:  # e.g. a Prometheus that died mid-run, or something else on the port
            raise QueryFailed(f"{path} answered with something that is not Prometheus JSON: {body[:80]!r}") from None
        if not isinstance(answer, dict):
            raise QueryFailed(f"{path} answered JSON that is not a Prometheus API object")
        if answer.get("status") != "success":
            raise QueryFailed(str(answer.get("error") or answer))
        return answer["data"]

    def instant(self, expr: str) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self.api("/api/v1/query", {"query": expr})["result"]
        return result


class QueryFailed(RuntimeError):
    pass


# --- rules --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupCost:
    file: str
    name: str
    rules: int
    interval_s: float
    seconds: float  # the median of the group's evaluation times seen (its last_duration, sampled)
    max_s: float = 0.0
    evaluations: int = 1

    @property
    def share(self) -> float:
        return self.seconds / self.interval_s


@dataclass(frozen=True)
class RuleCost:
    group: str
    name: str
    seconds: float  # the median of the rule's evaluation times seen


class RuleTimes:
    """Every evaluation time of every group and rule seen over repeated reads of /api/v1/rules, one
    per evaluation (keyed by its lastEvaluation). One read shows only the last evaluation, and a
    single evaluation that waited for a core while Prometheus ingested or collected garbage can be
    several times the usual: the median of a few is the group's cost."""

    def __init__(self) -> None:
        self._groups: dict[str, tuple[dict[str, Any], dict[str, float]]] = {}
        self._rules: dict[tuple[str, str], dict[str, float]] = {}

    def sample(self, api: PrometheusAPI) -> None:
        for g in api.api("/api/v1/rules")["groups"]:
            seen = self._groups.setdefault(g["name"], (g, {}))[1]
            if g.get("lastEvaluation"):
                seen[g["lastEvaluation"]] = float(g.get("evaluationTime", 0.0))
            for r in g["rules"]:
                if r.get("lastEvaluation"):
                    times = self._rules.setdefault((g["name"], r.get("name", "")), {})
                    times[r["lastEvaluation"]] = float(r.get("evaluationTime", 0.0))

    def groups(self) -> list[GroupCost]:
        costs = []
        for name, (g, seen) in self._groups.items():
            times = sorted(seen.values()) or [0.0]
            cost = GroupCost(
                g["file"], name, len(g["rules"]), float(g["interval"]), statistics.median(times), times[-1], len(seen)
            )
            costs.append(cost)
        return costs

    def slowest_rules(self, count: int | None = None) -> list[RuleCost]:
        """The ``count`` rules (default all) with the longest median evaluation: where the groups' time goes."""
        costs = [RuleCost(group, rule, statistics.median(t.values())) for (group, rule), t in self._rules.items()]
        return sorted(costs, key=lambda c: -c.seconds)[:count]


# One instant read of every GPU's used memory: the unit of work the GPU rules repeat most.
YARDSTICK = "count(DCGM_FI_DEV_FB_USED)"
YARDSTICK_READS = 5


def instant_cost(api: PrometheusAPI, expr: str) -> tuple[float, int]:
    """(evaluation seconds, samples read) of one instant query, from Prometheus' own ``stats=all``."""
    stats = api.api("/api/v1/query", {"query": expr, "stats": "all"})["stats"]
    return float(stats["timings"]["evalTotalTime"]), int(stats["samples"]["totalQueryableSamples"])


def yardstick_seconds(api: PrometheusAPI) -> float | None:
    """The median evaluation time of YARDSTICK: how fast this Prometheus reads on this machine, now
    (None where it could not be read; it only explains the run, so it never fails one). Between
    runs at the same fleet size its ratio says how much of a difference in the groups' shares is
    the machine's speed, which varied about threefold between days here. It is read from the
    Prometheus that evaluates the bundle, so a heavier bundle slows it a little too."""
    try:
        return statistics.median(instant_cost(api, YARDSTICK)[0] for _ in range(YARDSTICK_READS))
    except (QueryFailed, OSError, KeyError, TypeError, ValueError):
        return None


def unhealthy_rules(api: PrometheusAPI) -> list[str]:
    """'group/rule: error' for every rule whose last evaluation failed (or never ran)."""
    return [
        f"{g['name']}/{r.get('name')}: {r.get('lastError') or r.get('health')}"
        for g in api.api("/api/v1/rules")["groups"]
        for r in g["rules"]
        if r.get("health") != "ok"
    ]


_METRIC_LINE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(?P<value>\S+)")


def self_metrics(api: PrometheusAPI, names: Iterable[str]) -> dict[str, float]:
    """Prometheus' own /metrics, each named family summed over its labels."""
    wanted = set(names)
    totals = dict.fromkeys(wanted, 0.0)
    for line in api.raw("/metrics").decode().splitlines():
        m = _METRIC_LINE.match(line)
        if m and m["name"] in wanted:
            totals[m["name"]] += float(m["value"])
    return totals


# --- series -------------------------------------------------------------------------------------


def series_by_name(api: PrometheusAPI, names: Sequence[str], batch: int = 20) -> dict[str, int]:
    """Series per metric name, for the given names only: one count over every series of a large
    head would outlast any timeout."""
    out: dict[str, int] = {}
    for first in range(0, len(names), batch):
        regex = "|".join(re.escape(n) for n in names[first : first + batch])
        for r in api.instant(f'count by (__name__) ({{__name__=~"{regex}"}})'):
            out[r["metric"]["__name__"]] = int(float(r["value"][1]))
    return out


def scraped_series(api: PrometheusAPI) -> int:
    """Series the targets expose (the last scrape of each), without Prometheus' own per-target series."""
    result = api.instant("sum(scrape_samples_post_metric_relabeling)")
    return int(float(result[0]["value"][1])) if result else 0


@dataclass(frozen=True)
class SeriesSplit:
    raw: int
    recorded: int
    alerts: int  # ALERTS and ALERTS_FOR_STATE
    recorded_by_level: dict[str, int]

    @property
    def recorded_share(self) -> float:
        return self.recorded / self.raw if self.raw else 0.0


def split_series(raw: int, recorded_by_name: Mapping[str, int]) -> SeriesSplit:
    """``recorded_by_name`` also holds ALERTS and ALERTS_FOR_STATE, counted apart."""
    levels: dict[str, int] = {}
    recorded = alerts = 0
    for name, count in recorded_by_name.items():
        if name in ("ALERTS", "ALERTS_FOR_STATE"):
            alerts += count
            continue
        recorded += count
        level = name.split(":", 1)[0]
        levels[level] = levels.get(level, 0) + count
    return SeriesSplit(raw, recorded, alerts, dict(sorted(levels.items(), key=lambda kv: -kv[1])))


# --- bundle files -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    group: str
    name: str  # record or alert name
    expr: str
    labels: dict[str, str]
    alert: bool


def rules_of(files: Mapping[str, str]) -> list[Rule]:
    out: list[Rule] = []
    for path, text in sorted(files.items()):
        if not path.endswith(".yaml") or path.startswith("deploy/"):
            continue
        for group in (yaml.safe_load(text) or {}).get("groups", []):
            for r in group.get("rules", []):
                name = r.get("record") or r.get("alert")
                out.append(Rule(group["name"], name, r["expr"], dict(r.get("labels") or {}), "alert" in r))
    return out


@dataclass(frozen=True)
class LongWindow:
    """A rule that reads samples from further back than a run has held data: until its window
    fills, it reads fewer samples (and costs less) than it will at steady state."""

    rule: str
    seconds: float  # how far back it reads
    raw: bool  # it reads scraped series over that window (per GPU or engine), not only recordings


def long_windows(rules: Iterable[Rule], held_s: float) -> list[LongWindow]:
    """The rules that read further back than ``held_s``, longest first, those over raw series
    before those over recordings only (recordings are per model or node: their windows are cheap)."""
    rules = list(rules)
    recorded = {r.name for r in rules if not r.alert}
    out = []
    for r in rules:
        back = lint.history_read_s(r.expr)
        longest = max(back.values(), default=0.0)
        if longest > held_s:
            raw = any(s > held_s and name not in recorded for name, s in back.items())
            out.append(LongWindow(r.name, longest, raw))
    return sorted(out, key=lambda w: (not w.raw, -w.seconds, w.rule))


def panel_queries(
    files: Mapping[str, str], rate_interval: str, api: PrometheusAPI | None = None
) -> Iterator[tuple[str, str, str]]:
    """(dashboard file, where, expr) for every panel target as Grafana opens the dashboard:
    multi-value variables on All, and a single-value one (no All) on its first value, which
    needs ``api`` to list the values (without it, such a variable is on All too)."""
    for path, text in sorted(files.items()):
        if not path.startswith("dashboards/") or not path.endswith(".json"):
            continue
        board = json.loads(text)
        values = first_values(api, board) if api is not None else {}
        for where, expr in lint.dashboard_queries(board):
            if where.startswith("panel "):
                grafana = expr.replace("${__rate_interval}", rate_interval).replace("$__rate_interval", rate_interval)
                yield path.removeprefix("dashboards/"), where, lint.substitute(grafana, values)


_LABEL_VALUES = re.compile(r"label_values\((?P<selector>.+),\s*(?P<label>\w+)\)\s*$", re.S)


def first_values(api: PrometheusAPI, board: Mapping[str, Any]) -> dict[str, str]:
    """The value Grafana starts a single-value query variable on: the first, in alphabetical order,
    of ``label_values(selector, label)`` with the variables before it substituted."""
    values: dict[str, str] = {}
    for var in board.get("templating", {}).get("list", []):
        if var.get("type") != "query" or var.get("includeAll", False) or var.get("multi", False):
            continue
        m = _LABEL_VALUES.match(str(var.get("query", "")))
        if not m:
            continue
        selector = lint.substitute(m["selector"], values)
        found = sorted(api.api(f"/api/v1/label/{m['label']}/values", {"match[]": selector}))
        if found:
            values[str(var["name"])] = promql.regex_escape(found[0])
    return values


# --- raw equivalents ----------------------------------------------------------------------------

_SELECTOR_TAIL = re.compile(r"\{(?P<matchers>[^}]*)\}")
_EQUALS = re.compile(r'\s*([a-zA-Z_]\w*)\s*=\s*"([^"]*)"\s*')


def inline(expr: str, recordings: Mapping[str, list[Rule]], depth: int = 12) -> str | None:
    """``expr`` with every recorded series replaced by the expression that records it: what a
    dashboard would cost without the recording rules. None when a reference cannot be inlined
    (a range selector over a recording, or a matcher no rule of that name satisfies)."""
    if depth == 0:
        return None
    names = sorted(recordings, key=len, reverse=True)
    if not names:
        return expr
    pattern = re.compile(r"(?<![\w:])(" + "|".join(re.escape(n) for n in names) + r")(?![\w:])")
    out: list[str] = []
    pos = 0
    for m in pattern.finditer(expr):
        if m.start() < pos:
            continue
        end = m.end()
        equals: dict[str, str] = {}
        tail = _SELECTOR_TAIL.match(expr, end)
        if tail:
            for part in tail["matchers"].split(","):
                eq = _EQUALS.fullmatch(part)
                if eq:
                    equals[eq[1]] = eq[2]
            end = tail.end()
        if expr[end:].lstrip().startswith(("[", "offset", "@")):  # needs a selector, not an expression
            return None
        chosen = [r for r in recordings[m[1]] if all(r.labels.get(k, v) == v for k, v in equals.items())]
        if not chosen:
            return None
        bodies = [inline(r.expr, recordings, depth - 1) for r in chosen]
        if any(b is None for b in bodies):
            return None
        before = expr[pos : m.start()]
        # "group_left (" would read the parenthesis as group_left's label list
        joiner = "() " if re.search(r"group_(left|right)\s*$", before) else ""
        out += [before, joiner + "(" + " or ".join(f"({b})" for b in bodies if b is not None) + ")"]
        pos = end
    out.append(expr[pos:])
    return "".join(out)


def recordings_by_name(rules: Iterable[Rule]) -> dict[str, list[Rule]]:
    out: dict[str, list[Rule]] = {}
    for r in rules:
        if not r.alert:
            out.setdefault(r.name, []).append(r)
    return out


# --- query cost ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueryCost:
    series: int
    samples: int  # totalQueryableSamples
    seconds: float  # execTotalTime
    error: str = ""


# Grafana's data-source default; a query past it is reported as failed, not waited for.
QUERY_TIMEOUT = "30s"


def range_cost(api: PrometheusAPI, expr: str, start: float, end: float, step: float) -> QueryCost:
    params = {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}", "stats": "all"}
    params["timeout"] = QUERY_TIMEOUT
    try:
        data = api.api("/api/v1/query_range", params)
    except (QueryFailed, OSError) as exc:
        return QueryCost(0, 0, 0.0, str(exc).splitlines()[0][:200])
    stats = data.get("stats", {})
    return QueryCost(
        len(data["result"]),
        int(stats.get("samples", {}).get("totalQueryableSamples", 0)),
        float(stats.get("timings", {}).get("execTotalTime", 0.0)),
    )


def grafana_step(range_s: float, scrape_s: float) -> float:
    """The step Grafana picks for a full-width panel: range / points, never under the scrape interval."""
    return max(scrape_s, range_s / FULL_WIDTH_POINTS)


def grafana_rate_interval(step_s: float, scrape_s: float) -> str:
    """Grafana's $__rate_interval: max(step + scrape, 4 x scrape)."""
    return f"{max(step_s + scrape_s, 4 * scrape_s):g}s"


# --- one series per entity ----------------------------------------------------------------------


def output_grouping(expr: str) -> list[str] | None:
    """The labels of the entity a rule reports on: the ``by`` labels of the aggregation its output
    comes from, following the left side of ``and``/``unless`` and the "many" side of a
    ``group_left``/``group_right``, plus what ``label_replace`` adds. Where that leads to a bare
    selector, the first aggregation in reading order stands in. None when the expression
    aggregates with ``without`` or not at all."""
    tree = promql_parser.parse(expr)
    found = _output_grouping(tree)
    if found is not None:
        return found
    first: list[list[str] | None] = []

    def visit(node: Any) -> bool:
        if isinstance(node, promql_parser.AggregateExpr):
            first.append(_by_labels(node))
            return False
        return True

    promql_parser.walk(tree, visit)
    return first[0] if first else None


def _by_labels(node: Any) -> list[str] | None:
    modifier = node.modifier
    by = modifier is not None and str(modifier.type).endswith("By")
    return list(modifier.labels) if by and modifier is not None else None


def _output_grouping(node: Any) -> list[str] | None:
    if isinstance(node, promql_parser.AggregateExpr):
        return _by_labels(node)
    if isinstance(node, promql_parser.ParenExpr | promql_parser.SubqueryExpr):
        return _output_grouping(node.expr)
    if isinstance(node, promql_parser.Call):
        if node.func.name == "label_replace":
            inner = _output_grouping(node.args[0])
            dst = node.args[1].val
            return None if inner is None else [*inner, *([dst] if dst not in inner else [])]
        for arg in node.args:
            if (inner := _output_grouping(arg)) is not None:
                return inner
        return None
    if isinstance(node, promql_parser.BinaryExpr):
        card = str(node.modifier.card) if node.modifier is not None else ""
        op = str(node.op)
        if op in ("and", "unless") or card.endswith("ManyToOne"):
            return _output_grouping(node.lhs)
        if card.endswith("OneToMany"):
            return _output_grouping(node.rhs)
        left, right = _output_grouping(node.lhs), _output_grouping(node.rhs)
        return left if left is not None else right
    return None


def duplicate_entities(api: PrometheusAPI, rules: Sequence[Rule], batch: int = 25) -> dict[str, list[str]]:
    """'group/name' -> the entities (the outermost ``by`` labels) for which the rule's expression
    yields more than one series. Rules are asked in batches, each tagged with its index."""
    checked = [(i, r, by) for i, r in enumerate(rules) if (by := output_grouping(r.expr))]
    out: dict[str, list[str]] = {}
    for first in range(0, len(checked), batch):
        parts = [
            f'label_replace(count by ({", ".join(by)}) ({r.expr}) > 1, "{_RULE_TAG}", "{i}", "", "")'
            for i, r, by in checked[first : first + batch]
        ]
        for series in api.instant("\nor\n".join(parts)):
            labels = dict(series["metric"])
            rule = rules[int(labels.pop(_RULE_TAG))]
            out.setdefault(f"{rule.group}/{rule.name}", []).append(json.dumps(labels, sort_keys=True))
    return out


_RULE_TAG = "infersight_bench_rule"
