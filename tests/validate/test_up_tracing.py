"""``infersight up``'s span path, without starting vLLM: each vLLM the local stack starts for the
scenarios' load is told to send its request spans to the stack's own OTLP receiver, named by its
served model and by the instance Prometheus scrapes it as. The report joins spans to requests by
them, and the dashboards' trace links search by them (docs/traces.md). The dense model's extra
replicas are not traced: the load whose spans the report reads goes to the first. That a real vLLM
started with these arguments sends such spans is tests/validate/test_validate_e2e.py's part."""

from __future__ import annotations

from pathlib import Path

import pytest

from infersight.stack.tiny_models import SERVED_NAMES
from infersight.traces.receiver import SpanReceiver
from infersight.validate import local_stack
from infersight.validate.local_stack import VLLM_JOB, LocalStack


def arg_after(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


@pytest.fixture(autouse=True)
def no_tiny_models_and_no_otel_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No model is built (nothing starts), and the test's own environment names no OTel service."""
    monkeypatch.setattr(local_stack, "ensure_tiny_model", lambda kind: tmp_path / "models" / kind)
    for name in ("OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"):
        monkeypatch.delenv(name, raising=False)


def test_each_started_vllm_sends_its_spans_to_the_receiver_named_by_model_and_instance(tmp_path: Path) -> None:
    stack = LocalStack(tmp_path, models=("moe", "dense"), say=lambda _: None, dense_peers=2)
    with SpanReceiver() as receiver:
        stack.spans = receiver  # what start() does before it starts the servers
        servers = {kind: stack._server(kind) for kind in stack.models}
        peers = [stack._peer(i) for i in (1, 2)]
    assert set(servers) == {"moe", "dense"}
    for kind, server in servers.items():
        argv, env = server.process.argv, server.process.env
        assert arg_after(argv, "--otlp-traces-endpoint") == receiver.url, kind
        assert receiver.url.startswith("http://127.0.0.1:") and receiver.url.endswith("/v1/traces")
        assert env["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] == "http/protobuf"  # the receiver speaks no gRPC
        assert env["OTEL_SERVICE_NAME"] == SERVED_NAMES[kind] == arg_after(argv, "--served-model-name")
        # The instance the spans name is the one Prometheus scrapes: the server's own port.
        assert env["OTEL_RESOURCE_ATTRIBUTES"] == f"service.instance.id={server.target}"
    stack.servers, stack.peers = servers, peers
    assert {s.target for s in servers.values()} < set(stack.jobs()[VLLM_JOB])  # scraped as those instances
    for peer in peers:
        assert "--otlp-traces-endpoint" not in peer.process.argv
        assert not {"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"} & set(peer.process.env)


def test_without_a_receiver_no_vllm_is_traced(tmp_path: Path) -> None:
    stack = LocalStack(tmp_path, models=("dense",), say=lambda _: None)
    server = stack._server("dense")
    assert "--otlp-traces-endpoint" not in server.process.argv
    assert "OTEL_RESOURCE_ATTRIBUTES" not in server.process.env
