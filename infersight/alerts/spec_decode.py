"""Speculative-decoding alert: a server's draft acceptance rate collapsed against its own
baseline. A drafter that stopped being accepted still costs its proposals and their verification
on every step, so throughput falls with no error anywhere."""

from __future__ import annotations

from infersight import conventions
from infersight.alerts.common import collapse, num, tuned_alert
from infersight.config import Config
from infersight.recording_rules import spec_decode as spec_rules
from infersight.rules import RuleGroup

ACCEPTANCE_COLLAPSE = "InfersightVLLMDraftAcceptanceCollapse"


def groups(cfg: Config) -> list[RuleGroup]:
    a = cfg.spec_decode.alerts.acceptance_collapse
    if not a.enabled:
        return []
    baseline = f"({spec_rules.acceptance(a.baseline_window)} offset {cfg.scaled(a.baseline_offset)})"
    expr = collapse(
        spec_rules.acceptance(cfg.intervals.rate),
        baseline,
        conventions.INSTANCE,
        a.drop_fraction,
        a.min_baseline_ratio,
        spec_rules.draft_tokens(cfg),
        a.min_draft_tokens_per_second,
    )
    alert = tuned_alert(
        cfg,
        "serving",
        ACCEPTANCE_COLLAPSE,
        a,
        expr,
        "A vLLM server's speculative-decoding acceptance rate collapsed against its own baseline.",
        "The draft acceptance rate of {{ $labels.model_name }} on {{ $labels.instance }} fell to "
        f"{{{{ $value | humanizePercentage }}}} over {cfg.scaled(cfg.intervals.rate)}, under "
        f"{num((1 - a.drop_fraction) * 100)}% of its rate over {cfg.scaled(a.baseline_window)} ending "
        f"{cfg.scaled(a.baseline_offset)} ago: the drafter's proposals cost verification and are mostly rejected.",
    )
    return [RuleGroup("infersight-spec-decode.alerts", cfg.scaled(cfg.intervals.evaluation), (alert,))]
