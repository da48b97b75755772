"""Label-free calibration of one agent's corpus (``calibrate_threshold``; docs/quality-gate.md#calibration-calibrate_threshold).

Two calibrations, both from the agent's own data, no labels:

- **Row pairs (the vector threshold).** null = cosines of random pairs of rows; positives = cosines of
  temporally adjacent rows of the same session (same project and channel, timestamps within
  ``SESSION_GAP_SECONDS``), or each sampled row's nearest neighbour when there are too few such pairs.
  ``separation`` picks the cut maximising sensitivity + β·specificity; ``percentile`` and ``zscore`` cut
  the null. Reported and persisted; it does not set the recall gate, because rows of one agent share a
  template (dates, speaker names) that lifts every row-row cosine while a question shares none of it
  (docs/research/retrieval-quality.md §2).
- **Probe questions (the query gate).** ``probes.txt`` holds questions of the kind an agent asks its
  memory (people, plans, work, places) about invented people and things, plus a few everyday ones:
  questions no corpus answers. Each is recalled like a query and its **evidence** recorded (its best
  candidate's cosine plus that row's share of the probe's non-name words, ``retrieval/evidence.py``;
  measured by ``retrieval/probing.py``): that is what a question about "something else" reaches here,
  on the very scale the gate compares a real query's evidence against. The gate threshold is a
  percentile of that distribution chosen by the precision. The entry also keeps the probes' top
  cosines and the corpus's lexicon (common words' document frequencies, the names it is full of).

No SQL and no model here: callers pass vectors (L2-normalised) and session keys.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from cpersona.core.text import parse_ts
from cpersona.errors import InvalidInput
from cpersona.retrieval import evidence as ev
from cpersona.retrieval.sidecar import SCORING_VERSION

__all__ = ["SCORING_VERSION"]

LEVELS = ("strict", "balanced", "lenient")
METHODS = ("separation", "percentile", "zscore")
#: β of sensitivity + β·specificity per precision level (docs/quality-gate.md#the-precision-knob).
BETA = {"strict": 2.0, "balanced": 1.0, "lenient": 0.5}
#: Row-pair vector threshold: default null percentile and z per level.
ROW_PERCENTILE = {"strict": 99.0, "balanced": 95.0, "lenient": 90.0}
ROW_Z = {"strict": 3.0, "balanced": 2.0, "lenient": 1.5}
#: Query gate: default z per level on the probe distribution (μ + zσ ≈ p95 / p90 / p75 of a normal).
GATE_Z = {"strict": 1.645, "balanced": 1.28, "lenient": 0.67}
#: Adjacent same-session rows must lie within this many seconds of each other.
SESSION_GAP_SECONDS = 3600.0
#: Fewer adjacent pairs than this and positives fall back to nearest neighbours.
MIN_ADJACENT_PAIRS = 30
#: A corpus whose 75th-percentile row is at least this long (characters) holds long records: the
#: calibrated gate stands down to the heuristic floor at balanced and lenient precision. Chosen between
#: LoCoMo's turns (p75 156–173) and our long user–assistant histories (p75 1,550–1,710, the "choose"
#: half; the "confirm" half agrees), near where MiniLM's 256-token window ends (~1,000 characters).
LONG_ROW_CHARS = 600
#: On a corpus of long records the two memory keyword channels (trigram and words) weigh this much
#: each in fusion: a long answer holds many of a query's words by chance, and the two channels
#: together outscored the vector channel's best rows (an evidence turn ranked 1st to 5th by the
#: vector channel fell to 12th–16th). First 0.5; 0.3 since the rules after fusion were in place,
#: chosen on three long-history sets (0.2 to 0.5) and confirmed on six others
#: (docs/research/recall-round-three/long-records.md#the-keyword-weight-of-long-records). LoCoMo never
#: reaches it (short rows).
LONG_RECORD_KEYWORD_WEIGHT = 0.3
#: Calibration needs at least this many rows with vectors of the active model.
MIN_ROWS = 10
DEFAULT_SAMPLE_SIZE = 2000
MAX_SAMPLE_SIZE = 100_000


def probe_questions() -> list[str]:
    """The shipped probe set (cpersona/retrieval/probes.txt), comments and blank lines dropped."""
    text = resources.files("cpersona.retrieval").joinpath("probes.txt").read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def level_for_beta(beta: float) -> str:
    """The named level nearest to ``beta`` on a log scale (what a raw β is reported as)."""
    return min(LEVELS, key=lambda level: abs(math.log2(beta) - math.log2(BETA[level])))


def gate_percentile(beta: float) -> float:
    """The probe percentile the query gate cuts at for ``beta``: 95 / 90 / 75 at β = 2 / 1 / 0.5.

    Piecewise linear in log2 β (90 + 5·log2 β above 1, 90 + 15·log2 β below), clamped to 1..99, so a
    raw β between the levels lands between their operating points. Measured in docs/quality-gate.md.
    """
    step = math.log2(beta)
    q = 90.0 + (5.0 if step >= 0 else 15.0) * step
    return min(99.0, max(1.0, q))


def validate_beta(beta: object) -> float:
    """A raw β: a finite number in 0.05..20 (outside that the objective is all one term)."""
    if isinstance(beta, bool) or not isinstance(beta, int | float) or not math.isfinite(beta):
        raise InvalidInput("beta must be a number")
    if not 0.05 <= float(beta) <= 20.0:
        raise InvalidInput(f"beta must be between 0.05 and 20, got {beta}")
    return float(beta)


@dataclass(frozen=True)
class RowPairs:
    """Sorted null and positive cosine samples of one agent's rows."""

    null: np.ndarray
    positives: np.ndarray
    positive_source: str  # "adjacent" | "nearest"

    def threshold(
        self,
        method: str,
        beta: float,
        level: str,
        *,
        percentile: float | None = None,
        z_factor: float | None = None,
    ) -> float:
        """The cosine cut for ``method`` (explicit ``percentile`` / ``z_factor`` override the level's)."""
        if method == "percentile":
            return float(
                np.percentile(self.null, percentile if percentile is not None else ROW_PERCENTILE[level])
            )
        if method == "zscore":
            z = z_factor if z_factor is not None else ROW_Z[level]
            return float(self.null.mean() + z * self.null.std())
        return separation_threshold(self.null, self.positives, beta)

    def summary(self) -> dict[str, float | int | str]:
        """Means, spreads and sizes (what the sidecar keeps)."""
        return {
            "null_mean": round(float(self.null.mean()), 6),
            "null_sd": round(float(self.null.std()), 6),
            "positive_mean": round(float(self.positives.mean()), 6),
            "positive_sd": round(float(self.positives.std()), 6),
            "null_pairs": int(self.null.size),
            "positive_pairs": int(self.positives.size),
            "positive_source": self.positive_source,
        }


