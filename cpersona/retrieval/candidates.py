"""What recall hands from stage to stage: the request, the candidate key, fused and scored candidates.

Every stage (retrievers, fusion, context, penalties, confidence, gate, recency, diversity, trace)
reads these types and none of them imports the pipeline: the pipeline imports the stages. A
candidate is keyed by its kind and integer id (``Key``) all the way through; the ``mem:<id>`` /
``ep:<id>`` text is made only where it leaves (the trace, the row's ``ref``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

from cpersona.result_types.rows import RecallRow
from cpersona.retrieval.time_cue import TimeCue
from cpersona.storage.scope import Scope

MEMORY = "memory"
EPISODE = "episode"
_PREFIX = {MEMORY: "mem", EPISODE: "ep"}
#: The context channel's name (retrieval/context.py): it adds to fused scores after fusion.
CONTEXT = "context"


class Key(NamedTuple):
    """A candidate: the row's kind (its ``type``: memory, episode) and its id."""

    kind: str
    id: int

    @property
    def ref(self) -> str:
        """``mem:<id>`` / ``ep:<id>``: the key as the wire and ``get_contents`` spell it."""
        return f"{_PREFIX[self.kind]}:{self.id}"

    @classmethod
    def of(cls, row: dict[str, Any]) -> Key:
        """The key of a stored row."""
        return cls(str(row["type"]), int(row["id"]))


#: A channel's hit: the candidate and its raw score (higher is better).
Hit = tuple[Key, float]


@dataclass(frozen=True)
class RecallRequest:
    """What the caller asked for, already validated."""

    scope: Scope
    query: str
    limit: int
    deep: bool = False
    exclude_contents: tuple[str, ...] = ()
    source_id: str | None = None
    trace: bool = False  # return each stage's candidates and scores (RecallOutcome.trace)
    time_cue: TimeCue | None = None  # the caller's cue (retrieval/time_cue.py), already resolved
    include_superseded: bool = False  # superseded memories stay candidates (docs/decisions.md "Supersede")
    include_retired: bool = False  # retired memories stay candidates (docs/secrets-and-forgetting.md)
    # The vector channel's weight in fusion: the share of the query the model can read (retrieval/language.py).
    vector_weight: float = 1.0
    # The scripts the active model reads, set when it cannot read all of the query (None: not asked): the
    # vector channel then weighs the query's share by its best candidates' share too (retrieval/language.py).
    vector_scripts: frozenset[str] | None = None
    # The memory keyword channels' weight in fusion: lower on a corpus of long records, where a long row
    # holds many of a query's words by chance (retrieval/calibration.py LONG_RECORD_KEYWORD_WEIGHT).
    keyword_weight: float = 1.0
    # The agent's corpus is made of long records: the memory keyword lists are ranked again by each
    # row's best passage (retrieval/passage_rescore.py).
    long_records: bool = False


@dataclass
class Fused:
    """A candidate's fused score and the per-channel evidence behind it."""

    key: Key
    score: float
    signal: str
    cosine: float | None = None
    rrf: float | None = None
    rsf: float | None = None
    channels: dict[str, float] = field(default_factory=dict)

    @property
    def ref(self) -> str:
        """The candidate's ``mem:<id>`` / ``ep:<id>``."""
        return self.key.ref


@dataclass
class ScoredRow:
    """A hydrated row with its fused score (``score`` is what ordering keys on)."""

    row: dict[str, Any]
    fused: Fused
    score: float
    confidence: float | None = None  # set by the confidence stage (CPERSONA_CONFIDENCE_ENABLED)
    cosine_keyed: bool = False  # the whole list was ranked by cosine alone (no keyword evidence)
    gate: str | None = None  # "exact_match" when the gate's exact-match rule applies to the row
    gate_fallback: bool = False  # a below-gate lexical match returned under confidence
    # What ``score`` is made of: base (name, value) × every factor applied after fusion, in order.
    base: tuple[str, float] = ("", 0.0)
    factors: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.base[0]:
            # The context channel adds to the retrievers' sum (rsf): the base then says so.
            name = self.fused.signal
            if self.fused.channels.get(CONTEXT):
                name = f"{name}+context"
            self.base = (name, self.fused.score)

    @property
    def key(self) -> Key:
        """The candidate's kind and id."""
        return self.fused.key

    def scale(self, name: str, factor: float) -> None:
        """Apply a factor after fusion: the score is multiplied by it and ``factors`` records it, so
        ``match_reason`` shows what the score is made of."""
        self.factors[name] = factor
        self.score *= factor

    def sort_key(self) -> tuple[float, int, int]:
        # Stable tie-break: memories before episodes, then newer ids first.
        return (-self.score, 0 if self.row["type"] == MEMORY else 1, -int(self.row["id"]))

    def signal(self) -> str:
        """What ranking keyed on, by the priority confidence > rsf > cosine > rrf (docs/retrieval.md#after-fusion)."""
        if self.confidence is not None:
            return "confidence"
        if self.cosine_keyed and self.fused.signal == "rrf":
            return "cosine"
        return self.fused.signal

    def similarity(self) -> float | None:
        """The score on a similarity scale (confidence or cosine-keyed), or None (rrf/rsf/cascade)."""
        return self.score if self.signal() in ("confidence", "cosine") else None

    def match_reason(self, gate: str | None = None) -> dict[str, Any]:
        """``{signal, score, confidence?, cosine?, rrf?, rsf?, factors, gate?}``: ``factors`` names the
        base score and each factor applied after fusion, in order; their product is ``score``."""
        reason: dict[str, Any] = {"signal": self.signal(), "score": round(self.score, 6)}
        if self.confidence is not None:
            reason["confidence"] = round(self.confidence, 6)
        if self.fused.cosine is not None:
            reason["cosine"] = round(self.fused.cosine, 6)
        if self.fused.rrf is not None:
            reason["rrf"] = round(self.fused.rrf, 6)
        if self.fused.rsf is not None:
            reason["rsf"] = round(self.fused.rsf, 6)
        if CONTEXT in self.fused.channels:
            reason["context"] = round(self.fused.channels[CONTEXT], 6)
        reason["factors"] = {
            self.base[0]: round(self.base[1], 6),
            **{name: round(value, 6) for name, value in self.factors.items()},
        }
        verdict = gate if gate is not None else self.gate
        if verdict is not None:
            reason["gate"] = verdict
        return reason

    def verdict(self, gate_info: dict[str, Any]) -> str | None:
        """What the gate said about this row: exact_match, fallback, passed (None: no gate ran)."""
        if self.gate is not None:
            return self.gate
        if self.gate_fallback:
            return "fallback"
        return None if gate_info.get("kind") == "off" or gate_info.get("threshold") is None else "passed"

    def result_row(
        self, gate_info: dict[str, Any], vector_weight: float, block: dict[str, Any] | None = None
    ) -> RecallRow:
        """The row as recall returns it: the stored row, its ``match_reason`` (with the vector channel's
        weight when below 1, and the long record's ``block`` that matched), ``gate_fallback``."""
        reason = self.match_reason(self.verdict(gate_info))
        if vector_weight < 1.0:
            # The model does not read (all of) the query's script: the response's search.language says why.
            reason["vector_weight"] = vector_weight
        if block is not None:
            reason["block"] = block  # the preview shows that part (docs/retrieval.md#long-records)
        row: dict[str, Any] = {**self.row, "match_reason": reason}
        if self.gate_fallback:
            row["gate_fallback"] = True
        # A stored row's keys are RecallRow's (tests/test_result_types.py): shaped here, once.
        return cast("RecallRow", row)
