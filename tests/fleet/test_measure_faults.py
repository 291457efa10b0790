"""The bench's Prometheus client on a server that is not (or no longer) Prometheus: a
QueryFailed naming what answered, which `infersight bench fleet` prints as one line."""

from __future__ import annotations

import pytest

from infersight.fleet.measure import PrometheusAPI, QueryFailed, yardstick_seconds
from tests.fault_servers import Reply, html_server, routes_server


def test_an_html_error_page_is_a_query_failure_not_a_traceback() -> None:
    with html_server(status=502) as server, pytest.raises(QueryFailed, match="not Prometheus JSON"):
        PrometheusAPI(server.url, timeout=5).instant("up")


def test_json_that_is_not_an_api_object_is_a_query_failure() -> None:
    answer = Reply.json([1, 2])
    with routes_server({"/api/v1/query": answer}) as server, pytest.raises(QueryFailed, match="not a Prometheus API"):
        PrometheusAPI(server.url, timeout=5).instant("up")


def test_prometheus_query_errors_keep_their_message() -> None:
    error = {"status": "error", "errorType": "bad_data", "error": "parse error at char 3"}
    answer = Reply.json(error, status=400)
    with routes_server({"/api/v1/query": answer}) as server, pytest.raises(QueryFailed, match="parse error at char 3"):
        PrometheusAPI(server.url, timeout=5).instant("up(")


@pytest.mark.parametrize(
    "answer",
    [Reply.json({"status": "success", "data": {"resultType": "vector", "result": []}}), Reply.json([1, 2])],
)
def test_a_machine_speed_that_cannot_be_read_is_none_not_a_failed_run(answer: Reply) -> None:
    # No stats in the answer, or no Prometheus at all: the run's report says "not measured".
    with routes_server({"/api/v1/query": answer}) as server:
        assert yardstick_seconds(PrometheusAPI(server.url, timeout=5)) is None
