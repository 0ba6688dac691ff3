"""The ``recall`` command line, one module per concept (``main`` holds the group).

User errors print one line, never a traceback (``common.clean_errors``). Heavy modules
(the model, FAISS, watchdog, mcp, psycopg, Starlette) are imported inside the commands,
so ``recall --help`` stays fast.
"""

from recall.cli.common import UserError, clean_errors
from recall.cli.main import main, run

__all__ = ["UserError", "clean_errors", "main", "run"]
