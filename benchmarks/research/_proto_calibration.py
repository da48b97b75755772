"""Label-free calibration of the cosine scale of one agent's corpus (PROTOTYPE, issue 8 research).

Two populations drawn from the agent's own rows, no labels needed:
- null: cosines of random pairs of rows (almost always unrelated);
- positives: cosines of temporally adjacent rows of the same session (usually about the same thing),
  falling back to each sampled row's nearest neighbour when the corpus has too few such pairs.

A threshold is then chosen on the cosine scale by one of three methods:
- ``separation``: maximise sensitivity(t) + β·specificity(t) (β = 2.0 / 1.0 / 0.5 for strict / balanced /
  lenient), where sensitivity = P(positive ≥ t) and specificity = P(null < t);
- ``percentile``: the p-th percentile of the null (99 / 95 / 90);
- ``zscore``: null mean + z·null sd (3.0 / 2.0 / 1.5).
The statistics are per model by construction: a stronger model gets its own null and positives.
No SQL here; the caller passes vectors (L2-normalised, rows in id order) and each row's session key.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BETA = {"strict": 2.0, "balanced": 1.0, "lenient": 0.5}
PERCENTILE = {"strict": 99.0, "balanced": 95.0, "lenient": 90.0}
Z_FACTOR = {"strict": 3.0, "balanced": 2.0, "lenient": 1.5}
MIN_ADJACENT_PAIRS = 30


@dataclass(frozen=True)
class Calibration:
    """Summary of the two populations; ``threshold`` turns it into a cosine cut."""

    null: np.ndarray  # sorted sample of null cosines
    positives: np.ndarray  # sorted sample of positive cosines
    positive_source: str  # "adjacent" | "nearest"
    centre: np.ndarray | None = None  # corpus mean vector; cosines are measured after removing it

    def centred(self, vectors: np.ndarray) -> np.ndarray:
        """``vectors`` (one or many) minus the corpus mean, re-normalised: the scale the thresholds are on."""
        if self.centre is None:
            return vectors
        shifted = vectors - self.centre
        norms = np.linalg.norm(shifted, axis=-1, keepdims=True)
        return shifted / np.where(norms > 0, norms, 1.0)

    @property
    def null_mean(self) -> float:
        return float(self.null.mean())

    @property
    def null_sd(self) -> float:
        return float(self.null.std()) or 1e-6

    def threshold(
        self,
        method: str = "separation",
        precision: str = "balanced",
        *,
        beta: float | None = None,
        percentile: float | None = None,
        z_factor: float | None = None,
    ) -> float:
        """The cosine threshold for ``method`` at ``precision`` (explicit beta/percentile/z override it)."""
        if method == "percentile":
            return float(
                np.percentile(self.null, percentile if percentile is not None else PERCENTILE[precision])
            )
        if method == "zscore":
            z = z_factor if z_factor is not None else Z_FACTOR[precision]
            return self.null_mean + z * self.null_sd
        if method != "separation":
            raise ValueError(f"unknown calibration method {method!r}")
        b = beta if beta is not None else BETA[precision]
        candidates = np.unique(np.concatenate([self.null, self.positives]))
        sens = 1.0 - np.searchsorted(self.positives, candidates, side="left") / self.positives.size
        spec = np.searchsorted(self.null, candidates, side="left") / self.null.size
        objective = sens + b * spec
        return float(candidates[int(np.argmax(objective))])

    def z(self, cosine: float) -> float:
        """How many null standard deviations ``cosine`` lies above the null mean."""
        return (cosine - self.null_mean) / self.null_sd


def calibrate(
    vectors: np.ndarray, sessions: np.ndarray, sample_size: int = 2000, seed: int = 0, *, centre: bool = True
) -> Calibration:
    """Null and positive samples from one agent's rows (``sessions[i]`` = row i's session key, id order).

    With ``centre`` the corpus mean vector is removed first. Rows of one agent share a template (a date
    prefix, speaker names, a house style) that lifts every row-row cosine (MiniLM on LoCoMo: random pairs
    average 0.55) while a question shares none of it, so raw row-row thresholds do not transfer to
    query-row cosines; after centring the null sits at 0 on both scales.
    """
    mean_vector = vectors.mean(axis=0) if centre else None
    if mean_vector is not None:
        shifted = vectors - mean_vector
        vectors = shifted / np.maximum(np.linalg.norm(shifted, axis=1, keepdims=True), 1e-12)
    n = vectors.shape[0]
    if n < 3:
        raise ValueError("calibration needs at least 3 rows")
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
    return Calibration(np.sort(null), np.sort(positives), source, mean_vector)
