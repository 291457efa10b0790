"""How often each recording group is evaluated.

Every pack builds its groups at ``intervals.evaluation`` (30 s). At fleet size a recording that
reads every engine's histogram buckets costs a share of that interval each time (docs/scale.md),
and most of them feed dashboards only, where a 5 m rate drawn every minute loses nothing. So a
recording group that no prompt alert reads, directly or through other recordings, is evaluated at
``intervals.dashboard_evaluation`` (1 m) instead. An alert is prompt when its ``for:`` is shorter
than ``PROMPT_FOR`` (10 m), or when it has none (burn rates): for the others, a recording one
dashboard interval older moves the alert by at most a tenth of its ``for:``.

Groups at another interval (the slow GPU recordings) keep it.
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
    """Every recording a prompt alert reads, directly or through other recordings."""
    exprs = {r.record: r.expr for g in recording for r in g.rules if isinstance(r, RecordingRule)}
    todo = [a.expr for a in alerts if is_prompt(cfg, a)]
    read: set[str] = set()
    while todo:
        for name in metric_names(todo.pop()):
            if name in exprs and name not in read:
                read.add(name)
                todo.append(exprs[name])
    return frozenset(read)


def relax(
    cfg: Config, groups: Sequence[RuleGroup], every_recording: Iterable[RuleGroup], alerts: Iterable[Alert]
) -> list[RuleGroup]:
    """``groups`` (some of ``every_recording``), those at the evaluation interval that no prompt
    alert reads moved to the dashboard interval."""
    fast = cfg.scaled(cfg.intervals.evaluation)
    prompt = read_by_prompt_alerts(cfg, every_recording, alerts)
    return [
        dataclasses.replace(g, interval=cfg.scaled(cfg.intervals.dashboard_evaluation))
        if g.interval == fast and not any(isinstance(r, RecordingRule) and r.record in prompt for r in g.rules)
        else g
        for g in groups
    ]
