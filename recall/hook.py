"""The prompt hook under the name releases before the packages by layer registered it with
(``-m recall.hook``, ``-m recall.hook --agent codex``): an agent's settings keep that entry
until ``recall install`` runs again, and an upgrade must not make every message fail
meanwhile (stop 47, an outside tester). ``recall install`` replaces the entry and
``recall uninstall`` removes it (``recall.agents.install.FORMER_MODULES``)."""

from recall.agents.hook import main

if __name__ == "__main__":
    main()
