"""The ``recall-eval`` subcommands, one module per command (each exposes ``command``, a click command)."""
