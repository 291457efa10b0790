"""Health of infersight's own exporters (GPU and MoE): down, stale collection, errors.

The ``infersight_exporter_*`` names belong to infersight alone, so they are read under any job;
scrape health (``up``) is read under the exporters' selectors.
"""

from __future__ import annotations

from infersight import promql
from infersight.alerts.common import num, tuned_alert
from infersight.config import Config
from infersight.rules import Alert, RuleGroup

DOWN = "InfersightExporterDown"
STALE = "InfersightExporterCollectionStale"
ERRORS = "InfersightExporterErrors"


def _down(cfg: Config) -> Alert:
    a = cfg.exporters.alerts.down
    scrapes = [f"{promql.series('up', sel)} == 0" for sel in (cfg.selectors.gpu_exporter, cfg.selectors.moe_exporter)]
    expr = "\nor\n".join([*scrapes, f"{promql.series('infersight_exporter_up')} == 0"])
    return tuned_alert(
        cfg,
        "exporter",
        DOWN,
        a,
        expr,
        "An infersight exporter is down.",
        "Exporter {{ $labels.job }} at {{ $labels.instance }}{{ with $labels.exporter }} ({{ . }}){{ end }} "
        f"has been down for {cfg.scaled(a.for_)}: it cannot be scraped, or its own collection fails; "
        "the series it provides are missing or frozen.",
    )


def _stale(cfg: Config) -> Alert:
    a = cfg.exporters.alerts.stale
    after = cfg.scaled(a.after)
    return tuned_alert(
        cfg,
        "exporter",
        STALE,
        a,
        f"time() - {promql.series('infersight_exporter_last_success_timestamp_seconds')} > {num(after.total_seconds)}",
        "An infersight exporter serves stale data.",
        "The {{ $labels.exporter }} exporter at {{ $labels.instance }} (job {{ $labels.job }}) last collected "
        f"successfully {{{{ $value | humanizeDuration }}}} ago (limit {after}): its series are frozen.",
    )


def _errors(cfg: Config) -> Alert:
    a = cfg.exporters.alerts.errors
    w = cfg.scaled(a.window)
    errors = promql.sum_by(
        ("job", "instance", "exporter", "kind"), promql.range_fn("increase", "infersight_exporter_errors_total", w)
    )
    return tuned_alert(
        cfg,
        "exporter",
        ERRORS,
        a,
        f"{errors} > {num(a.min_errors)}",
        "An infersight exporter keeps failing to collect.",
        "The {{ $labels.exporter }} exporter at {{ $labels.instance }} (job {{ $labels.job }}) counted "
        f'{{{{ $value | printf "%.0f" }}}} {{{{ $labels.kind }}}} errors in the last {w}, and has kept erroring '
        f"for {cfg.scaled(a.for_)}.",
    )


def groups(cfg: Config) -> list[RuleGroup]:
    a = cfg.exporters.alerts
    builders = ((a.down, _down), (a.stale, _stale), (a.errors, _errors))
    alerts = tuple(build(cfg) for rule, build in builders if rule.enabled)
    return [RuleGroup("infersight-exporter-health.alerts", cfg.scaled(cfg.intervals.evaluation), alerts)]
