"""``deploy/dcgm-exporter/``: a counters file for NVIDIA's dcgm-exporter that collects every DCGM
field the bundle reads, and the three ways to hand it to the exporter.

dcgm-exporter collects only the fields its counters file lists. NVIDIA's default
(``etc/default-counters.csv``) leaves out the ECC counters and the clock-event reasons, so the
ECC and throttling alerts could never fire on a stock install. The file lists the catalog's
dcgm-exporter fields that any pack reads (from the packs' declared reads, which
``tests/test_packs.py`` holds to their expressions), then the rest of NVIDIA's default list, so
replacing the default loses nothing.

- ``COUNTERS_PATH``: the file itself, for ``dcgm-exporter -f``;
- ``CONFIG_MAP_PATH``: a ConfigMap holding it under the key the GPU Operator expects;
- ``CHART_VALUES_PATH``: values for NVIDIA's dcgm-exporter Helm chart that mount that ConfigMap
  and pass ``-f``;
- ``OPERATOR_PATCH_PATH``: a merge patch of the GPU Operator's ClusterPolicy that names it
  (``dcgmExporter.config.name``).
"""

from __future__ import annotations

from typing import Any

from infersight import catalog
from infersight.config import Config
from infersight.packs import PACKS

COUNTERS_PATH = "deploy/dcgm-exporter/dcgm-metrics.csv"
CONFIG_MAP_PATH = "deploy/kubernetes/dcgm-exporter-metrics.yaml"
CHART_VALUES_PATH = "deploy/helm/values-dcgm-exporter.yaml"
OPERATOR_PATCH_PATH = "deploy/kubernetes/gpu-operator-clusterpolicy-patch.yaml"

CONFIG_MAP_NAME = "infersight-dcgm-metrics"
KEY = "dcgm-metrics.csv"  # the GPU Operator mounts this key of dcgmExporter.config.name
MOUNT_PATH = f"/etc/dcgm-exporter/{KEY}"
_VOLUME = "infersight-dcgm-metrics"

# The fields NVIDIA's etc/default-counters.csv enables (dcgm-exporter 4.x), kept so that the
# dashboards and rules users already run on the default file still get their data.
STOCK_DEFAULTS: tuple[tuple[str, str, str], ...] = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %)."),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", "Total number of NVLink bandwidth counters for all lanes."),
    ("DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge", "vGPU License status."),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors."),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors."),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed."),
    # Commented out in NVIDIA's file; how long the clocks were held down, beside the reasons.
    ("DCGM_FI_DEV_POWER_VIOLATION", "counter", "Throttling duration due to power constraints (in us)."),
    ("DCGM_FI_DEV_THERMAL_VIOLATION", "counter", "Throttling duration due to thermal constraints (in us)."),
)


def fields_read() -> list[catalog.Metric]:
    """The dcgm-exporter fields any pack reads, by name."""
    names = {n for pack in PACKS for n in pack.reads}
    return sorted(
        (m for m in catalog.CATALOG.values() if m.name in names and m.source is catalog.Source.DCGM),
        key=lambda m: m.name,
    )


def _line(field: str, kind: str, help_: str) -> str:
    # dcgm-exporter splits a line on commas into exactly three columns.
    return f"{field}, {kind}, {help_.replace(',', ';')}"


def counters_csv() -> str:
    read = fields_read()
    renamed = [f"#   {m.name} -> {a.name} ({a.versions})" for m in read for a in m.aliases]
    lines = [
        "# Format",
        "# If line starts with a '#' it is considered a comment",
        "# DCGM FIELD, Prometheus metric type, help message",
        "#",
        "# Written by infersight: every DCGM field its rules and dashboards read, then the rest of",
        "# dcgm-exporter's etc/default-counters.csv. The rules read each field under either name of a rename:",
        *renamed,
        "",
        "# Read by infersight",
        *(_line(m.name, str(m.type), m.help) for m in read),
        "",
        "# dcgm-exporter's defaults",
        *(_line(*row) for row in STOCK_DEFAULTS if row[0] not in {m.name for m in read}),
    ]
    return "\n".join(lines) + "\n"


def config_map(cfg: Config, counters: str) -> dict[str, Any]:
    labels = {"app.kubernetes.io/part-of": "infersight", **cfg.deploy.kubernetes.labels}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        # The exporter reads it from its own namespace (the GPU Operator's, or the chart's release).
        "metadata": {"name": CONFIG_MAP_NAME, "namespace": cfg.deploy.kubernetes.dcgm_namespace, "labels": labels},
        "data": {KEY: counters},
    }


def chart_values() -> dict[str, Any]:
    """NVIDIA's dcgm-exporter chart (deployment/values.yaml): the lists replace the chart's own
    volume of its default counters."""
    return {
        "arguments": ["-f", MOUNT_PATH],
        "extraConfigMapVolumes": [
            {"name": _VOLUME, "configMap": {"name": CONFIG_MAP_NAME, "items": [{"key": KEY, "path": KEY}]}}
        ],
        "extraVolumeMounts": [{"name": _VOLUME, "mountPath": MOUNT_PATH, "subPath": KEY, "readOnly": True}],
    }


def operator_patch() -> dict[str, Any]:
    """``kubectl patch clusterpolicy/cluster-policy --type merge --patch-file``; the same block
    under ``dcgmExporter:`` is the gpu-operator chart's values. Older operators need the
    collectors variable set; newer ones set it themselves when config.name is given."""
    env = [{"name": "DCGM_EXPORTER_COLLECTORS", "value": MOUNT_PATH}]
    return {"spec": {"dcgmExporter": {"config": {"name": CONFIG_MAP_NAME}, "env": env}}}
