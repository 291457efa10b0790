"""Prometheus and Alertmanager loaded with a freshly built bundle: the monitoring half
of `infersight up` and of the end-to-end tests.

The validation profile is the shipped config with only ``time_scale`` changed, so what is
proven is what ships (docs/architecture.md, "Time scale")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from infersight import bundle, bundle_files
from infersight.config import Config
from infersight.stack.alertmanager import Alertmanager
from infersight.stack.prometheus import Prometheus, ScrapeJob

VALIDATION_TIME_SCALE = 60.0


def validation_profile(cfg: Config | None = None, time_scale: float = VALIDATION_TIME_SCALE) -> Config:
    """The same config, every duration divided by ``time_scale`` (an hour becomes a minute)."""
    base = cfg or Config()
    return base.model_copy(update={"time_scale": time_scale})


class ObservedStack:
    """Build the bundle into ``workdir/bundle``; run Alertmanager and Prometheus with its rules."""

    def __init__(
        self,
        workdir: Path,
        cfg: Config,
        jobs: Mapping[str, Sequence[str]],
        job_labels: Mapping[str, Mapping[str, str]] | None = None,
    ):
        """``job_labels``: target labels per job, as a PodMonitor would add them (e.g. namespace)."""
        self.workdir = workdir
        self.cfg = cfg
        self.bundle_dir = workdir / "bundle"
        self.bundle = bundle.build(cfg)
        # Rules and dashboards only: a test stack needs no deploy/ artefacts (nor the mixin's trace).
        bundle_files.write(bundle_files.render(self.bundle, with_deploy=False), self.bundle_dir)
        rule_files = bundle_files.rule_file_paths(self.bundle, self.bundle_dir)
        scrape = str(cfg.scaled(cfg.intervals.scrape))
        self.alertmanager = Alertmanager(workdir / "alertmanager")
        self.prometheus = Prometheus(
            workdir / "prometheus",
            jobs=[
                ScrapeJob(name, list(targets), labels=dict((job_labels or {}).get(name, {})))
                for name, targets in sorted(jobs.items())
            ],
            rule_files=rule_files,
            scrape_interval=scrape,
            evaluation_interval=str(cfg.scaled(cfg.intervals.evaluation)),
            alertmanager_url=self.alertmanager.url,
        )

    def start(self) -> ObservedStack:
        self.alertmanager.start()
        try:
            self.prometheus.start()
        except BaseException:
            self.alertmanager.stop()
            raise
        return self

    def stop(self) -> None:
        try:
            self.prometheus.stop()
        finally:
            self.alertmanager.stop()

    def __enter__(self) -> ObservedStack:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def scrape_seconds(self) -> float:
        return self.cfg.scaled(self.cfg.intervals.scrape).total_seconds

    def firing(self) -> set[str]:
        """Alert names Prometheus holds in state firing."""
        return {a["labels"]["alertname"] for a in self.prometheus.alerts() if a.get("state") == "firing"}
