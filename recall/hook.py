"""The prompt hook under the name releases before the packages by layer registered it with
(``-m recall.hook``, ``-m recall.hook --agent codex``): an agent's settings keep that entry
until ``recall install`` runs again, and an upgrade must not make every message fail
meanwhile (stop 47, an outside tester). ``recall install`` replaces the entry and
``recall uninstall`` removes it (``recall.agents.install.FORMER_MODULES``)."""

import os

try:  # a half-written upgrade: nothing printed, exit 0, as recall.agents.hook promises
    from recall.agents.hook import main
except BaseException:  # noqa: BLE001
    if __name__ == "__main__":
        os._exit(0)
    raise

if __name__ == "__main__":
    main()
