"""Reports: a run's results.json, report.md/.html and figures; the regression gate against the baseline."""
