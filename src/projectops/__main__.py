"""``python -m projectops``: the ``projectops`` program (:mod:`projectops.cli`)."""

import sys

from projectops.cli import main

if __name__ == "__main__":
    sys.exit(main())
