"""The original CPersona (PyPI ``cpersona``) on the shared LoCoMo conversations, over MCP stdio, settled.

    python benchmarks/research/original_locomo.py ../shared/data/locomo \
        --command /path/to/venv/bin/cpersona --models-dir DIR [--conversations 26 30] [--json out.json]

Why: the issue gives the original's newest release's figure on LoCoMo conversations we have not seen
(recall@10 0.592); its figure on the three we have says how much harder the unseen ones are for a
server that chose nothing on ours, a second anchor for our own held-out estimate besides the round's
start (docs/research/recall-round-three/held-out-estimates.md, "The original's newest release on LoCoMo").

As ``benchmarks/locomo_mcp.py`` stores and asks, with the same model: our ``cpersona embed-server``
contract serves MiniLM on loopback and the original embeds through it (``original_longchat.py``).
Per conversation one fresh file and two phases, each asking every question with evidence (``recall``,
limit 10), the next conversation's questions (negatives) and the same renamed (renamed):

- "as stored": one original server stores every turn (``store(agent_id, message{id: dia_id, content:
  "[<session date>] <speaker>: <text>", timestamp})``), waits for its write queue to empty and is
  asked, as a harness that starts one server per conversation measures it. It never calibrates then:
  the original calibrates as it starts, and at its start the file was empty;
- "settled": a second server on the same file, which calibrates in the background as it starts, is
  asked once its calibration file has stopped changing (``QUIET_S``; at most ``--settle-wait``
  seconds), as a user's server answers from its next start on.

``real_short`` is the share of real questions answered with fewer than 10 rows. Rows are mapped back
by the message id the original returns; ``--json`` also keeps every question's ten dia_ids, best first
(``answers``), to set beside ours question by question. An answer with an error ends the run (it would
read as an empty answer). Used to compare, never to choose a constant.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import data_models_parser, print_table, write_json  # noqa: E402
from _locomo_data import Conversation, paired_conversations  # noqa: E402
from _locomo_gate import pool, stats  # noqa: E402
from _retrieval_metrics import LIMIT, score_question  # noqa: E402
from locomo import summarise_arm  # noqa: E402
from original_japanese import Client  # noqa: E402
from original_longchat import embedding_server, original_env, settle  # noqa: E402

AGENT = "locomo"
#: As ``locomo_mcp.py``: asked by the server that stored, then by a restarted one once calibrated.
PHASES = ("as stored", "settled")


def store_conversation(client: Client, data: Conversation) -> None:
    """Every turn, as ``locomo_mcp.py`` stores it."""
    for dia_id, content, stamp in data.turns():
        message: dict[str, Any] = {"id": dia_id, "content": content}
        if stamp:
            message["timestamp"] = stamp
        out = client.tool("store", {"agent_id": AGENT, "message": message})
        if out.get("ok") is False or "error" in out:
            print(f"  note: {dia_id}: {str(out)[:200]}", file=sys.stderr)


#: The original writes its calibration sidecar more than once as it starts (2.6.14: the vector
#: thresholds after about a second, the fused gate ten seconds later): it is settled once the file
#: has not changed for this long.
QUIET_S = 30.0


def until_calibrated(db: Path, since: float, wait_s: float, quiet_s: float = QUIET_S) -> float | None:
    """Seconds until the original's calibration sidecar (``<file>.calibration.json``), written after
    ``since`` (a ``time.time()``), has not changed for ``quiet_s``; None when ``wait_s`` passed first."""
    sidecar = db.with_name(db.name + ".calibration.json")
    started = time.monotonic()
    seen: tuple[float, int] | None = None
    seen_at = started
    while time.monotonic() - started < wait_s:
        stat = sidecar.stat() if sidecar.exists() else None
        if stat is not None and stat.st_mtime >= since:
            now = (stat.st_mtime, stat.st_size)
            if now != seen:
                seen, seen_at = now, time.monotonic()
            elif time.monotonic() - seen_at >= quiet_s:
                return round(seen_at - started, 1)
        time.sleep(0.5)
    return None


def rows_of(out: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of a ``recall`` answer, best first (the original lists them best last)."""
    found = out.get("results") or out.get("memories") or out.get("messages") or []
    return list(reversed([r for r in found if isinstance(r, dict)]))


def recall(client: Client, query: str) -> list[dict[str, Any]]:
    """One ``recall`` (limit 10), its rows best first; an answer with an error ends the run."""
    out = client.tool("recall", {"agent_id": AGENT, "query": query, "limit": LIMIT})
    if out.get("ok") is False or "error" in out:
        raise SystemExit(f"recall failed for {query!r}: {str(out)[:300]}")
    return rows_of(out)


