"""``CPERSONA_EMBED_QUERY_OVERLAP`` A/B: ``Memory.recall`` embedding first (today's default) against the
query embedding on its own thread beside the keyword channels, interleaved in one process.

    python benchmarks/recall_overlap.py ../shared/data/locomo --models-dir DIR [--size 10000 | --db FILE]
        [--queries 200] [--rounds 3] [--threads 1 2] [--json out.json]

On a copy of ``--db`` (or a file ``latency.fill`` builds: LoCoMo-derived rows, random unit vectors),
one ``Memory`` recalls every question (``limit=10``, ``record=False``: recall statistics would change
the next call's scores) in each arm: ``sequential`` / ``overlap`` for each ONNX Runtime intra-op
thread count of ``--threads`` (one session per count, swapped in before the call; ``default`` is the
product's ``min(4, cores)``). First every question is recalled in every arm with ``trace=True`` and
the whole answers compared with the first arm's (results with their scores, search, gate, the
trace's channels); a difference is checked by recalling the first arm again, so the file's own
drift is told apart. Then per round each question is recalled in every arm, the order rotating per
question, timing wall, the calling thread's CPU and the process's CPU (ONNX Runtime's threads and
the embedding thread included). Wall on a shared machine measures the neighbours too: compare the
p50 of the per-call differences to the first arm. Also per arm: the embedding's own wall time on
the thread that ran it (beside the keyword channels it can take longer: the two share the cores).
No assertion on timings.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import latency as lat  # noqa: E402
from _common import QUERY_CACHE_OFF, machine, print_table, summary_ms, write_json  # noqa: E402

from cpersona.config import Settings  # noqa: E402
from cpersona.embed.registry import load_manifest  # noqa: E402
from cpersona.embed.runtime.onnx_backend import OnnxBackend  # noqa: E402
from cpersona.memory import Memory  # noqa: E402
from cpersona.storage.values import VectorQuery  # noqa: E402

CLOCKS: dict[str, Callable[[], float]] = {
    "wall": time.perf_counter,
    "thread CPU": time.thread_time,
    "process CPU": time.process_time,
}


def difference(a: Any, b: Any, path: str = "") -> str | None:
    """Where two answers first differ (a key path and both values), or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b) and sorted(a) == sorted(b):
            return f"{path}: key order {list(a)} vs {list(b)}"
        for key in sorted(set(a) | set(b)):
            found = difference(a.get(key), b.get(key), f"{path}/{key}")
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if a == b else f"{path}: {a!r} vs {b!r}"


class Arms:
    """One ``Memory`` and a session per thread count; ``recall(arm, q)`` recalls in that arm."""

    def __init__(self, mem: Memory, models_dir: Path, threads: list[str]) -> None:
        self.mem = mem
        self.base = mem.recaller.settings
        self.original = mem.embeddings.backend
        manifest = load_manifest(lat.MODEL)
        self.backends: dict[str, Any] = {}
        for count in threads:
            backend = OnnxBackend(
                manifest, models_dir / lat.MODEL, threads=None if count == "default" else int(count)
            )
            backend.load()
            self.backends[count] = backend
        self.names = [f"{order} t{count}" for count in threads for order in ("sequential", "overlap")]
        self.embed_wall: dict[str, list[float]] = {name: [] for name in self.names}
        self._arm = self.names[0]
        plain = mem.recaller._vector_query

        def timed(text: str) -> VectorQuery | None:
            # The embedding's own wall time, on whichever thread computes it.
            t0 = time.perf_counter()
            vector = plain(text)
            self.embed_wall[self._arm].append(time.perf_counter() - t0)
            return vector

        mem.recaller._vector_query = timed  # type: ignore[method-assign]

    def recall(self, arm: str, query: str, *, trace: bool = False) -> dict[str, Any]:
        order, count = arm.split(" t")
        self._arm = arm
        self.mem.embeddings.backend = self.backends[count]
        self.mem.recaller.settings = self.base.with_overrides(embed_query_overlap=order == "overlap")
        return dict(self.mem.recall(lat.AGENT, query, limit=10, record=False, trace=trace))


