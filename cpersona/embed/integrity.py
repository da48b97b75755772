"""Install records and file integrity checks shared by fetch-model and the ONNX backend.

``fetch-model`` writes ``<models_dir>/<name>/install.json`` listing every file
it installed with its size, mtime_ns and sha256. The backend checks sizes on
every load (cheap) and re-hashes a file only when its mtime_ns differs from the
record or a full check is asked for, so a 1 GB model does not cost a full read
at each start while later corruption by rewriting is still caught.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cpersona.core.atomic import write_json
from cpersona.core.text import iso_seconds

RECORD_NAME = "install.json"
RECORD_FORMAT = 1
_CHUNK = 4 * 1024 * 1024


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def git_blob_sha1(path: Path) -> str:
    """The git object id of a file (how the hub identifies small, non-LFS files)."""
    digest = hashlib.sha1(usedforsecurity=False)
    digest.update(f"blob {path.stat().st_size}\0".encode())
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class FileRecord:
    """What was installed for one file."""

    path: str
    size: int
    mtime_ns: int
    sha256: str


@dataclass
class InstallRecord:
    """Contents of install.json."""

    manifest: str
    files: dict[str, FileRecord]
    source: dict[str, Any]
    installed_at: str
    format: int = RECORD_FORMAT

    def to_json(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {
            "format": self.format,
            "manifest": self.manifest,
            "installed_at": self.installed_at,
            "source": self.source,
            "files": {
                p: {"size": r.size, "mtime_ns": r.mtime_ns, "sha256": r.sha256} for p, r in self.files.items()
            },
        }


def record_file(model_dir: Path, rel_path: str, sha256: str | None = None) -> FileRecord:
    """Describe an installed file (hashing it unless the caller already has the hash)."""
    full = model_dir / rel_path
    st = full.stat()
    return FileRecord(rel_path, st.st_size, st.st_mtime_ns, sha256 or sha256_file(full))


def now_iso() -> str:
    """Current UTC time as ISO 8601 (seconds)."""
    return iso_seconds()


def write_record(model_dir: Path, record: InstallRecord) -> Path:
    """Write install.json atomically (cpersona.core.atomic) so a crash never leaves half a record."""
    target = model_dir / RECORD_NAME
    # The record is as public as the model files beside it (a temp file starts 0600).
    write_json(target, record.to_json(), mode=0o644)
    return target


def read_record(model_dir: Path) -> InstallRecord | None:
    """The install record of a model directory, or None when absent or unreadable."""
    path = model_dir / RECORD_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        files = {
            p: FileRecord(p, int(v["size"]), int(v.get("mtime_ns", 0)), str(v["sha256"]))
            for p, v in data.get("files", {}).items()
        }
        return InstallRecord(
            manifest=str(data.get("manifest", "")),
            files=files,
            source=dict(data.get("source", {})),
            installed_at=str(data.get("installed_at", "")),
            format=int(data.get("format", RECORD_FORMAT)),
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


@dataclass(frozen=True)
class Mismatch:
    """One file that does not match its record."""

    path: str
    what: str  # "missing" | "size" | "sha256"
    expected: str
    actual: str

    def describe(self) -> str:
        """One-line human description."""
        if self.what == "missing":
            return f"{self.path}: file missing"
        return f"{self.path}: {self.what} {self.actual} != recorded {self.expected}"


def verify_against_record(
    model_dir: Path, record: InstallRecord, full: bool = False
) -> tuple[list[Mismatch], bool]:
    """Compare installed files with their record.

    Returns (mismatches, refreshed): ``refreshed`` is True when a file's mtime
    changed but its hash still matched, so the caller may rewrite the record
    with the new mtime and skip the re-hash next time.
    """
    mismatches: list[Mismatch] = []
    refreshed = False
    for rel, rec in record.files.items():
        full_path = model_dir / rel
        try:
            st = full_path.stat()
        except FileNotFoundError:
            mismatches.append(Mismatch(rel, "missing", "present", "absent"))
            continue
        if st.st_size != rec.size:
            mismatches.append(Mismatch(rel, "size", str(rec.size), str(st.st_size)))
            continue
        if full or st.st_mtime_ns != rec.mtime_ns:
            actual = sha256_file(full_path)
            if actual != rec.sha256:
                mismatches.append(Mismatch(rel, "sha256", rec.sha256, actual))
            elif st.st_mtime_ns != rec.mtime_ns:
                record.files[rel] = FileRecord(rel, rec.size, st.st_mtime_ns, rec.sha256)
                refreshed = True
    return mismatches, refreshed
