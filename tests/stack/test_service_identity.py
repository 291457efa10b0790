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
@pytest.mark.parametrize(
    ("holder", "newcomer", "name"),
    [(Alertmanager, Prometheus, "prometheus"), (Prometheus, Alertmanager, "alertmanager")],
)
def test_a_service_on_a_port_the_other_holds_is_an_error_not_ready(
    holder: type[Alertmanager | Prometheus], newcomer: type[Alertmanager | Prometheus], name: str, tmp_path: Path
) -> None:
    with holder(tmp_path / "holder") as held:
        service = newcomer(tmp_path / "newcomer", port=held.port)
        try:
            with pytest.raises(ServiceError, match=name):
                service.start(timeout=20)
            assert not service.process.alive
        finally:
            service.stop()
