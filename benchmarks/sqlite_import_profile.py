"""Where a SQLite bulk import spends its time, per segment of rows, and the round-6 settings beside it.

    python benchmarks/sqlite_import_profile.py ../shared/data/locomo [--rows 200000] [--segment 50000]
        [--vectors] [--round6] [--keep DIR] [--json out.json]

Loads ``--rows`` LoCoMo-derived memories (latency.py's corpus) through ``PortabilityRows.write_batch``
in 500-record batches inside ``bulk_load()``, as ``import_memories`` and engine_latency.py's ingest do;
with ``--vectors`` each row carries a seeded random 384-d float32 vector (1,536 bytes). Records are
built inside the timed loop, as engine_latency.py does. For each segment it prints the rows/s by
wall clock and the importing thread's CPU per row (``time.thread_time``: what a loaded machine does
not distort much), split into the dedup probe plus the row and index inserts (``_write_one``), the
set-based FTS5 statements with their segment merges (``bulk_fts._index``), and the rest (record
building, commit, WAL writes and checkpoints). The last line is the end of the import (FTS5
``optimize`` or the bounded ``merge``). ``--round6`` switches this round's import settings off
(FTS5 merge settings during a batch, the import connection's cache and checkpoint interval, the
bounded merge) to measure both on the same code. ``--keep DIR`` keeps the file (DIR/bulk.db).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, peak_rss_mb, print_table, write_json  # noqa: E402
from latency import corpus, text_at  # noqa: E402

from cpersona.storage import open_store  # noqa: E402
from cpersona.storage.port_records import ImportedMemory  # noqa: E402
from cpersona.storage.sqlite import bulk_fts  # noqa: E402
from cpersona.storage.sqlite import portability as sqlite_portability  # noqa: E402
from cpersona.storage.values import NewMemory  # noqa: E402

BATCH = 500
MODEL, DIM = "all-minilm-l6-v2", 384
NOW = "2024-01-01T00:00:00.000000Z"


def _instrument(spent: dict[str, float]) -> None:
    """Count the thread CPU of the FTS5 statements and of each record's probe + inserts."""
    index, write_one = bulk_fts._index, sqlite_portability._write_one

    def timed_index(conn: sqlite3.Connection, ids: list[int]) -> None:
        t = time.thread_time()
        index(conn, ids)
        spent["fts"] += time.thread_time() - t

    def timed_write_one(conn: sqlite3.Connection, record: Any) -> Any:
        t = time.thread_time()
        out = write_one(conn, record)
        spent["rows"] += time.thread_time() - t
        return out

    bulk_fts._index = timed_index  # type: ignore[assignment]
    sqlite_portability._write_one = timed_write_one  # type: ignore[assignment]


def _round6() -> None:
    bulk_fts.BATCH_MERGE = dict(bulk_fts.FTS5_MERGE_DEFAULTS)
    sqlite_portability.import_connection = lambda conn: contextlib.nullcontext()  # type: ignore[assignment]
    sqlite_portability.merge_after_bulk = lambda conn, pages=0: 0  # type: ignore[assignment]


def _batch(texts: list[str], first: int, n: int, rng: np.random.Generator | None) -> list[ImportedMemory]:
    block = None if rng is None else rng.normal(size=(n, DIM)).astype(np.float32)
    return [
        ImportedMemory(
            NewMemory("bench", "", "", "", text_at(texts, first + k), None, None, NOW, NOW,
                      None if block is None else block[k].tobytes(),
                      None if block is None else MODEL, None if block is None else DIM)
        )
        for k in range(n)
    ]  # fmt: skip


