"""fetch-model: --from (dirs, archives, refusals, atomicity), install records, the hub up to the network."""

from __future__ import annotations

import io
import shutil
import tarfile
import time
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from model_fixtures import free_loopback_port

from cpersona.config import Settings
from cpersona.embed.install import fetch
from cpersona.embed.install.fetch import (
    FetchError,
    ensure_default_model,
    fetch_from_hub,
    fetch_model,
    install_from,
)
from cpersona.embed.integrity import read_record, sha256_file
from cpersona.embed.registry import ModelFile, load_manifest
from cpersona.embed.runtime.base import EmbeddingFault, FaultKind
from cpersona.embed.runtime.onnx_backend import OnnxBackend

MINILM = "all-minilm-l6-v2"


def leftovers(models: Path) -> list[str]:
    """Anything in a models dir besides installed models and lock files."""
    if not models.exists():
        return []
    return sorted(p.name for p in models.iterdir() if p.name.startswith(".") and not p.name.endswith(".lock"))


def assert_nothing_installed(models: Path, name: str = MINILM) -> None:
    assert not (models / name).exists()
    assert leftovers(models) == []


def test_from_directory_installs_and_records(minilm_source_dir: Path, tmp_path: Path) -> None:
    models = tmp_path / "models"
    stream = io.StringIO()
    target = install_from(minilm_source_dir, MINILM, models, stream=stream)
    assert target == models / MINILM
    assert (target / "onnx" / "model.onnx").is_file() and (target / "tokenizer.json").is_file()
    record = read_record(target)
    assert record is not None and record.manifest == MINILM
    assert record.source == {"kind": "from", "path": str(minilm_source_dir.resolve())}
    assert record.installed_at.endswith("Z")
    onnx_rec = record.files["onnx/model.onnx"]
    assert onnx_rec.sha256 == sha256_file(target / "onnx" / "model.onnx")
    assert onnx_rec.size == (target / "onnx" / "model.onnx").stat().st_size
    assert onnx_rec.mtime_ns == (target / "onnx" / "model.onnx").stat().st_mtime_ns
    assert "Apache-2.0" in stream.getvalue()  # licence notice went to the given stream
    assert leftovers(models) == []


def test_flat_layout_and_tar_gz_with_top_folder(minilm_source_dir: Path, tmp_path: Path) -> None:
    flat = tmp_path / "flat"
    flat.mkdir()
    shutil.copy(minilm_source_dir / "onnx" / "model.onnx", flat / "model.onnx")
    shutil.copy(minilm_source_dir / "tokenizer.json", flat / "tokenizer.json")
    archive = tmp_path / "minilm.tar.gz"
    with tarfile.open(archive, "w:gz", compresslevel=1) as tar:
        tar.add(flat, arcname="all-MiniLM-L6-v2")
    models = tmp_path / "models"
    target = install_from(archive, MINILM, models, stream=io.StringIO())
    assert (target / "onnx" / "model.onnx").is_file()
    assert leftovers(models) == []
    OnnxBackend(load_manifest(MINILM), target).load()


def test_zip_archive(minilm_source_dir: Path, tmp_path: Path) -> None:
    archive = tmp_path / "minilm.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.write(minilm_source_dir / "onnx" / "model.onnx", "onnx/model.onnx")
        zf.write(minilm_source_dir / "tokenizer.json", "tokenizer.json")
    target = install_from(archive, MINILM, tmp_path / "models", stream=io.StringIO())
    assert read_record(target) is not None


def test_path_traversal_archive_refused(minilm_source_dir: Path, tmp_path: Path) -> None:
    archive = tmp_path / "evil.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(minilm_source_dir / "tokenizer.json", arcname="../evil.json")
    models = tmp_path / "models"
    with pytest.raises(FetchError) as info:
        install_from(archive, MINILM, models, stream=io.StringIO())
    assert info.value.kind == "bad_source" and "escapes" in str(info.value)
    assert not (tmp_path / "evil.json").exists() and not (models / "evil.json").exists()
    assert_nothing_installed(models)


