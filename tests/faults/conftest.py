"""The fault and fuzz suite (`make faults`): each probe attacks recall with inputs or faults
it did not plan for and records what it tried in the ``probe`` fixture; the run ends with one
table (probes, inputs tried, faults survived, unsafe text or secrets leaked to an agent or a
terminal, data lost, secrets and prompts found on disk).

A probe still asserts what it promises (nothing lost, nothing leaked, the next hook answers
in time): the table summarises, the assertions decide. Bounded: every probe caps its loops
in count and time and talks only to this machine (UNIX sockets, loopback).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

COLUMNS = ("inputs", "faults", "survived", "leaked", "lost", "secrets", "prompts")
_RECORDS: dict[str, ProbeRecord] = {}


@dataclass
class ProbeRecord:
    name: str
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COLUMNS, 0))

    def add(self, **counts: int) -> None:
        """``probe.add(inputs=1, faults=1, survived=1)``; leaked/lost/secrets/prompts must stay 0."""
        for key, value in counts.items():
            if key not in self.counts:
                raise KeyError(f"unknown probe column {key!r}; one of {COLUMNS}")
            self.counts[key] += int(value)


@pytest.fixture
def probe(request) -> ProbeRecord:
    name = request.node.nodeid.split("::", 1)[-1]
    record = _RECORDS.setdefault(name, ProbeRecord(name))
    return record


def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.faults)


def pytest_terminal_summary(terminalreporter):
    if not _RECORDS:
        return
    tr = terminalreporter
    width = max(len(n) for n in _RECORDS) + 2
    tr.section("fault suite")
    tr.write_line(f"{'probe':<{width}}" + "".join(f"{c:>10}" for c in COLUMNS))
    totals = dict.fromkeys(COLUMNS, 0)
    for name in sorted(_RECORDS):
        rec = _RECORDS[name]
        tr.write_line(f"{name:<{width}}" + "".join(f"{rec.counts[c]:>10}" for c in COLUMNS))
        for c in COLUMNS:
            totals[c] += rec.counts[c]
    tr.write_line(f"{'TOTAL (' + str(len(_RECORDS)) + ' probes)':<{width}}"
                  + "".join(f"{totals[c]:>10}" for c in COLUMNS))
    tr.write_line("leaked, lost, secrets and prompts must be 0: unsafe text or secrets that reached an agent or "
                  "a terminal, data lost, secrets and prompt canaries found in any byte under RECALL_HOME")
