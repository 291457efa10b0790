"""Checks the build runs on its own output before writing anything.

- every expression parses as PromQL and names only catalogued metrics or this bundle's
  recording rules;
- dashboards follow grafana's dashboard-linter rules (as mirrored here): one
  datasource variable, ``rate``/``increase`` over ``$__rate_interval``, counters only
  read through rate/increase, and every panel has a title, description and unit.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import promql_parser

from infersight import catalog

# Grafana's built-in interval variables, and a stand-in of the same kind for parsing.
# "$__range_s" before "$__range", which is its prefix.
_RANGE_VARS = {
    "$__rate_interval": "5m",
    "$__interval": "1m",
    "$__range_s": "3600",
    "$__range": "1h",
    "${__rate_interval}": "5m",
}
# A variable name starts with a letter or "_": "$1" in a label_replace() replacement is PromQL's
# capture group, which Grafana leaves alone because no variable has that name.
_VAR = re.compile(r"\$\{([A-Za-z_]\w*)(?::\w+)?\}|\$([A-Za-z_]\w*)|\[\[([A-Za-z_]\w*)\]\]")
_RANGE_FN = re.compile(r"\b(rate|increase|irate)\s*\(")


class LintError(ValueError):
    """The bundle breaks a rule; ``problems`` lists every finding."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("bundle check failed:\n" + "\n".join(f"  - {p}" for p in problems))


def substitute(expr: str, values: Mapping[str, str] | None = None, default: str = ".*") -> str:
    """Replace Grafana variables so the expression is plain PromQL."""
    for var, stand_in in _RANGE_VARS.items():
        expr = expr.replace(var, stand_in)
    values = values or {}

    def repl(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2) or m.group(3)
        return values.get(name, default)

    return _VAR.sub(repl, expr)


def selectors(expr: str) -> list[Any]:
    """Every VectorSelector in a PromQL expression. Raises ValueError when it does not parse."""
    found: list[Any] = []

    def visit(node: Any) -> bool:
        if isinstance(node, promql_parser.VectorSelector):
            found.append(node)
        return True

    promql_parser.walk(promql_parser.parse(expr), visit)
    return found


def metric_names(expr: str) -> set[str | None]:
    return {s.name for s in selectors(expr)}


def _counter_names() -> frozenset[str]:
    return frozenset(n for m in catalog.CATALOG.values() if m.type is catalog.MetricType.COUNTER for n in m.all_names)


def _counters_outside_range_fns(expr: str) -> set[str]:
    """Counter selectors not directly inside a matrix for rate/increase/irate/*_over_time."""
    counters = _counter_names()
    bare: set[str] = set()
    ast = promql_parser.parse(expr)

    def visit(node: Any) -> bool:
        if isinstance(node, promql_parser.MatrixSelector):
            return False  # a range selector only appears as the argument of a range function
        if isinstance(node, promql_parser.VectorSelector) and node.name in counters:
            bare.add(node.name)
        return True

    def walk(node: Any) -> None:
        if not visit(node):
            return
        for child in _children(node):
            walk(child)

    walk(ast)
    return bare


def names_read_over_a_range(expr: str) -> set[str | None]:
    """Metric names whose samples are read over a window: in a range selector or under a subquery.
    On a dashboard over raw per-engine series these cost every sample of the window at every step;
    an instant selector costs one sample per series and step, the same as a recording of it."""
    found: set[str | None] = set()

    def walk(node: Any, ranged: bool) -> None:
        ranged = ranged or isinstance(node, promql_parser.MatrixSelector | promql_parser.SubqueryExpr)
        if isinstance(node, promql_parser.VectorSelector) and ranged:
            found.add(node.name)
        for child in _children(node):
            walk(child, ranged)

    walk(promql_parser.parse(expr), False)
    return found


def history_read_s(expr: str) -> dict[str | None, float]:
    """How far back, in seconds before the evaluation, each metric name's samples are read: its
    range and offset plus those of every subquery around it (the larger where a name appears more
    than once). An instant selector without offset reads back 0 here (Prometheus' 5 m lookback
    aside): a rule whose window is longer than the data Prometheus holds reads fewer samples than
    it will once the window has filled."""
    found: dict[str | None, float] = {}

    def seconds(delta: Any) -> float:
        return float(delta.total_seconds()) if delta is not None else 0.0

    def walk(node: Any, back: float) -> None:
        if isinstance(node, promql_parser.SubqueryExpr):
            back += seconds(node.range) + seconds(node.offset)
        elif isinstance(node, promql_parser.MatrixSelector):
            back += seconds(node.range)
        if isinstance(node, promql_parser.VectorSelector):
            total = back + seconds(node.offset)
            found[node.name] = max(found.get(node.name, 0.0), total)
        for child in _children(node):
            walk(child, back)

    walk(promql_parser.parse(expr), 0.0)
    return found


