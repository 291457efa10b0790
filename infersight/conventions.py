"""The naming and grouping conventions every pack follows, in one place (as Sloth keeps its
conventions apart from its generators).

- Aggregation levels: ``instance`` keeps (job, instance, model_name); ``model`` keeps
  (job, model_name); ``engine`` adds vLLM's data-parallel rank.
- Recording rules are named ``level:metric:operation``; names carry the *nominal* window
  (``rate5m``) even in a time-scaled profile, so dashboards and alerts are the same text.
- Rule groups hold at most :data:`MAX_RULES_PER_GROUP` rules.
- Each alert's runbook is an anchor of the runbook: ``<base>#<alertname-lower>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from infersight.durations import Duration
from infersight.rules import Alert, RecordingRule, RuleGroup

if TYPE_CHECKING:
    from infersight.config import Config

INSTANCE = ("job", "instance", "model_name")
MODEL = ("job", "model_name")
ENGINE = ("job", "instance", "model_name", "engine")
QUANTILES = (0.5, 0.95, 0.99)

# Mimir's ruler rejects groups over 20 rules by default (ruler.max_rules_per_rule_group), and
# small groups shard well across Thanos/Mimir rulers.
MAX_RULES_PER_GROUP = 20


def record_name(level: str, metric: str, operation: str) -> str:
    """``level:metric:operation``; a catalog name's colon becomes an underscore."""
    return f"{level}:{metric.replace(':', '_')}:{operation}"


def percent(qv: float) -> str:
    """0.5 -> p50, 0.999 -> p99_9: quantiles as they appear in rule names."""
    return "p" + format(round(qv * 100, 6), "g").replace(".", "_")


def op_rate(cfg: Config) -> str:
    """The operation part of a golden-signal rate's name: ``rate5m``."""
    return f"rate{cfg.intervals.rate}"


def bucket_rate(cfg: Config, metric: str, level: str) -> str:
    return record_name(level, metric + "_bucket", op_rate(cfg))


def quantile(cfg: Config, metric: str, level: str, qv: float) -> str:
    return record_name(level, metric, f"{percent(qv)}_{op_rate(cfg)}")


def gauge_sum(metric: str) -> str:
    return record_name("instance", metric, "sum")


def runbook_url(base: str, alert: str) -> str:
    return f"{base}#{alert.lower()}"


def split_groups(name: str, interval: Duration, rules: Sequence[RecordingRule | Alert]) -> list[RuleGroup]:
    """One group ``<name>.rules``, or ``<name>-1.rules``, ``<name>-2.rules``... when it is too big.
    Order is kept, so a rule still follows the rules it reads."""
    size = MAX_RULES_PER_GROUP
    chunks = [rules[i : i + size] for i in range(0, len(rules), size)] or [[]]
    kind = "alerts" if any(isinstance(r, Alert) for r in rules) else "rules"
    if len(chunks) == 1:
        return [RuleGroup(f"{name}.{kind}", interval, tuple(chunks[0]))]
    return [RuleGroup(f"{name}-{i}.{kind}", interval, tuple(c)) for i, c in enumerate(chunks, start=1)]
