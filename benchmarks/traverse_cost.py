"""What a traverse costs: p50 / p95 over a random graph of declared links (issue 22, point 3).

    python benchmarks/traverse_cost.py [--memories 10000] [--links-per-memory 3] [--entities 200]
                                       [--queries 200] [--db-url postgresql://...] [--json out.json]

Stores ``--memories`` rows for one agent (keyword-only: no model), declares about
``--links-per-memory`` links from each (to random earlier memories, one in five to one of
``--entities`` entities), then walks from random memories and random entities at depth 1, 2 and 5
(limit 100, both directions) and prints wall time per call (ms) and the rows it returned. SQLite by
default; ``--db-url`` runs the same on PostgreSQL.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import keyword_only_memory, print_table, summary_ms, write_json  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--links-per-memory", type=int, default=3)
    parser.add_argument("--entities", type=int, default=200)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--db-url", default=None)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with keyword_only_memory(args.db_url, auto_calibrate=False) as mem:
        ids: list[int] = []
        started = time.perf_counter()
        for n in range(args.memories):
            links = []
            for _ in range(args.links_per_memory if ids else 0):
                if rng.random() < 0.2:
                    links.append({"relation": "about", "entity": f"entity {rng.randrange(args.entities)}"})
                else:
                    links.append({"relation": rng.choice(("follows", "cites")), "to": rng.choice(ids)})
            stored = mem.store("bench", f"memory number {n}", associations=links or None)
            ids.append(int(stored["id"]))
        load_s = time.perf_counter() - started
        rows = []
        payload: dict[str, object] = {"memories": args.memories, "load_s": round(load_s, 1)}
        for start_kind in ("memory", "entity"):
            for depth in (1, 2, 5):
                samples: list[float] = []
                reached: list[int] = []
                for _ in range(args.queries):
                    start = (
                        f"mem:{rng.choice(ids)}"
                        if start_kind == "memory"
                        else f"entity:entity {rng.randrange(args.entities)}"
                    )
                    t0 = time.perf_counter()
                    result = mem.traverse("bench", start, depth=depth, limit=100)
                    samples.append(time.perf_counter() - t0)
                    reached.append(result["count"])
                stats = summary_ms(samples)
                mean_rows = sum(reached) / len(reached)
                rows.append([start_kind, depth, stats["p50_ms"], stats["p95_ms"], round(mean_rows, 1)])
                payload[f"{start_kind}_depth{depth}"] = {**stats, "mean_rows": mean_rows}
    engine = "postgresql" if args.db_url else "sqlite"
    print(
        f"{engine}: {args.memories} memories, ~{args.links_per_memory} links each, stored in {load_s:.1f} s"
    )
    print_table(["from", "depth", "p50 ms", "p95 ms", "rows returned (mean)"], rows)
    write_json(args.json, {"engine": engine, **payload})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