def _children(node: Any) -> Iterator[Any]:
    for attr in ("expr", "lhs", "rhs", "param", "vector_selector"):
        child = getattr(node, attr, None)
        if child is not None and not isinstance(child, str | int | float):
            yield child
    yield from getattr(node, "args", None) or []


def check_expression(where: str, expr: str, recorded: frozenset[str], problems: list[str]) -> None:
    known = catalog.known_series_names() | recorded
    try:
        names = metric_names(expr)
    except ValueError as exc:
        problems.append(f"{where}: does not parse as PromQL ({exc}): {expr}")
        return
    for name in sorted(names, key=str):
        if name is None:
            problems.append(f"{where}: selector without a metric name: {expr}")
        elif name not in known:
            problems.append(f"{where}: names {name!r}, which is neither in the catalog nor recorded by the bundle")


def flag_gated(panel: Mapping[str, Any]) -> bool:
    """A panel whose series exist only with a vLLM flag, or only for some requests (n > 1), says so in
    place of "No data" (its noValue); the tests that want data from it send what it needs."""
    return bool(((panel.get("fieldConfig") or {}).get("defaults") or {}).get("noValue"))


def dashboard_queries(board: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, expr) for every panel target and variable query of a dashboard."""
    for panel in board.get("panels", []):
        for target in panel.get("targets", []) or []:
            if "expr" in target:
                yield f"panel {panel.get('title')!r} target {target.get('refId')}", target["expr"]
    for var in board.get("templating", {}).get("list", []):
        if var.get("type") == "query":
            query = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
            m = re.fullmatch(r"label_values\((.*),\s*\w+\)", query.strip(), re.S)
            yield f"variable {var['name']!r}", m.group(1) if m else query


def lint_dashboard(file: str, board: Mapping[str, Any], recorded: frozenset[str]) -> list[str]:
    problems: list[str] = []
    ds_vars = [v for v in board.get("templating", {}).get("list", []) if v.get("type") == "datasource"]
    if len(ds_vars) != 1 or ds_vars[0].get("query") != "prometheus":
        problems.append(f"{file}: needs exactly one datasource variable of type prometheus")
    if not board.get("uid"):
        problems.append(f"{file}: has no uid")
    for panel in board.get("panels", []):
        if panel.get("type") == "row":
            continue
        title = panel.get("title") or "(untitled)"
        if not panel.get("title"):
            problems.append(f"{file}: a panel has no title")
        if not panel.get("description"):
            problems.append(f"{file}: panel {title!r} has no description")
        if not panel.get("fieldConfig", {}).get("defaults", {}).get("unit"):
            problems.append(f"{file}: panel {title!r} has no unit")
        if panel.get("datasource", {}).get("uid") != "${datasource}":
            problems.append(f"{file}: panel {title!r} does not use the $datasource variable")
    for where, expr in dashboard_queries(board):
        for m in _RANGE_FN.finditer(expr):
            window = re.match(r"[^\[]*\[([^\]]+)\]", expr[m.end() :])
            if window and window.group(1) != "$__rate_interval":
                problems.append(f"{file}: {where}: {m.group(1)}() must use [$__rate_interval], not [{window.group(1)}]")
        plain = substitute(expr)
        check_expression(f"{file}: {where}", plain, recorded, problems)
        try:
            for counter in sorted(_counters_outside_range_fns(plain)):
                problems.append(f"{file}: {where}: counter {counter} must be read through rate() or increase()")
        except ValueError:
            pass  # already reported as a parse failure
    return problems


def lint_rules(file: str, data: Mapping[str, Any], recorded: frozenset[str]) -> list[str]:
    problems: list[str] = []
    for group in data.get("groups", []):
        for rule in group.get("rules", []):
            name = rule.get("record") or rule.get("alert")
            check_expression(f"{file}: {group['name']}: {name}", rule["expr"], recorded, problems)
    return problems
