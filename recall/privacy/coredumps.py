"""No core dump of a process that holds the user's messages (the hook, the daemon, the MCP
server, ``recall ui``).

A crash (a native library's segfault) where the shell allows core dumps (``ulimit -c``) wrote
the daemon's whole memory, the messages it was asked among it, as ``RECALL_HOME/run/core``
(330 MB). ``forbid()`` is called first thing in those processes: ``RLIMIT_CORE`` 0, soft and
hard, so the kernel writes no core file, and a ``core_pattern`` pipe (systemd-coredump, apport)
is told the limit and stores none. Children inherit it (the document converter, an agent CLI
writing questions). Not ``PR_SET_DUMPABLE``: it would also hide the process's ``/proc`` files
from the user's own tools, and a process of the same user can read the user's files anyway.
"""

from __future__ import annotations


def forbid() -> None:
    """No core dump of this process or its children from now on (never raises)."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ImportError, ValueError, OSError):
        pass  # Windows: no core files
