from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from infersight.commands.build import template_text
from infersight.config import Config, ConfigError, default_data, load_config, parse_config
from infersight.inputs import parse_yaml


def test_empty_config_is_the_defaults() -> None:
    assert parse_config(None) == Config()
    assert parse_config({}) == Config()


def test_init_template_loads_to_exactly_the_defaults() -> None:
    assert parse_config(yaml.safe_load(template_text())) == Config()


def _config_keys(model: BaseModel, prefix: str = "") -> set[str]:
    """Every key of the config, nested sections included, as a dotted path (aliases as written)."""
    keys = set()
    for name, info in type(model).model_fields.items():
        path = prefix + (info.alias or name)
        keys.add(path)
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            keys |= _config_keys(value, path + ".")
    return keys


def _yaml_keys(data: Any, prefix: str = "") -> set[str]:
    if not isinstance(data, dict):
        return set()
    return {k for key, value in data.items() for k in (prefix + key, *_yaml_keys(value, f"{prefix}{key}."))}


def test_init_template_writes_every_key() -> None:
    """Loading to the defaults is not enough: a missing section loads to its defaults too."""
    missing = _config_keys(Config()) - _yaml_keys(yaml.safe_load(template_text()))
    assert not missing, f"infersight init leaves out {sorted(missing)}"


def test_partial_section_keeps_sibling_defaults() -> None:
    cfg = parse_config({"alerts": {"serving": {"target_down": {"for": "1m"}}}, "slo": {"ttft": {"objective": 0.9}}})
    assert str(cfg.alerts.serving.target_down.for_) == "1m"
    assert cfg.alerts.serving.target_down.severity == "critical"
    assert cfg.slo.ttft.threshold_seconds == 2.5


def _problems(data: Any) -> dict[str, str]:
    with pytest.raises(ConfigError) as info:
        parse_config(data)
    return dict(info.value.problems)


def test_unknown_key_names_its_path() -> None:
    assert "slo.ttf" in _problems({"slo": {"ttf": {}}})
    assert "unknown key" in _problems({"slo": {"ttf": {}}})["slo.ttf"]


