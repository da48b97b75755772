"""``python -m cpersona``: the same as the ``cpersona`` console script."""

import sys

from cpersona.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
