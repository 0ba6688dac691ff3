"""The daemon's client: find it, trust it, ask it one question within a budget, start it (stdlib only:
the hook imports it)."""
