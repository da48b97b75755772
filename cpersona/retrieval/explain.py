"""Recall explained in words for people: the sentence an empty or shortened answer carries, and the gate
and search metadata as one line each (docs/retrieval.md#an-empty-or-shortened-answer-says-why-explanation; the MCP response, the CLI and the browser view all use
these, so they say the same thing). Pure functions of the response's ``gate`` / ``search`` objects.
"""

from __future__ import annotations

from typing import Any


def _num(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, int | float) and not isinstance(value, bool) else "?"


def gate_name(gate: dict[str, Any]) -> str:
    """'the calibrated balanced gate', 'the uncalibrated gate', ..., 'no gate'."""
    kind = gate.get("kind")
    level = gate.get("level")
    if kind == "calibrated":
        return f"the calibrated {level} gate" if level else "the calibrated gate"
    if kind == "heuristic":
        return (
            "the uncalibrated gate (its calibration is stale)"
            if gate.get("stale")
            else "the uncalibrated gate"
        )
    return "no gate"


def _advice(gate: dict[str, Any]) -> str:
    if gate.get("kind") == "calibrated":
        level = gate.get("level")
        looser = ", or a more lenient precision (set_recall_precision)" if level != "lenient" else ""
        return f"Try other words or a name or identifier a memory contains{looser}."
    return (
        "Nothing stored resembles it at all; try other words, or the exact name or identifier a memory uses."
    )


def explain(
    gate: dict[str, Any],
    count: int,
    limit: int,
    *,
    keyword_only: bool = False,
    empty_query: bool = False,
) -> str | None:
    """One human sentence for an empty or shortened recall (None when nothing needs explaining).

    ``count`` is the number of rows returned (profiles excluded), ``limit`` what was asked for.
    Says which gate cut it, its threshold, the best candidate's similarity and what to try.
    """
    if limit <= 0:
        return None
    cut = int(gate.get("cut") or 0)
    trimmed = int(gate.get("autocut") or 0)
    threshold, top = gate.get("threshold"), gate.get("top_cosine")
    name = gate_name(gate)
    if gate.get("passed") is False:
        best = _best_candidate(gate)
        if count == 0:
            return (
                f"Nothing returned: {name} (threshold {_num(threshold)}) judged that nothing stored here "
                f"answers this query — {best}. {_advice(gate)}"
            )
        if gate.get("keyed_on") == "confidence":
            return (
                f"No row reached {name}'s threshold {_num(threshold)} ({best}); the {count} keyword "
                "match(es) returned are marked gate_fallback. " + _advice(gate)
            )
        return (
            f"Only {count} exact match(es) returned: {name} (threshold {_num(threshold)}) cut the other "
            f"{cut} candidate(s) — {best}. {_advice(gate)}"
        )
    if cut and gate.get("keyed_on") == "confidence":
        return (
            f"{cut} row(s) whose confidence was below {name}'s threshold {_num(threshold)} were dropped; "
            f"{count} returned."
        )
    if trimmed:
        return (
            f"{trimmed} lower-ranked row(s) dropped by autocut after a large gap in similarity; {count} "
            "returned (ask with deep=true or other words to see more)."
        )
    if count:
        return None
    if empty_query:
        return "Nothing returned: this scope holds no memories yet."
    if keyword_only:
        reason = gate.get("reason") or "no embedding model is ready"
        return (
            f"Nothing matched by keyword, and search is keyword-only ({reason}): try the exact words a "
            "memory uses."
        )
    best = "" if top is None else f" (best similarity {_num(top)})"
    return (
        f"Nothing returned: no memory or episode in this scope matched the query by keyword or meaning{best}."
    )


def _best_candidate(gate: dict[str, Any]) -> str:
    """The best candidate's measure, as the gate compared it (evidence or plain similarity)."""
    top = gate.get("top_cosine")
    if gate.get("keyed_on") == "evidence" and gate.get("evidence") is not None:
        return (
            f"the best match scores {_num(gate['evidence'])} (similarity {_num(top)} plus "
            f"{_num(gate.get('coverage'))} for the query's words it contains)"
        )
    return f"the best match has similarity {_num(top)}" if top is not None else "no row had a similarity"


def describe_gate(gate: dict[str, Any]) -> str:
    """The gate object as one line of words (the browser view, the CLI)."""
    kind = gate.get("kind")
    if kind == "off" or gate.get("threshold") is None:
        reason = gate.get("reason")
        return f"No gate: {reason}." if reason else "No gate."
    top = gate.get("top_cosine")
    verdict = "passed" if gate.get("passed") else "cut"
    keyed_on = gate.get("keyed_on")
    if keyed_on == "evidence" and gate.get("evidence") is not None:
        keyed = "the best candidate's evidence (similarity plus the query's words it contains)"
        best = f"best evidence {_num(gate['evidence'])} (similarity {_num(top)})"
    else:
        keyed = "each row's confidence" if keyed_on == "confidence" else "the query's best similarity"
        best = f"best similarity {_num(top)}"
    line = (
        f"{name_cap(gate_name(gate))}, threshold {_num(gate.get('threshold'))} on {keyed}: {best}, {verdict}"
    )
    if gate.get("cut"):
        line += f"; {gate['cut']} candidate(s) cut"
    if gate.get("autocut"):
        line += f"; {gate['autocut']} dropped by autocut"
    if kind == "heuristic" and gate.get("reason"):
        line += f" ({gate['reason']})"
    return line + "."


def name_cap(text: str) -> str:
    """``text`` with its first letter upper-case."""
    return text[:1].upper() + text[1:]


def describe_search(search: dict[str, Any], mode: str | None = None) -> str:
    """How rows were found, in words: the channels that ran and the fusion."""
    parts = []
    if search.get("vector"):
        parts.append("meaning (vector)")
    channels = search.get("keyword_channels") or {}
    words = {
        "fts_memories": "trigram keyword",
        "fts_words": "word keyword",
        "fts_episodes": "episode keyword",
    }
    for channel, method in channels.items():
        if method and method != "none":
            parts.append(f"{words.get(channel, channel)} ({method})")
    if not parts:
        return (
            "Search: most recent memories (empty query)." if search.get("keyword") == "none" else "Search: -."
        )
    fused = f", fused by {mode}" if mode and len(parts) > 1 else ""
    return f"Search: {', '.join(parts)}{fused}."


def describe_factors(reason: dict[str, Any]) -> str:
    """``rsf 2 × recent_recall_penalty 0.7 = 1.4``: what a row's score is made of (its match_reason)."""
    factors = reason.get("factors") or {}
    parts = [f"{name} {value:g}" for name, value in factors.items() if isinstance(value, int | float)]
    score = reason.get("score")
    if not parts:
        return ""
    total = f" = {score:g}" if isinstance(score, int | float) and len(parts) > 1 else ""
    return " × ".join(parts) + total