def measure(
    db: Path, models_dir: Path, questions: list[str], rounds: int, threads: list[str]
) -> dict[str, Any]:
    """Identity of the answers across the arms, then their interleaved timings."""
    run_dir = db.parent / "run"
    run_dir.mkdir(mode=0o700, exist_ok=True)
    settings = Settings(
        **QUERY_CACHE_OFF,  # every recall embeds its query
        db_path=db,
        models_dir=models_dir,
        embedding_model=lat.MODEL,
        runtime_dir=run_dir,  # a model of this process's own (see recall_path.py)
    )
    with Memory(settings, start_background=False) as mem:
        mem.embeddings.start()
        if not mem.wait_until_ready(300):
            raise SystemExit(f"model did not load: {mem.embedding_status()}")
        arms = Arms(mem, models_dir, threads)
        first = arms.names[0]
        for q in questions[:5]:  # the first recalls load the index and warm every arm
            for arm in arms.names:
                arms.recall(arm, q)
        differing: dict[str, dict[str, str]] = {}
        for q in questions:
            reference = arms.recall(first, q, trace=True)
            for arm in arms.names[1:]:
                found = difference(reference, arms.recall(arm, q, trace=True))
                if found:
                    again = difference(reference, arms.recall(first, q, trace=True))
                    differing.setdefault(arm, {})[q] = (
                        found if again is None else f"{first} differs from itself too: {again}"
                    )
        for wall in arms.embed_wall.values():
            wall.clear()
        samples = {arm: {c: [] for c in CLOCKS} for arm in arms.names}
        k = len(arms.names)
        for turn in range(rounds):
            for i, q in enumerate(questions):
                shift = (i + turn) % k
                for arm in arms.names[shift:] + arms.names[:shift]:
                    start = {c: clock() for c, clock in CLOCKS.items()}
                    arms.recall(arm, q)
                    for c, clock in CLOCKS.items():
                        samples[arm][c].append(clock() - start[c])
        embed_wall = {arm: summary_ms(w) for arm, w in arms.embed_wall.items()}
        mem.embeddings.backend = arms.original
        for backend in arms.backends.values():
            backend.close()
    out: dict[str, Any] = {"queries": len(questions), "rounds": rounds, "arms": arms.names}
    out["answers_differing"] = differing
    out["embedding_wall_on_its_thread"] = embed_wall
    for c in CLOCKS:
        base = samples[first][c]
        out[c] = {
            arm: {
                **summary_ms(samples[arm][c]),
                "minus_first": summary_ms([y - x for x, y in zip(base, samples[arm][c], strict=True)]),
            }
            for arm in arms.names
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path, help="directory of LoCoMo conversation JSON files")
    parser.add_argument("--models-dir", type=Path, required=True)
    parser.add_argument("--size", type=int, default=10000, help="rows to fill (ignored with --db)")
    parser.add_argument("--db", type=Path, help="an existing file to copy instead of filling one")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--threads",
        nargs="+",
        default=["default"],
        help="ONNX Runtime intra-op thread counts, one pair of arms each ('default': the product's)",
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
            meta = lat.model_meta(args.models_dir)
            lat.fill(db, texts, args.size, meta)
        result = measure(db, args.models_dir, questions, args.rounds, args.threads)
    result["load_average"] = os.getloadavg()
    result["machine"] = machine()
    first = result["arms"][0]
    print(
        f"{result['queries']} queries x {result['rounds']} rounds; load average "
        + " ".join(f"{x:.2f}" for x in result["load_average"])
    )
    for arm in result["arms"][1:]:
        differing = result["answers_differing"].get(arm, {})
        print(f"answers of {arm!r} differing from {first!r}: {len(differing)}")
        for query, where in list(differing.items())[:10]:
            print(f"  {query!r}: {where}")
    for c in CLOCKS:
        print(f"\nMemory.recall, {c}, ms:")
        print_table(
            ["arm", "p50", "p95", "mean", f"− {first} p50", f"− {first} mean"],
            [
                [
                    arm,
                    r["p50_ms"],
                    r["p95_ms"],
                    r["mean_ms"],
                    r["minus_first"]["p50_ms"],
                    r["minus_first"]["mean_ms"],
                ]
                for arm, r in result[c].items()
            ],
        )
    print("\nThe query embedding's own wall time on the thread that ran it, ms:")
    print_table(
        ["arm", "p50", "p95"],
        [[arm, r["p50_ms"], r["p95_ms"]] for arm, r in result["embedding_wall_on_its_thread"].items()],
    )
    write_json(args.json, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
