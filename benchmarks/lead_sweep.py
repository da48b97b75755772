"""The start-up sweep for lead blocks at scale: what a store pays each start-up for rows due none.

    python benchmarks/lead_sweep.py --data ../shared/data/locomo [--rows 100000] [--repeats 5] [--json out.json]

At start-up (and on ``reembed``) the back-fill sweep (``services.backfill.enqueue_unblocked``) reads every
memory of ``LEAD_MIN_CHARS`` or more that holds the active model's vector but no lead block, and queues
those due one. A row due none (its first sentence runs too long, or is most of the text) is read again at
every start-up and never queued: that re-read is the steady cost measured here.

The store: a SQLite file of ``--rows`` memories shaped like LoCoMo's stored turns (``[date] speaker:
text``, as benchmarks/locomo.py stores them), in LoCoMo's proportions: the share of turns that are due no
lead keep their text, every other row is a short one. The rows are written straight into the file (the
store API would take minutes for 100,000) and marked as holding a vector of a stand-in model, which is all
the sweep reads; no model runs. Each repeat runs the real sweep on the same store.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import print_table, summary_ms, write_json  # noqa: E402
from _locomo_data import Conversation  # noqa: E402

from cpersona.config import Settings  # noqa: E402
from cpersona.embed.runtime.blocks import LEAD_MIN_CHARS, lead_end  # noqa: E402
from cpersona.embed.runtime.none_backend import NoEmbeddings  # noqa: E402
from cpersona.memory import Memory  # noqa: E402
from cpersona.services.backfill import enqueue_unblocked  # noqa: E402

MODEL, DIMENSION, WINDOW = "stand-in", 384, 256


def _turns(data: Path) -> list[str]:
    return [
        content for path in sorted(data.glob("*.json")) for _, content, _ in Conversation.load(path).turns()
    ]


def _build(path: Path, rows: int, undue: list[str], share: float) -> int:
    """Write ``rows`` memories, ``share`` of them due no lead; returns how many are."""
    settings = Settings(db_path=path, embedding_mode="none", update_check=False, auto_fetch_model=False)
    with Memory(settings, backend=NoEmbeddings(), start_background=False):
        pass  # creates the schema
    due_none = int(rows * share)
    # A text is unique per agent: each pass over the turns goes to an agent of its own.
    written = [(f"a{i // len(undue)}", undue[i % len(undue)]) for i in range(due_none)]
    written += [("a0", f"short note {i}") for i in range(rows - due_none)]
    with sqlite3.connect(path) as conn:
        conn.executemany(
            "INSERT INTO memories (agent_id, project_id, channel, msg_id, content, timestamp, created_at, "
            "embedding_model, embedding_dim) VALUES (?, '', '', ?, ?, '2024-01-01T00:00:00Z', "
            "'2024-01-01T00:00:00Z', ?, ?)",
            [(agent, str(i), text, MODEL, DIMENSION) for i, (agent, text) in enumerate(written)],
        )
    return due_none


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, required=True, help="LoCoMo conversations (*.json)")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", help="write the table here")
    args = parser.parse_args()
    turns = _turns(args.data)
    undue = [t for t in turns if len(t) >= LEAD_MIN_CHARS and lead_end(t) is None]
    share = len(undue) / len(turns)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "memory.db"
        due_none = _build(path, args.rows, undue, share)
        settings = Settings(db_path=path, embedding_mode="none", update_check=False, auto_fetch_model=False)
        samples, queued = [], 0
        with Memory(settings, backend=NoEmbeddings(), start_background=False) as mem:
            for _ in range(args.repeats):
                start = time.perf_counter()
                queued = len(enqueue_unblocked(mem.storage, MODEL, DIMENSION, WINDOW))
                samples.append(time.perf_counter() - start)
    timing = summary_ms(samples)
    print(
        f"LoCoMo turns: {len(turns)}, of {LEAD_MIN_CHARS}+ characters and due no lead: {len(undue)} ({share:.1%})"
    )
    print_table(
        ["rows", "due no lead (re-read)", "queued", "sweep p50 ms", "p95 ms"],
        [[args.rows, due_none, queued, timing["p50_ms"], timing["p95_ms"]]],
    )
    write_json(
        args.json,
        {
            "rows": args.rows,
            "due_none": due_none,
            "queued": queued,
            "lead_min_chars": LEAD_MIN_CHARS,
            **timing,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
