"""Where the evidence a recall misses sits: can a change of order reach it, or only a wider search?

    python benchmarks/research/locomo_misses.py ../shared/data/locomo --models-dir DIR [--conversations 26]
        [--list 1] [--json out.json]

Each conversation is stored as in benchmarks/locomo.py (one memory per turn, "[<session date>] <speaker>:
<text>", msg_id = dia_id, timestamp = the session date) and each question of categories 1-4 is recalled
once with ``limit=10, trace=True`` through ``Memory.recall`` (production defaults; the gate uncalibrated,
which on LoCoMo passes every real question). Every evidence turn outside the top 10 is then placed by the
trace (docs/retrieval.md#trace-recalltracetrue):

- ``ranked 11-30``: among the 30 best rows after fusion and penalties (the trace's ``scored``) but not
  returned: a change of order reaches it;
- ``fused below 30``: in some channel's list but not among those 30;
- ``in no list``: in none of the channels' lists (each 30 deep): only a wider or different search finds it.

Besides, per missed turn: whether any row of its session is in the top 10 (LoCoMo numbers its sessions:
``D<session>:<turn>``), i.e. whether the miss is a neighbour of what was found or a session not found at all.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/ (_common, _locomo_data)

from _common import model_memory, print_table, write_json  # noqa: E402
from _locomo_data import CATEGORY_NAMES, Conversation, conversation_files  # noqa: E402

from cpersona.storage.scope import Scope  # noqa: E402

AGENT = "locomo"
LIMIT = 10
CATEGORIES = (1, 2, 3, 4)  # 5 (adversarial) is reported apart in benchmarks/locomo.py
PLACES = ("top 10", "ranked 11-30", "fused below 30", "in no list")


def session_of(dia_id: str) -> str:
    """The session of a LoCoMo turn id, which names it: "D12:3" → "D12"."""
    return dia_id.split(":", 1)[0]


def place(turn: str, trace: dict[str, Any], ref_of: dict[str, str]) -> str:
    """Where ``turn`` (a dia_id) sits in one recall's trace: one of ``PLACES``."""
    returned = [ref_of.get(ref) for ref in trace["returned"]]
    if turn in returned:
        return "top 10"
    if turn in [ref_of.get(row["ref"]) for row in trace["scored"]["rows"]]:
        return "ranked 11-30"
    listed = {ref_of.get(hit["ref"]) for channel in trace["channels"].values() for hit in channel["hits"]}
    return "fused below 30" if turn in listed else "in no list"


def misses(conversation: Conversation, models_dir: Path, model: str) -> list[dict[str, Any]]:
    """One row per evidence turn of every question of categories 1-4: its place and its session's."""
    out: list[dict[str, Any]] = []
    # The recent-recall penalty off (1.0): each question is an independent session.
    with model_memory(models_dir, model, recent_recall_penalty=1.0) as mem:
        mem.embeddings.settle_query_kernel()
        for dia_id, content, stamp in conversation.turns():
            mem.store(AGENT, content, msg_id=dia_id, timestamp=stamp)
        rows = mem.storage.session().memories.list_recent(Scope(AGENT), 10**9)
        ref_of = {f"mem:{row['id']}": row["msg_id"] for row in rows}
        for qa in conversation.questions():
            category = int(qa["category"])
            evidence = [e for e in qa.get("evidence", []) if e]
            if category not in CATEGORIES or not evidence:
                continue
            trace = mem.recall(AGENT, qa["question"], limit=LIMIT, trace=True, record=False)["trace"]
            found_sessions = {session_of(ref_of.get(ref, "")) for ref in trace["returned"]}
            for turn in evidence:
                out.append(
                    {
                        "category": category,
                        "question": qa["question"],
                        "turn": turn,
                        "place": place(turn, trace, ref_of),
                        "session_in_top10": session_of(turn) in found_sessions,
                    }
                )
    return out


def table(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per category (and overall): evidence turns by place, and the missed ones whose session was found."""
    out = []
    for category in (*CATEGORIES, 0):
        picked = [r for r in rows if category in (0, r["category"])]
        count = Counter(r["place"] for r in picked)
        missed = [r for r in picked if r["place"] != "top 10"]
        out.append(
            {
                "category": "overall" if category == 0 else CATEGORY_NAMES[category],
                "evidence": len(picked),
                **{p: count[p] for p in PLACES},
                "missed, session in top 10": sum(r["session_in_top10"] for r in missed),
            }
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data", type=Path, help="a LoCoMo JSON file or a folder of them")
    parser.add_argument("--models-dir", type=Path, required=True)
    parser.add_argument("--model", default="all-minilm-l6-v2")
    parser.add_argument("--conversations", nargs="*", help="only these (file stems)")
    parser.add_argument("--list", type=int, metavar="CATEGORY", help="print every missed turn of a category")
    parser.add_argument("--json", help="write every evidence turn's place here")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    for path in conversation_files(args.data, args.conversations):
        found = misses(Conversation.load(path), args.models_dir, args.model)
        rows += [{"conversation": path.stem, **r} for r in found]
    summary = table(rows)
    print_table(list(summary[0]), [list(r.values()) for r in summary])
    if args.list is not None:
        for r in rows:
            if r["category"] == args.list and r["place"] != "top 10":
                print(f"{r['conversation']} {r['turn']:>7} {r['place']:<15} {r['question']}")
    if args.json:
        write_json(args.json, {"turns": rows, "table": summary})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
