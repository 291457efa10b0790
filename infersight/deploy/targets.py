"""The scrape targets every consumer shares: one per source of ``selectors`` (vLLM,
dcgm-exporter, the infersight GPU and MoE exporters).

The job label is what ties scraping to the rules: the rules select ``job="vllm"`` (or whatever
``selectors`` says), so each target's job is taken from its selector unless ``deploy.targets``
names one, and a job its selector would not match is a config error, not silent "No data".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from infersight.config import Config, ConfigError, DeployTarget
from infersight.durations import Duration

_MATCHER = re.compile(r'^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*$')


@dataclass(frozen=True)
class Target:
    source: str  # key in selectors / deploy.targets
    job: str
    settings: DeployTarget

    @property
    def name(self) -> str:
        """Kubernetes object name, e.g. infersight-gpu-exporter."""
        return "infersight-" + self.source.replace("_", "-")


def _unquote(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def _accepts(op: str, pattern: str, value: str) -> bool:
    if op == "=":
        return value == pattern
    if op == "!=":
        return value != pattern
    matched = re.fullmatch(pattern, value) is not None
    return matched if op == "=~" else not matched


def resolve_job(source: str, settings: DeployTarget, selector: list[str]) -> str:
    """The job label for one source; raises ConfigError naming the field when none fits."""
    matchers = [m.groups() for m in (_MATCHER.match(s) for s in selector) if m]
    job_matchers = [(op, _unquote(v)) for label, op, v in matchers if label == "job"]
    job = settings.job or next((v for op, v in job_matchers if op == "="), "")
    where = f"deploy.targets.{source}.job"
    if not job:
        raise ConfigError(
            "infersight.yaml",
            [(where, f'selectors.{source} {selector} has no job="..." matcher; name the job to scrape it as')],
        )
    rejected = [f'job{op}"{v}"' for op, v in job_matchers if not _accepts(op, v, job)]
    if rejected:
        raise ConfigError(
            "infersight.yaml",
            [
                (
                    where,
                    f"job {job!r} does not satisfy selectors.{source} ({', '.join(rejected)}): the rules would miss it",
                )
            ],
        )
    return job


def targets(cfg: Config) -> list[Target]:
    """The enabled targets, in the order of ``deploy.targets``."""
    out = []
    for source in type(cfg.deploy.targets).model_fields:
        settings: DeployTarget = getattr(cfg.deploy.targets, source)
        if settings.enabled:
            out.append(Target(source, resolve_job(source, settings, getattr(cfg.selectors, source)), settings))
    return out


def scrape_timeout(cfg: Config) -> str:
    """Prometheus rejects a timeout above the interval, which a time-scaled profile would cause."""
    interval = cfg.scaled(cfg.intervals.scrape)
    return str(min(interval, Duration.parse("10s")))


def global_scrape(cfg: Config) -> dict[str, str]:
    return {
        "scrape_interval": str(cfg.scaled(cfg.intervals.scrape)),
        "scrape_timeout": scrape_timeout(cfg),
        "evaluation_interval": str(cfg.scaled(cfg.intervals.evaluation)),
    }


def scrape_configs(cfg: Config) -> list[dict[str, Any]]:
    """``scrape_configs`` entries with static targets (prometheus.yml and the otelcol receiver)."""
    out = []
    for t in targets(cfg):
        job: dict[str, Any] = {"job_name": t.job, "metrics_path": t.settings.path}
        if t.settings.honor_labels:
            job["honor_labels"] = True
        job["static_configs"] = [{"targets": list(t.settings.static_targets)}]
        out.append(job)
    return out


def pod_monitor_spec(cfg: Config, t: Target) -> dict[str, Any]:
    """A PodMonitor spec: pods by label, each named port, the job label forced to the rules' job."""
    namespaces = t.settings.namespaces
    return {
        "selector": {"matchLabels": t.settings.match_labels()},
        "namespaceSelector": {"matchNames": list(namespaces)} if namespaces else {"any": True},
        "podMetricsEndpoints": [
            {
                "port": port,
                "path": t.settings.path,
                "interval": str(cfg.scaled(cfg.intervals.scrape)),
                "scrapeTimeout": scrape_timeout(cfg),
                "honorLabels": t.settings.honor_labels,
                # The operator names the job <namespace>/<podmonitor>; the rules select this one.
                "relabelings": [{"action": "replace", "targetLabel": "job", "replacement": t.job}],
            }
            for port in t.settings.ports
        ],
    }
