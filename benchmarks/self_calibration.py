"""The default path: what a user gets with no setting changed and no explicit calibration call.

    python benchmarks/self_calibration.py ../shared/data/locomo [--conversations 26 30 41]
        [--factors 1.1,1.25,1.5,2] [--models-dir DIR] [--json out.json]
    python benchmarks/self_calibration.py ../shared/data/locomo --cost 10000 100000 [--json out.json]

Quality (per conversation, a fresh database each run, MiniLM int8, default settings except the
recent-recall penalty, which is off as in benchmarks/locomo.py because every question is an
independent session; ``--recent-recall-penalty 0.7`` restores it):

- **self-calibration (default)**: every turn is stored one by one through the Python API with
  self-calibration on, as shipped; the background worker calibrates when it sees fit. After the last
  turn the run waits until the worker is idle (a person takes seconds between storing and asking),
  then asks every real question (categories 1-4 with evidence) and every question of the OTHER
  conversations in the data dir (negatives: nothing here answers them), and the next conversation's
  questions with its speakers renamed to this one's (renamed: as in benchmarks/locomo.py) with
  ``recall(limit=10)``.
- **no self-calibration**: the same with ``CPERSONA_AUTO_CALIBRATE=false`` (the heuristic gate).
- **factor F (schedule)**: the gate of the last calibration the schedule of growth factor F (first at
  10 rows, then each time the agent has F times its last size) makes at or before this conversation's
  final size N, and how many calibrations it makes on the way;
- **factor F (worst)**: the most outgrown calibration a user of factor F can be asking with, whatever
  N is: made at the smallest size whose next calibration lies beyond N, ``floor(N / F) + 1`` rows.
  Both are measured on the auto-off run by calibrating at those sizes as the turns arrive.
- **explicit at end**: one ``calibrate_threshold`` after the last turn (the reference).

Reported: recall@10, NDCG@10, real questions answered empty, negatives and renamed answered empty, the gate
threshold in force, and per factor how many calibrations the schedule makes and what they cost.

Cost (``--cost N ...``): a database of N memories (LoCoMo-derived texts with random unit vectors,
loaded through the storage layer, as benchmarks/latency.py does), then one calibration timed
(p50 of 3), its peak traced memory (tracemalloc sees numpy's buffers), a worker pass's row count
(``agent_counts``), the trigger on ``store`` (``notice_store`` alone), and ``store`` p50/p95 with
self-calibration on and off.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import QUERY_CACHE_OFF, minilm_models_dir, print_table, summary_ms, write_json  # noqa: E402
from _locomo_data import Conversation, conversation_files  # noqa: E402
from _retrieval_metrics import score_question  # noqa: E402
from latency import AGENT as FILLED_AGENT  # noqa: E402
from latency import corpus, fill  # noqa: E402

from cpersona.config import Settings  # noqa: E402
from cpersona.memory import Memory  # noqa: E402
from cpersona.retrieval.calibration import MIN_ROWS  # noqa: E402
from cpersona.services import self_calibration  # noqa: E402
from cpersona.storage.scope import Scope  # noqa: E402
from cpersona.storage.values import MEMORIES  # noqa: E402

AGENT = "locomo"
LIMIT = 10


def schedule(factor: float, final: int) -> list[int]:
    """Sizes at which the schedule calibrates (first at MIN_ROWS, then last × factor) up to ``final``."""
    sizes, size = [], MIN_ROWS
    while size <= final:
        sizes.append(size)
        size = max(size + 1, math.ceil(size * factor))
    return sizes


def settings_for(tmp: Path, models_dir: Path, penalty: float, **extra: Any) -> Settings:
    return Settings(
        **QUERY_CACHE_OFF,  # every recall embeds its query
        db_path=tmp / "locomo.db",
        embedding_mode="onnx",
        models_dir=models_dir,
        embedding_model="all-minilm-l6-v2",
        update_check=False,
        auto_fetch_model=False,
        recent_recall_penalty=penalty,
        **extra,
    )


def ask(mem: Memory, real: list[dict[str, Any]], negatives: list[str], renamed: list[str]) -> dict[str, Any]:
    """Recall every question; metrics of the real ones, empty shares of the negatives, the gate seen."""
    rows = mem.storage.session().memories.list_recent(Scope(AGENT), 10**9)
    dia = {r["id"]: r["msg_id"] for r in rows}
    scored, thresholds, kinds = [], [], set()
    for qa in real:
        out = mem.recall(AGENT, qa["question"], limit=LIMIT)
        thresholds.append(out["gate"].get("threshold"))
        kinds.add(out["gate"]["kind"])
        ranked = [dia.get(r["id"], "") for r in reversed(out["results"]) if r["type"] == "memory"]
        scored.append(score_question(ranked, [e for e in qa["evidence"] if e]))

    def empty(questions: list[str]) -> list[float]:
        answers = [mem.recall(AGENT, q, limit=LIMIT)["results"] for q in questions]
        return [1.0 if not [r for r in rows if r["type"] != "profile"] else 0.0 for rows in answers]

    negative, renamed_empty = empty(negatives), empty(renamed)
    n = len(scored) or 1
    return {
        "recall@10": sum(s["recall@10"] for s in scored) / n,
        "ndcg@10": sum(s["ndcg@10"] for s in scored) / n,
        "real_empty": sum(s["empty"] for s in scored) / n,
        "negative_empty": sum(negative) / (len(negative) or 1),
        "renamed_empty": sum(renamed_empty) / (len(renamed_empty) or 1),
        "threshold": thresholds[0] if thresholds else None,
        "gate": "/".join(sorted(kinds)),
        "n_real": len(scored),
        "n_negative": len(negative),
        "n_renamed": len(renamed_empty),
    }


def ingest(mem: Memory, conversation: Conversation, on_count: Any = None) -> float:
    """Store every turn one by one; seconds taken. ``on_count(n)`` after each stored turn."""
    started = time.perf_counter()
    stored = 0
    for dia_id, content, stamp in conversation.turns():
        if mem.store(AGENT, content, msg_id=dia_id, timestamp=stamp)["result"] == "stored":
            stored += 1
            if on_count is not None:
                on_count(stored)
    return time.perf_counter() - started


def run_conversation(
    conversation: Conversation,
    others: list[Conversation],
    renamed_from: Conversation,
    models_dir: Path,
    factors: list[float],
    penalty: float,
) -> dict[str, Any]:
    real = conversation.real()
    negatives = [q for other in others for q in other.negatives_for(conversation)]
    renamed = renamed_from.renamed_negatives_for(conversation)
    arms: dict[str, Any] = {}
    # 1. The default path: self-calibration as shipped.
    with tempfile.TemporaryDirectory() as tmp, Memory(settings_for(Path(tmp), models_dir, penalty)) as mem:
        if not mem.wait_until_ready(300):
            raise SystemExit(f"model did not load: {mem.embedding_status()}")
        log: list[dict[str, Any]] = []
        original = mem.calibration.recalibrate

        def timed(agent: str, trigger: str) -> dict[str, Any]:
            started = time.perf_counter()
            out = original(agent, trigger)
            log.append({"rows": out["rows"], "trigger": trigger, "seconds": time.perf_counter() - started})
            return out

        mem.calibration.recalibrate = timed  # type: ignore[method-assign]
        seconds = ingest(mem, conversation)
        waited = time.perf_counter()
        mem.self_calibration.wait_idle(120)
        arms["self-calibration (default)"] = {
            **ask(mem, real, negatives, renamed),
            "calibrations": len(log),
            "calibrated_at_rows": [c["rows"] for c in log],
            "calibration_seconds": round(sum(c["seconds"] for c in log), 3),
            "ingest_s": round(seconds, 2),
            "idle_wait_s": round(time.perf_counter() - waited, 2),
        }
    # 2. Auto off: the heuristic gate, then every factor's worst case, then an explicit calibration.
    settings = settings_for(Path(tempfile.mkdtemp()), models_dir, penalty, auto_calibrate=False)
    with Memory(settings) as mem:
        mem.wait_until_ready(300)
        final = len(conversation.turns())
        worst = {f: max(MIN_ROWS, math.floor(final / f) + 1) for f in factors}
        sizes = sorted({s for f in factors for s in schedule(f, final)} | set(worst.values()))
        snapshots: dict[int, dict[str, Any]] = {}
        cost: dict[int, float] = {}

        def snapshot(stored: int) -> None:
            if stored in sizes:
                started = time.perf_counter()
                mem.calibrate_threshold(AGENT)
                cost[stored] = time.perf_counter() - started
                snapshots[stored] = mem.calibration.states.get(AGENT) or {}
                mem.calibration.discard(AGENT)  # the heuristic arm must not see it

        ingest(mem, conversation, snapshot)
        with mem.storage.read() as session:
            rows = session.vector_search.agent_counts(
                MEMORIES, mem.embeddings.model_id, mem.embeddings.dimension
            )
        final = rows.get(AGENT, 0)
        arms["no self-calibration"] = ask(mem, real, negatives, renamed)
        for factor in factors:
            planned = [s for s in schedule(factor, final) if s in snapshots]
            last = planned[-1]
            mem.calibration.states.modify(AGENT, lambda _e, entry=snapshots[last]: entry)
            arms[f"factor {factor:g} (schedule)"] = {
                **ask(mem, real, negatives, renamed),
                "calibrations": len(planned),
                "last_calibrated_rows": last,
                "calibration_seconds": round(sum(cost[s] for s in planned), 3),
            }
            if worst[factor] in snapshots:
                mem.calibration.states.modify(AGENT, lambda _e, entry=snapshots[worst[factor]]: entry)
                arms[f"factor {factor:g} (worst)"] = {
                    **ask(mem, real, negatives, renamed),
                    "last_calibrated_rows": worst[factor],
                }
        out = mem.calibrate_threshold(AGENT)
        arms["explicit at end"] = {**ask(mem, real, negatives, renamed), "calibrated_rows": out["rows"]}
    return {"rows": final, "arms": arms}


def quality_columns(arm: dict[str, Any]) -> list[Any]:
    """recall@10, NDCG@10 and the three empty shares of one arm, as the tables print them."""
    shares = (arm[key] for key in ("real_empty", "negative_empty", "renamed_empty"))
    return [arm["recall@10"], arm["ndcg@10"], *(f"{share:.1%}" for share in shares)]


def quality(args: argparse.Namespace, models_dir: Path) -> dict[str, Any]:
    files = conversation_files(args.data_dir, args.conversations)
    every = sorted(args.data_dir.glob("*.json"))
    datasets = {p.stem: Conversation.load(p) for p in every}
    names = list(datasets)
    report: dict[str, Any] = {"factors": args.factors, "growth_factor": self_calibration.GROWTH_FACTOR}
    per_conv = {}
    for path in files:
        others = [d for name, d in datasets.items() if name != path.stem]
        # Renamed: the next conversation's questions (as benchmarks/locomo.py asks them).
        renamed_from = datasets[names[(names.index(path.stem) + 1) % len(names)]]
        print(f"conversation {path.stem} ...", file=sys.stderr, flush=True)
        per_conv[path.stem] = run_conversation(
            datasets[path.stem], others, renamed_from, models_dir, args.factors, args.recent_recall_penalty
        )
    report["conversations"] = per_conv
    arm_names = list(next(iter(per_conv.values()))["arms"])
    overall = {}
    for arm in arm_names:
        rows = [c["arms"][arm] for c in per_conv.values()]

        def mean(key: str, count: str, rows: list[dict[str, Any]] = rows) -> float:
            """``key`` over the conversations, weighted by how many questions (``count``) it is a share of."""
            return sum(r[key] * r[count] for r in rows) / (sum(r[count] for r in rows) or 1)

        overall[arm] = {key: mean(key, "n_real") for key in ("recall@10", "ndcg@10", "real_empty")}
        overall[arm]["negative_empty"] = mean("negative_empty", "n_negative")
        overall[arm]["renamed_empty"] = mean("renamed_empty", "n_renamed")
    report["overall"] = overall
    for name, conv in per_conv.items():
        print(f"\nconversation {name} ({conv['rows']} rows)")
        print_table(
            [
                "arm",
                "recall@10",
                "NDCG@10",
                "real empty",
                "negatives empty",
                "renamed empty",
                "threshold",
                "calibrations",
                "cal s",
            ],
            [
                [
                    arm,
                    *quality_columns(a),
                    "-" if a.get("threshold") is None else f"{a['threshold']:.3f}",
                    a.get("calibrations", "-"),
                    a.get("calibration_seconds", "-"),
                ]
                for arm, a in conv["arms"].items()
            ],
        )
    print("\noverall (weighted by questions)")
    print_table(
        ["arm", "recall@10", "NDCG@10", "real empty", "negatives empty", "renamed empty"],
        [[arm, *quality_columns(a)] for arm, a in overall.items()],
    )
    return report


def cost(args: argparse.Namespace, models_dir: Path) -> dict[str, Any]:
    texts, _ = corpus(args.data_dir)
    out: dict[str, Any] = {}
    for size in args.cost:
        with tempfile.TemporaryDirectory() as tmp:
            settings = settings_for(Path(tmp), models_dir, 1.0, auto_calibrate=False)
            db = settings.db_path
            with Memory(settings) as mem:
                mem.wait_until_ready(300)
                model_id, dim = mem.embeddings.model_id, mem.embeddings.dimension
            fill(db, texts, size, dim, model_id)
            row: dict[str, Any] = {}
            with Memory(settings) as mem:
                mem.wait_until_ready(300)
                mem.recall(FILLED_AGENT, "warm the index", limit=1)
                runs = []
                peak = 0
                for _ in range(3):
                    tracemalloc.start()
                    started = time.perf_counter()
                    mem.calibrate_threshold(FILLED_AGENT)
                    runs.append(time.perf_counter() - started)
                    peak = max(peak, tracemalloc.get_traced_memory()[1])
                    tracemalloc.stop()
                row["calibration_s_p50"] = round(statistics.median(runs), 3)
                row["calibration_peak_mb"] = round(peak / 1e6, 1)
                counts = []
                for _ in range(20):
                    started = time.perf_counter()
                    with mem.storage.read() as session:
                        session.vector_search.agent_counts(MEMORIES, model_id, dim)
                    counts.append(time.perf_counter() - started)
                row["worker_count_ms_p50"] = round(statistics.median(counts) * 1000, 3)
            # The trigger on store, interleaved (machine noise hits both arms alike): rounds of 25
            # stores with self-calibration noticing them, then 25 with it deaf (``enabled`` off).
            stores: dict[bool, list[float]] = {False: [], True: []}
            with Memory(settings.with_overrides(auto_calibrate=True)) as mem:
                mem.wait_until_ready(300)
                assert mem.self_calibration.wait_idle(300)
                started = time.perf_counter()
                for _ in range(10000):
                    mem.self_calibration.notice_store("someone-else")
                row["notice_store_us"] = round((time.perf_counter() - started) / 10000 * 1e6, 3)
                mem.self_calibration._since.clear()
                for i in range(400):
                    auto = (i // 25) % 2 == 1
                    mem.self_calibration.enabled = auto
                    started = time.perf_counter()
                    mem.store(FILLED_AGENT, f"timed store {i}: {texts[i % len(texts)]}")
                    stores[auto].append(time.perf_counter() - started)
                mem.self_calibration.enabled = True
                mem.self_calibration.wait_idle(120)
                row["store_off"] = summary_ms(stores[False])
                row["store_auto"] = summary_ms(stores[True])
                row["background_runs"] = mem.self_calibration.runs
            out[str(size)] = row
    print_table(
        [
            "rows",
            "calibration s (p50)",
            "peak MB",
            "worker count ms",
            "notice_store µs",
            "store p50 off/auto ms",
            "store p95 off/auto ms",
        ],
        [
            [
                size,
                r["calibration_s_p50"],
                r["calibration_peak_mb"],
                r["worker_count_ms_p50"],
                r["notice_store_us"],
                f"{r['store_off']['p50_ms']:.2f} / {r['store_auto']['p50_ms']:.2f}",
                f"{r['store_off']['p95_ms']:.2f} / {r['store_auto']['p95_ms']:.2f}",
            ]
            for size, r in out.items()
        ],
    )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--conversations", nargs="*")
    parser.add_argument(
        "--factors", type=lambda s: [float(x) for x in s.split(",")], default=[1.1, 1.25, 1.5, 2.0]
    )
    parser.add_argument("--models-dir", type=Path)
    parser.add_argument("--recent-recall-penalty", type=float, default=1.0)
    parser.add_argument("--cost", type=int, nargs="*", help="measure calibration cost at these corpus sizes")
    parser.add_argument("--json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        models_dir = args.models_dir or minilm_models_dir(Path(tmp))
        report = {"cost": cost(args, models_dir)} if args.cost else {"quality": quality(args, models_dir)}
    write_json(args.json, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
