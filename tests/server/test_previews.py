"""The preview tier and response budgets, on plain row dicts shaped like Memory's."""

from __future__ import annotations

from typing import Any

from cpersona.core.limits import GET_CONTENTS_BUDGET_CHARS
from cpersona.server import previews


def mem(i: int, size: int, **extra: Any) -> dict[str, Any]:
    return {"ref": f"mem:{i}", "type": "memory", "id": i, "content": chr(ord("a") + i % 26) * size, **extra}


def episode(i: int, size: int) -> dict[str, Any]:
    text = "e" * size
    return {"ref": f"ep:{i}", "type": "episode", "id": i, "content": text, "summary": text}


def test_recall_previews_long_rows_but_never_profiles() -> None:
    profile = {"type": "profile", "agent_id": "a", "content": "p" * 900}
    result = {"ok": True, "results": [profile, mem(1, 499), mem(2, 501), episode(3, 2000)], "count": 4}
    shaped = previews.shape_recall(result, preview_chars=500, full_content=False)
    rows = shaped["results"]
    assert rows[0] == profile
    assert rows[1] == mem(1, 499)
    assert (
        rows[2]["content"] == "c" * 500
        and rows[2]["content_truncated"] is True
        and rows[2]["content_len"] == 501
    )
    assert rows[3]["content"] == rows[3]["summary"] == "e" * 500 and rows[3]["ref"] == "ep:3"
    assert result["results"][2]["content"] == "c" * 501  # the input is not mutated
    assert "full_content_budget_chars" not in shaped


def test_full_content_spends_the_budget_from_the_best_end() -> None:
    rows = [mem(1, 100), mem(2, 100), mem(3, 100)]  # worst -> best
    shaped = previews.shape_recall({"results": rows}, preview_chars=10, full_content=True, budget_chars=200)
    out = shaped["results"]
    assert out[2] == rows[2] and out[1] == rows[1]  # the two most relevant stay whole
    assert (
        out[0]["content_truncated"] is True and out[0]["content"] == "b" * 10 and out[0]["content_len"] == 100
    )
    assert shaped["full_content_budget_chars"] == 200


def test_full_content_budget_exact_accounting() -> None:
    rows = [mem(1, 100), mem(2, 150), mem(3, 60)]
    shaped = previews.shape_recall({"results": rows}, preview_chars=10, full_content=True, budget_chars=200)
    out = shaped["results"]
    assert "content_truncated" not in out[2]  # 60 whole, 140 left
    assert out[1]["content_truncated"] is True  # 150 does not fit; its preview costs 10, 130 left
    assert "content_truncated" not in out[0]  # 100 still fits whole
    assert shaped["full_content_budget_exceeded"] is True and shaped["previewed_count"] == 1


def test_get_contents_defers_the_tail_but_always_returns_the_first_item() -> None:
    items = [mem(1, 50_000), mem(2, 10), mem(3, 10)]
    shaped = previews.shape_get_contents(
        {"ok": True, "items": items, "missing": ["mem:9"]}, budget_chars=40_000
    )
    assert [i["ref"] for i in shaped["items"]] == ["mem:1"]
    assert shaped["items"][0]["content"] == items[0]["content"]
    assert shaped["deferred"] == ["mem:2", "mem:3"] and shaped["missing"] == ["mem:9"]

    fits = previews.shape_get_contents(
        {"ok": True, "items": [mem(1, 30_000), mem(2, 10_000), mem(3, 1)], "missing": []}
    )
    assert [i["ref"] for i in fits["items"]] == ["mem:1", "mem:2"] and fits["deferred"] == ["mem:3"]
    assert fits["budget_chars"] == GET_CONTENTS_BUDGET_CHARS


def test_listing_budget_previews_after_the_budget() -> None:
    items = [mem(i, 300) for i in range(10)]
    shaped = previews.shape_listing(
        {"ok": True, "items": items, "count": 10}, preview_chars=100, budget_chars=1000
    )
    whole = [i for i in shaped["items"] if "content_truncated" not in i]
    assert len(whole) == 3 and shaped["previewed_count"] == 7
    assert shaped["content_budget_exceeded"] is True and shaped["content_budget_chars"] == 1000
    small = previews.shape_listing({"ok": True, "items": items[:2]}, preview_chars=100)
    assert "content_budget_exceeded" not in small and small["items"] == items[:2]


def test_a_long_memory_matched_by_a_block_previews_that_part() -> None:
    text = "".join(f"{n:04d}" for n in range(1000))  # 4,000 characters, each position readable
    reason = {"signal": "rsf", "score": 1.0, "factors": {}, "block": {"index": 3, "start": 2000, "end": 2200}}
    row = {"ref": "mem:7", "type": "memory", "id": 7, "content": text, "match_reason": reason}
    shaped = previews.preview_row(row, 500)
    # A block shorter than the preview: centred in it, and content_start says where the preview begins.
    assert shaped["content_start"] == 1850 and shaped["content"] == text[1850:2350]
    assert shaped["content_truncated"] is True and shaped["content_len"] == 4000 and shaped["ref"] == "mem:7"
    # A block longer than the preview starts it; a block at the end keeps the preview whole.
    long_block = {**row, "match_reason": {**reason, "block": {"index": 1, "start": 900, "end": 1700}}}
    assert previews.preview_row(long_block, 500)["content"] == text[900:1400]
    at_end = {**row, "match_reason": {**reason, "block": {"index": 9, "start": 3900, "end": 4000}}}
    end = previews.preview_row(at_end, 500)
    assert end["content"] == text[3500:] and end["content_start"] == 3500
    # Without a block the preview is the plain prefix, and says nothing of a start.
    plain = previews.preview_row({**row, "match_reason": {"signal": "rsf", "score": 1.0, "factors": {}}}, 500)
    assert plain["content"] == text[:500] and "content_start" not in plain
