"""Plumbing shared by infersight's exporters.

- ``health``: ``Problem`` and the ``infersight_exporter_*`` self-metrics collector.
- ``sampler``: a background thread that collects at a fixed interval, so scrapes never wait on a driver.
- ``errors``: ``InputFileError``, an operator file's problems with their key paths.
- ``webconfig``: the Prometheus exporter-toolkit web-config file (TLS, basic auth, headers).
- ``server``: serves a registry over HTTP(S) with that web config, and warns about exposed binds.
"""
