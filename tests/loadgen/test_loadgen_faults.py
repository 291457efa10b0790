"""``infersight loadgen`` against faults and bad input: a target that answers garbage, a reply that
is not HTTP, a URL the HTTP client would reject, an output location that cannot take the results,
a stub port already in use. Every request ends in exactly one named outcome, a run whose responses
are not OpenAI-shaped is invalid (and says so), and bad input is one line, before anything is sent."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from infersight.cli import main
from infersight.loadgen.records import RequestRecord, RequestSpec
from infersight.loadgen.results import ResultsWriteError
from infersight.loadgen.stub_server import StubServer
from infersight.loadgen.target import TargetError, check_target
from infersight.loopback import LOOPBACK
from tests.fault_servers import (
    FaultServer,
    Reply,
    drip_server,
    garbage_server,
    html_server,
    redirect_server,
    routes_server,
)
from tests.loadgen.helpers import run_scenario, scenario, send_one
from tests.one_line import one_line

SCENARIO = {
    "name": "faults",
    "limits": {"max_duration": "20s", "max_requests": 50},
    "validity": {"max_schedule_lag_p99": "5s"},  # correctness here, not a benchmark
    "stages": [
        {"name": "open", "duration": "500ms", "rate": 10, "arrival": "constant", "prompt_tokens": 4, "output_tokens": 3}
    ],
}

DONE = b"data: [DONE]\n\n"
GOOD_CHUNK = b'data: {"choices": [{"index": 0, "text": " tok"}], "usage": {"completion_tokens": 1}}\n\n'


def openai_routes(stream: Reply) -> FaultServer:
    """/v1/models lists one model; both generation endpoints answer ``stream``."""
    models = Reply.json({"object": "list", "data": [{"id": "fault-model", "object": "model"}]})
    return routes_server({"/v1/models": models, "/v1/completions": stream, "/v1/chat/completions": stream})


def sse(body: bytes) -> FaultServer:
    return openai_routes(Reply(200, body, "text/event-stream"))


def write_scenario(tmp_path: Path) -> Path:
    path = tmp_path / "faults.yaml"
    path.write_text(yaml.safe_dump(SCENARIO))
    return path


# --- garbage in a 200 stream -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"data: 5\n\n" * 3 + DONE,
        b"data: [1,2]\n\n" * 3 + DONE,
        b'data: "text"\n\n' + DONE,
        b"data: not json\n\n" + DONE,
        b'data: {"id": "x"}\n\n' + DONE,  # no choices
        b'data: {"choices": 5}\n\n' + DONE,
        b'data: {"choices": [5]}\n\n' + DONE,
        b'data: {"choices": [{"text": 5}]}\n\n' + DONE,
        b'data: {"choices": [], "usage": 3}\n\n' + DONE,
        b'data: {"choices": [], "usage": {"completion_tokens": "many"}}\n\n' + DONE,
        b'data: {"choices": [], "usage": {"completion_tokens": true}}\n\n' + DONE,
        DONE,  # [DONE] with no completion chunk at all
        b"data: " + b"[" * 100_000 + b"\n\n" + DONE,  # nested past Python's recursion limit
        # more tokens than the 8 asked for: a count no OpenAI server gives, and one the ITL would
        # expand into a latency per claimed token (10**9 of them)
        b'data: {"choices": [{"text": "a"}], "usage": {"completion_tokens": 1}}\n\n'
        b'data: {"choices": [{"text": "b"}], "usage": {"completion_tokens": 1000000000}}\n\n' + DONE,
    ],
    ids=lambda b: b[:40].decode(errors="replace"),
)
def test_stream_that_is_not_openai_shaped_is_a_bad_response(body: bytes) -> None:
    with sse(body) as server:
        rec = send_one(server.url, "completions")
    assert rec.status == 200
    assert rec.error == "bad_response"
    assert not rec.ok


def test_chat_delta_that_is_not_an_object_is_a_bad_response() -> None:
    with sse(b'data: {"choices": [{"delta": 5}]}\n\n' + DONE) as server:
        rec = send_one(server.url, "chat")
    assert rec.error == "bad_response"


def test_200_that_is_not_an_event_stream_is_a_bad_response() -> None:
    # A well-formed stream body, but served as HTML: not the API the target claims to be.
    with openai_routes(Reply(200, GOOD_CHUNK + DONE, "text/html")) as server:
        rec = send_one(server.url, "completions")
    assert rec.error == "bad_response"


def test_login_page_is_a_bad_response() -> None:
    with html_server() as server:
        rec = send_one(server.url, "chat")
    assert rec.error == "bad_response"
    assert rec.error_type == "not_an_event_stream"


def test_endless_event_without_a_separator_is_a_bad_response() -> None:
    with sse(b"data: " + b"x" * (2 * 1024 * 1024)) as server:
        rec = send_one(server.url, "completions")
    assert rec.error == "bad_response"


def test_a_well_formed_fixed_stream_is_ok() -> None:
    """The fixture itself: the same server with an OpenAI-shaped body succeeds, so the cases above
    fail because of their bodies."""
    with sse(GOOD_CHUNK + DONE) as server:
        rec = send_one(server.url, "completions")
    assert rec.ok, (rec.status, rec.error, rec.error_type)
    assert rec.completion_tokens == 1


@pytest.mark.parametrize("payload", [b"5", b"[1,2]"])
def test_run_against_garbage_stream_is_invalid_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], payload: bytes
) -> None:
    out = tmp_path / "r"
    with sse(b"data: " + payload + b"\n\n" + DONE) as server:
        code = main(["loadgen", "run", str(write_scenario(tmp_path)), "--target", server.url, "--out", str(out)])
    stdout = capsys.readouterr().out
    assert code == 1
    assert "INVALID RUN" in stdout and "not OpenAI-shaped" in stdout
    summary = json.loads((out / "results.json").read_text())["summary"]
    assert summary["valid"] is False
    overall = summary["overall"]
    assert overall["sent"] > 0
    assert overall["succeeded"] == 0
    assert overall["errors"] == {"bad_response": overall["sent"]}


# --- replies that are not HTTP, URLs the client rejects, a sender that fails ------------------------


def test_non_http_reply_is_a_protocol_error() -> None:
    with garbage_server() as server:
        rec = send_one(server.url, "completions")
    assert rec.error == "protocol_error"
    assert rec.status is None


def test_run_against_non_http_server_records_every_request_and_is_invalid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r"
    with garbage_server() as server:
        args = ["loadgen", "run", str(write_scenario(tmp_path)), "--target", server.url, "--model", "m"]
        code = main([*args, "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 1
    assert "Traceback" not in captured.err
    assert "status None" not in captured.out
    overall = json.loads((out / "results.json").read_text())["summary"]["overall"]
    assert overall["errors"] == {"protocol_error": overall["sent"]}


def test_reply_that_never_finishes_is_a_timeout() -> None:
    """A valid stream sent one byte at a time: the request's one total timeout ends it."""
    with drip_server(Reply(200, GOOD_CHUNK + DONE, "text/event-stream"), 0.2) as drip:
        rec = send_one(drip.url, "completions", timeout_s=1.0)
    assert rec.error == "timeout"