def ask(client: Client, data: Conversation, other: Conversation) -> dict[str, Any]:
    """Every question with evidence, every negative and renamed negative, once."""
    by_cat: dict[int, list[dict[str, float]]] = defaultdict(list)
    real: list[dict[str, float]] = []
    answers: list[dict[str, Any]] = []
    for qa in data.questions():
        evidence = [e for e in qa.get("evidence", []) if e]
        if not evidence:
            continue
        rows = recall(client, qa["question"])
        ranked = [str(r.get("id", "")) for r in rows if r.get("type", "memory") == "memory"]
        scored = score_question(ranked, evidence)
        by_cat[int(qa["category"])].append(scored)
        if int(qa["category"]) != 5:
            real.append(scored)
        answers.append(
            {"question": qa["question"], "category": int(qa["category"]), "ranked": ranked[:LIMIT]}
        )
    entry: dict[str, Any] = {"by_cat": by_cat, "real": real, "answers": answers}
    for name, questions in (
        ("negative", other.negatives_for(data)),
        ("renamed", other.renamed_negatives_for(data)),
    ):
        flags = []
        for q in questions:
            flags.append(1.0 if not [r for r in recall(client, q) if r.get("type") != "profile"] else 0.0)
        entry[f"{name}_empty"] = flags
    return entry


def conversation(
    command: str, url: str, data: Conversation, other: Conversation, tmp: Path, wait_s: float
) -> dict[str, Any]:
    """Store and ask in one server ("as stored"), then ask a second one on the same file once it has
    calibrated ("settled")."""
    db = tmp / f"{data.name}.db"
    env = original_env(db, url)
    writer = Client([command], env)
    try:
        store_conversation(writer, data)
        queue_s = settle(writer)
        first = ask(writer, data, other)
    finally:
        writer.close()
    since = time.time()
    reader = Client([command], env)
    try:
        calibrated_after = until_calibrated(db, since, wait_s)
        second = ask(reader, data, other)
    finally:
        reader.close()
    return {"queue_s": queue_s, "calibrated_after_s": calibrated_after, PHASES[0]: first, PHASES[1]: second}


def summary(entry: dict[str, Any]) -> dict[str, Any]:
    """``locomo_mcp.py``'s figures of one (conversation, phase), and the share of real questions
    answered with fewer than ``LIMIT`` rows (how a threshold shows in recall@10)."""
    real = entry["real"]
    return {**stats(entry), "real_short": sum(r["short"] for r in real) / (len(real) or 1)}


def table_row(name: str, phase: str, entry: dict[str, Any]) -> list[Any]:
    s = summary(entry)
    cats = summarise_arm(entry["by_cat"])["categories"]
    per_cat = " · ".join(f"{c.split()[0]}: {v['recall@10']:.3f}" for c, v in cats.items())
    return [
        name,
        phase,
        s["recall@10"],
        s["ndcg@10"],
        s["real_short"],
        s["real_empty"],
        s["negative_empty"],
        s["renamed_empty"],
        per_cat,
    ]


def main() -> int:
    parser = data_models_parser(__doc__)
    parser.add_argument("--command", required=True, help="the original's executable (cpersona)")
    parser.add_argument("--conversations", nargs="*")
    parser.add_argument("--settle-wait", type=float, default=300.0, help="seconds to wait for a calibration")
    parser.add_argument("--json")
    args = parser.parse_args()
    pairs = paired_conversations(args.data_dir, args.conversations)
    per_conv: dict[str, dict[str, Any]] = {}
    with embedding_server(args.models_dir, args.model) as url, tempfile.TemporaryDirectory() as tmp:
        for data, other in pairs:
            per_conv[data.name] = conversation(args.command, url, data, other, Path(tmp), args.settle_wait)
            done = per_conv[data.name]
            print(
                f"  {data.name}: queue empty after {done['queue_s']} s, "
                f"calibration last written after {done['calibrated_after_s']} s",
                file=sys.stderr,
            )
    pooled = {phase: pool([c[phase] for c in per_conv.values()]) for phase in PHASES}
    rows = []
    for phase in PHASES:
        rows.append(table_row("overall", phase, pooled[phase]))
        rows += [table_row(name, phase, c[phase]) for name, c in per_conv.items()]
    print_table(
        [
            "conversation",
            "when",
            "recall@10",
            "ndcg@10",
            "real_short",
            "real_empty",
            "negative_empty",
            "renamed_empty",
            "recall@10 by category",
        ],
        rows,
    )
    write_json(
        args.json,
        {
            "command": args.command,
            **{
                phase: {
                    "overall": summary(pooled[phase]),
                    "categories": summarise_arm(pooled[phase]["by_cat"])["categories"],
                    "per_conversation": {name: summary(c[phase]) for name, c in per_conv.items()},
                    "answers": {name: c[phase]["answers"] for name, c in per_conv.items()},
                }
                for phase in PHASES
            },
            "settling": {
                name: {"queue_s": c["queue_s"], "calibrated_after_s": c["calibrated_after_s"]}
                for name, c in per_conv.items()
            },
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
