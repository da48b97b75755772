"""What a context pack costs over the recall it is built on: p50 / p95 (issue 22, point 4).

    python benchmarks/reconstruct_cost.py [--memories 5000] [--links-per-memory 2] [--queries 200]
                                          [--limit 5] [--budget 4000] [--db-url postgresql://...]
                                          [--json out.json]

Stores ``--memories`` rows for one agent (keyword-only: no model, so both sides embed nothing and
the difference is the pack's own reads and trimming), each declaring about ``--links-per-memory``
links to random earlier rows, and every fifth row superseding an earlier one. Then, for random
two-word queries, times ``recall(limit, record=False)`` and ``reconstruct(limit, budget)`` on the
same query, and prints wall time per call (ms), the ratio of the medians, and the pack's mean
items and quoted characters. SQLite by default; ``--db-url`` runs the same on PostgreSQL.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import keyword_only_memory, print_table, summary_ms, write_json  # noqa: E402

WORDS = [
    "harbour",
    "kestrel",
    "budget",
    "vault",
    "deploy",
    "garden",
    "server",
    "invoice",
    "meeting",
    "roadmap",
    "schema",
    "backup",
    "release",
    "ticket",
    "pricing",
    "hiring",
    "design",
    "cache",
    "migration",
    "window",
]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=5_000)
    parser.add_argument("--links-per-memory", type=int, default=2)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--limit", type=int, default=5)
    parser.add_argument("--budget", type=int, default=4_000)
    parser.add_argument("--db-url", default=None)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with keyword_only_memory(args.db_url, auto_calibrate=False) as mem:
        ids: list[int] = []
        current: list[int] = []  # rows nothing superseded yet (only those may be superseded)
        started = time.perf_counter()
        for n in range(args.memories):
            text = " ".join(rng.choice(WORDS) for _ in range(12)) + f" (note {n})"
            links = [
                {"relation": "see_also", "to": rng.choice(ids)}
                for _ in range(args.links_per_memory if ids else 0)
            ]
            supersedes = [current.pop(rng.randrange(len(current)))] if n % 5 == 4 and current else None
            stored = mem.store("bench", text, associations=links or None, supersedes=supersedes)
            ids.append(int(stored["id"]))
            current.append(int(stored["id"]))
        load_s = time.perf_counter() - started
        recall_s: list[float] = []
        pack_s: list[float] = []
        items: list[int] = []
        chars: list[int] = []
        for _ in range(args.queries):
            query = f"{rng.choice(WORDS)} {rng.choice(WORDS)}"
            t0 = time.perf_counter()
            mem.recall("bench", query, limit=args.limit, record=False)
            recall_s.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            pack = mem.reconstruct("bench", query, limit=args.limit, budget_chars=args.budget)
            pack_s.append(time.perf_counter() - t0)
            items.append(pack["count"])
            chars.append(pack["used_chars"])
    recall_stats, pack_stats = summary_ms(recall_s), summary_ms(pack_s)
    ratio = pack_stats["p50_ms"] / recall_stats["p50_ms"] if recall_stats["p50_ms"] else float("nan")
    engine = "postgresql" if args.db_url else "sqlite"
    print(
        f"{engine}: {args.memories} memories, ~{args.links_per_memory} links each, stored in {load_s:.1f} s"
    )
    print_table(
        ["call", "p50 ms", "p95 ms", "items (mean)", "quoted chars (mean)"],
        [
            ["recall", recall_stats["p50_ms"], recall_stats["p95_ms"], args.limit, "-"],
            [
                "reconstruct",
                pack_stats["p50_ms"],
                pack_stats["p95_ms"],
                round(sum(items) / len(items), 1),
                round(sum(chars) / len(chars)),
            ],
        ],
    )
    print(f"reconstruct / recall, p50: {ratio:.2f}x")
    write_json(
        args.json,
        {
            "engine": engine,
            "memories": args.memories,
            "recall": recall_stats,
            "reconstruct": pack_stats,
            "ratio_p50": round(ratio, 2),
            "mean_items": sum(items) / len(items),
            "mean_chars": sum(chars) / len(chars),
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
