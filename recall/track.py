"""The read tracker under the name releases before the packages by layer registered it with
(``-m recall.track``): kept for the entries an agent's settings still hold after an upgrade
(``recall.hook`` says why)."""

from recall.agents.track import main

if __name__ == "__main__":
    main()
