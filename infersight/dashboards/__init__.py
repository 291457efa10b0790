"""Grafana dashboards built with grafana-foundation-sdk; one module per pack, each
exposing ``dashboards(cfg) -> dict[file name, dashboard JSON]``."""
