"""The rules run unchanged on a Mimir or Thanos ruler: no functions those rulers leave off, and
groups within Mimir's default limits (a ruler shards by group)."""

from __future__ import annotations

from infersight.deploy import scaleout
from infersight.output import dump_yaml
from tests import written


def test_no_rule_calls_a_function_rulers_reject(built: dict[str, str]) -> None:
    problems = [p for p in scaleout.problems(written.rule_files(built)) if " calls " in p]
    assert not problems, "\n".join(problems)


def test_group_names_are_unique_and_groups_fit_a_tenant(built: dict[str, str]) -> None:
    problems = [p for p in scaleout.problems(written.rule_files(built)) if "defined twice" in p or "per tenant" in p]
    assert not problems, "\n".join(problems)


def test_groups_fit_mimirs_default_rules_per_group(built: dict[str, str]) -> None:
    problems = [p for p in scaleout.problems(written.rule_files(built)) if "per group" in p]
    assert not problems, "\n".join(problems)


def test_checker_finds_each_kind_of_problem() -> None:
    rules = [{"record": f"a:b:c{i}", "expr": "sum(up)"} for i in range(scaleout.MAX_RULES_PER_GROUP + 1)]
    rules.append({"alert": "InfersightX", "expr": 'limitk(1, up) > 0 or sort_by_label(up, "job")'})
    files = {
        "recording_rules/x.yaml": dump_yaml({"groups": [{"name": "g", "rules": rules}]}),
        "alerts/x.yaml": dump_yaml({"groups": [{"name": "g", "rules": [{"alert": "InfersightY", "expr": "up"}]}]}),
    }
    found = "\n".join(scaleout.problems(written.rule_files(files)))
    assert "group g is defined twice" in found
    assert f"has {scaleout.MAX_RULES_PER_GROUP + 2} rules" in found
    assert "InfersightX calls limitk" in found and "InfersightX calls sort_by_label" in found


def test_functions_sees_calls_and_aggregations() -> None:
    assert scaleout.functions("sum by (job) (rate(x[5m])) / on () group_left absent(y)") == {"sum", "rate", "absent"}
