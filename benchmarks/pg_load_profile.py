"""Where a PostgreSQL bulk import's time goes: per phase, with the server's CPU time beside the wall clock.

    python benchmarks/pg_load_profile.py ../shared/data/locomo [--rows 100000] [--batch 500] [--vectors]
        [--hnsw-after] [--db-url auto|URL] [--json out.json]

The load is bulk_load.py's (``PortabilityRows.write_batch`` per batch inside ``bulk_load()``, as
``import_memories`` runs it; the same texts and seeded vectors, prepared before the clock starts), into
a fresh database. Printed: rows/s over the whole import and over the batches alone; the seconds of
the batches, of the end of ``bulk_load()`` (the postings' read index built once, the statistics) and,
with ``--hnsw-after``, of the HNSW build the first vector search then runs. Beside each the CPU
seconds of the database server's processes (postmaster, children and reaped children, autovacuum's
included, from /proc: needs the server on this machine and a superuser to read ``data_directory``),
which a shared machine slows down far less than the wall clock; and the client's own CPU time. Each statement's server time, the
trigger's included, is what ``EXPLAIN (ANALYZE)`` of one batch shows (``--explain-batch N``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, write_json  # noqa: E402
from bulk_load import DIM, MODEL, batches, build_index_s  # noqa: E402
from latency import corpus  # noqa: E402
from pg_latency import fresh_database, postgres_admin_url  # noqa: E402

from cpersona.storage import open_store  # noqa: E402
from cpersona.storage.postgres.sql import Executor  # noqa: E402

_TICK = os.sysconf("SC_CLK_TCK")


def server_cpu_s(postmaster: int | None) -> float:
    """CPU seconds (user + system) of the server: the postmaster, its live children, and the children it
    has reaped (parallel index-build workers, autovacuum workers: the postmaster's cutime/cstime); 0 when
    unknown. Autovacuum's work on the loaded tables is counted too."""
    if postmaster is None:
        return 0.0
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(entry.name) == postmaster:
            total += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
        elif int(fields[1]) == postmaster:
            total += int(fields[11]) + int(fields[12])
    return total / _TICK


def postmaster_pid(url: str) -> int | None:
    """The server's postmaster pid, from postmaster.pid in its data directory (None if unreadable)."""
    import psycopg

    try:
        with psycopg.connect(url) as conn:
            row = conn.execute("SHOW data_directory").fetchone()
        return int((Path(str(row[0])) / "postmaster.pid").read_text().split()[0]) if row else None
    except (psycopg.Error, OSError, ValueError):
        return None


class Clock:
    """Wall, server CPU and client CPU seconds since ``start``, per named phase."""

    def __init__(self, postmaster: int | None) -> None:
        self.postmaster = postmaster
        self.phases: dict[str, dict[str, float]] = {}

    def mark(self) -> tuple[float, float, float]:
        return time.perf_counter(), server_cpu_s(self.postmaster), time.process_time()

    def note(self, name: str, since: tuple[float, float, float]) -> None:
        now = self.mark()
        self.phases[name] = {
            k: round(b - a, 2)
            for k, a, b in zip(("wall_s", "server_cpu_s", "client_cpu_s"), since, now, strict=True)
        }


def explain_insert(batch: int) -> None:
    """Print EXPLAIN (ANALYZE) of the memories INSERT of batch number ``batch`` (it still inserts)."""
    original = Executor.all
    seen = {"n": -1}

    def all_(self: Executor, query: str, params: Any = None) -> list[dict[str, Any]]:
        if not query.startswith("INSERT INTO memories"):
            return original(self, query, params)
        seen["n"] += 1
        if seen["n"] != batch:
            return original(self, query, params)
        plan = original(self, f"EXPLAIN (ANALYZE, BUFFERS) {query}", params)
        print("\n".join(str(next(iter(r.values()))) for r in plan))
        # What RETURNING would have said: the staged rows that are now stored.
        return original(self, "SELECT s.id FROM cpersona_staged_memories s JOIN memories m USING (id)", None)

    Executor.all = all_  # type: ignore[method-assign]


def run(args: argparse.Namespace) -> dict[str, Any]:
    texts, _ = corpus(args.data_dir)
    records = batches(texts, args.rows, args.batch, args.vectors)
    if args.explain_batch is not None:
        explain_insert(args.explain_batch)
    with postgres_admin_url(None if args.db_url == "auto" else args.db_url) as admin:
        clock = Clock(postmaster_pid(admin))
        with fresh_database(admin, "cpersona_load_profile") as url:
            store = open_store(url)
            rows = store.portability_rows()
            start = clock.mark()
            block = rows.bulk_load()
            block.__enter__()
            for batch in records:
                outcomes, _ = rows.write_batch(batch, queued_at=None, active_model=(MODEL, DIM))
                assert outcomes.count("inserted") == len(batch)
            clock.note("batches", start)
            end = clock.mark()
            block.__exit__(None, None, None)
            clock.note("end of bulk_load (read index, statistics)", end)
            clock.note("import", start)
            if args.hnsw_after:
                hnsw = clock.mark()
                build_index_s(store)
                clock.note("HNSW build (first vector search)", hnsw)
            store.close()
    import_s = clock.phases["import"]["wall_s"]
    return {
        "rows": args.rows,
        "batch": args.batch,
        "vectors": args.vectors,
        "rows_per_s": round(args.rows / import_s, 1),
        "batches_rows_per_s": round(args.rows / clock.phases["batches"]["wall_s"], 1),
        "phases": clock.phases,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path, help="directory of LoCoMo conversation JSON files")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=500, help="records per write_batch")
    parser.add_argument(
        "--vectors", action="store_true", help="load 384-d vectors too (seeded, as bulk_load.py)"
    )
    parser.add_argument("--hnsw-after", action="store_true", help="then time the HNSW build")
    parser.add_argument("--explain-batch", type=int, help="EXPLAIN (ANALYZE) the INSERT of this batch")
    parser.add_argument("--db-url", default="auto", help="an admin URL, or 'auto' (a throwaway pgserver)")
    parser.add_argument("--json")
    args = parser.parse_args()
    result = run(args)
    print(f"postgres {args.rows} rows{' + vectors' if args.vectors else ''}, batch {args.batch}: "
          f"{result['rows_per_s']:.0f} rows/s (batches alone {result['batches_rows_per_s']:.0f})")  # fmt: skip
    print(f"{'phase':<44} {'wall s':>8} {'server CPU s':>13} {'client CPU s':>13}")
    for name, figures in result["phases"].items():
        print(
            f"{name:<44} {figures['wall_s']:>8.2f} {figures['server_cpu_s']:>13.2f} {figures['client_cpu_s']:>13.2f}"
        )
    if args.json:
        write_json(args.json, {"machine": machine(), "result": result})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