def test_negative_duration() -> None:
    msg = _problems({"intervals": {"scrape": "-15s"}})["intervals.scrape"]
    assert "negative" in msg and "'-15s'" in msg


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({"alerts": {"serving": {"target_down": {"for": "293y"}}}}, "alerts.serving.target_down.for"),
        ({"slo": {"period": "1000y"}}, "slo.period"),
        ({"moe": {"window": "9223372036855ms"}}, "moe.window"),
    ],
)
def test_durations_beyond_prometheus_range_are_refused(data: dict[str, Any], path: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(data)
    msg = dict(info.value.problems)[path]
    assert "out of Prometheus's range" in msg and "at most 292y" in msg
    assert str(info.value) == f"invalid config <config>: {path}: {msg}"  # one line: the file, the field


def test_threshold_must_be_a_bucket_boundary() -> None:
    msg = _problems({"slo": {"ttft": {"threshold_seconds": 3}}})["slo.ttft.threshold_seconds"]
    assert "bucket boundary" in msg and "2.5" in msg


def test_override_threshold_must_be_a_bucket_boundary() -> None:
    problems = _problems({"slo": {"overrides": {"llama": {"itl_threshold_seconds": 0.11}}}})
    assert "slo.overrides.llama.itl_threshold_seconds" in problems


@pytest.mark.parametrize("objective", [1, 1.5, 0, -0.1])
def test_objective_must_be_a_fraction(objective: float) -> None:
    msg = _problems({"slo": {"availability": {"objective": objective}}})["slo.availability.objective"]
    assert str(objective) in msg


def test_rate_window_must_hold_enough_scrapes() -> None:
    assert "4 scrapes" in _problems({"intervals": {"scrape": "1m", "rate": "2m"}})["intervals.rate"]


def _nested(path: str, value: Any) -> dict[str, Any]:
    head, _, rest = path.partition(".")
    return {head: _nested(rest, value) if rest else value}


def test_every_pack_section_window_must_hold_enough_scrapes() -> None:
    sections = Config().pack_sections()
    assert all(sections[name].windows() for name in ("alerts", "kv_cache", "moe", "gpu", "exporters"))
    for name, section in sections.items():
        for path in section.windows():
            # 30s is under 4 scrapes of 1m, and shorter than every for: a window must outlast.
            data = _nested(f"{name}.{path}", "30s") | {"intervals": {"scrape": "1m"}}
            assert "4 scrapes (1m each)" in _problems(data)[f"{name}.{path}"]


def test_burn_window_short_inside_long() -> None:
    rows = [{"severity": "critical", "long": "5m", "short": "1h", "factor": 14.4}]
    assert "shorter" in _problems({"slo": {"burn_windows": rows}})["slo.burn_windows.0.short"]


def test_file_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("slo: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.yaml")
    bad.write_text("- a list\n")
    with pytest.raises(ConfigError, match="must be a mapping"):
        load_config(bad)


def test_a_file_without_end_is_refused_unread() -> None:
    """/dev/zero (or a log passed by mistake) must not be read until memory runs out."""
    with pytest.raises(ConfigError, match=r"larger than 4 MiB; these files are a few KiB"):
        load_config(Path("/dev/zero"))


def _load_text(tmp_path: Path, text: str) -> Config:
    path = tmp_path / "infersight.yaml"
    path.write_text(text)
    return load_config(path)


@pytest.mark.parametrize("number", [".inf", "-.inf", ".nan", "1.0e+400", "1e400", "inf", "Infinity"])
def test_non_finite_numbers_fail_at_load_naming_the_field(tmp_path: Path, number: str) -> None:
    # 1e400 and Infinity are YAML strings; pydantic would still read them as floats.
    with pytest.raises(ConfigError) as info:
        _load_text(tmp_path, f"moe:\n  min_expected_tokens_per_expert: {number}\n")
    assert "finite number" in dict(info.value.problems)["moe.min_expected_tokens_per_expert"]


def test_yaml_aliases_and_duplicate_keys_fail_at_load(tmp_path: Path) -> None:
    # Valid as a config once expanded, so only the reader can refuse it.
    with pytest.raises(ConfigError, match=r"line 3: YAML aliases \(\*a\) are not accepted"):
        _load_text(tmp_path, "selectors:\n  vllm: &a ['job=\"x\"']\n  dcgm: *a\n")
    with pytest.raises(ConfigError, match="line 3: duplicate key 'period' \\(first at line 2\\)"):
        _load_text(tmp_path, "slo:\n  period: 30d\n  period: 7d\n")


# Arbitrary YAML-shaped data, and the defaults with random subtrees replaced by junk.
_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=12)
_yaml_values = st.recursive(
    _scalars, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=10), kids, max_size=4)
)


