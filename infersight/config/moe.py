"""Settings of the MoE expert-balance pack (``moe:``), which reads the infersight MoE exporter."""

# Pydantic copies mutable field defaults per instance; ruff cannot see across modules that
# these models' base (config.common.Strict) is a BaseModel.
# ruff: noqa: RUF012

from __future__ import annotations

from pydantic import Field, field_validator

from infersight.config.common import MODEL_LABEL_VALUE, AlertRule, PackSection, Strict, label_names_valid
from infersight.durations import Duration
from infersight.inputs import brief


class MoEImbalanceAlert(AlertRule):
    # Variance of the per-expert load share within a layer; 0.0225 is a 0.15 standard deviation.
    variance_threshold: float = Field(default=0.0225, gt=0, lt=1)


class MoEAlerts(Strict):
    imbalance: MoEImbalanceAlert = MoEImbalanceAlert(for_=Duration.parse("15m"), severity="warning")
    dead_expert: AlertRule = AlertRule(for_=Duration.parse("15m"), severity="warning")
    metrics_absent: AlertRule = AlertRule(for_=Duration.parse("10m"), severity="warning")


class MoE(PackSection):
    """MoE expert-balance pack, reading the infersight MoE exporter."""

    models: list[str] = []  # model_name values that are MoE; the absent alert watches only these
    # The MoE exporter's balance window (set INFERSIGHT_MOE_EXPORTER_WINDOW to it; `up` does);
    # the absent alert bridges gaps in the balance gauges this long.
    window: Duration = Duration.parse("5m")
    # A layer counts as having traffic when each expert would expect at least this many tokens
    # in the exporter's window (INFERSIGHT_MOE_EXPORTER_WINDOW), over the model's ranks; below
    # it, shares are noise. A dead expert counts only on ranks that routed this many alone.
    min_expected_tokens_per_expert: float = Field(default=100.0, gt=0)
    # The target labels that tell one replica (a vLLM server and its ranks) from another: each is
    # judged apart and the imbalance alert reads the worst, so one skewed replica is not diluted by
    # its even peers. namespace and pod are what a PodMonitor sets; series without them are judged
    # together under their job. [] judges every model's ranks together.
    replica_labels: list[str] = Field(default=["namespace", "pod"], max_length=5)
    # Rows of the dashboard's hot-expert and most-uneven-replica panels.
    top_experts: int = Field(default=10, ge=1, le=100)
    alerts: MoEAlerts = MoEAlerts()

    @field_validator("models")
    @classmethod
    def _model_names_sane(cls, v: list[str]) -> list[str]:
        for name in v:
            if not MODEL_LABEL_VALUE.match(name):
                raise ValueError(f"{brief(name)} must be a model_name of 1-200 printable characters")
        if len(set(v)) != len(v):
            raise ValueError("lists a model_name twice")
        return v

    @field_validator("replica_labels")
    @classmethod
    def _replica_labels_sane(cls, v: list[str]) -> list[str]:
        label_names_valid(v)
        taken = sorted(set(v) & {"job", "model_name", "layer", "expert", "rank", "__name__"})
        if taken:
            raise ValueError(f"{taken} already identify a layer or a rank; list only labels that tell replicas apart")
        if len(set(v)) != len(v):
            raise ValueError("lists a label twice")
        return v

    def windows(self) -> dict[str, Duration]:
        return {"window": self.window}