def separation_threshold(null: np.ndarray, positives: np.ndarray, beta: float) -> float:
    """The cut t maximising P(positive ≥ t) + β·P(null < t) over every observed value (ties: lowest t)."""
    null = np.sort(null)
    positives = np.sort(positives)
    candidates = np.unique(np.concatenate([null, positives]))
    sensitivity = 1.0 - np.searchsorted(positives, candidates, side="left") / positives.size
    specificity = np.searchsorted(null, candidates, side="left") / null.size
    return float(candidates[int(np.argmax(sensitivity + beta * specificity))])


def session_keys(timeline: list[tuple[int, str, str, str]]) -> np.ndarray:
    """Per row (in the given order) a session number: a new one at a scope change or a time gap.

    Vectorised (100k rows in well under a second): timestamps parse as numpy datetimes, the gaps
    and scope changes are compared as arrays. A timestamp that does not parse starts a new session.
    """
    n = len(timeline)
    keys = np.zeros(n, dtype=np.int64)
    if n < 2:
        return keys
    seconds = _seconds([when for _, when, _, _ in timeline])
    scopes = [(project, channel) for _, _, project, channel in timeline]
    same_scope = np.fromiter((scopes[i] == scopes[i - 1] for i in range(1, n)), dtype=bool, count=n - 1)
    with np.errstate(invalid="ignore"):
        close = np.abs(np.diff(seconds)) <= SESSION_GAP_SECONDS  # NaN (unknown time) is never close
    keys[1:] = np.cumsum(~(same_scope & close))
    return keys


