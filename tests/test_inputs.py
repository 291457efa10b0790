"""The operator-input reader (infersight.inputs) against hostile or careless YAML: aliases,
duplicate keys, numbers Python cannot hold, infinities, and values too long to echo."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict

from infersight.inputs import MAX_LISTED_PROBLEMS, InputError, brief, read_yaml, validate

# The probe's attack: a few hundred bytes whose nine levels of aliases expand to 10^9 strings.
BILLION_LAUGHS = "\n".join(
    [
        'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        *(f"{k}: &{k} [{','.join([f'*{p}'] * 9)}]" for p, k in zip("abcdefgh", "bcdefghi", strict=True)),
    ]
)


class _Error(InputError):
    what = "test input"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ratio: float = 0.5
    name: str = "x"


def _read(tmp_path: Path, text: str) -> object:
    path = tmp_path / "in.yaml"
    path.write_text(text)
    return read_yaml(path, _Error)


def _refusal(tmp_path: Path, text: str) -> str:
    with pytest.raises(_Error) as info:
        _read(tmp_path, text)
    return str(info.value)


def test_billion_laughs_is_refused_at_the_first_alias(tmp_path: Path) -> None:
    message = _refusal(tmp_path, BILLION_LAUGHS)
    assert "line 2" in message and "alias" in message and "*a" in message
    assert len(message) < 300


def test_any_alias_is_refused(tmp_path: Path) -> None:
    message = _refusal(tmp_path, "base: &b {ratio: 0.1}\nother: *b\n")
    assert "line 2" in message and "alias" in message


def test_merge_keys_need_an_alias_and_are_refused_with_it(tmp_path: Path) -> None:
    assert "alias" in _refusal(tmp_path, "base: &b {ratio: 0.1}\nother:\n  <<: *b\n")


@pytest.mark.parametrize(
    ("text", "key", "line", "first"),
    [
        ("ratio: 0.1\nname: y\nratio: 0.2\n", "'ratio'", 3, 1),
        ("outer:\n  inner: 1\n  inner: 2\n", "'inner'", 3, 2),
        ("outer: {a: 1, a: 1}\n", "'a'", 1, 1),
    ],
)
def test_duplicate_keys_are_refused_with_key_and_line(
    tmp_path: Path, text: str, key: str, line: int, first: int
) -> None:
    message = _refusal(tmp_path, text)
    assert f"duplicate key {key}" in message and f"line {line}" in message and f"first at line {first}" in message


def test_a_number_too_long_for_python_is_refused(tmp_path: Path) -> None:
    message = _refusal(tmp_path, "ratio: " + "9" * 5000 + "\n")
    assert "line 1" in message and "digits" in message and len(message) < 300


def test_yaml_syntax_errors_are_one_line_naming_line_and_column(tmp_path: Path) -> None:
    message = _refusal(tmp_path, "a: [unclosed\n")
    assert len(message.splitlines()) == 1 and "not valid YAML" in message and "line 2" in message


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_non_finite_numbers_are_refused_by_key_path(value: float) -> None:
    with pytest.raises(_Error) as info:
        validate(_Model, {"ratio": value, "name": "y"}, "<t>", _Error)
    assert dict(info.value.problems) == {"ratio": "must be a finite number (got " + repr(value) + ")"}


@pytest.mark.parametrize("text", [".inf", "-.inf", ".nan", ".NaN", "1.0e+400"])
def test_non_finite_yaml_numbers_are_refused_when_validated(tmp_path: Path, text: str) -> None:
    data = _read(tmp_path, f"ratio: {text}\n")
    with pytest.raises(_Error, match="ratio: must be a finite number"):
        validate(_Model, data, "<t>", _Error)


def test_errors_never_echo_a_whole_value() -> None:
    with pytest.raises(_Error) as info:
        validate(_Model, {"name": ["x" * 10**6] * 1000, "k" * 10**6: 1}, "<t>", _Error)
    assert len(str(info.value)) < 1000


def test_errors_list_a_bounded_number_of_problems_on_one_line() -> None:
    with pytest.raises(_Error) as info:
        validate(_Model, {f"unknown{i}": i for i in range(10_000)} | {"ratio": "x"}, "<t>", _Error)
    message = str(info.value)
    assert len(message.splitlines()) == 1 and len(message) < 3000, message
    assert message.endswith(f"; and {10_001 - MAX_LISTED_PROBLEMS} more problems"), message


def test_one_problem_is_one_line_naming_file_key_and_what_is_allowed() -> None:
    with pytest.raises(_Error) as info:
        validate(_Model, {"ratio": "x"}, "in.yaml", _Error)
    message = str(info.value)
    assert message.startswith("invalid test input in.yaml: ratio: ") and "valid number" in message, message
    assert len(message.splitlines()) == 1, message


def test_several_problems_share_the_line_each_with_its_key() -> None:
    with pytest.raises(_Error) as info:
        validate(_Model, {"ratio": "x", "name": [1]}, "in.yaml", _Error)
    message = str(info.value)
    assert len(message.splitlines()) == 1 and "ratio: " in message and "; name: " in message, message


def test_brief_bounds_any_value() -> None:
    assert brief("short") == "'short'"
    assert len(brief("x" * 10**6)) <= 80
    nested: list[object] = ["lol"] * 9
    for _ in range(8):
        nested = [nested] * 9  # shared references: 10^9 strings when walked in full
    assert len(brief(nested)) <= 80
    assert len(brief(10**5000)) <= 80  # too long for repr() itself
