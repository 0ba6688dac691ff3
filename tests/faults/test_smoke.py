"""The suite's own check: a probe's counts reach the table."""


def test_probe_records(probe):
    probe.add(inputs=1, survived=1)
    assert probe.counts["inputs"] == 1
