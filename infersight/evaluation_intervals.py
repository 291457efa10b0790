"""How often each recording is evaluated: every 30 s, every minute where no prompt alert reads it,
or every 2 m where no alert reads it at all.

Every pack builds its groups at ``intervals.evaluation`` (30 s). At fleet size a recording that
reads every engine's histogram buckets costs a share of that interval each time (docs/scale.md),
and most of them feed dashboards only, where a 5 m rate drawn every minute or two loses nothing.
So each recording gets the longest interval its readers allow:

- *prompt*: read by a prompt alert, directly or through other recordings, or by a group read at
  every evaluation (``RuleGroup.every_evaluation``: an autoscaler's, or one whose samples an alert
  counts, at the resolution of the evaluation interval). It stays at ``intervals.evaluation``.
  An alert is prompt when its ``for:`` is shorter than ``PROMPT_FOR`` (10 m), or when it has none
  (burn rates).
- *patient*: read only by alerts that are not prompt. ``intervals.dashboard_evaluation`` (1 m):
  a recording one interval older (the config holds it to a tenth of ``PROMPT_FOR``) moves such an
  alert by a tenth of its ``for:`` at most.
- *view*: read by no alert, only by dashboards (and other views). ``intervals.view_evaluation``
  (2 m): no decision waits on it, and the config keeps it under half of Prometheus' 5 m lookback,
  so a panel always finds a sample.

Alerts follow the same rule: a prompt alert evaluates at ``intervals.evaluation``, the others at
``intervals.dashboard_evaluation``, which moves when they fire by a tenth of their ``for:`` at most.
Groups at another interval (the slow GPU ones) keep it, and so do groups read at every evaluation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from infersight.config import Config
from infersight.config.serving import DASHBOARD_EVALUATION_MAX
from infersight.lint import metric_names
from infersight.rules import Alert, RecordingRule, RuleGroup

# An alert waits at least this long (for:) before it fires, or it is prompt: a recording one
# dashboard interval older (the config holds it to at most a tenth of this) moves it by a tenth at most.
PROMPT_FOR = DASHBOARD_EVALUATION_MAX * 10


def is_prompt(cfg: Config, alert: Alert) -> bool:
    return alert.for_ is None or alert.for_ < cfg.scaled(PROMPT_FOR)


def read_by(recording: Iterable[RuleGroup], exprs: Iterable[str]) -> frozenset[str]:
    """Every recording of ``recording`` that ``exprs`` read, directly or through other recordings."""
    recording = list(recording)
    recorded = {r.record: r.expr for g in recording for r in g.rules if isinstance(r, RecordingRule)}
    todo = list(exprs)
    read: set[str] = set()
    while todo:
        for name in metric_names(todo.pop()):
            if name in recorded and name not in read:
                read.add(name)
                todo.append(recorded[name])
    return frozenset(read)


def read_by_prompt_alerts(cfg: Config, recording: Iterable[RuleGroup], alerts: Iterable[Alert]) -> frozenset[str]:
    """Every recording a prompt alert or a group read at every evaluation reads, directly or
    through other recordings."""
    recording = list(recording)
    every = [r.expr for g in recording if g.every_evaluation for r in g.rules]
    return read_by(recording, [a.expr for a in alerts if is_prompt(cfg, a)] + every)


# The tiers of a split group, most urgent first: the suffix of each part that does not keep the name.
_SUFFIXES = ("", "-patient", "-view")


def part_name(group: str, suffix: str) -> str:
    """infersight-serving.rules, -patient -> infersight-serving-patient.rules"""
    stem, dot, kind = group.rpartition(".")
    return f"{stem}{suffix}{dot}{kind}"


def relax(
    cfg: Config, groups: Sequence[RuleGroup], every_recording: Iterable[RuleGroup], alerts: Iterable[Alert]
) -> list[RuleGroup]:
    """Rule ``groups`` (some of ``every_recording``, or alert groups) with each recording at the
    longest interval its readers allow, and each alert at the longest its ``for:`` allows (see
    above). A group at the evaluation interval is split by tier, each part in the group's order:
    the most urgent part keeps the name, and the others become ``<name>-patient.rules`` and
    ``<name>-view.rules`` (``.alerts`` for alerts). A rule there that read an earlier rule of its
    old group sees that rule's previous evaluation, one interval old. Tiers whose intervals are
    equal are one part."""
    every_recording = list(every_recording)
    alerts = list(alerts)
    fast = cfg.scaled(cfg.intervals.evaluation)
    tiers = (fast, cfg.scaled(cfg.intervals.dashboard_evaluation), cfg.scaled(cfg.intervals.view_evaluation))
    # A tier no slower than the one before it gains nothing: its rules join that one.
    merged = [0]
    for i in range(1, len(tiers)):
        merged.append(i if tiers[i] > tiers[merged[i - 1]] else merged[i - 1])
    prompt = read_by_prompt_alerts(cfg, every_recording, alerts)
    alerted = prompt | read_by(every_recording, [a.expr for a in alerts])

    def tier(rule: RecordingRule | Alert) -> int:
        if isinstance(rule, Alert):
            return merged[0] if is_prompt(cfg, rule) else merged[1]
        if rule.record in prompt:
            return merged[0]
        return merged[1] if rule.record in alerted else merged[2]

    out: list[RuleGroup] = []
    for g in groups:
        if g.interval != fast or g.every_evaluation:
            out.append(g)
            continue
        parts = [(t, tuple(r for r in g.rules if tier(r) == t)) for t in sorted(set(merged))]
        parts = [(t, rules) for t, rules in parts if rules]
        for n, (t, rules) in enumerate(parts):
            name = g.name if n == 0 else part_name(g.name, _SUFFIXES[t])
            out.append(dataclasses.replace(g, name=name, interval=tiers[t], rules=rules))
    return out
