"""LoCoMo through a real MCP client over stdio, default settings: what an outside harness measures.

    python benchmarks/locomo_mcp.py ../shared/data/locomo --models-dir DIR [--conversations 26 30]
        [--settle-wait 300] [--json out.json]

``benchmarks/locomo.py`` measures through the Python API and simulates self-calibration with one
``calibrate_threshold`` call. This script checks that the server a user runs answers the same: per
conversation one fresh SQLite file and one ``cpersona serve`` process with nothing set but the file,
the models folder and offline switches (``latency.env_for``), every turn stored with the ``store``
tool (content "[<session date>] <speaker>: <text>", ``message.id`` = the dia_id, ``message.timestamp``
= the session date), then every question asked with ``recall`` (limit 10) twice:

- "as stored": right after the last store returned, as an impatient harness asks (the background
  self-calibration may not have run yet: each answer's ``gate.kind`` is counted);
- "settled": once a recall reports a calibrated gate (at most ``--settle-wait`` seconds), as a user's
  server answers for the rest of its life.

Each time: recall@10 / NDCG@10 of categories 1-4 and per category (5 = adversarial on its own), real
questions answered empty, the next conversation's questions answered empty (negatives) and the same
with its speakers renamed to this conversation's (renamed), as in ``locomo.py``'s default path.
Rows are mapped back to dia_ids by the ``id`` each ``store`` returned. No assertion on the figures.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

import latency as lat  # noqa: E402
from _common import data_models_parser, print_table, write_json  # noqa: E402
from _locomo_data import Conversation, paired_conversations  # noqa: E402
from _locomo_gate import pool, stats  # noqa: E402
from _retrieval_metrics import LIMIT, score_question  # noqa: E402
from locomo import summarise_arm  # noqa: E402

AGENT = "locomo"
PHASES = ("as stored", "settled")


async def recall_tool(client: Any, query: str, agent: str = AGENT) -> dict[str, Any]:
    """One ``recall`` (limit 10) through the MCP client; an error ends the run."""
    result = await client.call_tool("recall", {"agent_id": agent, "query": query, "limit": LIMIT})
    content = result.structured_content or {}
    if result.is_error or content.get("ok") is False:
        raise SystemExit(f"recall failed for {query!r}: {content or result.content}")
    return content


async def _ask(
    client: Any, data: Conversation, other: Conversation, dia_of: dict[int, str]
) -> dict[str, Any]:
    """Every real question, negative and renamed negative, once."""
    by_cat: dict[int, list[dict[str, float]]] = defaultdict(list)
    real: list[dict[str, float]] = []
    kinds: Counter[str] = Counter()
    for qa in data.questions():
        evidence = [e for e in qa.get("evidence", []) if e]
        if not evidence:
            continue
        content = await recall_tool(client, qa["question"])
        kinds[(content.get("gate") or {}).get("kind", "none")] += 1
        ranked = [
            dia_of.get(r.get("id"), "")
            for r in reversed(content.get("results", []))
            if r.get("type") == "memory"
        ]
        scored = score_question(ranked, evidence)
        by_cat[int(qa["category"])].append(scored)
        if int(qa["category"]) != 5:
            real.append(scored)
    out: dict[str, Any] = {"by_cat": by_cat, "real": real, "gate_kinds": dict(kinds)}
    for name, questions in (
        ("negative", other.negatives_for(data)),
        ("renamed", other.renamed_negatives_for(data)),
    ):
        flags = []
        for q in questions:
            rows = (await recall_tool(client, q)).get("results", [])
            flags.append(1.0 if not [r for r in rows if r.get("type") != "profile"] else 0.0)
        out[f"{name}_empty"] = flags
    return out


async def _until_calibrated(client: Any, wait_s: float) -> float | None:
    started = time.perf_counter()
    while time.perf_counter() - started < wait_s:
        content = await recall_tool(client, "warm up")
        if (content.get("search") or {}).get("vector") and (content.get("gate") or {}).get(
            "kind"
        ) == "calibrated":
            return round(time.perf_counter() - started, 1)
        await anyio.sleep(0.5)
    return None


async def conversation(
    data: Conversation, other: Conversation, models_dir: Path, settle_wait: float
) -> dict[str, Any]:
    """One fresh server: store every turn, ask as stored, wait for self-calibration, ask again."""
    from mcp import Client

    with tempfile.TemporaryDirectory() as tmp:
        env = lat.env_for(Path(tmp) / "locomo.db", models_dir, "onnx")
        async with Client(lat._target(env), read_timeout_seconds=300) as client:
            dia_of: dict[int, str] = {}
            started = time.perf_counter()
            for dia_id, content, stamp in data.turns():
                message: dict[str, Any] = {"id": dia_id, "content": content}
                if stamp:
                    message["timestamp"] = stamp
                result = await client.call_tool("store", {"agent_id": AGENT, "message": message})
                out = result.structured_content or {}
                if out.get("result") != "stored":
                    print(f"  note: {dia_id} {out.get('result')}: {out.get('reason')}", file=sys.stderr)
                if "id" in out:
                    dia_of[int(out["id"])] = dia_id
            stored_s = time.perf_counter() - started
            first = await _ask(client, data, other, dia_of)
            calibrated_after = await _until_calibrated(client, settle_wait)
            second = await _ask(client, data, other, dia_of)
    return {
        "store_s": round(stored_s, 1),
        "calibrated_after_s": calibrated_after,
        "as stored": first,
        "settled": second,
    }


def _row(name: str, phase: str, entry: dict[str, Any]) -> list[Any]:
    s = stats(entry)
    cats = summarise_arm(entry["by_cat"])["categories"]
    per_cat = " · ".join(f"{c.split()[0]}: {v['recall@10']:.3f}" for c, v in cats.items())
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(entry.get("gate_kinds", {}).items()))
    return [
        name,
        phase,
        s["recall@10"],
        s["ndcg@10"],
        s["real_empty"],
        s["negative_empty"],
        s["renamed_empty"],
        per_cat,
        kinds,
    ]


def main() -> int:
    parser = data_models_parser(__doc__, model=False)
    parser.add_argument("--conversations", nargs="*")
    parser.add_argument(
        "--settle-wait", type=float, default=300.0, help="seconds to wait for self-calibration"
    )
    parser.add_argument("--json")
    args = parser.parse_args()
    per_conv: dict[str, dict[str, Any]] = {}
    for data, other in paired_conversations(args.data_dir, args.conversations):
        per_conv[data.name] = anyio.run(conversation, data, other, args.models_dir, args.settle_wait)
        done = per_conv[data.name]
        print(
            f"  {data.name}: stored in {done['store_s']} s, calibrated after {done['calibrated_after_s']} s",
            file=sys.stderr,
        )
    rows = []
    for phase in PHASES:
        entries = [c[phase] for c in per_conv.values()]
        pooled = pool(entries)
        pooled["gate_kinds"] = sum((Counter(e["gate_kinds"]) for e in entries), Counter())
        rows.append(_row("overall", phase, pooled))
        rows += [_row(name, phase, c[phase]) for name, c in per_conv.items()]
    print_table(
        [
            "conversation",
            "when",
            "recall@10",
            "ndcg@10",
            "real_empty",
            "negative_empty",
            "renamed_empty",
            "recall@10 by category",
            "gate of real answers",
        ],
        rows,
    )
    write_json(
        args.json,
        {
            name: {
                "store_s": c["store_s"],
                "calibrated_after_s": c["calibrated_after_s"],
                **{phase: {k: v for k, v in stats(c[phase]).items()} for phase in PHASES},
            }
            for name, c in per_conv.items()
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