def _paths(data: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [prefix] if prefix else []
    if isinstance(data, dict):
        for k, v in data.items():
            out += _paths(v, (*prefix, k))
    return out


def _replace(data: Any, path: tuple[str, ...], value: Any) -> Any:
    if not path:
        return value
    copy = dict(data)
    copy[path[0]] = _replace(data[path[0]], path[1:], value)
    return copy


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_malformed_configs_only_raise_config_error(data: st.DataObject) -> None:
    defaults = default_data()
    path = data.draw(st.sampled_from(_paths(defaults)))
    junk = data.draw(_yaml_values)
    candidate = data.draw(st.sampled_from([_replace(defaults, path, junk), junk]))
    try:
        parse_config(candidate)
    except ConfigError as exc:
        assert exc.problems and all(isinstance(p, str) and m for p, m in exc.problems)


# YAML-level attacks, each put in place of one setting of a valid file: the reader must refuse
# them (or the model reject the value) with a ConfigError whose lines stay short.
_PLACEHOLDER = "__attack__"
_LAUGHS = (
    "[&l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol], "
    + ", ".join(f"&l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 9))
    + "]"
)
_MUST_FAIL: dict[str, st.SearchStrategy[str]] = {
    "alias": st.sampled_from(["[&a 1, *a]", "{x: &a [1, 2], y: *a}", "*undefined", _LAUGHS]),
    "duplicate key": st.sampled_from(["{a: 1, a: 2}", "{period: 30d, period: 30d}", "{'1': x, '1': y}"]),
    "finite number": st.sampled_from([".inf", "-.inf", ".nan", ".NaN", "1.0e+400", "-1.0e+999"]),
    "digits": st.sampled_from(["9" * 5000, "-" + "9" * 400, "0x" + "f" * 300, "0b" + "1" * 500]),
}
_MAY_PASS = st.sampled_from(["1" + "0" * 200 + ".5", str(2**64), "1e400", "Infinity", "&a 5", "'" + "x" * 10**5 + "'"])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_yaml_attacks_only_raise_short_config_errors(data: st.DataObject) -> None:
    defaults = default_data()
    path = data.draw(st.sampled_from(_paths(defaults)))
    kind = data.draw(st.sampled_from([*_MUST_FAIL, "other"]))
    attack = data.draw(_MUST_FAIL.get(kind, _MAY_PASS))
    text = yaml.safe_dump(_replace(defaults, path, _PLACEHOLDER), sort_keys=False).replace(_PLACEHOLDER, attack)
    try:
        parse_config(parse_yaml(text, ConfigError, "<fuzz>"), "<fuzz>")
    except ConfigError as exc:
        assert len(str(exc).splitlines()) == 1 and len(str(exc)) <= 4000, str(exc)[:5000]
        if kind in _MUST_FAIL:
            assert kind in str(exc)
    else:
        assert kind not in _MUST_FAIL, f"{attack[:80]!r} at {'.'.join(path)} was accepted"


URLS_WRITTEN_INTO_THE_BUNDLE = {
    "deploy.prometheus_url": {"deploy": {"prometheus_url": "http://admin:s3cret-pw@prom:9090"}},
    "deploy.remote_write_url": {"deploy": {"remote_write_url": "https://tenant:s3cret-pw@mimir/api/v1/push"}},
    "deploy.grafana.traces_url": {"deploy": {"grafana": {"traces_url": "http://u:s3cret-pw@tempo:3200"}}},
    "deploy.alertmanager.page_webhook_url": {"deploy": {"alertmanager": {"page_webhook_url": "https://u:s3cret-pw@x"}}},
}


@pytest.mark.parametrize("key", URLS_WRITTEN_INTO_THE_BUNDLE)
def test_credentials_in_a_url_the_bundle_writes_are_refused_without_echoing_them(key: str) -> None:
    """The bundle's files are not secrets (written world-readable, committed, put in ConfigMaps)."""
    with pytest.raises(ConfigError) as info:
        parse_config(URLS_WRITTEN_INTO_THE_BUNDLE[key])
    message = str(info.value)
    assert key in message and "credentials" in message and "s3cret-pw" not in message, message


def _scaled(**fields: int) -> dict[str, Any]:
    model = {"model_name": "m", "workload": {"name": "w", "namespace": "n"}} | fields
    return {"autoscaling": {"models": [model]}}


# Integers the bundle writes into manifests whose fields are int32 (HPA, KEDA) or into a
# collector's buffer: a 24-digit number builds, then the cluster refuses the manifest.
HUGE_INTEGERS = {
    "autoscaling.models.0.max_replicas": _scaled(max_replicas=10**23),
    "autoscaling.models.0.min_replicas": _scaled(min_replicas=10**23, max_replicas=10**23),
    "autoscaling.models.0.max_num_seqs": _scaled(max_num_seqs=10**23),
    "deploy.otelcol.trace_buffer": {"deploy": {"otelcol": {"trace_buffer": 10**99}}},
    "alerts.serving.outlier_replica.min_replicas": {
        "alerts": {"serving": {"outlier_replica": {"min_replicas": 10**23}}}
    },
}


@pytest.mark.parametrize("key", HUGE_INTEGERS)
def test_integers_past_what_their_consumers_take_are_refused(key: str) -> None:
    assert key in _problems(HUGE_INTEGERS[key])


def test_a_malformed_url_with_credentials_still_hides_them_and_an_at_sign_after_the_host_is_fine() -> None:
    problems = _problems({"deploy": {"prometheus_url": "http://admin:s3cret-pw@prom:9090 "}})
    assert "credentials" in problems["deploy.prometheus_url"] and "s3cret-pw" not in str(problems)
    cfg = parse_config(
        {"deploy": {"alertmanager": {"page_webhook_url": "https://hooks.example.com?to=ops@example.com"}}}
    )
    assert cfg.deploy.alertmanager.page_webhook_url.endswith("ops@example.com")
