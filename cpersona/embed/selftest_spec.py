"""The self-test pairs a manifest carries (``[self_test]``): parsed data shared by the registry,
the runtime load check and the installer (running the test lives in ``runtime/selftest.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: Margin used when a manifest does not state one (see docs/models.md for how it was chosen).
DEFAULT_MIN_MARGIN = 0.03


class SelfTestSpecError(ValueError):
    """The ``[self_test]`` table of a manifest is malformed."""


@dataclass(frozen=True)
class SelfTestPair:
    """One query and the document it must find."""

    query: str
    document: str
    lang: str = ""


@dataclass(frozen=True)
class SelfTestSpec:
    """The pairs, the distractors and the margin of one model."""

    pairs: tuple[SelfTestPair, ...]
    distractors: tuple[str, ...] = ()
    min_margin: float = DEFAULT_MIN_MARGIN

    @property
    def documents(self) -> list[str]:
        """Every test document: the pairs' documents in order, then the distractors."""
        return [p.document for p in self.pairs] + list(self.distractors)

    @property
    def languages(self) -> set[str]:
        """Languages the pairs cover (their ``lang`` tags)."""
        return {p.lang for p in self.pairs if p.lang}


def parse_self_test(raw: Any) -> SelfTestSpec | None:
    """Build a SelfTestSpec from a manifest's ``self_test`` table (None when absent)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise SelfTestSpecError("self_test must be a table")
    pairs = []
    for entry in raw.get("pairs", []) or []:
        if not isinstance(entry, dict) or not entry.get("query") or not entry.get("document"):
            raise SelfTestSpecError("every [[self_test.pairs]] entry needs a query and a document")
        pairs.append(SelfTestPair(str(entry["query"]), str(entry["document"]), str(entry.get("lang", ""))))
    if not pairs:
        raise SelfTestSpecError("self_test needs at least one [[self_test.pairs]] entry")
    distractors = raw.get("distractors", []) or []
    if not isinstance(distractors, list) or not all(isinstance(d, str) and d for d in distractors):
        raise SelfTestSpecError("self_test.distractors must be a list of non-empty strings")
    try:
        margin = float(raw.get("min_margin", DEFAULT_MIN_MARGIN))
    except (TypeError, ValueError) as exc:
        raise SelfTestSpecError("self_test.min_margin must be a number") from exc
    if not 0.0 <= margin < 1.0:
        raise SelfTestSpecError("self_test.min_margin must lie in [0, 1)")
    documents = [p.document for p in pairs] + list(distractors)
    if len(set(documents)) != len(documents):
        raise SelfTestSpecError("self_test documents and distractors must all differ")
    return SelfTestSpec(tuple(pairs), tuple(distractors), margin)
