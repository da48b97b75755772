"""Calibration's view of one agent's corpus on the query scale: the lexicon, and the shipped probe
questions' evidence measured exactly as a recall measures a query's (docs/quality-gate.md "Calibration").

Each probe runs through the recall pipeline (the agent's scope, ``limit`` 10, the same channels,
fusion and context channel as a recall) with ``gate.EvidenceRecorder`` as its gate stage, so its
candidates and its evidence come from the same code as a real query's. Cost: one recall per probe
(80), in the background calibration.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from cpersona.config import Settings
from cpersona.retrieval import calibration as cal
from cpersona.retrieval import evidence as ev
from cpersona.retrieval.gate import EvidenceRecorder
from cpersona.retrieval.pipeline import RecallPipeline, RecallRequest
from cpersona.storage.interface import Session, VectorQuery
from cpersona.storage.scope import Scope

#: Rows read per ``get_many`` while sampling the corpus's texts.
_CHUNK = 500
#: The lexicon reads at most this much of each sampled row (a 16,000-character row counts as its start).
ROW_CHARS = 2000
#: The limit a probe is recalled with (the candidate pool does not depend on it below rsf's depth).
PROBE_LIMIT = 10


def sample_texts(
    session: Session, agent_id: str, ids: np.ndarray, size: int = ev.LEXICON_SAMPLE, seed: int = 0
) -> tuple[list[str], list[str], list[int]]:
    """(texts, source names, whole lengths in characters) of at most ``size`` of the agent's memories
    ``ids``, chosen at random."""
    picks = ids
    if ids.size > size:
        picks = np.sort(np.random.default_rng(seed).choice(ids, size, replace=False))
    texts: list[str] = []
    lengths: list[int] = []
    names: set[str] = set()
    scope = Scope(agent_id)
    for start in range(0, picks.size, _CHUNK):
        chunk = [int(i) for i in picks[start : start + _CHUNK]]
        for row in session.memories.get_many(chunk, scope).values():
            content = str(row.get("content") or "")
            texts.append(content[:ROW_CHARS])
            lengths.append(len(content))
            source = row.get("source")
            if isinstance(source, dict) and isinstance(source.get("name"), str):
                names.add(source["name"])
    return texts, sorted(names), lengths


def probe_evidence(
    session: Session,
    settings: Settings,
    agent_id: str,
    probes: Sequence[str],
    probe_vectors: np.ndarray,
    model: tuple[str, int],
    lexicon: ev.Lexicon,
    now: datetime,
) -> np.ndarray:
    """Each probe's evidence in the agent's scope (−inf for a probe nothing was measured for)."""
    recorder = EvidenceRecorder(lexicon)
    pipeline = RecallPipeline(settings, gate=recorder)
    model_id, dimension = model
    for text, vector in zip(probes, probe_vectors, strict=True):
        request = RecallRequest(scope=Scope(agent_id), query=text, limit=PROBE_LIMIT)
        pipeline.run(session, request, query_vector=VectorQuery(vector, model_id, dimension), now=now)
    return np.asarray(recorder.values, dtype=np.float64)


def measure_gate(
    session: Session,
    settings: Settings,
    agent_id: str,
    ids: np.ndarray,
    probe_vectors: np.ndarray,
    probe_tops: np.ndarray,
    model: tuple[str, int],
    now: datetime,
) -> dict[str, Any]:
    """The gate part of the agent's calibration entry (``calibration.gate_state``): the lexicon of its
    memories ``ids`` and the probes' evidence, measured as recalls in ``session``."""
    texts, names, lengths = sample_texts(session, agent_id, ids)
    lexicon = ev.build_lexicon(texts, names)
    values = probe_evidence(
        session, settings, agent_id, cal.probe_questions(), probe_vectors, model, lexicon, now
    )
    return cal.gate_state(probe_tops, values, lexicon, row_chars=lengths)
