"""The read tracker under the name releases before the packages by layer registered it with
(``-m recall.track``): kept for the entries an agent's settings still hold after an upgrade
(``recall.hook`` says why)."""

import os

try:  # a half-written upgrade: nothing printed, exit 0, as recall.agents.track promises
    from recall.agents.track import main
except BaseException:  # noqa: BLE001
    if __name__ == "__main__":
        os._exit(0)
    raise

if __name__ == "__main__":
    main()
