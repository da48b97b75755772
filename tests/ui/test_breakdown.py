"""The search page's drawings: channel shares recomputed from recall's trace, the gate scale, escaping."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from cpersona.config import Settings
from cpersona.memory import Memory
from cpersona.ui.breakdown import channel_shares, gate_scale_svg, shares_svg
from cpersona.ui.insight import search_results
from cpersona.ui.pages import View


def _trace(
    mode: str, lists: dict[str, list[tuple[str, float]]], totals: dict[str, int] | None = None
) -> dict[str, Any]:
    """A trace shaped as recall builds it, with fused candidates computed by the formula under test."""
    fused: dict[str, dict[str, Any]] = {}
    for name, hits in lists.items():
        values = [v for _, v in hits]
        for rank, (ref, raw) in enumerate(hits, start=1):
            entry = fused.setdefault(ref, {"ref": ref, "score": 0.0, "channels": {}})
            if mode == "rsf":
                span = max(values) - min(values)
                entry["score"] += (raw - min(values)) / span if span else 1.0
            else:
                entry["score"] += 1 / (60 + rank)
            entry["channels"][name] = raw
    channels = {
        name: {
            "total": (totals or {}).get(name, len(hits)),
            "hits": [{"ref": r, "score": v} for r, v in hits],
        }
        for name, hits in lists.items()
    }
    return {"channels": channels, "fusion": {"mode": mode, "rrf_k": 60, "candidates": list(fused.values())}}


LISTS = {
    "vector": [("mem:1", 0.9), ("mem:2", 0.5), ("mem:3", 0.1)],
    "fts_words": [("mem:2", 7.0), ("mem:1", 3.0), ("mem:4", 1.0)],
}


def test_rsf_shares_are_each_channels_normalised_value() -> None:
    shares = channel_shares("mem:2", _trace("rsf", LISTS))
    assert shares == pytest.approx({"vector": 0.5, "fts_words": 1.0})
    assert channel_shares("mem:3", _trace("rsf", LISTS)) == pytest.approx({"vector": 0.0})


def test_rrf_shares_are_reciprocal_ranks() -> None:
    assert channel_shares("mem:1", _trace("rrf", LISTS)) == pytest.approx(
        {"vector": 1 / 61, "fts_words": 1 / 62}
    )


def test_one_channel_cut_short_is_solved_as_the_remainder_two_are_not_drawn() -> None:
    trace = _trace("rsf", LISTS, totals={"fts_words": 90})  # its floor lies beyond the listed hits
    assert channel_shares("mem:2", trace) == pytest.approx({"vector": 0.5, "fts_words": 1.0})
    both = _trace("rsf", LISTS, totals={"fts_words": 90, "vector": 90})
    assert channel_shares("mem:2", both) is None


def test_shares_that_do_not_add_up_to_the_fused_score_are_not_drawn() -> None:
    trace = _trace("rsf", LISTS)
    trace["fusion"]["candidates"][0]["score"] += 0.5
    assert channel_shares("mem:1", trace) is None
    assert channel_shares("mem:1", {**trace, "fusion": {**trace["fusion"], "mode": "cascade"}}) is None
    assert channel_shares("mem:9", _trace("rsf", LISTS)) is None and channel_shares("mem:1", None) is None


def test_the_context_channel_adds_its_bonus_as_is() -> None:
    trace = _trace("rsf", LISTS)
    candidate = next(c for c in trace["fusion"]["candidates"] if c["ref"] == "mem:4")
    candidate["channels"]["context"] = 0.25
    candidate["score"] += 0.25
    assert channel_shares("mem:4", trace) == pytest.approx({"fts_words": 0.0, "context": 0.25})


def test_shares_reproduce_the_real_pipelines_fused_scores(tmp_path: Path) -> None:
    settings = Settings(db_path=tmp_path / "m.db", embedding_mode="none", update_check=False)
    with Memory(settings, start_background=False) as memory:
        for text in (
            "the kestrel nests on the north tower",
            "a kestrel was seen hunting near the tower at dawn",
            "tower maintenance is on friday",
            "kestrels and falcons are small raptors",
        ):
            memory.store("ana", text)
        for i in range(40):  # a corpus where the query's words are rare, so bm25 has magnitude
            memory.store("ana", f"note {i} about the weekly grocery list")
        result = memory.recall("ana", "kestrel tower", limit=10, record=False, trace=True)
    assert result["results"]
    for row in result["results"]:
        shares = channel_shares(row["ref"], result["trace"])
        assert shares is not None, row["ref"]
        reason = row["match_reason"]
        fused = reason["rsf"] + reason.get("context", 0.0)  # the context channel adds to the rsf sum
        assert sum(shares.values()) == pytest.approx(fused, abs=1e-5)
        svg = shares_svg(shares)
        assert sum(float(x) for x in re.findall(r'data-share="([\d.]+)"', svg)) == pytest.approx(1, abs=1e-3)


def test_gate_scale_marks_threshold_and_measure_and_stretches_for_evidence() -> None:
    gate = {"kind": "heuristic", "threshold": 0.15, "top_cosine": 0.74, "keyed_on": "similarity"}
    svg = gate_scale_svg(gate, {"cosine": 0.61})
    assert 'data-threshold="0.1500"' in svg and 'data-value="0.6100"' in svg and 'class="above"' in svg
    evidence = {
        "kind": "calibrated",
        "threshold": 0.9,
        "evidence": 1.41,
        "top_cosine": 0.7,
        "keyed_on": "evidence",
    }
    svg = gate_scale_svg(evidence, {"cosine": 0.7})
    # Evidence may pass 1: the scale runs to 2 so the dot lands on it (at 1.41 / 2 of the track).
    assert "best evidence 1.410" in svg and 'cx="264.6"' in svg
    assert gate_scale_svg({"kind": "off", "threshold": None}, {"cosine": 0.5}) == ""


def test_search_results_escape_everything_from_the_store_and_the_response() -> None:
    hostile = "<script>alert(1)</script>"
    row = {
        "ref": "mem:1",
        "type": "memory",
        "id": 1,
        "agent_id": hostile,
        "project_id": hostile,
        "channel": "",
        "content": hostile,
        "match_reason": {"signal": hostile, "score": 1.0, "factors": {hostile: 1.0}, "gate": hostile},
        "verdict<img src=x onerror=alert(1)>": {hostile: hostile},
    }
    result = {
        "ok": True,
        "results": [row],
        "count": 1,
        "gate": {"kind": "heuristic", "threshold": 0.1, "top_cosine": 0.5, "reason": hostile},
        "search": {"vector": False, "keyword_channels": {hostile: hostile}},
        "explanation": hostile,
        "odd<b>": [hostile, {"k": hostile}],
        "trace": {
            "channels": {hostile: {"total": 1, "hits": [{"ref": "mem:1", "score": 1.0}]}},
            "fusion": {
                "mode": "rsf",
                "candidates": [{"ref": "mem:1", "score": 1.0, "channels": {hostile: 1.0}}],
            },
        },
    }
    page = search_results(result, View(csrf="c", read_only=False))
    assert "<script" not in page and "<img" not in page and "<b>" not in page
    assert "&lt;script&gt;" in page and 'data-channel="&lt;script&gt;' in page
