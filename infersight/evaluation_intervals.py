"""How often each recording is evaluated: every 30 s, or every minute where no prompt alert reads it.

Every pack builds its groups at ``intervals.evaluation`` (30 s). At fleet size a recording that
reads every engine's histogram buckets costs a share of that interval each time (docs/scale.md),
and most of them feed dashboards only, where a 5 m rate drawn every minute loses nothing. So a
recording that no prompt alert reads, directly or through other recordings, is evaluated at
``intervals.dashboard_evaluation`` (1 m) instead. An alert is prompt when its ``for:`` is shorter
than ``PROMPT_FOR`` (10 m), or when it has none (burn rates): for the others, a recording one
dashboard interval older moves the alert by at most a tenth of its ``for:``. Alerts themselves
stay at the evaluation interval; groups at another interval (the slow GPU ones) keep it, and so
do groups read at every evaluation (``RuleGroup.every_evaluation``: an autoscaler's, or one whose
samples an alert counts, at the resolution of the evaluation interval).
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


def read_by_prompt_alerts(cfg: Config, recording: Iterable[RuleGroup], alerts: Iterable[Alert]) -> frozenset[str]:
    """Every recording a prompt alert or a group read at every evaluation reads, directly or
    through other recordings."""
    recording = list(recording)
    exprs = {r.record: r.expr for g in recording for r in g.rules if isinstance(r, RecordingRule)}
    todo = [a.expr for a in alerts if is_prompt(cfg, a)]
    todo += [r.expr for g in recording if g.every_evaluation for r in g.rules]
    read: set[str] = set()
    while todo:
        for name in metric_names(todo.pop()):
            if name in exprs and name not in read:
                read.add(name)
                todo.append(exprs[name])
    return frozenset(read)


def patient_name(group: str) -> str:
    """infersight-serving.rules -> infersight-serving-patient.rules"""
    stem, dot, kind = group.rpartition(".")
    return f"{stem}-patient{dot}{kind}"


def relax(
    cfg: Config, groups: Sequence[RuleGroup], every_recording: Iterable[RuleGroup], alerts: Iterable[Alert]
) -> list[RuleGroup]:
    """Recording ``groups`` (some of ``every_recording``) with the recordings that no prompt alert
    reads moved to the dashboard interval. A group at the evaluation interval that holds both keeps
    its name for the prompt part, and the rest becomes ``patient_name(group)``: a rule there that
    read an earlier rule of its old group sees that rule's previous evaluation, one interval old."""
    fast = cfg.scaled(cfg.intervals.evaluation)
    slow = cfg.scaled(cfg.intervals.dashboard_evaluation)
    if slow <= fast:
        return list(groups)  # nothing to gain, and a split would only reorder
    prompt = read_by_prompt_alerts(cfg, every_recording, alerts)
    out: list[RuleGroup] = []
    for g in groups:
        keep = tuple(r for r in g.rules if not isinstance(r, RecordingRule) or r.record in prompt)
        if g.interval != fast or g.every_evaluation or len(keep) == len(g.rules):
            out.append(g)
        elif not keep:
            out.append(dataclasses.replace(g, interval=slow))
        else:
            patient = tuple(r for r in g.rules if r not in keep)
            out += [dataclasses.replace(g, rules=keep), RuleGroup(patient_name(g.name), slow, patient)]
    return out
