"""Benchmarks: `make bench`, `make bench-hook` (medians, p95, ratios against a baseline measured in the same run)."""
