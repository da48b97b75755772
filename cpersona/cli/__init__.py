"""Command-line interface (``cpersona``); the entry point is ``cpersona.cli.main.main``."""
