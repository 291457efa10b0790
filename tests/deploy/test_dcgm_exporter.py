"""deploy/dcgm-exporter: the counters file enables every DCGM field the bundle's expressions read,
in dcgm-exporter's format, and the ConfigMap, chart values and GPU Operator patch all hand that
same file to the exporter."""

from __future__ import annotations

import re

import pytest
import yaml

from infersight import bundle, catalog, deploy
from infersight.config import Config, parse_config
from infersight.deploy import dcgm_exporter
from infersight.packs import PACKS
from tests.test_packs import CONFIG_OF, metrics_read

_LINE = re.compile(r"^(DCGM_FI_\w+), (gauge|counter), ([^,]+)$")


def enabled_fields(csv: str) -> dict[str, str]:
    """Field -> type of each uncommented line; a malformed line fails."""
    fields = {}
    for line in csv.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _LINE.match(line)
        assert match, f"not 'DCGM_FI_..., gauge|counter, help': {line!r}"
        assert match.group(1) not in fields, f"{match.group(1)} listed twice"
        fields[match.group(1)] = match.group(2)
    return fields


def missing_from(csv: str) -> set[str]:
    """DCGM fields the bundle's expressions read (by catalog name) that the file does not enable."""
    read = {n for pack in PACKS for n in metrics_read(pack, CONFIG_OF.get(pack.name, Config()))}
    dcgm = {n for n in read if catalog.get(n).source is catalog.Source.DCGM}
    return dcgm - set(enabled_fields(csv))


@pytest.fixture(scope="module")
def built() -> dict[str, str]:
    return deploy.artefacts(bundle.build(Config()))


def test_the_counters_file_enables_every_dcgm_field_the_bundle_reads(built: dict[str, str]) -> None:
    csv = built[dcgm_exporter.COUNTERS_PATH]
    assert missing_from(csv) == set()
    # the fields NVIDIA's default file leaves out, which the ECC and throttling alerts read
    assert {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"} <= set(enabled_fields(csv))


def test_the_check_fails_when_a_field_is_left_out(built: dict[str, str]) -> None:
    csv = built[dcgm_exporter.COUNTERS_PATH]
    stock = "\n".join(line for line in csv.splitlines() if "ECC_" not in line and "THROTTLE" not in line)
    assert missing_from(stock) == {
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
    }


def test_fields_keep_their_catalog_type_and_nvidias_defaults_stay(built: dict[str, str]) -> None:
    fields = enabled_fields(built[dcgm_exporter.COUNTERS_PATH])
    for name, kind in fields.items():
        if name in catalog.CATALOG:
            assert kind == str(catalog.get(name).type), name
    assert {f for f, _, _ in dcgm_exporter.STOCK_DEFAULTS} <= set(fields)


def test_configmap_chart_values_and_operator_patch_hand_over_the_same_file(built: dict[str, str]) -> None:
    config_map = yaml.safe_load(built[dcgm_exporter.CONFIG_MAP_PATH])
    assert config_map["kind"] == "ConfigMap" and config_map["metadata"]["namespace"] == "gpu-operator"
    assert config_map["data"] == {"dcgm-metrics.csv": built[dcgm_exporter.COUNTERS_PATH]}
    name = config_map["metadata"]["name"]

    values = yaml.safe_load(built[dcgm_exporter.CHART_VALUES_PATH])
    (volume,) = values["extraConfigMapVolumes"]
    (mount,) = values["extraVolumeMounts"]
    assert volume["configMap"]["name"] == name and mount["name"] == volume["name"]
    (item,) = volume["configMap"]["items"]
    assert item["key"] == "dcgm-metrics.csv" and mount["subPath"] == item["path"]
    assert values["arguments"] == ["-f", mount["mountPath"]]

    exporter = yaml.safe_load(built[dcgm_exporter.OPERATOR_PATCH_PATH])["spec"]["dcgmExporter"]
    assert exporter["config"] == {"name": name}
    assert {"name": "DCGM_EXPORTER_COLLECTORS", "value": "/etc/dcgm-exporter/dcgm-metrics.csv"} in exporter["env"]


def test_the_configmap_goes_to_the_exporters_namespace() -> None:
    cfg = parse_config({"deploy": {"kubernetes": {"dcgm_namespace": "nvidia", "labels": {"team": "ml"}}}})
    config_map = yaml.safe_load(deploy.artefacts(bundle.build(cfg))[dcgm_exporter.CONFIG_MAP_PATH])
    assert config_map["metadata"]["namespace"] == "nvidia"
    assert config_map["metadata"]["labels"]["team"] == "ml"
