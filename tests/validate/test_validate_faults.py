"""``infersight validate`` against bad input: a monitoring URL that is not one, a report folder that
cannot take the results. Each is one line naming the flag and what is allowed, before any load."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from infersight.cli import main
from infersight.loadgen.stub_server import StubConfig, StubServer
from infersight.validate import monitoring_health
from infersight.validate.apis import AlertmanagerApi, ApiError, PrometheusApi
from infersight.validate.controls import ControlError, wait_for_models
from tests.fault_servers import Reply, drip_server, garbage_server, redirect_server, routes_server
from tests.one_line import one_line


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with StubServer(StubConfig()) as server:
        yield server


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--prometheus", "notaurl"),
        ("--prometheus", "ftp://127.0.0.1:9090"),
        ("--prometheus", "http://"),
        ("--prometheus", "http://127.0.0.1:9090/?x=1"),
        ("--prometheus", "http://127.0.0.1:99999"),
        ("--alertmanager", "notaurl"),
        ("--alertmanager", "http://user:pw@127.0.0.1:9093"),
    ],
)
def test_monitoring_url_that_is_not_an_http_url_is_one_line(
    stub: StubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    urls = {"--prometheus": "http://127.0.0.1:9", "--alertmanager": "http://127.0.0.1:9"} | {flag: value}
    args = ["validate", "healthy", f"--target={stub.url}", f"--report-dir={tmp_path / 'report'}"]
    code = main([*args, *(f"{k}={v}" for k, v in urls.items())])
    line = one_line(capsys.readouterr().err)
    assert code == 2
    assert flag in line and "http://127.0.0.1:" in line  # the flag and an example of what is allowed
    assert stub.requests == 0
    assert not (tmp_path / "report").exists()


def test_prometheus_under_a_path_prefix_is_accepted(stub: StubServer, capsys: pytest.CaptureFixture[str]) -> None:
    """A route prefix (--web.route-prefix) is a legitimate Prometheus URL: refused only for not answering."""
    code = main(["validate", "healthy", f"--target={stub.url}", "--prometheus=http://127.0.0.1:9/prometheus"])
    assert code == 3
    assert "cannot reach http://127.0.0.1:9/prometheus/api/v1/alerts" in capsys.readouterr().err


def test_report_dir_that_is_a_file_is_refused_before_sending(
    stub: StubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    existing = tmp_path / "report"
    existing.write_text("not a folder\n")
    args = ["validate", "healthy", f"--target={stub.url}", "--prometheus=http://127.0.0.1:9"]
    code = main([*args, f"--report-dir={existing}"])
    line = one_line(capsys.readouterr().err)
    assert code == 2
    assert "--report-dir" in line and "not a folder" in line
    assert stub.requests == 0
    assert existing.read_text() == "not a folder\n"


@pytest.mark.parametrize("scale", ["inf", "nan", "0.5"])
def test_a_time_scale_the_config_could_not_hold_is_refused_before_sending(
    stub: StubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], scale: str
) -> None:
    args = ["validate", "healthy", f"--target={stub.url}", "--prometheus=http://127.0.0.1:9"]
    with pytest.raises(SystemExit) as exit_info:
        main([*args, f"--report-dir={tmp_path / 'report'}", f"--time-scale={scale}"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"--time-scale: {scale!r} is not a time scale" in err
    assert stub.requests == 0
    assert not (tmp_path / "report").exists()


def test_a_target_that_redirects_is_named_and_not_followed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    models = Reply.json({"object": "list", "data": [{"id": "elsewhere"}]})
    with routes_server({"/v1/models": models}) as elsewhere, redirect_server(elsewhere.url + "/v1/models") as target:
        args = ["validate", "healthy", f"--target={target.url}", "--prometheus=http://127.0.0.1:9"]
        code = main([*args, f"--report-dir={tmp_path / 'report'}"])
        line = one_line(capsys.readouterr().err)
        assert code == 3
        assert "answered 302, a redirect to " + elsewhere.url in line and "never followed" in line
        assert [r.path for r in target.requests] == ["/v1/models"]
        assert elsewhere.requests == []


def test_a_target_that_answers_garbage_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with garbage_server() as target:
        args = ["validate", "healthy", f"--target={target.url}", "--prometheus=http://127.0.0.1:9"]
        code = main([*args, f"--report-dir={tmp_path / 'report'}"])
    line = one_line(capsys.readouterr().err)
    assert code == 3
    assert f"{target.url}/v1/models" in line and "not HTTP" in line


# --- a monitoring server that misbehaves ---------------------------------------------------------


def test_a_prometheus_that_answers_garbage_is_one_line(
    stub: StubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with garbage_server() as prometheus:
        args = ["validate", "healthy", f"--target={stub.url}", f"--prometheus={prometheus.url}"]
        code = main([*args, f"--report-dir={tmp_path / 'report'}"])
    line = one_line(capsys.readouterr().err)
    assert code == 3
    assert f"{prometheus.url}/api/v1/alerts" in line and "not HTTP" in line
    assert stub.requests == 0


def test_a_prometheus_that_redirects_is_named_and_not_followed(
    stub: StubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    alerts = Reply.json({"status": "success", "data": {"alerts": []}})
    with routes_server({"/api/v1/alerts": alerts}) as elsewhere, redirect_server(elsewhere.url) as prometheus:
        args = ["validate", "healthy", f"--target={stub.url}", f"--prometheus={prometheus.url}"]
        code = main([*args, f"--report-dir={tmp_path / 'report'}"])
        line = one_line(capsys.readouterr().err)
        assert code == 3
        assert f"answered 302, a redirect to {elsewhere.url}" in line and "never followed" in line
        assert elsewhere.requests == []


@pytest.mark.timeout(60)
@pytest.mark.parametrize("api", [PrometheusApi, AlertmanagerApi])
def test_a_dripping_monitoring_server_cannot_hold_a_call_past_its_timeout(
    api: type[PrometheusApi] | type[AlertmanagerApi],
) -> None:
    # Each byte arrives long before a per-read timeout; the whole answer would take ~10 s.
    answer = Reply.json({"status": "success", "data": {"alerts": []}})
    with drip_server(answer, interval=0.1) as drip, pytest.raises(ApiError, match="within the 1s timeout"):
        api(drip.url, timeout=1).alerts()


def test_target_up_is_not_ready_because_a_redirect_target_answers() -> None:
    """After target_up, readiness is the --target's own /v1/models: a 302 to a server that
    answers is not the target serving again."""
    models = Reply.json({"object": "list", "data": [{"id": "elsewhere"}]})
    with routes_server({"/v1/models": models}) as elsewhere, redirect_server(elsewhere.url + "/v1/models") as target:
        with pytest.raises(ControlError, match="timed out"):
            wait_for_models(target.url, timeout_s=1)
        assert elsewhere.requests == []


def test_interval_answers_of_the_wrong_shape_are_one_api_error() -> None:
    targets = Reply.json(
        {
            "status": "success",
            "data": {"activeTargets": [{"labels": {"instance": "127.0.0.1:8000"}, "scrapeInterval": "1.5s"}]},
        }
    )
    rules = Reply.json({"status": "success", "data": {"groups": [{"rules": [{"name": "X"}], "interval": "often"}]}})
    with routes_server({"/api/v1/targets": targets, "/api/v1/rules": rules}) as prometheus:
        api = PrometheusApi(prometheus.url)
        with pytest.raises(ApiError, match="/api/v1/targets: not a list of targets with their scrape intervals"):
            api.scrape_interval_s("127.0.0.1:8000")
        with pytest.raises(ApiError, match="/api/v1/rules: not a list of rule groups with their intervals"):
            api.evaluation_interval_s("X")


def _success(data: Any) -> Reply:
    return Reply.json({"status": "success", "data": data})


# Answers that are JSON and "success" but not what the API documents: each must be one ApiError
# naming the path, never a KeyError or TypeError from deep inside a caller.
WRONG_SHAPES = {
    "alerts, data a list": ("/api/v1/alerts", _success([]), lambda api: api.alerts()),
    "alerts, an alert a string": ("/api/v1/alerts", _success({"alerts": ["x"]}), lambda api: api.alerts()),
    "alerts, labels a list": (
        "/api/v1/alerts",
        _success({"alerts": [{"labels": [], "state": "firing"}]}),
        lambda api: api.alerts(),
    ),
    "alerts, activeAt not a time": (
        "/api/v1/alerts",
        _success({"alerts": [{"labels": {"alertname": "X"}, "state": "firing", "activeAt": "yesterday"}]}),
        lambda api: api.alerts(),
    ),
    "rules, no groups": ("/api/v1/rules", _success({}), lambda api: api.alert_rules()),
    "rules, a group without rules": ("/api/v1/rules", _success({"groups": [{}]}), lambda api: api.alert_rules()),
    "query, a sample without value": (
        "/api/v1/query",
        _success({"resultType": "vector", "result": [{"metric": {}}]}),
        lambda api: api.query("up"),
    ),
    "query, a value that is no number": (
        "/api/v1/query",
        _success({"resultType": "vector", "result": [{"metric": {}, "value": [1, "many"]}]}),
        lambda api: api.query("up"),
    ),
    "query, data a list": ("/api/v1/query", _success([]), lambda api: api.query("up")),
    "query_range, values not pairs": (
        "/api/v1/query_range",
        _success({"resultType": "matrix", "result": [{"metric": {}, "values": [[1]]}]}),
        lambda api: api.query_range("up", 0, 10, 1),
    ),
}


@pytest.mark.parametrize("case", WRONG_SHAPES, ids=list(WRONG_SHAPES))
def test_prometheus_answers_of_the_wrong_shape_are_one_api_error(case: str) -> None:
    path, reply, call = WRONG_SHAPES[case]
    with routes_server({path: reply}) as prometheus, pytest.raises(ApiError) as raised:
        call(PrometheusApi(prometheus.url))
    assert str(raised.value).startswith(f"{prometheus.url}{path}: "), raised.value
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("body", [["x"], [{"labels": "x"}], [{}]], ids=["a string", "labels a string", "no labels"])
def test_alertmanager_alerts_of_the_wrong_shape_are_one_api_error(body: Any) -> None:
    with routes_server({"/api/v2/alerts": Reply.json(body)}) as alertmanager, pytest.raises(ApiError) as raised:
        AlertmanagerApi(alertmanager.url).alerts()
    assert str(raised.value).startswith(f"{alertmanager.url}/api/v2/alerts: "), raised.value


ITERATIONS = (
    "# TYPE prometheus_rule_group_iterations_total counter\n"
    'prometheus_rule_group_iterations_total{rule_group="a"} 7\n'
    "# TYPE prometheus_rule_group_iterations_missed_total counter\n"
    'prometheus_rule_group_iterations_missed_total{rule_group="a"} 1\n'
)


def test_rule_iterations_read_prometheus_metrics_and_refuse_what_is_not_them() -> None:
    """A redirect is not followed, and an answer without the counters is unknown (None), not zero
    evaluations missed: the report would otherwise vouch for a Prometheus it never read."""
    with routes_server({"/metrics": Reply.text(ITERATIONS)}) as prometheus:
        assert monitoring_health.rule_iterations(prometheus.url) == monitoring_health.RuleIterations(7, 1)
    with routes_server({"/metrics": Reply.text("hello, this is not Prometheus\n")}) as other:
        assert monitoring_health.rule_iterations(other.url) is None
    with routes_server({"/metrics": Reply.text(ITERATIONS)}) as elsewhere:
        with redirect_server(elsewhere.url + "/metrics") as redirecting:
            assert monitoring_health.rule_iterations(redirecting.url) is None
        assert elsewhere.requests == []
