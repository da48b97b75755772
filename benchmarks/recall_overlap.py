"""Memory.recall with the query embedding overlapped with the keyword channels (b) against the
sequential order (a: embed, then the pipeline), interleaved in one process.

    python benchmarks/recall_overlap.py ../shared/data/locomo [--size 10000] [--db FILE] [--queries 200]
        [--rounds 3] [--embed-threads N] [--models-dir DIR] [--json out.json]

On a copy of ``--db`` (or a file ``latency.fill`` builds): every query is recalled in both orders
with ``trace=True`` and the whole answers compared (results with their scores, search, gate, trace);
then each query is recalled a, b, b, a, ... per round (``record=False``: recall statistics would
change the next call's scores), timing wall, the calling thread's CPU and the process's CPU (ONNX
Runtime's threads included). Wall on a shared machine measures the neighbours too: compare the
p50 of the per-call differences b − a. No assertion on timings.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import latency as lat  # noqa: E402
from _common import print_table, summary_ms, write_json  # noqa: E402

from cpersona.config import Settings  # noqa: E402
from cpersona.memory import Memory  # noqa: E402
from cpersona.retrieval.pending_vector import QueryVectorThreads  # noqa: E402

CLOCKS = {"wall": time.perf_counter, "thread CPU": time.thread_time, "process CPU": time.process_time}


def _recall(mem: Memory, pool: QueryVectorThreads, query: str, *, trace: bool = False) -> dict[str, Any]:
    mem.recaller.query_vectors = pool
    return dict(mem.recall(lat.AGENT, query, limit=10, record=False, trace=trace))


def _difference(a: Any, b: Any, path: str = "") -> str | None:
    """Where two answers first differ (a key path and both values), or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            found = _difference(a.get(key), b.get(key), f"{path}/{key}")
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = _difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if a == b else f"{path}: {a!r} vs {b!r}"


def measure(
    db: Path, models_dir: Path, questions: list[str], rounds: int, embed_threads: int | None = None
) -> dict[str, Any]:
    """Identity of the answers, then interleaved timings of a (sequential) and b (overlapped)."""
    settings = Settings(
        db_path=db,
        models_dir=models_dir,
        embedding_model=lat.MODEL,
        embed_threads=embed_threads,
        runtime_dir=db.parent / "run",  # a model of this process's own (see recall_path.py)
    )
    (db.parent / "run").mkdir(mode=0o700, exist_ok=True)
    sequential = QueryVectorThreads(threads=0)
    with Memory(settings, start_background=False) as mem:
        overlapped = mem.recaller.query_vectors
        mem.embeddings.start()
        if not mem.wait_until_ready(300):
            raise SystemExit(f"model did not load: {mem.embedding_status()}")
        for q in questions[:5]:  # the first recalls load the index
            _recall(mem, sequential, q)
        # a, b, a: a difference between the two a's is the file's own (it would not be b's).
        differing: dict[str, str] = {}
        for q in questions:
            first = _recall(mem, sequential, q, trace=True)
            found = _difference(first, _recall(mem, overlapped, q, trace=True))
            if found:
                again = _difference(first, _recall(mem, sequential, q, trace=True))
                differing[q] = found if again is None else f"a differs from a too: {again}"
        samples: dict[str, dict[str, list[float]]] = {v: {c: [] for c in CLOCKS} for v in ("a", "b")}
        for turn in range(rounds):
            for i, q in enumerate(questions):
                order = ("a", "b") if (i + turn) % 2 == 0 else ("b", "a")
                for variant in order:
                    pool = sequential if variant == "a" else overlapped
                    start = {c: clock() for c, clock in CLOCKS.items()}
                    _recall(mem, pool, q)
                    for c, clock in CLOCKS.items():
                        samples[variant][c].append(clock() - start[c])
        mem.recaller.query_vectors = overlapped
    out: dict[str, Any] = {"queries": len(questions), "answers_differing": differing}
    for c in CLOCKS:
        a, b = samples["a"][c], samples["b"][c]
        out[c] = {
            "a": summary_ms(a),
            "b": summary_ms(b),
            "b_minus_a": summary_ms([y - x for x, y in zip(a, b, strict=True)]),
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path, help="directory of LoCoMo conversation JSON files")
    parser.add_argument("--size", type=int, default=10000, help="rows to fill (ignored with --db)")
    parser.add_argument("--db", type=Path, help="an existing file to copy instead of filling one")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--models-dir", type=Path, required=True)
    parser.add_argument(
        "--embed-threads", type=int, help="ONNX Runtime intra-op threads (default: the product's)"
    )
    parser.add_argument("--json")
    args = parser.parse_args()
    texts, questions = lat.corpus(args.data_dir)
    random.Random(0).shuffle(questions)
    questions = questions[: args.queries]
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "overlap.db"
        if args.db is not None:
            for suffix in ("", "-wal"):
                if Path(str(args.db) + suffix).exists():
                    shutil.copy(str(args.db) + suffix, str(db) + suffix)
        else:
            model_id, dim = lat.model_meta(args.models_dir)
            lat.fill(db, texts, args.size, dim, model_id)
        result = measure(db, args.models_dir, questions, args.rounds, args.embed_threads)
    differing = result["answers_differing"]
    print(f"{result['queries']} queries; answers differing between a and b: {len(differing)}")
    for query, where in differing.items():
        print(f"  {query!r}: {where}")
    print_table(
        ["Memory.recall, ms", "a p50", "b p50", "a p95", "b p95", "b − a p50", "b − a mean"],
        [
            [
                c,
                r["a"]["p50_ms"],
                r["b"]["p50_ms"],
                r["a"]["p95_ms"],
                r["b"]["p95_ms"],
                r["b_minus_a"]["p50_ms"],
                r["b_minus_a"]["mean_ms"],
            ]
            for c, r in ((c, result[c]) for c in CLOCKS)
        ],
    )
    if args.json:
        write_json(args.json, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
