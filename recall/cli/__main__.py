"""``python -m recall.cli``: the ``recall`` command."""

import os

from recall.cli.main import run

if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    run()
