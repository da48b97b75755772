"""Model manifests: contents, lookup, errors, and the one packaged source wheels carry."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

import pytest

from cpersona.config import Settings
from cpersona.embed import registry
from cpersona.embed.registry import (
    ManifestError,
    UnknownModelError,
    list_manifests,
    load_manifest,
    model_dir,
    parse_manifest,
)

REPO = Path(__file__).resolve().parents[2]


def test_known_models_are_listed() -> None:
    names = [m.name for m in list_manifests()]
    assert "jina-v5-nano" in names and "all-minilm-l6-v2" in names


def test_jina_manifest_matches_the_spec() -> None:
    m = load_manifest("jina-v5-nano")
    assert m.hub_repo == "jinaai/jina-embeddings-v5-text-nano-retrieval"
    assert {f.path for f in m.files} == {"onnx/model.onnx", "onnx/model.onnx_data", "tokenizer.json"}
    assert (m.dimension, m.pooling) == (768, "last_token")
    assert (m.query_prompt, m.document_prompt) == ("Query: ", "Document: ")
    assert 256 in m.matryoshka_dims and max(m.matryoshka_dims) == 768
    assert "CC BY-NC 4.0" in m.license_notice and "non-commercial" in m.license_notice
    assert m.inputs == ("input_ids", "attention_mask") and m.output_name == "last_hidden_state"


def test_minilm_manifest_matches_the_spec() -> None:
    m = load_manifest("all-minilm-l6-v2")
    assert m.hub_repo == "sentence-transformers/all-MiniLM-L6-v2"
    assert {f.path for f in m.files} == {"onnx/model.onnx", "tokenizer.json"}
    assert (m.dimension, m.pooling, m.max_tokens, m.license) == (384, "mean", 256, "Apache-2.0")
    assert (m.query_prompt, m.document_prompt, m.matryoshka_dims) == ("", "", ())
    assert set(m.inputs) == {"input_ids", "attention_mask", "token_type_ids"}


def test_no_invented_hashes() -> None:
    # The hub is unreachable here: a hash in a manifest must come from a real check, never a guess.
    for m in list_manifests():
        for f in m.files:
            assert f.sha256 is None or len(f.sha256) == 64


def test_unknown_model_lists_known_names() -> None:
    with pytest.raises(UnknownModelError) as info:
        load_manifest("no-such-model")
    assert "jina-v5-nano" in str(info.value) and "all-minilm-l6-v2" in str(info.value)


def test_model_dir_from_settings_or_path(tmp_path: Path) -> None:
    assert model_dir(tmp_path, "all-minilm-l6-v2") == tmp_path / "all-minilm-l6-v2"
    assert model_dir(Settings(models_dir=tmp_path), "jina-v5-nano") == tmp_path / "jina-v5-nano"
    with pytest.raises(ManifestError):
        model_dir(tmp_path, "../escape")


@pytest.mark.parametrize(
    "change, message",
    [
        ({"pooling": "max"}, "pooling"),
        ({"dimension": 0}, "positive"),
        ({"matryoshka_dims": [1024]}, "matryoshka"),
        ({"inputs": ["input_ids", "pixel_values"]}, "unsupported"),
        ({"name": "../x"}, "name"),
        ({"onnx_file": "other.onnx"}, "listed"),
    ],
)
def test_malformed_manifest_is_refused(change: dict, message: str) -> None:
    data = tomllib.loads((registry.MANIFEST_DIR / "all-minilm-l6-v2.toml").read_text())
    data.update(change)
    with pytest.raises(ManifestError, match=message):
        parse_manifest(data)


def _repo_tomls() -> list[Path]:
    skip = {".venv", "build", "dist", ".git", "node_modules"}
    return [
        p
        for p in REPO.rglob("*.toml")
        if not skip.intersection(p.relative_to(REPO).parts) and not any(".egg-info" in x for x in p.parts)
    ]


def test_manifests_have_one_source() -> None:
    # One copy only: any TOML in the repository that looks like a model manifest must be in the package.
    manifests = sorted(p for p in _repo_tomls() if "hub_repo" in tomllib.loads(p.read_text(encoding="utf-8")))
    assert manifests, "found no manifests at all"
    outside = [str(p.relative_to(REPO)) for p in manifests if p.parent != registry.MANIFEST_DIR]
    assert outside == [], f"a second copy of the manifests: {outside}; keep them in cpersona/embed/manifests/"
    assert sorted(p.name for p in manifests) == sorted(p.name for p in registry.MANIFEST_DIR.glob("*.toml"))


def test_every_manifest_is_package_data() -> None:
    # What a wheel carries is decided by pyproject's package-data globs (relative to the package).
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["cpersona"]
    package_root = REPO / "cpersona"
    files = sorted(registry.MANIFEST_DIR.glob("*.toml"))
    assert files
    for path in files:
        rel = path.relative_to(package_root).as_posix()
        assert any(fnmatch.fnmatchcase(rel, pat) for pat in patterns), f"{rel} is not package data"


def test_the_registry_reads_the_packaged_directory() -> None:
    assert registry.manifest_dir() == registry.MANIFEST_DIR
    assert registry.MANIFEST_DIR.is_relative_to(Path(registry.__file__).resolve().parent)
    assert {m.source for m in list_manifests()} == set(registry.MANIFEST_DIR.glob("*.toml"))
