"""Run `promtool test rules` files against a fresh build of the bundle.

Test files name rule files relative to themselves (``recording_rules/x.yaml``), so each
run copies the test file next to a bundle built into a temporary folder."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import promql_parser
import yaml

from infersight import bundle, bundle_files
from infersight.config import Config
from infersight.lint import selectors


def promtool_test(test_file: Path, workdir: Path, cfg: Config | None = None) -> subprocess.CompletedProcess[str]:
    files = bundle_files.render(bundle.build(cfg or Config()), with_deploy=False)
    data = yaml.safe_load(test_file.read_text())
    assert "group_eval_order" not in data, f"{test_file.name}: the runner orders the groups, writers first"
    unbuilt = [rel for rel in data["rule_files"] if rel not in files]
    assert not unbuilt, f"{test_file.name}: rule_files the build does not write: {unbuilt}"
    groups = [g for rel in data["rule_files"] for g in yaml.safe_load(files[rel])["groups"]]
    bundle_files.write(files, workdir)
    (workdir / test_file.name).write_text(
        yaml.safe_dump({**data, "group_eval_order": eval_order(groups)}, sort_keys=False)
    )
    return subprocess.run(
        ["promtool", "test", "rules", test_file.name], cwd=workdir, capture_output=True, text=True, timeout=300
    )


def eval_order(groups: list[dict[str, Any]]) -> list[str]:
    """Every group's name, each after the groups whose recordings it reads (else in file order),
    as promtool's group_eval_order. Without one, promtool evaluates the groups in a random order (a
    Go map, then an unstable sort on the listed position, unlisted groups and the first listed at
    0), so an expected value that depends on whether a recording is already written at that time
    passes or fails by chance; in Prometheus itself a reader may see either."""
    names = [g["name"] for g in groups]
    after = {n: set[str]() for n in names}
    for writer, reader, _ in _reads_across_groups(groups):
        after[reader].add(writer)
    order: list[str] = []
    while len(order) < len(names):
        ready = [n for n in names if n not in order and after[n] <= set(order)]
        assert ready, f"groups that read each other's recordings: {sorted(set(names) - set(order))}"
        order.append(ready[0])
    return order


def _reads_across_groups(groups: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(writer, reader, recording) for each rule that may read a recording of another group: one
    name can be recorded in several groups apart by a static label (``slo``), which an equality
    matcher on that label tells apart."""
    writers = [(g["name"], r["record"], r.get("labels", {})) for g in groups for r in g["rules"] if "record" in r]
    return sorted(
        {
            (writer, g["name"], name)
            for g in groups
            for r in g["rules"]
            for sel in selectors(r["expr"])
            for writer, name, labels in writers
            if name == sel.name and writer != g["name"] and _may_match(sel, labels)
        }
    )


def _may_match(selector: Any, labels: dict[str, str]) -> bool:
    """False when an equality matcher names a static label of the recording with another value."""
    equal = {m.name: m.value for m in selector.matchers.matchers if m.op == promql_parser.MatchOp.Equal}
    return all(equal[k] == v for k, v in labels.items() if k in equal)


def only_case(test_file: Path, case: str, workdir: Path) -> Path:
    """A copy of ``test_file`` with just the case whose name starts with ``case`` (promtool runs a
    whole file; a changed rule needs only the case it should break)."""
    data = yaml.safe_load(test_file.read_text())
    data["tests"] = [t for t in data["tests"] if t["name"].startswith(case)]
    assert len(data["tests"]) == 1, case
    path = workdir / "case" / test_file.name
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path