def test_url_the_client_rejects_is_an_invalid_url_outcome() -> None:
    """Past check_target (a caller that skipped it), the client still records one named outcome."""
    rec = send_one(f"http://evil.invalid\\@{LOOPBACK}:9", "completions")
    assert rec.error == "invalid_url"
    assert not rec.ok


def test_sender_that_raises_still_leaves_one_named_outcome_and_an_invalid_run(tmp_path: Path) -> None:
    async def broken(spec: RequestSpec, rec: RequestRecord) -> None:
        raise KeyError("a client bug")

    sc = scenario([{"name": "s", "duration": "300ms", "rate": 10, "arrival": "constant"}])
    outcome = run_scenario(sc, tmp_path, sender=broken)
    summary = outcome.run["summary"]
    sent = summary["overall"]["sent"]
    assert sent > 0
    assert summary["overall"]["errors"] == {"unexpected_error": sent}
    assert not outcome.valid
    assert any("client" in reason for reason in summary["invalid_reasons"])


@pytest.mark.parametrize(
    "url",
    [
        "http://evil.invalid\\@127.0.0.1:8000",  # backslash: parsers disagree on the host
        "http://user:secret@127.0.0.1:8000",  # credentials in the URL
        "http://127.0.0.1:8000\n",
        "http://127.0.0.1 :8000",
    ],
)
def test_target_url_with_tricky_authority_is_refused(url: str) -> None:
    with pytest.raises(TargetError, match="--target"):
        check_target(url)


