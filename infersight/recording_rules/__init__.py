"""Recording rules, one module per concern; each exposes ``groups(cfg)``."""
