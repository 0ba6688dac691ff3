"""FAISS, loaded only where the process's address space has room for it.

FAISS's BLAS reserves its buffers as the library loads, about 130 MB of address space per
thread it will use (one per CPU this process may run on, fewer where ``OPENBLAS_NUM_THREADS``,
``GOTO_NUM_THREADS`` or ``OMP_NUM_THREADS`` say so): 200 MB with one thread, 330 MB with two,
measured with faiss-cpu on x86_64 Linux (``VmSize`` before and after ``import faiss``). Under an
address-space limit (``ulimit -v``, ``RLIMIT_AS``) that leaves less, the load does not fail with an
error Python can catch: the process dies of a segmentation fault, with no line at all. So the
room left is checked first, and a limit too low is said in one line with its repair.

Where the limit or the process's size cannot be read (no limit, not Linux), nothing is checked.
"""

from __future__ import annotations

import os
import resource
import sys
from types import ModuleType

from recall.errors import RecallError

# Measured 73 MB + 128 MB per BLAS thread (faiss-cpu 1.x, x86_64); rounded up so that a limit the
# check lets through is one the load survives.
BASE_BYTES = 96 << 20
PER_THREAD_BYTES = 136 << 20
_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


class AddressSpaceLimit(RecallError):
    """An address-space limit (``ulimit -v``) leaves too little room to load FAISS."""

    def __init__(self, limit: int, room: int, need: int) -> None:
        super().__init__(
            f"the address-space limit (`ulimit -v`: {limit >> 20:,} MB) leaves {max(room, 0) >> 20:,} MB, and "
            f"loading the vector index (FAISS) needs about {need >> 20:,} MB more: raise the limit (`ulimit -v "
            "unlimited`, or a container's), then run the command again; what was finished is kept")


def faiss() -> ModuleType:
    """The ``faiss`` module, after checking that loading it cannot crash the process."""
    if "faiss" not in sys.modules:
        import numpy  # noqa: F401  (FAISS loads it first; its own BLAS is in the room measured then)

        check_room(BASE_BYTES + PER_THREAD_BYTES * blas_threads())
    import faiss as module

    return module


def check_room(need: int) -> None:
    """Raise ``AddressSpaceLimit`` when the soft ``RLIMIT_AS`` leaves less than ``need`` bytes."""
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit == resource.RLIM_INFINITY:
        return
    used = address_space_used()
    if used is not None and limit - used < need:
        raise AddressSpaceLimit(limit, limit - used, need)


def address_space_used() -> int | None:
    """This process's virtual size (``VmSize``, Linux), or None where it cannot be read."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) << 10
    except (OSError, ValueError, IndexError):
        return None
    return None


def blas_threads() -> int:
    """How many threads FAISS's BLAS will reserve buffers for: the CPUs this process may run on,
    or fewer where the environment says so (as OpenBLAS reads it)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    for name in _THREAD_VARIABLES:
        value = os.environ.get(name, "").strip()
        if value.isdigit() and int(value) > 0:
            return max(1, min(int(value), cpus))
    return max(1, cpus)
