"""Whether the bundle's rules run unchanged on a Mimir or Thanos ruler, beyond one Prometheus.

Both rulers evaluate with Prometheus's own PromQL engine, so what can break is narrower than
"any difference": functions the rulers leave off by default, and group sizes. A ruler shards
by rule group (a group is evaluated whole, on one ruler, in order), and Mimir refuses groups and
tenants over its default limits. :func:`problems` lists every violation; the test suite asserts
there are none, and the README section "Scaling out" says what it guarantees.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import promql_parser

from infersight.conventions import MAX_RULES_PER_GROUP

# Mimir's default -ruler.max-rule-groups-per-tenant (its -ruler.max-rules-per-rule-group is the
# group size every pack already keeps to: conventions.MAX_RULES_PER_GROUP).
MAX_GROUPS_PER_TENANT = 70

# Functions (and aggregations) a ruler will not evaluate as shipped, with the reason.
DENYLIST: dict[str, str] = {
    **dict.fromkeys(
        (
            "limitk",
            "limit_ratio",
            "sort_by_label",
            "sort_by_label_desc",
            "mad_over_time",
            "double_exponential_smoothing",
            "info",
            "ts_of_min_over_time",
            "ts_of_max_over_time",
            "ts_of_last_over_time",
            "first_over_time",
        ),
        "experimental in Prometheus (--enable-feature=promql-experimental-functions); Mimir and Thanos "
        "rulers reject it unless the same flag is set there",
    ),
    "holt_winters": "removed in Prometheus 3 (renamed double_exponential_smoothing, experimental)",
    # Sorting is meaningless in a rule and Mimir's query-sharding may reorder results.
    "sort": "order does not survive recording or sharding",
    "sort_desc": "order does not survive recording or sharding",
}


def functions(expr: str) -> set[str]:
    """Every function and aggregation an expression calls."""
    found: set[str] = set()

    def visit(node: Any) -> bool:
        if isinstance(node, promql_parser.Call):
            found.add(node.func.name)
        elif isinstance(node, promql_parser.AggregateExpr):
            found.add(str(node.op))
        return True

    promql_parser.walk(promql_parser.parse(expr), visit)
    return found


def _rules(rule_files: Mapping[str, dict[str, Any]]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for rel, data in rule_files.items():
        for group in data["groups"]:
            for rule in group["rules"]:
                yield rel, group["name"], rule


def problems(rule_files: Mapping[str, dict[str, Any]]) -> list[str]:
    """Everything that would keep a Mimir or Thanos ruler from loading the rules as they are.
    ``rule_files``: each rule file's model ({"groups": [...]}) by its path in the bundle."""
    out: list[str] = []
    groups = [(rel, g) for rel, data in rule_files.items() for g in data["groups"]]
    if len(groups) > MAX_GROUPS_PER_TENANT:
        out.append(f"{len(groups)} rule groups; Mimir accepts {MAX_GROUPS_PER_TENANT} per tenant by default")
    names = [g["name"] for _, g in groups]
    for name in sorted({n for n in names if names.count(n) > 1}):
        out.append(f"group {name} is defined twice; rulers key groups by name")
    for rel, group in groups:
        if len(group["rules"]) > MAX_RULES_PER_GROUP:
            out.append(
                f"{rel}: group {group['name']} has {len(group['rules'])} rules; Mimir accepts "
                f"{MAX_RULES_PER_GROUP} per group by default (-ruler.max-rules-per-rule-group): split it"
            )
    for rel, group, rule in _rules(rule_files):
        name = rule.get("record") or rule.get("alert")
        for fn in sorted(functions(rule["expr"]) & DENYLIST.keys()):
            out.append(f"{rel}: {group}: {name} calls {fn}: {DENYLIST[fn]}")
    return out
