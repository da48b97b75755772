"""``python -m cpersona.hooks HOST EVENT …``: the hook command (cpersona/hooks/run.py)."""

from cpersona.hooks.run import main

main()
