"""Building blocks every section of infersight.yaml uses: the strict base model, a plain alert's
tunables, the pack-section contract (its own rate windows), and the shared value checks."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from infersight.durations import Duration
from infersight.inputs import brief

Severity = Literal["critical", "warning", "info"]

Fraction = Annotated[float, Field(gt=0, le=1)]
NonNegative = Annotated[float, Field(ge=0)]
Matchers = Annotated[list[str], Field(min_length=1)]

MATCHER = re.compile(r'^\s*[a-zA-Z_][a-zA-Z0-9_]*\s*(=|!=|=~|!~)\s*"(?:[^"\\]|\\.)*"\s*$')
MODEL_LABEL_VALUE = re.compile(r"^[^\n\r]{1,200}$")
LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


class Strict(BaseModel):
    """Unknown keys are errors: a typo must not silently fall back to a default. Numbers are
    finite: pydantic would read "1e400" or "Infinity" as a float past any lower bound."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class PackSection(Strict):
    """The top-level section of infersight.yaml that one pack owns."""

    def windows(self) -> dict[str, Duration]:
        """The section's range-vector windows by key path relative to the section. The root
        config holds each to at least 4 scrapes of intervals.scrape, so a rate over it never
        reads fewer than two samples."""
        return {}


class AlertRule(Strict):
    """A plain (non-SLO) alert's tunables."""

    enabled: bool = True
    for_: Duration = Field(default=Duration.parse("5m"), alias="for")
    severity: Severity = "warning"

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def matchers_valid(v: list[str]) -> list[str]:
    for m in v:
        if not MATCHER.match(m):
            raise ValueError(f'{brief(m)} is not a PromQL label matcher; write e.g. job="vllm" or namespace=~"llm-.*"')
    return v


def label_names_valid(names: list[str]) -> list[str]:
    for name in names:
        if not LABEL_NAME.match(name):
            raise ValueError(
                f"{brief(name)} is not a Prometheus label name (letters, digits and '_', no leading digit)"
            )
    return names
