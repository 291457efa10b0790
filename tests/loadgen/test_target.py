"""Target URLs: loopback only unless explicitly allowed; the base URL is normalised."""

from __future__ import annotations

import pytest

from infersight.loadgen.target import TargetError, check_target


@pytest.mark.parametrize(
    ("url", "base"),
    [
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000"),
        ("http://127.0.0.1:8000/", "http://127.0.0.1:8000"),
        ("http://127.3.4.5:80", "http://127.3.4.5:80"),
        ("http://localhost:8000", "http://localhost:8000"),
        ("http://[::1]:8000", "http://[::1]:8000"),
        ("https://127.0.0.1", "https://127.0.0.1"),
    ],
)
def test_loopback_targets_are_accepted(url: str, base: str) -> None:
    assert check_target(url) == base


@pytest.mark.parametrize(
    "url", ["http://192.168.1.10:8000", "http://10.1.2.3", "http://vllm.internal:8000", "http://0.0.0.0:8000"]
)
def test_other_targets_need_the_explicit_flag(url: str) -> None:
    with pytest.raises(TargetError, match="--allow-remote"):
        check_target(url)
    assert check_target(url, allow_remote=True) == url


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("127.0.0.1:8000", "not an http(s) URL"),
        ("http://127.0.0.1:8000/v1", "base URL"),
        ("http://127.0.0.1:99999", "--target"),
        ("http://", "not an http(s) URL"),
        ("http://[::1", "not an http(s) URL"),  # urlsplit raises on these
        ("http://[zz]:8000", "not an http(s) URL"),
    ],
)
def test_malformed_targets(url: str, fragment: str) -> None:
    with pytest.raises(TargetError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        check_target(url)
