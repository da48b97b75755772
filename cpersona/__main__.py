"""``python -m cpersona``: the same as the ``cpersona`` console script."""

from cpersona.cli.main import entry

if __name__ == "__main__":
    entry()
