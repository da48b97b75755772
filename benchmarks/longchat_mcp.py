"""Long user–assistant histories through a real MCP client over stdio, default settings: the shape in
which issue 32 measures them from outside.

    python benchmarks/longchat_mcp.py benchmarks/results/longchat-multi --models-dir DIR \
        [--split all] [--histories N] [--settle-wait 300] [--json out.json]

``benchmarks/longchat.py`` measures the same histories through the Python API, on a file stored once
and copied, and calibrates with one explicit ``calibrate_threshold``. This script checks that the server
a user runs answers the same: per history one fresh SQLite file and one ``cpersona serve`` process with
nothing set but the file, the models folder and offline switches (``latency.env_for``), every turn
stored with the ``store`` tool (content ``"<role>: <text>"``, ``message.id`` = the turn id,
``message.timestamp`` = its time, as ``longchat.py`` stores it), then every question asked with
``recall`` (limit 10) twice:

- "as stored": right after the last store returned, as an impatient harness asks (self-calibration
  and the deferred embeddings of long records may still be running: each answer's ``gate.kind`` is
  counted);
- "settled": once a recall reports a calibrated gate, or the floor self-calibration keeps for an agent
  of long records (at most ``--settle-wait`` seconds).

Each time: an evidence session in the top 5, every evidence session in the top 10, session NDCG@10,
evidence turns in the top 10, real questions answered empty and, for knowledge updates, the newest
statement in the top 5 above the older ones (``longchat.score``), overall, per question type and per
wording (``longchat.type_means``). Rows
are mapped back to turn ids by the ``id`` each ``store`` returned. The questions of one history are asked
of one server in turn; recall's own bookkeeping (recall counts, the query cache) is what a user's server
does between questions too. No assertion on the figures.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

import latency as lat  # noqa: E402
from _common import data_models_parser, percentile, print_table, write_json  # noqa: E402
from _longchat_data import load  # noqa: E402
from locomo_mcp import recall_tool  # noqa: E402
from longchat import AGENT, METRICS, gate_settled, score, type_means  # noqa: E402

PHASES = ("as stored", "settled")


async def _until_settled(client: Any, wait_s: float) -> float | None:
    started = time.perf_counter()
    while time.perf_counter() - started < wait_s:
        if gate_settled(await recall_tool(client, "warm up", AGENT)):
            return round(time.perf_counter() - started, 1)
        await anyio.sleep(0.5)
    return None


async def _ask(
    client: Any, history: dict[str, Any], turn_of: dict[int, str], session_of: dict[str, str]
) -> tuple[list[dict[str, Any]], Counter[str]]:
    """Every question of ``history`` once, scored; the gate kinds of the answers."""
    rows: list[dict[str, Any]] = []
    kinds: Counter[str] = Counter()
    for q in history["questions"]:
        content = await recall_tool(client, q["question"], AGENT)
        gate = content.get("gate") or {}
        kinds[str(gate.get("kind", "none"))] += 1
        ranked = [
            turn_of.get(r.get("id", -1), "")
            for r in reversed(content.get("results", []))
            if r.get("type") == "memory"
        ]
        rows.append(
            {
                "question_id": q["question_id"],
                "type": q["question_type"],
                "wording": q.get("wording", ""),
                **score(ranked, q, session_of),
            }
        )
    return rows, kinds


async def history_run(history: dict[str, Any], models_dir: Path, settle_wait: float) -> dict[str, Any]:
    """One fresh server: store every turn, ask as stored, wait until settled, ask again."""
    from mcp import Client

    session_of = {t["turn_id"]: s["session_id"] for s in history["sessions"] for t in s["turns"]}
    with tempfile.TemporaryDirectory() as tmp:
        env = lat.env_for(Path(tmp) / "longchat.db", models_dir, "onnx")
        async with Client(lat._target(env), read_timeout_seconds=300) as client:
            turn_of: dict[int, str] = {}
            started = time.perf_counter()
            for session in history["sessions"]:
                for turn in session["turns"]:
                    message = {
                        "id": turn["turn_id"],
                        "content": f"{turn['role']}: {turn['text']}",
                        "timestamp": turn["time"],
                    }
                    result = await client.call_tool("store", {"agent_id": AGENT, "message": message})
                    out = result.structured_content or {}
                    if out.get("result") != "stored":
                        print(
                            f"  note: {turn['turn_id']} {out.get('result')}: {out.get('reason')}",
                            file=sys.stderr,
                        )
                    if "id" in out:
                        turn_of[int(out["id"])] = turn["turn_id"]
            stored_s = time.perf_counter() - started
            first = await _ask(client, history, turn_of, session_of)
            settled_after = await _until_settled(client, settle_wait)
            second = await _ask(client, history, turn_of, session_of)
    return {
        "history": history["history_id"],
        "store_s": round(stored_s, 1),
        "settled_after_s": settled_after,
        "as stored": first,
        "settled": second,
    }


def main() -> int:
    parser = data_models_parser(__doc__, model=False)
    parser.add_argument("--split", choices=("choose", "confirm", "all"), default="all")
    parser.add_argument("--histories", type=int, help="only the first N histories of the split")
    parser.add_argument(
        "--settle-wait", type=float, default=300.0, help="seconds to wait for self-calibration"
    )
    parser.add_argument("--json")
    args = parser.parse_args()
    histories = load(args.data_dir, args.split)[: args.histories]
    runs = []
    for n, history in enumerate(histories, 1):
        runs.append(anyio.run(history_run, history, args.models_dir, args.settle_wait))
        done = runs[-1]
        print(
            f"  {n}/{len(histories)} {done['history']}: stored in {done['store_s']} s, "
            f"settled after {done['settled_after_s']} s",
            file=sys.stderr,
        )
    table = []
    summary: dict[str, Any] = {}
    by_question: dict[str, list[dict[str, Any]]] = {}
    for phase in PHASES:
        by_question[phase] = [r for run in runs for r in run[phase][0]]
        kinds: Counter[str] = Counter()
        for run in runs:
            kinds.update(run[phase][1])
        summary[phase] = {"groups": type_means(by_question[phase]), "gate_kinds": dict(kinds)}
        for name, entry in summary[phase]["groups"].items():
            table.append([name, phase, *(entry[m] for m in METRICS), int(entry["n"])])
    print(f"\n{len(histories)} histories, split {args.split}, through MCP stdio, default settings")
    print_table(["type", "when", *METRICS, "n"], table)
    for phase in PHASES:
        kinds_text = ", ".join(f"{k} {v}" for k, v in sorted(summary[phase]["gate_kinds"].items()))
        print(f"gate of the answers, {phase}: {kinds_text}")
    print(f"storing one history: p50 {percentile([run['store_s'] for run in runs], 50):.1f} s")
    write_json(
        args.json,
        {
            "split": args.split,
            "summary": summary,
            "runs": [{k: v for k, v in run.items() if k not in PHASES} for run in runs],
            "rows": by_question,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
