"""The SQLite vector index's first pass alone: sign bits + int8 against int8 alone, interleaved, thread CPU.

    python benchmarks/vector_first_pass.py ../shared/data/locomo --sizes 49152 100000 1000000
        [--keep 8192 20000] [--queries 100] [--models-dir DIR]

Rows: the real MiniLM vectors of the LoCoMo turns, then synthetic ones between two turns
(``engine_latency.vector_block``: 0.6 x a turn + 0.4 x another, renormalised), appended straight to
a ``VectorIndex`` (no file: this times the scan, not the load). Queries: LoCoMo questions embedded by
the model. For each size and keep count (the rows the bit pass hands on at least; the share of the
scope, ``vector_bits.BITS_KEEP_FRACTION``, is disabled so the count is what is measured), every
question is searched both ways in one process, alternating which goes first: ``candidates`` +
``finish`` (what a recall's vector channel runs), thread CPU p50, the share of each top 10 that is
the brute-force top 10 (a row tied with the 10th best counts), and how many top-10 lists are identical
between the two ways. Also prints the process's peak RSS.
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import minilm_models_dir  # noqa: E402
from engine_latency import real_vectors, vector_block  # noqa: E402
from latency import corpus  # noqa: E402

from cpersona.storage.scope import Scope  # noqa: E402
from cpersona.storage.sqlite import vector_bits  # noqa: E402
from cpersona.storage.sqlite.vector_index import VectorIndex  # noqa: E402


def question_vectors(data_dir: Path, models_dir: Path, count: int) -> np.ndarray:
    """``count`` LoCoMo questions (shuffled as latency.py does) embedded as queries by MiniLM."""
    from cpersona.config import Settings
    from cpersona.memory import Memory

    _, questions = corpus(data_dir)
    random.Random(0).shuffle(questions)
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            db_path=Path(tmp) / "q.db", models_dir=models_dir, embedding_model="all-minilm-l6-v2"
        )
        with Memory(settings, start_background=False) as mem:
            mem.embeddings.start()
            if not mem.wait_until_ready(300):
                raise SystemExit(f"model did not load: {mem.embedding_status()}")
            return np.stack(
                [np.asarray(mem.embeddings.embed_query(q), dtype=np.float32) for q in questions[:count]]
            )


def one_size(base: np.ndarray, queries: np.ndarray, size: int, keeps: list[int]) -> None:
    """Print one line per keep count at ``size`` rows."""
    rows = np.concatenate([vector_block(base, s, min(100_000, size - s)) for s in range(0, size, 100_000)])
    index = VectorIndex("memories", "m", rows.shape[1])
    index._append([(i + 1, "a", "", "", rows[i].tobytes()) for i in range(size)])
    exact = rows @ queries.T
    kth = np.sort(np.partition(exact, size - 10, axis=0)[size - 10 :], axis=0)[0]  # 10th best per query
    vector_bits.BITS_KEEP_FRACTION = 1 << 62
    for keep in keeps:
        index.bits_keep_min = keep
        cpu: dict[str, list[float]] = {"int8 only": [], "bits + int8": []}
        good = dict.fromkeys(cpu, 0)
        identical = 0
        for rep in range(2):
            for k, q in enumerate(queries):
                got = {}
                for mode in list(cpu) if k % 2 else list(reversed(cpu)):
                    index.bits_from = 1 << 62 if mode == "int8 only" else 0
                    c0 = time.thread_time()
                    ids, scores = index.candidates(q, Scope("a"), 10)
                    top = index.finish(ids, scores, q, 10, None)
                    spent = time.thread_time() - c0
                    if rep:  # the first pass takes the bits' centre
                        cpu[mode].append(spent)
                        good[mode] += sum(exact[i - 1, k] >= kth[k] for i, _ in top)
                    got[mode] = top
                identical += rep and got["int8 only"] == got["bits + int8"]
        n = len(queries)
        a, b = (np.median(cpu[m]) * 1e3 for m in ("int8 only", "bits + int8"))
        print(
            f"{size:>9} {keep:>7} {a:10.2f} {b:10.2f} {good['int8 only'] / n / 10:9.4f}"
            f" {good['bits + int8'] / n / 10:9.4f} {identical:>5}/{n}",
            flush=True,
        )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--keep", type=int, nargs="+", default=[vector_bits.BITS_KEEP_MIN])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--models-dir", type=Path)
    args = parser.parse_args()
    models_dir = args.models_dir or minilm_models_dir(Path("/tmp"))
    base, _ = real_vectors(args.data_dir, models_dir, Path(tempfile.gettempdir()))
    queries = question_vectors(args.data_dir, models_dir, args.queries)
    print(
        f"{'rows':>9} {'keep':>7} {'int8 CPU':>10} {'bits CPU':>10} {'int8 top':>9} {'bits top':>9} identical"
    )
    for size in args.sizes:
        one_size(base, queries, size, args.keep)
    print(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
