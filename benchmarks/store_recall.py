"""Store and recall latency (p50/p95) on a synthetic corpus, keyword-only or with a model.

    python benchmarks/store_recall.py --sizes 1000 10000 [--json out.json]
    python benchmarks/store_recall.py --sizes 1000 --models-dir DIR --model all-minilm-l6-v2

Each size gets a fresh database in a temporary directory. Texts are built
from a fixed vocabulary with a seeded RNG so runs are comparable.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import QUERY_CACHE_OFF, peak_rss_mb, print_table, summary_ms, write_json  # noqa: E402

from cpersona.config import Settings  # noqa: E402
from cpersona.embed.runtime.none_backend import NoEmbeddings  # noqa: E402
from cpersona.memory import Memory  # noqa: E402

WORDS = [
    "deploy",
    "pipeline",
    "staging",
    "cluster",
    "database",
    "password",
    "rotate",
    "meeting",
    "lunch",
    "ramen",
    "budget",
    "report",
    "quarterly",
    "invoice",
    "customer",
    "ticket",
    "bug",
    "login",
    "oauth",
    "token",
    "cache",
    "latency",
    "memory",
    "python",
    "rust",
    "sqlite",
    "index",
    "query",
    "vector",
    "embedding",
    "model",
    "laptop",
    "offline",
    "travel",
    "tokyo",
    "osaka",
    "kyoto",
    "garden",
    "coffee",
    "tea",
    "birthday",
    "gift",
    "project",
    "roadmap",
    "release",
    "version",
    "migration",
    "schema",
    "backup",
    "restore",
    "alert",
    "pager",
    "incident",
    "review",
]


def make_text(rng: random.Random, n_words: int = 24) -> str:
    """A pseudo-sentence of ``n_words`` words."""
    return " ".join(rng.choice(WORDS) for _ in range(n_words)) + f" #{rng.randrange(10**9)}"


def run_size(size: int, queries: int, settings_kwargs: dict, backend_factory) -> dict:
    """Store ``size`` memories, then run ``queries`` recalls; time both."""
    rng = random.Random(size)
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            db_path=Path(tmp) / "bench.db",
            recent_recall_penalty=1.0,
            **QUERY_CACHE_OFF,  # every recall embeds its query
            **settings_kwargs,
        )
        backend = backend_factory(settings)
        with Memory(settings, backend=backend) as mem:
            mem.wait_until_ready(300)
            stores: list[float] = []
            for i in range(size):
                text = make_text(rng)
                start = time.perf_counter()
                out = mem.store("bench", text, msg_id=str(i))
                stores.append(time.perf_counter() - start)
                assert out["result"] == "stored", out
            recalls: list[float] = []
            for _ in range(queries):
                query = " ".join(rng.choice(WORDS) for _ in range(4))
                start = time.perf_counter()
                mem.recall("bench", query, limit=10)
                recalls.append(time.perf_counter() - start)
            embedded = mem.embeddings.ready
    return {
        "size": size,
        "embedded": embedded,
        "store": summary_ms(stores),
        "recall": summary_ms(recalls),
        "ingest_per_s": round(size / sum(stores), 1),
        "peak_rss_mb": peak_rss_mb(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--models-dir", type=Path, help="run with this models dir (default: keyword-only)")
    parser.add_argument("--model", default="all-minilm-l6-v2")
    parser.add_argument("--json", help="write results to this file")
    args = parser.parse_args()

    if args.models_dir:
        from cpersona.embed.runtime.factory import create_backend

        kwargs = {"embedding_mode": "onnx", "models_dir": args.models_dir, "embedding_model": args.model}
        factory = create_backend
    else:
        kwargs = {"embedding_mode": "none"}

        def factory(_settings: Settings) -> NoEmbeddings:
            return NoEmbeddings()

    results = [run_size(size, args.queries, kwargs, factory) for size in args.sizes]
    print_table(
        [
            "memories",
            "vectors",
            "store p50 ms",
            "store p95 ms",
            "recall p50 ms",
            "recall p95 ms",
            "ingest/s",
            "peak RSS MB",
        ],
        [
            [
                r["size"],
                "yes" if r["embedded"] else "no",
                r["store"]["p50_ms"],
                r["store"]["p95_ms"],
                r["recall"]["p50_ms"],
                r["recall"]["p95_ms"],
                r["ingest_per_s"],
                r["peak_rss_mb"],
            ]
            for r in results
        ],
    )
    write_json(args.json, {"benchmark": "store_recall", "results": results})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