def test_target_url_the_client_rejects_is_refused_before_sending(
    tmp_path: Path, stub: Callable[..., StubServer], capsys: pytest.CaptureFixture[str]
) -> None:
    server = stub()
    port = server.url.rsplit(":", 1)[1]
    out = tmp_path / "r"
    target = f"http://evil.invalid\\@127.0.0.1:{port}"
    code = main(["loadgen", "run", str(write_scenario(tmp_path)), "--target", target, "--out", str(out)])
    line = one_line(capsys.readouterr().err)
    assert code == 2
    assert "--target" in line and "backslash" in line
    assert server.requests == 0
    assert not out.exists()


def test_redirect_is_recorded_not_followed(stub: Callable[..., StubServer]) -> None:
    """Load goes only where --target says: a redirect could lead off loopback."""
    elsewhere = stub()
    with redirect_server(elsewhere.url + "/v1/completions", status=307) as redirecting:
        rec = send_one(redirecting.url, "completions")
    assert rec.status == 307
    assert rec.error == "redirect"  # an OpenAI server answers, it does not send the client elsewhere
    assert elsewhere.requests == 0


def test_a_target_that_redirects_every_request_is_an_invalid_run(
    tmp_path: Path, stub: Callable[..., StubServer], capsys: pytest.CaptureFixture[str]
) -> None:
    """It once read "valid run" with exit 0, though no request reached a model."""
    elsewhere = stub()
    out = tmp_path / "r"
    with redirect_server(elsewhere.url + "/v1/completions", status=302) as redirecting:
        argv = ["loadgen", "run", str(write_scenario(tmp_path)), "--target", redirecting.url, "--model", "m"]
        code = main([*argv, "--out", str(out), "--no-progress"])
    assert code == 1
    assert "INVALID RUN" in capsys.readouterr().out
    assert "redirect" in json.loads((out / "results.json").read_text())["summary"]["invalid_reasons"][0]


def test_non_http_reply_to_the_model_list_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with garbage_server() as server:
        code = main(["loadgen", "run", str(write_scenario(tmp_path)), "--target", server.url])
    line = one_line(capsys.readouterr().err)
    assert code == 3
    assert "/v1/models" in line and "not HTTP" in line


@pytest.mark.parametrize("status", [404, 302])
def test_a_model_list_answered_with_another_status_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], status: int
) -> None:
    with routes_server({}, Reply.json({"error": "no"}, status)) as server:
        code = main(["loadgen", "run", str(write_scenario(tmp_path)), "--target", server.url])
    line = one_line(capsys.readouterr().err)
    assert code == 3
    assert f"/v1/models answered {status}" in line, line


