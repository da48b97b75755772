"""What a stored calibration is valid for: the scoring version and the fingerprint.

The state itself lives in the store (``Store.calibration_states()``): on SQLite the sidecar
``<db>.calibration.json`` (``cpersona.storage.sqlite.calibration``), on PostgreSQL the
``calibration_state`` table. Layout of one agent's entry (docs/quality-gate.md)::

    {"fingerprint": {"scoring_version": 2, "model_id": "...", "dimension": 384},
     "created_at": "...", "method": "separation", "sample_size": 2000, "rows": 1234,
     "percentile": null, "z_factor": null, "trigger": "growth",
     "vector": {"threshold": 0.61, "null_mean": ..., ...},
     "gate": {"kind": "query_evidence", "probes": 80, "probe_evidence": [...],
              "probe_top_cosines": [...], "weight": 1.0,
              "lexicon": {"rows": 1234, "entities": [...], "frequent": "word count ..."}},
     "precision": {"level": "strict", "beta": null}}

``precision`` may exist without a calibration (set before any model was ready).
"""

from __future__ import annotations

from cpersona.result_types.quality import Fingerprint

__all__ = ["SCORING_VERSION", "fingerprint"]

#: Bump when what the gate compares (or how its threshold is derived) changes: stored calibrations
#: then no longer match and are redone in the background.
SCORING_VERSION = 2  # 2: the gate keys on evidence (cosine + coverage of the non-name words)


def fingerprint(scoring_version: int, model_id: str, dimension: int) -> Fingerprint:
    """What a calibration is only valid for."""
    return {"scoring_version": scoring_version, "model_id": model_id, "dimension": dimension}
