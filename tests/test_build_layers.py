"""The build's layers point one way (docs/architecture.md, "The pipeline"): config and packs know
nothing of the bundle; the bundle knows nothing of the deploy stage or of files; the deploy stage
uses only the bundle's public names. Read from the source, so a cycle cannot creep back in."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "infersight"

# Module -> modules it must never import (a prefix covers the package and its modules).
FORBIDDEN = {
    "infersight.config": ("infersight.bundle", "infersight.bundle_files", "infersight.deploy", "infersight.packs"),
    "infersight.recording_rules": ("infersight.bundle", "infersight.bundle_files", "infersight.deploy"),
    "infersight.alerts": ("infersight.bundle", "infersight.bundle_files", "infersight.deploy"),
    "infersight.dashboards": ("infersight.bundle", "infersight.bundle_files", "infersight.deploy"),
    "infersight.conventions": ("infersight.bundle", "infersight.bundle_files", "infersight.deploy"),
    "infersight.packs": ("infersight.bundle", "infersight.bundle_files", "infersight.deploy"),
    "infersight.lint": ("infersight.bundle", "infersight.bundle_files", "infersight.deploy"),
    "infersight.bundle": ("infersight.bundle_files", "infersight.deploy"),
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[str, str]]:
    """(module, imported name) for every import in the file, functions included; name "" for
    ``import module``. ``from infersight import deploy`` reads as the module infersight.deploy."""
    found: list[tuple[str, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, "") for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                found.append((node.module, alias.name))
                found.append((f"{node.module}.{alias.name}", ""))
    return found


def _files_of(module: str) -> list[Path]:
    base = PACKAGE.parent / module.replace(".", "/")
    return sorted(base.rglob("*.py")) if base.is_dir() else [base.with_suffix(".py")]


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_a_layer_imports_nothing_that_depends_on_it(layer: str) -> None:
    wrong = [
        f"{_module_name(path)} imports {module}"
        for path in _files_of(layer)
        for module, _ in _imports(path)
        for forbidden in FORBIDDEN[layer]
        if _within(module, forbidden)
    ]
    assert not wrong, "\n".join(wrong)


def test_the_deploy_stage_uses_only_the_bundles_public_names() -> None:
    private = [
        f"{_module_name(path)} imports {module}.{name}"
        for path in _files_of("infersight.deploy")
        for module, name in _imports(path)
        if module in ("infersight.bundle", "infersight.bundle_files") and name.startswith("_")
    ]
    assert not private, "\n".join(private)
    # Read through the attribute too: `bundle._header(...)` after `from infersight import bundle`.
    attributes = [
        f"{_module_name(path)} reads bundle.{node.attr}"
        for path in _files_of("infersight.deploy")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in ("bundle", "bundle_files")
        and node.attr.startswith("_")
    ]
    assert not attributes, "\n".join(attributes)


def test_the_layer_check_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    # The old cycle hid its imports inside functions; the check must find those.
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from infersight import deploy\n    import infersight.bundle_files\n")
    assert {m for m, _ in _imports(source)} >= {"infersight.deploy", "infersight.bundle_files"}
