"""`infersight exporter gpu`: defaults, and every bad flag or file named with what is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from infersight.cli import main, make_parser
from infersight.durations import Duration


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    try:
        code = main(["exporter", "gpu", *argv])
    except SystemExit as exc:  # argparse errors
        code = int(exc.code or 0)
    return code, capsys.readouterr().err


def test_defaults_are_loopback_9835_auto() -> None:
    args = make_parser().parse_args(["exporter", "gpu"])
    assert (args.listen_address, args.port, args.backend) == ("127.0.0.1", 9835, "auto")
    assert args.interval == Duration.parse("5s")
    assert args.max_process_series == 64 and args.web_config_file is None


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--port", "70000"], "70000 is not a port number (0-65535)"),
        (["--port", "http"], "'http' is not a port number"),
        (["--interval", "5"], "is not a Prometheus duration"),
        (["--interval", "10ms"], "'10ms' is out of range; the sampling interval must be 100ms to 1h"),
        (["--backend", "rocm"], "invalid choice: 'rocm' (choose from"),
        (["--max-process-series", "-3"], "is not a whole number >= 0"),
        (["--backend", "fake"], "--backend fake needs --scenario"),
        (["--backend", "nvml", "--scenario", "leak"], "--scenario only applies to --backend fake"),
        (["--backend", "fake", "--scenario", "leaky"], "bundled: gpu_lost, leak, restart, steady, xid"),
    ],
)
def test_bad_flags(capsys: pytest.CaptureFixture[str], argv: list[str], says: str) -> None:
    code, err = run(capsys, *argv)
    assert code == 2
    assert says in err


def test_bad_scenario_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("gpus: [{count: 0}]\n")
    code, err = run(capsys, "--backend", "fake", "--scenario", str(path))
    assert code == 2 and "gpus.0.count" in err and "greater than or equal to 1" in err


def test_bad_web_config(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "web.yml"
    path.write_text("basic_auth_users: {admin: admin}\n")
    code, err = run(capsys, "--backend", "fake", "--scenario", "steady", "--web-config-file", str(path))
    assert code == 2 and "basic_auth_users.admin" in err and "bcrypt" in err


def test_port_in_use(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        code, err = run(capsys, "--backend", "fake", "--scenario", "steady", "--port", port)
    assert code == 2 and "already in use" in err
