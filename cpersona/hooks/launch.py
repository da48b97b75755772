"""The hook command's entry as a script: ``python -S …/cpersona/hooks/launch.py HOST EVENT …``.

``-S`` skips ``site`` (the .pth files of every installed package, an editable install's finder):
on every prompt that is the largest cost of starting Python after the interpreter itself. This
file puts the folder holding the ``cpersona`` package first on ``sys.path`` instead, which is all
the fast path needs (stdlib + cpersona.hooks); the in-process fallback runs ``site`` itself before
it imports NumPy and the storage engine.
"""

import os
import sys

sys.path[0] = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from cpersona.hooks.run import main  # noqa: E402 - the path above must come first

main()
