"""The quality gate (design and measurements in docs/quality-gate.md).

The gate answers one question per query: does anything in this scope answer it at all? It keys on
evidence with magnitude — the query's best cosine in the scope — never on a rank-fused score (an
irrelevant top row gets the same reciprocal-rank score as a perfect one).

- Confidence off (default): **per query**. ``top_cosine ≥ threshold`` passes the whole fused list
  untouched; otherwise only exact lexical matches survive (``match_reason.gate = "exact_match"``), and
  with none the result is empty. Thinning a passing list row by row costs recall (rows found by keyword
  often have a low cosine), so it is never done.
- Confidence on: **per row** on the confidence score (cosine scale): rows below the threshold are
  dropped; when every row is below it, the below-gate lexical matches come back marked
  ``gate_fallback: true``.
- Exact lexical matches (an identifier-like query token verbatim, or the whole query as a substring)
  are never cut, in any scope, by the gate or by autocut.
- Autocut: largest-gap truncation, never below ``CPERSONA_AUTOCUT_MIN_RESULTS``, only on
  similarity-scale lists (confidence, or a list ranked purely by cosine), never on rrf/rsf scores.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cpersona.result_types.everyday import RecallGate
from cpersona.retrieval import evidence as ev
from cpersona.retrieval.match_query import MAX_TERMS
from cpersona.storage.interface import EPISODES, MEMORIES

if TYPE_CHECKING:
    from cpersona.retrieval.candidates import RecallRequest, ScoredRow
    from cpersona.storage.interface import VectorQuery, VectorSearch

#: Uncalibrated agents: a query whose best cosine is below this is cut. Deliberately low — it only
#: removes queries nothing in the corpus resembles at all, whatever the model (docs/quality-gate.md).
HEURISTIC_TOP_COSINE = 0.15
#: Autocut fires when the largest gap is at least this (cosine units) ...
AUTOCUT_MIN_GAP = 0.08
#: ... and at least this many times the mean gap of the list.
AUTOCUT_GAP_RATIO = 2.0
_IDENTIFIER = re.compile(r"[0-9_./:#@-]")
_STRIP = "\"'`,;()[]{}!?"
#: Channels that count as lexical evidence (a keyword index found the row).
LEXICAL_CHANNELS = ("fts_memories", "fts_episodes", "fts_words")


@dataclass(frozen=True)
class GatePolicy:
    """Which gate is in force for one recall, and its threshold on the cosine scale."""

    kind: str  # "calibrated" | "heuristic" | "off"
    level: str | None = None
    beta: float | None = None
    threshold: float | None = None
    reason: str | None = None
    stale: bool = False
    #: With a lexicon the query passes on its evidence (cosine + coverage of its non-name words, as the
    #: calibration measured the probes: ``retrieval/evidence.py``); without one, on its top cosine.
    lexicon: ev.Lexicon | None = None
    weight: float = ev.WEIGHT


@dataclass(frozen=True)
class GateEvidence:
    """What the pipeline measured for the gate: the query's best cosine in scope (None: no vector), and
    what the gate needs to look up the cosine of a candidate the vector channel did not rank."""

    top_cosine: float | None
    query_vector: VectorQuery | None = None
    search: VectorSearch | None = None

    def cosines(self, rows: list[ScoredRow]) -> list[float]:
        """Each row's cosine with the query (0 for a row without a vector of the query's model)."""
        missing: dict[str, list[int]] = {"memory": [], "episode": []}
        for r in rows:
            if r.fused.cosine is None:
                missing[r.row["type"]].append(int(r.row["id"]))
        found: dict[tuple[str, int], float] = {}
        if self.query_vector is not None and self.search is not None:
            for kind, table in (("memory", MEMORIES), ("episode", EPISODES)):
                if missing[kind]:
                    found.update(
                        {
                            (kind, i): c
                            for i, c in self.search.cosines(table, self.query_vector, missing[kind]).items()
                        }
                    )
        return [
            r.fused.cosine
            if r.fused.cosine is not None
            else found.get((r.row["type"], int(r.row["id"])), 0.0)
            for r in rows
        ]

    def of_rows(
        self, rows: list[ScoredRow], query: str, lexicon: ev.Lexicon, weight: float = ev.WEIGHT
    ) -> tuple[float, float]:
        """(evidence, the best row's coverage) of ``query`` over the best ``ev.CANDIDATES`` of ``rows``
        (best first); never below the top cosine (the best row by cosine may have been filtered out)."""
        top = self.top_cosine if self.top_cosine is not None else -math.inf
        rows = rows[: ev.CANDIDATES]
        if not rows:
            return top, 0.0
        value, cover = ev.query_evidence(
            query, lexicon, self.cosines(rows), [row_text(r.row) for r in rows], weight
        )
        return (value, cover) if value >= top else (top, 0.0)


def gate_off(reason: str, top_cosine: float | None = None) -> RecallGate:
    """The gate record of a recall no gate judged (disabled, limit 0, empty query): everything passes."""
    return {
        "kind": "off",
        "level": None,
        "beta": None,
        "threshold": None,
        "top_cosine": top_cosine,
        "passed": True,
        "keyed_on": None,
        "reason": reason,
    }


@dataclass
class GateDecision:
    """The rows that survive (best first) and what the response says about the gate."""

    rows: list[ScoredRow]
    info: dict[str, Any] = field(default_factory=dict)


PolicyProvider = Callable[[str | None], GatePolicy]


def identifier_tokens(query: str) -> list[str]:
    """Query tokens that look like identifiers (digits, ``_ . / : # @ -`` or inner capitals), as written."""
    out = []
    for raw in query.split():
        token = raw.strip(_STRIP).rstrip(".:")
        if len(token) < 3:
            continue
        inner_caps = any(c.isupper() for c in token[1:]) and any(c.islower() for c in token)
        if _IDENTIFIER.search(token) or inner_caps:
            out.append(token)
    return out


class ExactMatcher:
    """``exact_match`` for one query: its whole form and identifier tokens are worked out once, since
    the gate tests every candidate row of a recall against the same query."""

    __slots__ = ("tokens", "whole", "longest")

    def __init__(self, query: str) -> None:
        whole = " ".join(query.split()).lower()
        self.whole = whole if len(whole) >= 3 else None
        # A row can hold the whole query only if it holds its longest word: tested first, on the row
        # merely lower-cased, it spares most rows the white-space normalisation (~1 ms a recall).
        self.longest = max(whole.split(" "), key=len) if self.whole is not None else ""
        # Distinct and at most MAX_TERMS, as for the keyword channels: every candidate row is searched
        # for each token, and an 8,000-character query can hold 2,000 of them (docs/input-rules.md).
        self.tokens = list(dict.fromkeys(token.lower() for token in identifier_tokens(query)))[:MAX_TERMS]

    def __call__(self, text: str) -> bool:
        """True when ``text`` holds an identifier-like query token verbatim, or the whole query.

        The tokens and the longest word hold no white space, so they occur in the lower-cased text
        exactly where they occur in its white-space-normalised form (runs of other characters are
        the same in both): only a row holding the longest word is normalised for the whole query.
        """
        lowered = text.lower()
        if any(token in lowered for token in self.tokens):
            return True
        if self.whole is None or self.longest not in lowered:
            return False
        return self.whole in " ".join(text.split()).lower()


def exact_match(query: str, text: str) -> bool:
    """True when ``text`` holds an identifier-like query token verbatim, or the whole query (≥ 3 chars)."""
    return ExactMatcher(query)(text)


def row_text(row: dict[str, Any]) -> str:
    """The text a row is matched on (memories: content; episodes: summary and keywords)."""
    parts = [row.get("content"), row.get("summary"), row.get("keywords")]
    return "\n".join(p for p in parts if isinstance(p, str))


def autocut(values: list[float], min_results: int) -> int:
    """How many leading rows to keep: cut at the largest gap when it stands out, never below ``min_results``.

    ``values`` are best-first similarity-scale scores. The largest gap after position ``min_results``
    counts when it is ≥ AUTOCUT_MIN_GAP and ≥ AUTOCUT_GAP_RATIO × the mean gap of the whole list.
    """
    n = len(values)
    if n <= min_results:
        return n
    gaps = [values[i] - values[i + 1] for i in range(n - 1)]
    mean_gap = sum(gaps) / len(gaps)
    best = max(range(min_results - 1, n - 1), key=lambda i: (gaps[i], -i))
    if gaps[best] >= AUTOCUT_MIN_GAP and gaps[best] >= AUTOCUT_GAP_RATIO * mean_gap:
        return best + 1
    return n


class QualityGate:
    """The gate stage of ``RecallPipeline`` (see the module docstring)."""

    def __init__(self, policy_for: PolicyProvider, autocut_min_results: int = 3) -> None:
        self.policy_for = policy_for
        self.autocut_min_results = autocut_min_results

    def apply(self, rows: list[ScoredRow], request: RecallRequest, evidence: GateEvidence) -> GateDecision:
        """Gate ``rows`` (best first) for ``request``."""
        policy = self.policy_for(request.scope.agent_id)
        info: dict[str, Any] = {"kind": policy.kind, "level": policy.level, "beta": policy.beta}
        if policy.stale:
            info["stale"] = True
        if policy.reason:
            info["reason"] = policy.reason
        top = evidence.top_cosine
        info["top_cosine"] = None if top is None else round(top, 6)
        if policy.kind == "off" or policy.threshold is None:
            info.update(kind="off", threshold=None, passed=True, keyed_on=None)
            return GateDecision(rows, info)
        threshold = policy.threshold
        info["threshold"] = round(threshold, 6)
        matches = ExactMatcher(request.query)
        exact = {id(r) for r in rows if matches(row_text(r.row))}
        for r in rows:
            if id(r) in exact:
                r.gate = "exact_match"
        confident = [r for r in rows if r.confidence is not None]
        if confident and len(confident) == len(rows):
            kept, passed = self._per_row(rows, threshold, exact)
            info["keyed_on"] = "confidence"
        else:
            if top is None:
                info.update(
                    kind="off",
                    threshold=None,
                    passed=True,
                    keyed_on=None,
                    reason="keyword-only recall: no query vector to measure",
                )
                return GateDecision(rows, info)
            if policy.lexicon is not None and rows:
                value, cover = evidence.of_rows(rows, request.query, policy.lexicon, policy.weight)
                info.update(evidence=round(value, 6), coverage=round(cover, 6), keyed_on="evidence")
            else:
                value = top
                info["keyed_on"] = "top_cosine"
            passed = value >= threshold
            kept = rows if passed else [r for r in rows if id(r) in exact]
        info["passed"] = passed
        info["cut"] = len(rows) - len(kept)
        kept, trimmed = self._autocut(kept, exact)
        if trimmed:
            info["autocut"] = trimmed
        return GateDecision(kept, info)

    @staticmethod
    def _per_row(rows: list[ScoredRow], threshold: float, exact: set[int]) -> tuple[list[ScoredRow], bool]:
        above = [r for r in rows if (r.confidence or 0.0) >= threshold or id(r) in exact]
        if any((r.confidence or 0.0) >= threshold for r in rows):
            return above, True
        fallback = [r for r in rows if id(r) in exact or any(c in r.fused.channels for c in LEXICAL_CHANNELS)]
        for r in fallback:
            r.gate_fallback = True
        return fallback, False

    def _autocut(self, rows: list[ScoredRow], exact: set[int]) -> tuple[list[ScoredRow], int]:
        values = [r.similarity() for r in rows]
        if not rows or any(v is None for v in values):
            return rows, 0
        keep = autocut([float(v) for v in values if v is not None], self.autocut_min_results)
        if keep >= len(rows):
            return rows, 0
        kept = rows[:keep] + [r for r in rows[keep:] if id(r) in exact]
        return kept, len(rows) - len(kept)


class EvidenceRecorder:
    """A gate stage that passes every row and records the query's evidence: calibration runs each probe
    question through the recall pipeline with it, so probes are measured exactly as queries are."""

    def __init__(self, lexicon: ev.Lexicon, weight: float = ev.WEIGHT) -> None:
        self.lexicon = lexicon
        self.weight = weight
        self.values: list[float] = []

    def apply(self, rows: list[ScoredRow], request: RecallRequest, evidence: GateEvidence) -> GateDecision:
        """Record ``request.query``'s evidence (−inf without a query vector) and pass ``rows``."""
        if evidence.top_cosine is None:
            self.values.append(-math.inf)
        else:
            self.values.append(evidence.of_rows(rows, request.query, self.lexicon, self.weight)[0])
        return GateDecision(rows, {"kind": "off", "reason": "calibration probe"})
