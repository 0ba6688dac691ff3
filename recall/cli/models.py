"""`recall models`: list models, or fetch one (the only command that downloads)."""

from __future__ import annotations

import click

from recall.cli.common import fail_cleanly, say


@click.command()
@click.argument("name", required=False)
@fail_cleanly
def models(name: str | None) -> None:
    """List models, or fetch/assemble NAME (mpnet, e5, or a Hugging Face id).

    Downloads happen here and only here: indexing, the hook and the daemon never
    download anything.
    """
    from recall.embedding.files import fetch, list_models

    if not name:
        for line in list_models():
            say(line)
        return
    say(fetch(name))

