"""``deploy/alertmanager/alertmanager.yml``: routing by severity, grouping by model and
component, and inhibitions that keep one root cause from paging as many symptoms.

Inhibitions name their source alerts through the alert modules' constants, never as typed
strings, and target alerts by ``component`` so alerts that packs add later are covered. An
inhibition whose source alert the build does not produce (disabled in infersight.yaml) is left
out. Alertmanager treats a label missing on both sides as equal, so every rule that relies on
pod labels requires them on the source.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from infersight.alerts import gpu as gpu_alerts
from infersight.alerts import serving as serving_alerts
from infersight.bundle import Bundle
from infersight.promql import alternation, label_matcher

PATH = "deploy/alertmanager/alertmanager.yml"

# The alerts an engine's symptoms are read from: latency/errors, KV cache, MoE experts.
ENGINE_COMPONENTS = ("serving", "kv_cache", "moe")

RECEIVERS = {"critical": "infersight-page", "warning": "infersight-ticket", "info": "infersight-info"}


@dataclass(frozen=True)
class Inhibition:
    """While a ``sources`` alert fires, alerts of ``components`` sharing ``equal`` are muted."""

    why: str
    sources: tuple[str, ...]  # alert names, from the alert modules
    components: tuple[str, ...]
    equal: tuple[str, ...]
    source_needs: tuple[str, ...] = ()  # labels the source must carry (equal on absent labels is true)


INHIBITIONS = (
    Inhibition(
        "a vLLM target that cannot be scraped explains its own latency, KV-cache and MoE alerts",
        (serving_alerts.TARGET_DOWN,),
        ENGINE_COMPONENTS,
        ("job", "instance"),
    ),
    Inhibition(
        "in Kubernetes the same holds for the pod's other endpoints (the MoE exporter's port)",
        (serving_alerts.TARGET_DOWN,),
        ENGINE_COMPONENTS,
        ("namespace", "pod"),
        ("namespace", "pod"),
    ),
    Inhibition(
        "a lost or failing GPU (gone from its exporter, an XID such as 79 'fallen off the bus', uncorrectable "
        "ECC) explains the alerts of the engines in the pod using it; dcgm-exporter names that pod (honor_labels)",
        (gpu_alerts.LOST, gpu_alerts.XID, gpu_alerts.ECC),
        ENGINE_COMPONENTS,
        ("namespace", "pod"),
        ("namespace", "pod"),
    ),
)


def _matcher(name: str, values: tuple[str, ...], negate: bool = False) -> str:
    if len(values) == 1:
        return label_matcher(name, "!=" if negate else "=", values[0])
    return label_matcher(name, "!~" if negate else "=~", alternation(values))


def inhibit_rules(bundle: Bundle) -> list[dict[str, Any]]:
    built = bundle.alert_names()
    rules: list[dict[str, Any]] = [
        {
            # A page already covers the ticket for the same alert on the same thing.
            "source_matchers": ['severity="critical"'],
            "target_matchers": ['severity=~"warning|info"'],
            "equal": ["alertname", "job", "instance", "model_name", "engine", "gpu", "slo"],
        }
    ]
    for inh in INHIBITIONS:
        sources = tuple(sorted(name for name in inh.sources if name in built))
        if not sources:
            continue
        rules.append(
            {
                "source_matchers": [
                    _matcher("alertname", sources),
                    *(label_matcher(label, "=~", ".+") for label in inh.source_needs),
                ],
                "target_matchers": [
                    _matcher("component", inh.components),
                    _matcher("alertname", sources, negate=True),
                ],
                "equal": list(inh.equal),
            }
        )
    return rules


def _receiver(name: str, url: str) -> dict[str, Any]:
    receiver: dict[str, Any] = {"name": name}
    if url:
        receiver["webhook_configs"] = [{"url": url, "send_resolved": True}]
    return receiver


def config(bundle: Bundle) -> dict[str, Any]:
    cfg = bundle.cfg
    am = cfg.deploy.alertmanager
    return {
        "route": {
            "receiver": RECEIVERS["warning"],
            # One notification per model and component (all its alerts together).
            "group_by": ["component", "model_name"],
            "group_wait": str(cfg.scaled(am.group_wait)),
            "group_interval": str(cfg.scaled(am.group_interval)),
            "repeat_interval": str(cfg.scaled(am.repeat_interval)),
            "routes": [
                {"matchers": [label_matcher("severity", "=", severity)], "receiver": receiver}
                for severity, receiver in RECEIVERS.items()
            ],
        },
        "inhibit_rules": inhibit_rules(bundle),
        "receivers": [
            _receiver(RECEIVERS["critical"], am.page_webhook_url),
            _receiver(RECEIVERS["warning"], am.ticket_webhook_url),
            _receiver(RECEIVERS["info"], ""),  # info is for dashboards, never sent
        ],
    }
