"""The report's dashboard section: which panels had data during a run, asked of a real Prometheus
(it scrapes itself, so no vLLM is needed), then written into the report; and every panel of the
bundle's dashboards asked the same way without a query error."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from infersight import bundle
from infersight.bundle import Dashboard
from infersight.config import Config
from infersight.stack.observed import validation_profile
from infersight.stack.ports import LOOPBACK, free_port
from infersight.stack.prometheus import Prometheus, ScrapeJob
from infersight.validate.apis import PrometheusApi
from infersight.validate.dashboard_data import DashboardCheck, PanelCheck, check_dashboards, rate_interval
from infersight.validate.local_stack import validation_intervals
from infersight.validate.report import ReportMeta, write_report

from .test_report import scenario_run
from .timelines import T0, overload

SCRAPE_S = 1.0


def panel(pid: int, title: str, *exprs: str, kind: str = "timeseries") -> dict[str, Any]:
    targets = [{"refId": chr(65 + k), "expr": e} for k, e in enumerate(exprs)]
    return {"id": pid, "type": kind, "title": title, "targets": targets}


BOARD = Dashboard(
    "test",
    "self.json",
    {
        "uid": "self-test",
        "title": "Prometheus itself",
        "panels": [
            {"id": 1, "type": "row", "title": "a row, not a panel"},
            panel(2, "Up", 'up{job=~"$job"}'),
            panel(3, "Requests", 'sum(rate(prometheus_http_requests_total{job=~"$job"}[$__rate_interval]))'),
            panel(4, "Never scraped", "rate(no_such_metric_total[$__rate_interval])")
            | {"fieldConfig": {"defaults": {"noValue": "needs --some-flag"}}},
            panel(5, "One of two", "no_such_metric", 'up{job=~"$job"}'),
            panel(6, "Broken", "sum(up"),
            {"id": 7, "type": "text", "title": "Words only"},
        ],
    },
)


@pytest.mark.e2e
def test_panels_with_data_in_the_run_window_and_in_the_report(tmp_path: Path) -> None:
    port = free_port()
    prometheus = Prometheus(
        tmp_path / "prometheus",
        jobs=[ScrapeJob("prometheus", [f"{LOOPBACK}:{port}"])],
        scrape_interval=f"{SCRAPE_S:g}s",
        port=port,
    )
    with prometheus:
        api = PrometheusApi(prometheus.url)
        start = time.time()
        rate = f"rate(prometheus_http_requests_total[{rate_interval(SCRAPE_S)}])"
        # On the grid the check reads (start + k * step), not at the last instant: a rate that is
        # only seconds old can fall between the last grid point and the end of the window.
        prometheus.wait_until(
            lambda: bool(api.query_range(rate, start, time.time(), SCRAPE_S)),
            timeout=60,
            what="a rate over its own scrapes",
        )
        end = time.time()
        (during,) = check_dashboards(api, [BOARD], start, end, SCRAPE_S)
        (before,) = check_dashboards(api, [BOARD], start - 600, start - 300, SCRAPE_S)
        stack_bundle = bundle.build(validation_profile(validation_intervals(Config())))  # what `up` checks
        real = check_dashboards(api, stack_bundle.dashboards, start, end, SCRAPE_S)
    after = check_dashboards(api, [BOARD], start, end, SCRAPE_S)[0]

    by_title = {p.title: p for p in during.panels}
    assert list(by_title) == ["Up", "Requests", "Never scraped", "One of two", "Broken", "Words only"]
    assert [by_title[t].had_data for t in by_title] == [True, True, False, True, False, False], during.panels
    assert by_title["Up"].series == 1 and by_title["Up"].id == 2 and by_title["Up"].kind == "timeseries"
    assert (by_title["One of two"].queries, by_title["Words only"].queries) == (2, 0)
    assert by_title["Broken"].errors and not any(p.errors for t, p in by_title.items() if t != "Broken")
    assert during.with_data == 3
    assert (during.uid, during.title, during.file) == ("self-test", "Prometheus itself", "self.json")
    assert not any(p.had_data for p in before.panels)  # the window decides, not what Prometheus holds now
    # Prometheus gone: the first query fails, the others are not each left to time out.
    assert after.panels[0].errors
    later = [e for p in after.panels[1:] for e in p.errors]
    assert len(later) == 4 and all(e.startswith("not asked: Prometheus stopped answering") for e in later)
    # Every panel of the bundle's dashboards, variables and $__rate_interval substituted, is valid PromQL.
    assert [(d.file, p.title, p.errors) for d in real for p in d.panels if p.errors] == []
    assert [d.file for d in real] == [d.file for d in stack_bundle.dashboards] and len(real) >= 4

    run = scenario_run(overload(), [], tmp_path, [])
    meta = ReportMeta(60, prometheus.url, None, dashboards=[during])
    page = write_report(tmp_path / "report", [run], meta)[0].read_text()
    assert "Prometheus itself (self.json): 3 of 6 panels had data" in page
    assert "<tr><td>Up</td><td>timeseries</td><td>yes</td><td>1</td><td></td></tr>" in page
    # A panel that says why it may be empty (the vLLM flag its series need): the report says so too.
    assert by_title["Never scraped"].no_value == "needs --some-flag" and by_title["Up"].no_value == ""
    row = "<td>Never scraped</td><td>timeseries</td><td>no (needs --some-flag)</td><td>0</td><td></td>"
    assert f'<tr class="dim">{row}</tr>' in page
    assert "No Grafana was started" in page and "/d/self-test" not in page


def test_report_links_each_dashboard_and_panel_into_the_started_grafana(tmp_path: Path) -> None:
    run = scenario_run(overload(), [], tmp_path, [])
    checks = [
        DashboardCheck(
            "vllm-overview.json",
            "infersight-vllm-overview",
            "vLLM / <Overview>",
            (PanelCheck(4, "TTFT p95", "timeseries", 1, 2), PanelCheck(None, "No id", "stat", 1, 0, ("answered 400",))),
        )
    ]
    meta = ReportMeta(60, "http://127.0.0.1:9090", None, dashboards=checks, grafana_url="http://127.0.0.1:3000")
    index, _ = write_report(tmp_path / "report", [run], meta)
    page = index.read_text()
    span = f"from={int(run.window.start * 1000)}&amp;to={int(run.window.end * 1000)}"
    assert run.window.start == T0
    assert f'<a href="http://127.0.0.1:3000/d/infersight-vllm-overview?{span}">open in Grafana</a>' in page
    panel_url = f"http://127.0.0.1:3000/d/infersight-vllm-overview?{span}&amp;viewPanel=4"
    assert f'<td><a href="{panel_url}">TTFT p95</a></td>' in page
    assert '<tr class="bad"><td>No id</td><td>stat</td><td>no</td><td>0</td><td>answered 400</td></tr>' in page
    assert "vLLM / &lt;Overview&gt;" in page and "<Overview>" not in page
    assert "the Grafana at http://127.0.0.1:3000" in page
    data = json.loads((tmp_path / "report" / "validation.json").read_text())
    assert data["grafana_url"] == "http://127.0.0.1:3000"
    assert data["dashboards"][0]["panels"][0] == {
        "id": 4, "title": "TTFT p95", "type": "timeseries", "had_data": True, "series": 2, "errors": [],
        "no_value": "",
    }  # fmt: skip
