"""Scoring: a collection scored against question sets (the default pipeline and the baselines), metrics, latency."""
