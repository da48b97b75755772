"""PostgreSQL bulk load with and without ``bulk_load()`` (the postings' read index built after), alternating.

    python benchmarks/bulk_index_ab.py ../shared/data/locomo [--rows 20000] [--rounds 5] [--db-url URL]

Each round loads the same records (no vectors, 500 per ``write_batch``) into two fresh databases: "before"
without ``PortabilityRows.bulk_load()`` (the index maintained per posting, as before round 6), "after"
inside it. On a shared machine compare the ratios of one round, not figures across sittings.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bulk_load import batches  # noqa: E402
from latency import corpus  # noqa: E402
from pg_latency import fresh_database, postgres_admin_url  # noqa: E402

from cpersona.storage import open_store  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path, help="directory of LoCoMo conversation JSON files")
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--db-url", default="auto", help="PostgreSQL admin URL, or auto (a throwaway cluster)"
    )
    args = parser.parse_args()
    texts, _ = corpus(args.data_dir)
    records = batches(texts, args.rows, 500, vectors=False)
    rates: dict[str, list[float]] = {"before": [], "after": []}
    with postgres_admin_url(None if args.db_url == "auto" else args.db_url) as admin:
        for r in range(args.rounds):
            for mode in rates:
                with fresh_database(admin, f"cpersona_bulk_ab_{mode}") as url:
                    store = open_store(url)
                    rows = store.portability_rows()
                    started = time.perf_counter()
                    with rows.bulk_load() if mode == "after" else contextlib.nullcontext(False):
                        for batch in records:
                            outcomes, _ = rows.write_batch(batch, queued_at=None, active_model=None)
                            assert outcomes.count("inserted") == len(batch)
                        batches_s = time.perf_counter() - started
                    total = time.perf_counter() - started
                    store.close()
                rates[mode].append(args.rows / total)
                print(
                    f"round {r} {mode}: {args.rows / total:.0f} rows/s "
                    f"(batches {batches_s:.2f} s, index build at the end {total - batches_s:.2f} s)",
                    flush=True,
                )
    ratios = [a / b for a, b in zip(rates["after"], rates["before"], strict=True)]
    print("after / before per round:", ", ".join(f"{x:.2f}" for x in ratios))
    print(f"median ratio {sorted(ratios)[len(ratios) // 2]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
