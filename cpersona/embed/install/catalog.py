"""``cpersona models``: every known model, whether and where it is installed, which is active."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cpersona.embed.integrity import read_record
from cpersona.embed.model_hint import is_installed, model_hint
from cpersona.embed.registry import list_manifests

if TYPE_CHECKING:
    from cpersona.config import Settings


@dataclass(frozen=True)
class ModelStatus:
    """One row of the model listing."""

    name: str
    description: str
    dimension: int
    pooling: str
    license: str
    hub_repo: str
    path: str
    installed: bool
    active: bool
    size_bytes: int = 0
    source: str = ""
    installed_at: str = ""

    def to_json(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return asdict(self)


def _dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def list_models(settings: Settings, models_dir: str | Path | None = None) -> list[ModelStatus]:
    """Status of every manifest under ``models_dir`` (default ``settings.models_dir``)."""
    base = Path(models_dir if models_dir is not None else settings.models_dir).expanduser()
    rows: list[ModelStatus] = []
    for manifest in list_manifests():
        path = base / manifest.name
        installed = is_installed(manifest, base)
        record = read_record(path) if installed else None
        source = ""
        if record is not None:
            kind = record.source.get("kind", "")
            detail = record.source.get("path") or record.source.get("repo", "")
            rev = record.source.get("revision", "")
            source = f"{kind}: {detail}" + (f"@{rev[:12]}" if rev else "")
        rows.append(
            ModelStatus(
                name=manifest.name,
                description=manifest.description,
                dimension=manifest.dimension,
                pooling=manifest.pooling,
                license=manifest.license,
                hub_repo=manifest.hub_repo,
                path=str(path),
                installed=installed,
                active=settings.embedding_mode == "onnx" and settings.embedding_model == manifest.name,
                size_bytes=_dir_size(path) if installed else 0,
                source=source,
                installed_at=record.installed_at if record else "",
            )
        )
    return rows


def format_model_list(rows: list[ModelStatus], settings: Settings) -> str:
    """Human-readable table of ``rows`` plus a line on the active embedding mode."""
    lines = []
    for row in rows:
        mark = "*" if row.active else " "
        state = (
            f"installed ({row.size_bytes / 1e6:.0f} MB) at {row.path}" if row.installed else "not installed"
        )
        lines.append(
            f"{mark} {row.name:<20} {row.dimension:>4}-d {row.pooling:<10} {row.license:<14} {state}"
        )
        if row.installed and row.source:
            lines.append(f"  {'':<20} source {row.source}, installed {row.installed_at or 'unknown'}")
    if settings.embedding_mode == "onnx":
        known = {r.name for r in rows}
        active = settings.embedding_model
        note = "" if active in known else " (unknown model: no manifest)"
        lines.append(f"active: {active}{note} (* marks it; CPERSONA_EMBEDDING_MODEL)")
        if active in known and not any(r.active and r.installed for r in rows):
            models_dir = Path(rows[0].path).parent if rows else settings.models_dir
            lines.append(f"{active} is not installed; what to do:")
            lines += [f"  - {step}" for step in model_hint(active, models_dir).steps]
    elif settings.embedding_mode == "http":
        lines.append(
            f"active: http backend at {settings.embedding_url or '(CPERSONA_EMBEDDING_URL not set)'}"
        )
    else:
        lines.append("active: none (CPERSONA_EMBEDDING_MODE=none, keyword-only recall)")
    return "\n".join(lines)
