"""Alert rules, one module per pack; each exposes ``groups(cfg)``."""
