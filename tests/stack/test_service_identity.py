"""A Prometheus or Alertmanager is ready only when the thing answering on its port is that
service: CI once had Prometheus "ready" while an Alertmanager answered on its port (both had
drawn the same free port), and every query then failed with 404."""

from __future__ import annotations

from pathlib import Path

import pytest

from infersight.stack.alertmanager import Alertmanager
from infersight.stack.ports import free_port
from infersight.stack.process import ServiceError
from infersight.stack.prometheus import Prometheus


def test_free_port_never_hands_out_the_same_port_twice_in_one_process() -> None:
    ports = [free_port() for _ in range(500)]
    assert len(set(ports)) == len(ports)


@pytest.mark.e2e
def test_prometheus_on_a_port_alertmanager_holds_is_an_error_not_ready(tmp_path: Path) -> None:
    with Alertmanager(tmp_path / "am") as am:
        prom = Prometheus(tmp_path / "prom", port=am.port)
        try:
            with pytest.raises(ServiceError, match="prometheus"):
                prom.start(timeout=20)
            assert not prom.process.alive
        finally:
            prom.stop()


@pytest.mark.e2e
def test_alertmanager_on_a_port_prometheus_holds_is_an_error_not_ready(tmp_path: Path) -> None:
    with Prometheus(tmp_path / "prom") as prom:
        am = Alertmanager(tmp_path / "am", port=prom.port)
        try:
            with pytest.raises(ServiceError, match="alertmanager"):
                am.start(timeout=20)
            assert not am.process.alive
        finally:
            am.stop()
