"""Names the deploy artefacts give to the bundle's files."""

from __future__ import annotations

from pathlib import PurePosixPath


def resource_name(rel: str) -> str:
    """A Kubernetes-safe name for a bundle file: alerts/kv_cache.yaml -> infersight-alerts-kv-cache."""
    path = PurePosixPath(rel)
    return "infersight-" + "-".join([*path.parts[:-1], path.stem]).replace("_", "-").lower()
