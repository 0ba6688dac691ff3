"""``recall ui``: a local web page to look at what recall knows, try a message, see what
it injected and how well it does. Server-rendered (Starlette + Jinja2, no script),
served on 127.0.0.1 behind a per-launch token; searches go to the running daemon.
"""