def _seconds(whens: list[str]) -> np.ndarray:
    """Epoch seconds of stored timestamps (NaN where one does not parse)."""
    try:
        stamps = np.array([w[:-1] if w.endswith("Z") else "x" for w in whens], dtype="datetime64[us]")
        out = stamps.astype(np.int64).astype(np.float64) / 1e6
        out[np.isnat(stamps)] = math.nan
        return out
    except ValueError:  # a value numpy cannot read: one at a time, as recall parses them
        values = []
        for when in whens:
            try:
                values.append(parse_ts(when).timestamp() if when else math.nan)
            except (ValueError, TypeError):
                values.append(math.nan)
        return np.asarray(values, dtype=np.float64)


def row_pairs(vectors: np.ndarray, sessions: np.ndarray, sample_size: int, seed: int = 0) -> RowPairs:
    """Null and positive samples from one agent's rows (``sessions[i]`` = row i's session, id order)."""
    n = vectors.shape[0]
    if n < 3:
        raise InvalidInput("calibration needs at least 3 rows with vectors")
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n, sample_size)
    b = rng.integers(0, n - 1, sample_size)
    b = b + (b >= a)  # never pair a row with itself
    null = np.einsum("ij,ij->i", vectors[a], vectors[b])
    adjacent = np.flatnonzero(sessions[:-1] == sessions[1:])
    if adjacent.size >= MIN_ADJACENT_PAIRS:
        pick = adjacent if adjacent.size <= sample_size else rng.choice(adjacent, sample_size, replace=False)
        positives = np.einsum("ij,ij->i", vectors[pick], vectors[pick + 1])
        source = "adjacent"
    else:
        pick = rng.choice(n, min(n, sample_size), replace=False)
        sims = vectors[pick] @ vectors.T
        sims[np.arange(pick.size), pick] = -np.inf
        positives = sims.max(axis=1)
        source = "nearest"
    return RowPairs(np.sort(null), np.sort(positives), source)


def gate_threshold(
    probe_tops: list[float] | np.ndarray,
    method: str,
    beta: float,
    level: str,
    *,
    percentile: float | None = None,
    z_factor: float | None = None,
) -> float:
    """The query gate's top-cosine threshold from the probes' top cosines in this corpus.

    ``separation`` and ``percentile`` (without an explicit percentile) cut at ``gate_percentile(β)``;
    an explicit ``percentile`` cuts there; ``zscore`` cuts at μ + z·σ (``z_factor`` or the level's).
    Label-free positives on the query scale do not exist (row-row positives do not transfer), so
    separation's β moves the percentile instead of weighing a positive population.
    """
    tops = np.asarray(probe_tops, dtype=np.float64)
    if tops.size == 0:
        raise InvalidInput("no probe cosines: the corpus has no vectors")
    if method == "zscore":
        z = z_factor if z_factor is not None else GATE_Z[level]
        return float(tops.mean() + z * tops.std())
    q = percentile if (method == "percentile" and percentile is not None) else gate_percentile(beta)
    return float(np.percentile(tops, q))


@functools.lru_cache(maxsize=256)
def _threshold_of(
    probe_tops: tuple[float, ...],
    method: str,
    beta: float,
    level: str,
    percentile: float | None,
    z_factor: float | None,
) -> float:
    return gate_threshold(list(probe_tops), method, beta, level, percentile=percentile, z_factor=z_factor)