def test_zip_traversal_refused(tmp_path: Path) -> None:
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("../../evil.txt", "x")
    with pytest.raises(FetchError, match="escapes"):
        install_from(archive, MINILM, tmp_path / "models", stream=io.StringIO())
    assert_nothing_installed(tmp_path / "models")


def test_missing_file_refused_with_clear_message(minilm_source_dir: Path, tmp_path: Path) -> None:
    partial = tmp_path / "partial"
    partial.mkdir()
    shutil.copy(minilm_source_dir / "tokenizer.json", partial / "tokenizer.json")
    models = tmp_path / "models"
    with pytest.raises(FetchError) as info:
        install_from(partial, MINILM, models, stream=io.StringIO())
    assert info.value.kind == "missing_files"
    assert "missing onnx/model.onnx" in str(info.value) and "\n" not in str(info.value)
    assert_nothing_installed(models)


def test_nonexistent_source(tmp_path: Path) -> None:
    with pytest.raises(FetchError, match="no such file"):
        install_from(tmp_path / "nope", MINILM, tmp_path / "models")


def test_broken_onnx_refused(minilm_source_dir: Path, tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(minilm_source_dir, src)
    (src / "onnx" / "model.onnx").write_bytes(b"garbage" * 1000)
    models = tmp_path / "models"
    with pytest.raises(FetchError) as info:
        install_from(src, MINILM, models, stream=io.StringIO())
    assert info.value.kind == "invalid_model" and "does not load" in str(info.value)
    assert_nothing_installed(models)


def test_wrong_model_for_manifest_refused(tiny_jina, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # A 768-d graph with two inputs offered as the 384-d, three-input MiniLM.
    src = tmp_path / "src"
    shutil.copytree(tiny_jina.source_dir, src)
    manifest = replace(
        load_manifest(MINILM), files=(ModelFile("onnx/model.onnx"), ModelFile("tokenizer.json"))
    )
    with pytest.raises(FetchError) as info:
        install_from(src, manifest, tmp_path / "models", stream=io.StringIO())
    assert info.value.kind == "invalid_model"
    assert_nothing_installed(tmp_path / "models")


def test_interrupted_copy_leaves_nothing(
    minilm_source_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    models = tmp_path / "models"
    real_copy = shutil.copy2
    calls = {"n": 0}

    def copy_then_interrupt(src, dst, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real_copy(src, dst, *args, **kwargs)

    monkeypatch.setattr(fetch.shutil, "copy2", copy_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        install_from(minilm_source_dir, MINILM, models, stream=io.StringIO())
    assert calls["n"] == 2
    assert_nothing_installed(models)


def test_interrupted_reinstall_keeps_the_old_install(
    minilm_source_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    models = tmp_path / "models"
    install_from(minilm_source_dir, MINILM, models, stream=io.StringIO())
    before = read_record(models / MINILM)

    def interrupt(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt

    monkeypatch.setattr(fetch.shutil, "copy2", interrupt)
    with pytest.raises(KeyboardInterrupt):
        install_from(minilm_source_dir, MINILM, models, stream=io.StringIO())
    assert read_record(models / MINILM) == before
    assert leftovers(models) == []
    OnnxBackend(load_manifest(MINILM), models / MINILM).load()


def test_reinstall_replaces_the_old_install(minilm_source_dir: Path, tmp_path: Path) -> None:
    models = tmp_path / "models"
    install_from(minilm_source_dir, MINILM, models, stream=io.StringIO())
    (models / MINILM / "stray-file").write_text("old")
    install_from(minilm_source_dir, MINILM, models, stream=io.StringIO())
    assert not (models / MINILM / "stray-file").exists()
    assert leftovers(models) == []


def test_corruption_after_install_detected_on_load(minilm_source_dir: Path, tmp_path: Path) -> None:
    models = tmp_path / "models"
    target = install_from(minilm_source_dir, MINILM, models, stream=io.StringIO())
    tok = target / "tokenizer.json"
    data = bytearray(tok.read_bytes())
    data[100] ^= 0x01
    tok.write_bytes(bytes(data))
    with pytest.raises(EmbeddingFault) as info:
        OnnxBackend(load_manifest(MINILM), target).load()
    assert info.value.kind == FaultKind.HASH_MISMATCH and "tokenizer.json" in info.value.evidence


def test_manifest_declared_hash_mismatch_refused(minilm_source_dir: Path, tmp_path: Path) -> None:
    base = load_manifest(MINILM)
    manifest = replace(
        base, files=(ModelFile("onnx/model.onnx", sha256="0" * 64), ModelFile("tokenizer.json"))
    )
    models = tmp_path / "models"
    with pytest.raises(FetchError) as info:
        install_from(minilm_source_dir, manifest, models, stream=io.StringIO())
    assert info.value.kind == "hash_mismatch" and "onnx/model.onnx" in str(info.value)
    assert_nothing_installed(models)


def test_manifest_declared_matching_hash_accepted(minilm_source_dir: Path, tmp_path: Path) -> None:
    onnx_path = minilm_source_dir / "onnx" / "model.onnx"
    manifest = replace(
        load_manifest(MINILM),
        files=(
            ModelFile("onnx/model.onnx", size=onnx_path.stat().st_size, sha256=sha256_file(onnx_path)),
            ModelFile("tokenizer.json"),
        ),
    )
    assert install_from(minilm_source_dir, manifest, tmp_path / "models", stream=io.StringIO()).is_dir()


def test_unknown_model(tmp_path: Path) -> None:
    with pytest.raises(FetchError) as info:
        fetch_model("no-such-model", tmp_path / "models", source=tmp_path)
    assert info.value.kind == "unknown_model"
    assert "jina-v5-nano" in str(info.value) and "all-minilm-l6-v2" in str(info.value)


# -- hub, up to the network boundary (only loopback addresses) -----------------------------------


def test_hub_offline_mode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    models = tmp_path / "models"
    with pytest.raises(FetchError) as info:
        fetch_from_hub(MINILM, models, stream=io.StringIO())
    message = str(info.value)
    assert info.value.kind == "no_network" and message.startswith("no network")
    assert "--from" in message and "\n" not in message
    assert_nothing_installed(models)


def test_hub_unreachable_endpoint(tmp_path: Path, no_hub_env: None) -> None:
    models = tmp_path / "models"
    started = time.monotonic()
    with pytest.raises(FetchError) as info:
        fetch_model("jina-v5-nano", models, stream=io.StringIO())
    assert info.value.kind == "no_network" and str(info.value).startswith("no network")
    assert "127.0.0.1" in str(info.value) and "\n" not in str(info.value)
    assert time.monotonic() - started < 20
    assert_nothing_installed(models, "jina-v5-nano")


def test_ensure_default_model_reports_instead_of_raising(tmp_path: Path, no_hub_env: None) -> None:
    settings = Settings(models_dir=tmp_path / "models", embedding_model="jina-v5-nano")
    problem = ensure_default_model(settings, stream=io.StringIO())
    assert problem is not None and problem.startswith("no network")
    assert_nothing_installed(tmp_path / "models", "jina-v5-nano")


def test_ensure_default_model_noops(minilm_models_dir: Path, tmp_path: Path, no_hub_env: None) -> None:
    stream = io.StringIO()
    assert (
        ensure_default_model(Settings(models_dir=minilm_models_dir, embedding_model=MINILM), stream) is None
    )
    assert ensure_default_model(Settings(models_dir=tmp_path, embedding_mode="none"), stream) is None
    assert ensure_default_model(Settings(models_dir=tmp_path, auto_fetch_model=False), stream) is None
    assert stream.getvalue() == ""
    unknown = ensure_default_model(Settings(models_dir=tmp_path, embedding_model="nope"), stream)
    assert unknown is not None and "unknown model" in unknown


def test_free_loopback_port_is_closed() -> None:
    import socket

    port = free_loopback_port()
    with socket.socket() as sock, pytest.raises(ConnectionRefusedError):
        sock.connect(("127.0.0.1", port))
