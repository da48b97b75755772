"""The model registry: one TOML manifest per embedding model.

A manifest is data only (hub repo, files, pooling, dimension, prompts,
licence). Adding a model means adding a manifest file.

The manifests live in one place, ``cpersona/embed/manifests/``, shipped as
package data (``pyproject.toml``), so a source checkout, an editable install
and a built wheel all read the same files. ``models/`` in the repository holds
no manifests (see docs/decisions.md); ``tests/embed/test_registry.py`` fails if
a second copy appears or a manifest is not packaged.
"""

from __future__ import annotations

import functools
import logging
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cpersona.embed.selftest_spec import SelfTestSpec, SelfTestSpecError, parse_self_test

if TYPE_CHECKING:
    from cpersona.config import Settings

log = logging.getLogger(__name__)

POOLING_MODES = ("last_token", "mean", "cls")

#: Inputs the ONNX backend knows how to build from a tokenised batch.
SUPPORTED_INPUTS = ("input_ids", "attention_mask", "token_type_ids", "position_ids")

#: The one directory manifests are read from (package data, so wheels carry it).
MANIFEST_DIR = Path(__file__).resolve().parent / "manifests"

# Model names become directory names: keep them to one safe path component.
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class ManifestError(ValueError):
    """A manifest file is malformed or a model name is unknown."""


class UnknownModelError(ManifestError):
    """No manifest has the requested name; the message lists the known ones."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = known
        super().__init__(f"unknown model {name!r}; known models: {', '.join(known) or '(none)'}")


@dataclass(frozen=True)
class ModelFile:
    """One file of a model, as a path relative to the model directory."""

    path: str
    size: int | None = None
    sha256: str | None = None
    required: bool = True


@dataclass(frozen=True)
class ModelManifest:
    """Everything the backends and fetch-model need to know about one model."""

    name: str
    hub_repo: str
    dimension: int
    pooling: str
    max_tokens: int
    onnx_file: str
    files: tuple[ModelFile, ...]
    revision: str | None = None
    license: str = ""
    license_notice: str = ""
    description: str = ""
    query_prompt: str = ""
    document_prompt: str = ""
    matryoshka_dims: tuple[int, ...] = ()
    output_name: str = "last_hidden_state"
    inputs: tuple[str, ...] = ("input_ids", "attention_mask")
    tokenizer_file: str = "tokenizer.json"
    self_test: SelfTestSpec | None = None
    #: The languages the model reads (ISO 639-1 codes; "*" = multilingual): recall weighs the vector
    #: channel by the share of a query written in their scripts (retrieval/language.py).
    languages: tuple[str, ...] = ("*",)
    source: Path | None = field(default=None, compare=False)

    @property
    def required_files(self) -> tuple[ModelFile, ...]:
        """Files that must be present for the model to load."""
        return tuple(f for f in self.files if f.required)

    def file(self, path: str) -> ModelFile | None:
        """The manifest entry for ``path``, if listed."""
        for entry in self.files:
            if entry.path == path:
                return entry
        return None


def _opt_str(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _languages(value: Any, where: str) -> tuple[str, ...]:
    """The manifest's ``languages`` (default: multilingual, the safe reading for a model we know nothing of)."""
    if value is None:
        return ("*",)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip() for v in value):
        raise ManifestError(f'{where}: languages must be a non-empty list of language codes or ["*"]')
    return tuple(v.strip().lower() for v in value)


