"""Helpers shared by the tests, one small module per kind (fixtures live in conftest.py):

paths (where the repository, the sample and ../shared are), env (environments for
subprocesses), notes (writing note files), cli (the ``recall`` command in-process),
daemon (real daemons in subprocesses), agents (hook commands and MCP sessions as the
agents run them), ui (a real ``recall ui``), fake_http / fake_messages (loopback fakes
of model APIs), leaks (planted text found on disk), corpora (seeded secrets and
transcripts).

Test modules import from here, never from conftest.py or from one another.
"""
