"""Retrieval on Japanese paragraphs: keyword-only and with MiniLM (a model that does not read Japanese).

    python benchmarks/_japanese_data.py benchmarks/results/japanese --source vue=GIT_DIR --source vite=GIT_DIR
    python benchmarks/japanese.py benchmarks/results/japanese --models-dir DIR [--split choose|confirm|all]
        [--modes none,onnx] [--arms default,original,rsf-no-context,gate-off] [--arm NAME:CPERSONA_X=v,...]
        [--json out.json]

The data (benchmarks/_japanese_data.py: ~1,100 paragraphs of Japanese documentation, ~300 JSQuAD-like
questions with their gold paragraph) is read from DATA (japanese.json or the cache dir holding it). Every
paragraph is stored as one memory (msg_id = paragraph id) into one SQLite file per embedding mode
(``--modes``: none = keyword-only, onnx = the model in --models-dir); per arm a copy is opened with the
arm's settings (presets as in benchmarks/longchat.py, or --arm) and each question of the split is recalled
with limit 10, in the data's order, recorded as an agent's recall is (so a paragraph returned for one
question is a recently recalled row for the next; --no-record turns that off): "uncalibrated" (as shipped)
and "calibrated" (after one calibrate_threshold, as self-calibration does once the agent has grown), each
on its own copy of the stored file. Keyword-only has no "calibrated" (calibration measures cosines).

Metrics: hit@1 (the gold paragraph is the best row), top5 (in the top 5), MRR@10, empty (no row), per
split (choose, confirm, and both when --split all), and recall p50 in ms. Recall answers worst → best: the LAST element is the best match.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import QUERY_CACHE_OFF, percentile, print_table, write_json  # noqa: E402
from _japanese_data import load  # noqa: E402
from longchat import ARM_PRESETS, STATES, copy_db, read_arms  # noqa: E402

from cpersona.config import Settings  # noqa: E402
from cpersona.embed.runtime.none_backend import NoEmbeddings  # noqa: E402
from cpersona.memory import Memory  # noqa: E402
from cpersona.storage.scope import Scope  # noqa: E402

AGENT = "japanese"
LIMIT = 10
METRICS = ("hit@1", "top5", "mrr", "empty")


def score(ranked: list[str], gold: str) -> dict[str, float]:
    """hit@1, top5, reciprocal rank (0 past the top 10) and empty for one question; ``ranked`` best first."""
    rank = ranked.index(gold) + 1 if gold in ranked[:LIMIT] else None
    return {
        "hit@1": 1.0 if rank == 1 else 0.0,
        "top5": 1.0 if rank is not None and rank <= 5 else 0.0,
        "mrr": 1 / rank if rank else 0.0,
        "empty": 0.0 if ranked else 1.0,
    }


def _memory(settings: Settings) -> Memory:
    backend = NoEmbeddings() if settings.embedding_mode == "none" else None
    mem = Memory(settings, backend=backend, self_calibration=False)
    if backend is None and not mem.wait_until_ready(300):
        raise SystemExit(f"model did not load: {mem.embedding_status()}")
    return mem


def store(paragraphs: list[dict[str, Any]], settings: Settings) -> None:
    """Every paragraph as one memory into ``settings.db_path``."""
    with _memory(settings) as mem:
        for para in paragraphs:
            out = mem.store(AGENT, para["text"], msg_id=para["id"])
            if out["result"] != "stored":
                print(f"  note: {para['id']} {out['result']}: {out.get('reason')}", file=sys.stderr)
        mem.worker.drain()


def ask(questions: list[dict[str, Any]], settings: Settings, state: str, record: bool) -> dict[str, Any]:
    """Every question against ``settings.db_path`` in ``state``: per-question rows and timings."""
    with _memory(settings) as mem:
        mem.embeddings.settle_query_kernel()
        mem.recall(AGENT, "ウォームアップ", limit=LIMIT, record=False)  # one-off costs of a first recall
        rows = mem.storage.session().memories.list_recent(Scope(AGENT), 10**9)
        para_of = {r["id"]: r["msg_id"] for r in rows}
        if state == "calibrated":
            mem.calibrate_threshold(AGENT)
        scored, samples = [], []
        for q in questions:
            start = time.perf_counter()
            results = mem.recall(AGENT, q["question"], limit=LIMIT, record=record)["results"]
            samples.append(time.perf_counter() - start)
            ranked = [para_of.get(r["id"], "") for r in reversed(results) if r.get("type") == "memory"]
            scored.append({"id": q["id"], **score(ranked, q["gold"])})
    return {"rows": scored, "samples": samples}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data", type=Path, help="japanese.json or the cache dir holding it")
    parser.add_argument("--models-dir", type=Path, required=True)
    parser.add_argument("--model", default="all-minilm-l6-v2")
    parser.add_argument("--split", choices=("choose", "confirm", "all"), default="all")
    parser.add_argument("--modes", default="none,onnx", help="embedding modes: none (keyword-only), onnx")
    parser.add_argument(
        "--arms", default="default", help=f"comma-separated presets: {', '.join(ARM_PRESETS)}"
    )
    parser.add_argument("--arm", action="append", default=[], help="NAME:CPERSONA_X=v,... (repeatable)")
    parser.add_argument("--json", help="write the summary and per-question rows here")
    parser.add_argument(
        "--no-record",
        action="store_true",
        help="recall with record=False (default: recorded, as an agent's recall is, so the recent-recall "
        "penalty sees the earlier questions about the same paragraph)",
    )
    args = parser.parse_args()
    arms = read_arms(parser, args.arms, args.arm)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if bad := [m for m in modes if m not in ("none", "onnx")]:
        parser.error(f"unknown mode(s) {bad}")
    data = load(args.data)
    questions = [q for q in data["questions"] if args.split == "all" or q["split"] == args.split]
    split_of = {q["id"]: q["split"] for q in questions}
    summary: dict[str, Any] = {}
    per_question: dict[str, Any] = defaultdict(dict)
    with tempfile.TemporaryDirectory() as tmp:
        base = Settings(
            **QUERY_CACHE_OFF,  # every recall embeds its query
            db_path=Path(tmp) / "unused.db",
            models_dir=args.models_dir,
            embedding_model=args.model,
            update_check=False,
            auto_fetch_model=False,
            auto_calibrate=False,  # the harness calibrates once itself ("calibrated")
        )
        for mode in modes:
            stored = Path(tmp) / f"stored-{mode}.db"
            start = time.perf_counter()
            store(data["paragraphs"], base.with_overrides(db_path=stored, embedding_mode=mode))
            print(
                f"  stored {len(data['paragraphs'])} paragraphs ({mode}) in {time.perf_counter() - start:.1f} s",
                file=sys.stderr,
            )
            for arm, changes in arms.items():
                # keyword-only has nothing to calibrate: calibration measures cosines
                for state in STATES[:1] if mode == "none" else STATES:
                    # Each state starts from the stored file: one state's recalls must not feed the
                    # recent-recall penalty of the next.
                    copy = Path(tmp) / f"{mode}-{arm}-{state}.db"
                    copy_db(stored, copy)
                    settings = base.with_overrides(**{**changes, "embedding_mode": mode, "db_path": copy})
                    result = ask(questions, settings, state, record=not args.no_record)
                    rows = result["rows"]
                    key = f"{mode}/{arm}/{state}"
                    summary[key] = {
                        part: {
                            **{m: sum(r[m] for r in group) / max(1, len(group)) for m in METRICS},
                            "n": len(group),
                        }
                        for part in ("choose", "confirm", "all")
                        if (group := [r for r in rows if part in ("all", split_of[r["id"]])])
                    }
                    summary[key]["p50_ms"] = percentile(result["samples"], 50) * 1000
                    per_question[key] = rows
                    copy.unlink()
    print(f"\n{len(data['paragraphs'])} paragraphs, {len(questions)} questions, split {args.split}")
    print_table(
        ["mode/arm/state", "split", *METRICS, "p50 ms", "n"],
        [
            [key, part, *(entry[part][m] for m in METRICS), entry["p50_ms"], entry[part]["n"]]
            for part in ("choose", "confirm", "all")
            for key, entry in summary.items()
            if part in entry
        ],
    )
    write_json(args.json, {"split": args.split, "summary": summary, "rows": per_question})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
