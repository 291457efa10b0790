"""A synthetic vLLM fleet for sizing Prometheus: ``topology`` (who runs where), ``templates``
(scrape bodies), ``server`` (one process serving every target), ``scrape_config``, ``stack``
(fleet server + Prometheus), ``measure`` and ``bench`` (``infersight bench fleet``)."""
