"""The calibration sidecar ``<db>.calibration.json``: per-agent calibration and precision, written atomically.

Layout (docs/retrieval.md)::

    {"format": 1, "agents": {"<agent_id>": {
        "fingerprint": {"scoring_version": 2, "model_id": "...", "dimension": 384},
        "created_at": "...", "method": "separation", "sample_size": 2000, "rows": 1234,
        "percentile": null, "z_factor": null,
        "vector": {"threshold": 0.61, "null_mean": ..., ...},
        "gate": {"kind": "query_evidence", "probes": 80, "probe_evidence": [...],
                 "probe_top_cosines": [...], "weight": 1.0,
                 "lexicon": {"rows": 1234, "entities": [...], "frequent": "word count ..."}},
        "precision": {"level": "strict", "beta": null}}}}

``precision`` may exist without a calibration (set before any model was ready). Writes go to a
temporary file in the same directory and replace the sidecar with ``os.replace``, so a reader sees
the old file or the new one, never half of one. Readers cache by mtime and size.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from cpersona.atomic import write_json

#: Bump when what the gate compares (or how its threshold is derived) changes: stored calibrations
#: then no longer match and are redone in the background.
SCORING_VERSION = 2  # 2: the gate keys on evidence (cosine + coverage of the non-name words)

FORMAT = 1


def sidecar_path(db_path: Path) -> Path:
    """``<db>.calibration.json`` beside the database file."""
    return db_path.with_name(db_path.name + ".calibration.json")


def fingerprint(scoring_version: int, model_id: str, dimension: int) -> dict[str, Any]:
    """What a calibration is only valid for."""
    return {"scoring_version": scoring_version, "model_id": model_id, "dimension": dimension}


class Sidecar:
    """Thread-safe access to one sidecar file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.RLock()
        self._cache: dict[str, Any] | None = None
        self._stamp: tuple[float, int] | None = None

    def _read(self) -> dict[str, Any]:
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            self._cache, self._stamp = None, None
            return {"format": FORMAT, "agents": {}}
        stamp = (stat.st_mtime, stat.st_size)
        if self._cache is None or stamp != self._stamp:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                data = {}  # unreadable: treated as uncalibrated; the next write replaces it
            agents = data.get("agents") if isinstance(data, dict) else None
            self._cache = {"format": FORMAT, "agents": agents if isinstance(agents, dict) else {}}
            self._stamp = stamp
        return self._cache

    def agents(self) -> dict[str, dict[str, Any]]:
        """A copy of every agent's entry."""
        with self._lock:
            return json.loads(json.dumps(self._read()["agents"]))

    def get(self, agent_id: str) -> dict[str, Any] | None:
        """One agent's entry (a copy), or None."""
        with self._lock:
            entry = self._read()["agents"].get(agent_id)
            return json.loads(json.dumps(entry)) if isinstance(entry, dict) else None

    def update(self, agent_id: str, entry: dict[str, Any] | None) -> None:
        """Replace (or with None remove) one agent's entry and write the file atomically."""
        with self._lock:
            data = json.loads(json.dumps(self._read()))
            if entry is None:
                if agent_id not in data["agents"]:
                    return
                data["agents"].pop(agent_id)
            else:
                data["agents"][agent_id] = entry
            self._write(data)

    def _write(self, data: dict[str, Any]) -> None:
        write_json(self.path, data)
        self._cache, self._stamp = None, None