@pytest.mark.parametrize(
    ("models", "says"),
    [
        (Reply(200, b" " * (2 * 1024 * 1024) + b'{"data": [{"id": "m"}]}'), "larger than 1 MiB"),
        (Reply(200, b"[" * 100_000), "failed (not JSON)"),
    ],
    ids=["2 MiB of blanks before the list", "nested past the recursion limit"],
)
def test_a_model_list_that_is_too_large_or_too_deep_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], models: Reply, says: str
) -> None:
    with routes_server({"/v1/models": models}) as server:
        code = main(["loadgen", "run", str(write_scenario(tmp_path)), "--target", server.url])
    line = one_line(capsys.readouterr().err)
    assert code == 3
    assert "/v1/models" in line and says in line, line


# --- an output location that cannot take the results -------------------------------------------------


@pytest.mark.parametrize("where", ["file", "under_a_file"])
def test_out_that_cannot_be_a_folder_is_refused_before_sending(
    tmp_path: Path, stub: Callable[..., StubServer], capsys: pytest.CaptureFixture[str], where: str
) -> None:
    server = stub()
    existing = tmp_path / "results.txt"
    existing.write_text("earlier results\n")
    out = existing if where == "file" else existing / "r"
    code = main(["loadgen", "run", str(write_scenario(tmp_path)), "--target", server.url, "--out", str(out)])
    line = one_line(capsys.readouterr().err)
    assert code == 2
    assert "--out" in line and "not a folder" in line
    assert server.requests == 0
    assert existing.read_text() == "earlier results\n"


def test_results_folder_replaced_during_the_run_is_a_named_error(tmp_path: Path) -> None:
    out = tmp_path / "r"

    async def replace_folder_with_a_file(spec: RequestSpec, rec: RequestRecord) -> None:
        if not out.exists():
            out.write_text("someone else's file\n")
        rec.status = 200

    sc = scenario([{"name": "s", "duration": "200ms", "rate": 10, "arrival": "constant"}])
    with pytest.raises(ResultsWriteError, match=f"results not written to {out}"):
        run_scenario(sc, out, sender=replace_folder_with_a_file)
    assert out.read_text() == "someone else's file\n"


# --- the stub server ----------------------------------------------------------------------------------


def test_stub_on_a_port_in_use_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind((LOOPBACK, 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = main(["loadgen", "stub", "--port", str(port)])
    line = one_line(capsys.readouterr().err)
    assert code == 1
    assert f"{LOOPBACK}:{port}" in line and "in use" in line


@pytest.mark.parametrize("port", ["70000", "-1", "http"])
def test_stub_port_out_of_range_is_an_argparse_error(port: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["loadgen", "stub", "--port", port])
    assert exc.value.code == 2
    assert "--port" in capsys.readouterr().err


@pytest.mark.parametrize(
    "flags",
    [["--ttft", "inf"], ["--ttft", "nan"], ["--itl", "1e9"], ["--max-prompt-words", "-1"], ["--max-prompt-words", "0"]],
)
def test_stub_timings_and_limits_it_cannot_keep_are_one_line(
    flags: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """--ttft inf once started a stub whose every request hung; nan was taken as 0."""
    code = main(["loadgen", "stub", *flags])
    line = one_line(capsys.readouterr().err)
    assert code == 2
    assert flags[0].removeprefix("--").replace("-", "_") in line and "allowed" in line, line


def test_an_earlier_run_in_out_is_kept_unless_force(
    tmp_path: Path, stub: Callable[..., StubServer], capsys: pytest.CaptureFixture[str]
) -> None:
    server = stub()
    out = tmp_path / "r"
    argv = ["loadgen", "run", str(write_scenario(tmp_path)), "--target", server.url, "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    first = (out / "results.json").read_bytes()
    sent = server.requests
    capsys.readouterr()
    assert main(argv) == 2
    line = one_line(capsys.readouterr().err)
    assert "--out" in line and "earlier run" in line and "--force" in line, line
    assert (out / "results.json").read_bytes() == first and server.requests == sent  # nothing sent, nothing lost
    assert main([*argv, "--force"]) == 0
    assert (out / "results.json").read_bytes() != first