def parse_manifest(data: dict[str, Any], source: Path | None = None) -> ModelManifest:
    """Validate a decoded TOML table and build a ModelManifest; raise ManifestError if invalid."""
    where = str(source) if source else "manifest"

    def need(key: str) -> Any:
        if key not in data or data[key] in (None, ""):
            raise ManifestError(f"{where}: missing required key {key!r}")
        return data[key]

    name = str(need("name"))
    if not _NAME_RE.match(name):
        raise ManifestError(f"{where}: model name {name!r} must be letters, digits, '.', '_' or '-'")
    pooling = str(need("pooling"))
    if pooling not in POOLING_MODES:
        raise ManifestError(f"{where}: pooling {pooling!r} is not one of {', '.join(POOLING_MODES)}")
    try:
        dimension = int(need("dimension"))
        max_tokens = int(need("max_tokens"))
        dims = tuple(int(d) for d in data.get("matryoshka_dims", []) or [])
    except (TypeError, ValueError) as exc:
        raise ManifestError(f"{where}: dimension, max_tokens and matryoshka_dims must be integers") from exc
    if dimension <= 0 or max_tokens <= 0:
        raise ManifestError(f"{where}: dimension and max_tokens must be positive")
    if any(d <= 0 or d > dimension for d in dims):
        raise ManifestError(f"{where}: matryoshka_dims must lie in 1..{dimension}")
    inputs = tuple(str(i) for i in data.get("inputs", ["input_ids", "attention_mask"]))
    unsupported = [i for i in inputs if i not in SUPPORTED_INPUTS]
    if unsupported:
        raise ManifestError(f"{where}: unsupported ONNX inputs {unsupported}")

    files: list[ModelFile] = []
    for raw in data.get("files", []) or []:
        if not isinstance(raw, dict) or not raw.get("path"):
            raise ManifestError(f"{where}: every [[files]] entry needs a path")
        size = raw.get("size")
        sha = _opt_str(raw.get("sha256"))
        files.append(
            ModelFile(
                path=str(raw["path"]),
                size=int(size) if size not in (None, "", 0) else None,
                sha256=sha.lower() if sha else None,
                required=bool(raw.get("required", True)),
            )
        )
    onnx_file = str(need("onnx_file"))
    tokenizer_file = str(data.get("tokenizer_file", "tokenizer.json"))
    listed = {f.path for f in files}
    for needed in (onnx_file, tokenizer_file):
        if needed not in listed:
            raise ManifestError(f"{where}: {needed!r} must be listed under [[files]]")

    try:
        self_test = parse_self_test(data.get("self_test"))
    except SelfTestSpecError as exc:
        raise ManifestError(f"{where}: {exc}") from exc

    return ModelManifest(
        name=name,
        hub_repo=str(need("hub_repo")),
        dimension=dimension,
        pooling=pooling,
        max_tokens=max_tokens,
        onnx_file=onnx_file,
        files=tuple(files),
        revision=_opt_str(data.get("revision")),
        license=str(data.get("license", "")),
        license_notice=str(data.get("license_notice", "")),
        description=str(data.get("description", "")),
        query_prompt=str(data.get("query_prompt", "") or ""),
        document_prompt=str(data.get("document_prompt", "") or ""),
        matryoshka_dims=dims,
        output_name=str(data.get("output_name", "last_hidden_state")),
        inputs=inputs,
        tokenizer_file=tokenizer_file,
        self_test=self_test,
        languages=_languages(data.get("languages"), where),
        source=source,
    )


def load_manifest_file(path: str | Path) -> ModelManifest:
    """Read and validate one manifest file."""
    path = Path(path)
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ManifestError(f"{path}: cannot read manifest: {exc}") from exc
    return parse_manifest(data, source=path)


def manifest_dir() -> Path:
    """The directory manifests are read from (``cpersona/embed/manifests/``)."""
    return MANIFEST_DIR


def list_manifests() -> list[ModelManifest]:
    """All valid manifests, sorted by name (a malformed file is logged and skipped)."""
    manifests = []
    for path in sorted(manifest_dir().glob("*.toml")):
        try:
            manifests.append(load_manifest_file(path))
        except ManifestError as exc:
            log.warning("skipping model manifest: %s", exc)
    return sorted(manifests, key=lambda m: m.name)


def known_model_names() -> list[str]:
    """Names of all known models, sorted."""
    return [m.name for m in list_manifests()]


def load_manifest(name: str) -> ModelManifest:
    """The manifest called ``name``.

    Raises UnknownModelError (listing the known names) when there is none, or
    ManifestError when its file is malformed.
    """
    direct = manifest_dir() / f"{name}.toml"
    if _NAME_RE.match(name) and direct.is_file():
        manifest = load_manifest_file(direct)
        if manifest.name == name:
            return manifest
    for manifest in list_manifests():
        if manifest.name == name:
            return manifest
    raise UnknownModelError(name, known_model_names())


@functools.lru_cache(maxsize=128)
def expected_dimension(model_id: str) -> int | None:
    """The length vectors stored under ``model_id`` must have, when the registry knows the model.

    ``name`` is the manifest's full dimension; ``name@D`` (a Matryoshka cut, as the ONNX
    backend names it) is D when the manifest offers that cut, else 0: no vector may carry
    an id naming a cut the model does not have. None for a model no manifest describes
    (``http:`` ids, private models): nothing is known to check against. Manifests are
    package data, so the answer is cached.
    """
    name, _, cut = model_id.partition("@")
    manifest = next((m for m in list_manifests() if m.name == name), None)
    if manifest is None:
        return None
    if not cut:
        return manifest.dimension
    if not cut.isdigit():
        return 0
    wanted = int(cut)
    return wanted if wanted in manifest.matryoshka_dims and wanted <= manifest.dimension else 0


def model_dir(settings_or_models_dir: Settings | str | Path, name: str) -> Path:
    """Directory a model is installed in: ``<CPERSONA_MODELS_DIR>/<name>``."""
    if not _NAME_RE.match(name):
        raise ManifestError(f"model name {name!r} must be letters, digits, '.', '_' or '-'")
    if isinstance(settings_or_models_dir, str | Path):
        base = Path(settings_or_models_dir)
    else:
        base = Path(settings_or_models_dir.models_dir)
    return base.expanduser() / name
