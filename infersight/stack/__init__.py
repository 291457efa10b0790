"""Real services on loopback (Prometheus, Alertmanager, vLLM) for `infersight up` and the
end-to-end tests: free ports, readiness waits with timeouts, and a guaranteed stop."""
