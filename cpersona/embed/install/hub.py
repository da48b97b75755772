"""Talking to the model hub through ``huggingface_hub`` (downloads, hub hashes, error classes).

``huggingface_hub`` reads HF_ENDPOINT, HF_HUB_OFFLINE, HF_TOKEN and the proxy
variables itself; HF_ENDPOINT and HF_HUB_OFFLINE are also read here at call
time because the library reads them once, at import.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cpersona.embed.registry import ModelManifest

# Exception class names (anywhere in the cause chain) that mean "the hub could not be reached".
# Names, not classes, because they differ across huggingface_hub's HTTP clients (requests, httpx, httpx2).
_NETWORK_ERROR_NAMES = {
    "ConnectError",
    "ConnectTimeout",
    "ReadTimeout",
    "WriteTimeout",
    "PoolTimeout",
    "TimeoutException",
    "NetworkError",
    "TransportError",
    "RemoteProtocolError",
    "ProxyError",
    "SSLError",
    "ConnectionError",
    "ChunkedEncodingError",
    "OfflineModeIsEnabled",
    "LocalEntryNotFoundError",
    "IncompleteRead",
}


def hub_offline() -> bool:
    """Whether HF_HUB_OFFLINE forbids network access (env read now, or as huggingface_hub saw it)."""
    raw = os.environ.get("HF_HUB_OFFLINE", "").strip().lower()
    if raw in {"1", "true", "yes", "on"}:
        return True
    try:
        from huggingface_hub import constants
    except ImportError:
        return False
    return bool(getattr(constants, "HF_HUB_OFFLINE", False))


def hub_endpoint() -> str | None:
    """HF_ENDPOINT as set now (None: huggingface_hub's default)."""
    value = os.environ.get("HF_ENDPOINT", "").strip()
    return value.rstrip("/") or None


def is_network_error(exc: BaseException) -> bool:
    """True when ``exc`` (or what caused it) is a connection, timeout or offline-mode error."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionError | TimeoutError):
            return True
        if any(cls.__name__ in _NETWORK_ERROR_NAMES for cls in type(current).__mro__):
            return True
        current = current.__cause__ or current.__context__
    return False


def is_not_found(exc: BaseException) -> bool:
    """True for the hub's 'repository / revision / file not found' errors."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    return (
        bool(
            names
            & {"RepositoryNotFoundError", "RevisionNotFoundError", "EntryNotFoundError", "GatedRepoError"}
        )
        and "LocalEntryNotFoundError" not in names
    )


@dataclass(frozen=True)
class HubFile:
    """The hub's own description of one file."""

    path: str
    size: int | None
    sha256: str | None  # LFS files: sha256 of the content
    blob_id: str | None  # git object id (sha1 of "blob <size>\\0" + content)


def _lfs_sha256(lfs: Any) -> str | None:
    if lfs is None:
        return None
    value = lfs.get("sha256") if isinstance(lfs, dict) else getattr(lfs, "sha256", None)
    return str(value).lower() if value else None


def hub_metadata(
    manifest: ModelManifest, revision: str | None, endpoint: str | None, token: str | bool | None = None
) -> tuple[str, dict[str, HubFile]]:
    """Resolve the revision to a commit and return (commit, hub metadata of the manifest's files).

    This is the first network call of a fetch, so connection problems surface
    here quickly, before anything is written to disk.
    """
    from huggingface_hub import HfApi

    info = HfApi(endpoint=endpoint).model_info(
        manifest.hub_repo, revision=revision, files_metadata=True, token=token
    )
    files: dict[str, HubFile] = {}
    for sibling in info.siblings or []:
        files[sibling.rfilename] = HubFile(
            sibling.rfilename, sibling.size, _lfs_sha256(getattr(sibling, "lfs", None)), sibling.blob_id
        )
    commit = info.sha or revision or "main"
    return commit, files


def download_file(
    manifest: ModelManifest,
    rel_path: str,
    commit: str,
    partial_dir: Path,
    endpoint: str | None,
    token: str | bool | None = None,
) -> Path:
    """Download one file into ``partial_dir`` (resuming an earlier partial download); return its path.

    Progress bars go to stderr (tqdm's default), never stdout.
    """
    from huggingface_hub import hf_hub_download

    return Path(
        hf_hub_download(
            manifest.hub_repo,
            rel_path,
            revision=commit,
            local_dir=partial_dir,
            endpoint=endpoint,
            token=token,
        )
    )
