"""Bulk load rows/s on both engines, with and without vectors, and PostgreSQL's HNSW index during vs after.

    python benchmarks/bulk_load.py ../shared/data/locomo [--rows 20000] [--batch 500] [--json out.json]
        [--engines sqlite postgres] [--db-url URL]

The import path (``PortabilityRows.write_batch``, what ``import_memories`` calls per batch of
records): one transaction per batch on SQLite, one COPY + one INSERT ... ON CONFLICT DO NOTHING per
batch on PostgreSQL, all batches inside ``PortabilityRows.bulk_load()`` as ``import_memories`` runs them (into
a fresh PostgreSQL database the keyword postings' read index is built once at the end, timed with the
load). Texts: the LoCoMo turns and numbered variants of them (latency.py's corpus);
vectors (when on): seeded random 384-d unit vectors, the model's id. Each run loads a fresh
database. No embedding runs (the model's own pace is benchmarks/embed_speed.py's subject).

PostgreSQL runs three ways: no vectors; vectors with no HNSW index during the load (CPersona builds
it on the first recall that searches, reported as "index build s": what a fresh import gets); and
vectors loaded into a database whose HNSW index already exists (maintained row by row). The
fastest of "load + build after" and "load into the index" is what a bulk import into an empty
database should do; the table says which.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, print_table, write_json  # noqa: E402
from latency import corpus, text_at  # noqa: E402
from pg_latency import fresh_database, postgres_admin_url  # noqa: E402

from cpersona.storage import open_store  # noqa: E402
from cpersona.storage.interface import Store  # noqa: E402
from cpersona.storage.port_records import ImportedMemory  # noqa: E402
from cpersona.storage.values import NewMemory

MODEL, DIM = "all-minilm-l6-v2", 384


def batches(texts: list[str], rows: int, batch: int, vectors: bool) -> list[list[ImportedMemory]]:
    """The records, prepared beforehand (parsing and vector generation are not timed)."""
    rng = np.random.default_rng(rows)
    out = []
    for start in range(0, rows, batch):
        n = min(batch, rows - start)
        block = rng.normal(size=(n, DIM)).astype(np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out.append(
            [
                ImportedMemory(
                    NewMemory(
                        "bench",
                        "",
                        "",
                        "",
                        text_at(texts, start + k),
                        None,
                        None,
                        "2024-01-01T00:00:00.000000Z",
                        "2024-01-01T00:00:00.000000Z",
                        block[k].astype("<f4").tobytes() if vectors else None,
                        MODEL if vectors else None,
                        DIM if vectors else None,
                    )
                )
                for k in range(n)
            ]
        )
    return out


def load(store: Store, records: list[list[ImportedMemory]]) -> float:
    """Write every batch; rows per second."""
    rows = store.portability_rows()
    started = time.perf_counter()
    # As import_memories does: on PostgreSQL into a fresh database the keyword postings' index is built
    # once when the block ends (timed with the load).
    with rows.bulk_load():
        for batch in records:
            outcomes, _ = rows.write_batch(batch, queued_at=None, active_model=(MODEL, DIM))
            assert outcomes.count("inserted") == len(batch)
    return sum(len(b) for b in records) / (time.perf_counter() - started)


def build_index_s(store: Store) -> float:
    """Seconds the first vector search takes on PostgreSQL (it builds the HNSW index)."""
    from cpersona.storage.scope import Scope
    from cpersona.storage.values import VectorQuery

    q = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
    started = time.perf_counter()
    with store.read() as s:
        s.vector_search.nearest("memories", VectorQuery(q, MODEL, DIM), Scope("bench"), 10, window=None)
    return time.perf_counter() - started


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    texts, _ = corpus(args.data_dir)
    plain = batches(texts, args.rows, args.batch, vectors=False)
    with_vectors = batches(texts, args.rows, args.batch, vectors=True)
    results: list[dict[str, Any]] = []

    def note(engine: str, mode: str, rate: float, build: float | None = None) -> None:
        results.append({"engine": engine, "mode": mode, "rows": args.rows, "rows_per_s": round(rate, 1),
                        "index_build_s": None if build is None else round(build, 2)})  # fmt: skip
        print(
            f"{engine} {mode}: {rate:.0f} rows/s" + ("" if build is None else f", index build {build:.1f} s")
        )

    if "sqlite" in args.engines:
        for mode, records in (("no vectors", plain), ("vectors", with_vectors)):
            with tempfile.TemporaryDirectory() as tmp:
                store = open_store(Path(tmp) / "bulk.db")
                note("sqlite", mode, load(store, records))
                store.close()
    if "postgres" in args.engines:
        with postgres_admin_url(None if args.db_url == "auto" else args.db_url) as admin:
            with fresh_database(admin, "cpersona_bulk_plain") as url:
                store = open_store(url)
                note("postgres", "no vectors", load(store, plain))
                store.close()
            with fresh_database(admin, "cpersona_bulk_after") as url:
                store = open_store(url)
                rate = load(store, with_vectors)
                build = build_index_s(store)
                note("postgres", "vectors, HNSW built after", rate, build)
                results[-1]["load_then_build_rows_per_s"] = round(args.rows / (args.rows / rate + build), 1)
                store.close()
            with fresh_database(admin, "cpersona_bulk_into") as url:
                store = open_store(url)
                build_index_s(store)  # the (empty) index exists before the load
                note("postgres", "vectors, into the HNSW index", load(store, with_vectors))
                store.close()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path, help="directory of LoCoMo conversation JSON files")
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument(
        "--batch", type=int, default=500, help="records per write_batch (the importer's batch)"
    )
    parser.add_argument(
        "--engines", nargs="+", choices=("sqlite", "postgres"), default=["sqlite", "postgres"]
    )
    parser.add_argument(
        "--db-url", default="auto", help="PostgreSQL admin URL, or auto (a throwaway cluster)"
    )
    parser.add_argument("--json")
    args = parser.parse_args()
    results = run(args)
    print_table(
        ["engine", "load", "rows", "rows/s", "index build s", "load + build rows/s"],
        [
            [
                r["engine"],
                r["mode"],
                r["rows"],
                r["rows_per_s"],
                r["index_build_s"] or "",
                r.get("load_then_build_rows_per_s", ""),
            ]
            for r in results
        ],  # fmt: skip
    )
    write_json(
        args.json, {"benchmark": "bulk_load", "machine": machine(), "batch": args.batch, "results": results}
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
