"""``python -m recall.daemon [--foreground]``: what the hook starts, detached."""

from recall.daemon.lifecycle import main

if __name__ == "__main__":
    main()