def run(args: argparse.Namespace, directory: Path) -> dict[str, Any]:
    texts, _ = corpus(args.data_dir)
    spent = {"fts": 0.0, "rows": 0.0}
    _instrument(spent)
    if args.round6:
        _round6()
    path = directory / "bulk.db"
    store = open_store(path)
    rows = store.portability_rows()
    rng = np.random.default_rng(0) if args.vectors else None
    segments: list[dict[str, Any]] = []
    wall0, cpu0 = time.perf_counter(), time.thread_time()
    mark = (wall0, cpu0, dict(spent))
    with rows.bulk_load():
        for first in range(0, args.rows, BATCH):
            n = min(BATCH, args.rows - first)
            outcomes, _ = rows.write_batch(
                _batch(texts, first, n, rng), queued_at=None, active_model=(MODEL, DIM)
            )
            assert outcomes.count("inserted") == n, "corpus texts must be distinct"
            done = first + n
            if done % args.segment == 0 or done == args.rows:
                wall, cpu = time.perf_counter(), time.thread_time()
                count = done - (segments[-1]["upto"] if segments else 0)
                fts, inserts = (spent[k] - mark[2][k] for k in ("fts", "rows"))
                segments.append({
                    "upto": done, "rows_per_s": round(count / (wall - mark[0])),
                    "cpu_us_per_row": round(1e6 * (cpu - mark[1]) / count),
                    "probe_insert_us": round(1e6 * inserts / count), "fts_us": round(1e6 * fts / count),
                    "rest_us": round(1e6 * (cpu - mark[1] - fts - inserts) / count),
                })  # fmt: skip
                print(segments[-1], file=sys.stderr, flush=True)
                mark = (wall, cpu, dict(spent))
        loaded_wall, loaded_cpu = time.perf_counter(), time.thread_time()
    end_wall, end_cpu = time.perf_counter(), time.thread_time()
    store.close()
    wal = Path(f"{path}-wal")
    return {
        "rows": args.rows, "vectors": args.vectors, "settings": "round 6" if args.round6 else "round 7",
        "segments": segments,
        "load_rows_per_s": round(args.rows / (loaded_wall - wall0)),
        "end_s": round(end_wall - loaded_wall, 2), "end_cpu_s": round(end_cpu - loaded_cpu, 2),
        "rows_per_s": round(args.rows / (end_wall - wall0)),
        "cpu_s": round(end_cpu - cpu0, 1), "cpu_us_per_row": round(1e6 * (end_cpu - cpu0) / args.rows),
        "file_mb": round(path.stat().st_size / 1e6, 1),
        "wal_mb": round(wal.stat().st_size / 1e6, 1) if wal.exists() else 0.0,
        "peak_rss_mb": round(peak_rss_mb()),
    }  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path, help="directory of LoCoMo conversation JSON files")
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--segment", type=int, default=50_000, help="rows per printed segment")
    parser.add_argument("--vectors", action="store_true", help="a 384-d float32 vector per row")
    parser.add_argument("--round6", action="store_true", help="the import settings before round 7")
    parser.add_argument("--keep", type=Path, help="directory to keep the loaded file in")
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.segment % BATCH:
        parser.error(f"--segment must be a multiple of {BATCH}")
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        result = run(args, args.keep)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            result = run(args, Path(tmp))
    print_table(
        ["rows up to", "rows/s", "CPU us/row", "probe+insert", "FTS5", "rest"],
        [[s["upto"], s["rows_per_s"], s["cpu_us_per_row"], s["probe_insert_us"], s["fts_us"], s["rest_us"]]
         for s in result["segments"]],
    )  # fmt: skip
    print(
        f"{result['settings']}, {'with' if args.vectors else 'no'} vectors: {result['rows_per_s']} rows/s "
        f"(load {result['load_rows_per_s']}/s, end of import {result['end_s']} s / {result['end_cpu_s']} s CPU), "
        f"CPU {result['cpu_s']} s = {result['cpu_us_per_row']} us/row, file {result['file_mb']} MB, "
        f"WAL {result['wal_mb']} MB, peak RSS {result['peak_rss_mb']} MB, pid {os.getpid()}"
    )
    write_json(args.json, {"benchmark": "sqlite_import_profile", "machine": machine(), "result": result})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
