"""Quality-gate variants keyed on evidence with magnitude (PROTOTYPE, issue 8 research).

The gate answers "does anything here answer the query at all?". Rank-based fused scores (RRF) cannot: an
irrelevant top row gets the same 1/(k+1) as a perfect one. So every variant keys on cosine (centred: the corpus mean vector removed, the scale the calibration measured) and/or on lexical coverage, never on the fused score:

- ``topcos``: the query passes when its best cosine in the corpus reaches the calibrated threshold; a
  passing query keeps its whole fused list, a failing one keeps only exact lexical matches;
- ``rowcos``: per row: keep rows whose own cosine reaches the threshold, or whose lexical coverage reaches κ;
- ``evidence``: query-level like ``topcos`` but a query also passes on lexical evidence (best coverage ≥ κ);
- ``zq``: query-level on the query's own cosine distribution: (top − mean) / sd over the corpus must reach
  the calibrated z* = (threshold − null mean) / null sd (the top must stand out from this query's null).

Lexical coverage of a row = the IDF mass of the query's content words found in the row / the IDF mass of
all of them (words absent from the corpus carry the largest IDF, so a question about people and things the
corpus never mentions has low coverage everywhere). An exact lexical match (the row contains an
identifier-like query token verbatim, or the whole query) is never cut, by any variant.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from _proto_calibration import Calibration

from cpersona.retrieval.match_query import _TOKEN, STOPWORDS, _stem

KAPPA = {"strict": 0.75, "balanced": 0.6, "lenient": 0.45}
_IDENTIFIER = re.compile(r"[0-9_./:#@-]")


@dataclass(frozen=True)
class GateInput:
    """A fused candidate: its row id, its own cosine to the query, and its text."""

    row_id: int
    cosine: float
    content: str


def _words(text: str) -> list[str]:
    return [_stem(t.lower()) for t in _TOKEN.findall(text)]


def identifier_tokens(query: str) -> list[str]:
    """Query tokens that look like identifiers (digits, _ . / : # @ -, or inner capitals), as written."""
    out = []
    for raw in re.findall(r"\S+", query):
        token = raw.strip("\"'`,;()[]{}!?")
        if len(token) < 3:
            continue
        inner_caps = any(c.isupper() for c in token[1:]) and any(c.islower() for c in token)
        if _IDENTIFIER.search(token.rstrip(".:")) or inner_caps:
            out.append(token.rstrip(".:"))
    return out


def exact_match(query: str, content: str) -> bool:
    """True when ``content`` holds an identifier-like query token verbatim, or the whole query (≥ 3 chars)."""
    lowered = content.lower()
    q = " ".join(query.split()).lower()
    if len(q) >= 3 and q in " ".join(lowered.split()):
        return True
    return any(token.lower() in lowered for token in identifier_tokens(query))


def coverage(query: str, content: str, df: Mapping[str, int], n_rows: int) -> float:
    """IDF-weighted share of the query's content words present in ``content`` (0..1)."""
    terms = [t for t in dict.fromkeys(_words(query)) if t not in STOPWORDS]
    if not terms:
        return 0.0
    present = set(_words(content))

    def idf(t: str) -> float:
        d = df.get(t, 0)
        return math.log(1 + (n_rows - d + 0.5) / (d + 0.5))

    total = sum(idf(t) for t in terms)
    return sum(idf(t) for t in terms if t in present) / total if total else 0.0


def apply_gate(
    mode: str,
    rows: Sequence[GateInput],
    query: str,
    cal: Calibration,
    precision: str,
    method: str,
    df: Mapping[str, int],
    n_rows: int,
    *,
    query_cosines: np.ndarray,
    kappa: float | None = None,
) -> tuple[list[int], dict[str, Any]]:
    """Row ids that pass (best first, order kept) and the evidence the decision keyed on."""
    threshold = cal.threshold(method, precision)
    kappa = KAPPA[precision] if kappa is None else kappa
    exact = {r.row_id for r in rows if exact_match(query, r.content)}
    cov = {r.row_id: coverage(query, r.content, df, n_rows) for r in rows}
    top_cos = float(query_cosines.max()) if query_cosines.size else -1.0
    best_cov = max(cov.values(), default=0.0)
    info: dict[str, Any] = {"threshold": threshold, "top_cosine": top_cos, "best_coverage": best_cov}
    if mode == "topcos":
        passed = top_cos >= threshold
    elif mode == "evidence":
        passed = top_cos >= threshold or best_cov >= kappa
    elif mode == "zq":
        sd = float(query_cosines.std()) or 1e-6
        z_top = (top_cos - float(query_cosines.mean())) / sd
        info["z_top"] = z_top
        passed = z_top >= cal.z(threshold)
    elif mode == "rowcos":
        kept = [
            r.row_id for r in rows if r.cosine >= threshold or cov[r.row_id] >= kappa or r.row_id in exact
        ]
        return kept, info
    else:
        raise ValueError(f"unknown gate {mode!r}")
    info["passed"] = passed
    if passed:
        return [r.row_id for r in rows], info
    return [r.row_id for r in rows if r.row_id in exact], info