def stored_gate_threshold(
    probe_tops: list[float],
    method: str,
    beta: float,
    level: str,
    *,
    percentile: Any = None,
    z_factor: Any = None,
) -> float:
    """``gate_threshold`` of a stored entry, remembered: every recall of a calibrated agent asks for
    the same threshold of the same probes, and a percentile of a few hundred values each time costs
    more than the rest of the gate's bookkeeping (the same function, so the same value)."""
    try:
        return _threshold_of(tuple(probe_tops), method, beta, level, percentile, z_factor)
    except TypeError:  # an unhashable stored value (a hand-edited entry): compute it as it is
        return gate_threshold(probe_tops, method, beta, level, percentile=percentile, z_factor=z_factor)


#: What a calibrated gate keys on: ``query_evidence`` (SCORING_VERSION 2) or, for an entry written
#: before it, ``query_top_cosine``.
GATE_KIND = "query_evidence"


def gate_state(
    probe_tops: np.ndarray,
    probe_evidence: np.ndarray,
    lexicon: ev.Lexicon,
    row_chars: Sequence[int] = (),
) -> dict[str, Any]:
    """The gate part of a calibration entry (JSON): the probes' evidence (what the threshold is a
    percentile of), their top cosines (reported), the weight and the lexicon the evidence used, and
    how long the sampled rows are (``row_chars_p75``: whether the corpus holds long records)."""
    values = np.sort(probe_evidence[np.isfinite(probe_evidence)])
    state: dict[str, Any] = {
        "kind": GATE_KIND,
        "probes": int(values.size),
        "probe_evidence": [round(float(v), 6) for v in values],
        "probe_top_cosines": [round(float(t), 6) for t in np.sort(probe_tops)],
        "weight": ev.WEIGHT,
        "lexicon": lexicon.to_json(),
    }
    p75 = row_chars_p75(row_chars)
    if p75 is not None:
        state["row_chars_p75"] = p75
    return state


def row_chars_p75(lengths: Sequence[int]) -> int | None:
    """The 75th percentile of row lengths (characters; None without rows): the corpus shape
    ``long_records`` reads, measured by a calibration or, before one, from the newest rows."""
    if not len(lengths):
        return None
    return int(np.percentile(np.asarray(lengths, dtype=np.float64), 75))


def long_records(gate: Any) -> int | None:
    """The stored 75th percentile of row lengths when it marks a corpus of long records (at least
    ``LONG_ROW_CHARS``), else None (short rows, or an entry calibrated before it was measured).

    A question's words scatter over a long row as a probe's do: on such a corpus the probes reach the
    evidence of real questions (long user–assistant histories: probes at 0.70–0.76, a third of real
    questions below 0.68), so a percentile of theirs would answer real questions empty
    (docs/quality-gate.md "Long records and the gate")."""
    if not isinstance(gate, dict):
        return None
    value = gate.get("row_chars_p75")
    if isinstance(value, int) and not isinstance(value, bool) and value >= LONG_ROW_CHARS:
        return value
    return None


def stands_down(gate: Any, level: str) -> int | None:
    """``long_records`` when the calibrated threshold stands down for them at precision ``level``
    (every level but strict), else None: the heuristic floor is in force instead."""
    return long_records(gate) if level != "strict" else None


def gate_inputs(gate: Any) -> tuple[list[float], ev.Lexicon | None, float] | None:
    """(the distribution the threshold is a percentile of, the lexicon — None: key on the top cosine —,
    the coverage weight) from a stored gate entry; None when it holds no probe measurement."""
    if not isinstance(gate, dict):
        return None
    if gate.get("kind") == GATE_KIND:
        values, lexicon = gate.get("probe_evidence"), ev.Lexicon.from_json(gate.get("lexicon"))
        weight = gate.get("weight")
        numbers = _numbers(values)
        if numbers and lexicon is not None and isinstance(weight, int | float):
            return numbers, lexicon, float(weight)
        return None
    tops = _numbers(gate.get("probe_top_cosines"))
    return (tops, None, 0.0) if tops else None


def _numbers(values: Any) -> list[float] | None:
    """``values`` as floats when it is a non-empty list of numbers, else None."""
    if not isinstance(values, list) or not values:
        return None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return None
    return [float(v) for v in values]
