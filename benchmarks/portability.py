"""Export → import round trip of a large database: time, peak memory, nothing lost or duplicated.

    python benchmarks/portability.py --memories 10000 [--dim 384] [--json out.json]

For each size, two runs: keyword-only (no vectors in the file) and with
``include_embeddings`` (random unit vectors written through the storage layer,
tagged with a made-up model id, so no model is needed). Each run builds a fresh
database, exports every agent to JSONL, imports into an empty database, checks
row counts and the multiset of (agent, project, channel, content) on both sides,
then imports again and checks nothing changed. Times are measured without
tracing; each phase is then repeated (export to a second file, import into a
second empty database) under tracemalloc for its Python heap peak, because
tracing roughly doubles the time. The process's peak RSS is printed too.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import peak_rss_mb, print_table, write_json  # noqa: E402
from store_recall import WORDS  # noqa: E402  (the store/recall benchmark's synthetic vocabulary)

from cpersona.config import Settings  # noqa: E402
from cpersona.core.text import format_ts, utc_now  # noqa: E402
from cpersona.embed.runtime.none_backend import NoEmbeddings  # noqa: E402
from cpersona.memory import Memory  # noqa: E402
from cpersona.storage.values import NewMemory  # noqa: E402
from cpersona.storage.vectors import to_blob  # noqa: E402

AGENTS = 5


def open_memory(db: Path) -> Memory:
    settings = Settings(
        db_path=db, embedding_mode="none", update_check=False, auto_fetch_model=False, export_dir=db.parent
    )
    return Memory(settings, backend=NoEmbeddings(), start_background=False)


def build(mem: Memory, size: int, dim: int | None) -> None:
    """``size`` memories over a few agents/projects/channels, plus episodes and profiles."""
    rng = random.Random(size)
    nrng = np.random.default_rng(size)
    now = format_ts(utc_now())
    for start in range(0, size, 1000):
        with mem.storage.write() as session:
            for i in range(start, min(size, start + 1000)):
                blob = None
                if dim:
                    v = nrng.standard_normal(dim).astype(np.float32)
                    blob = to_blob(v / np.linalg.norm(v))
                text = " ".join(rng.choice(WORDS) for _ in range(30)) + f" #{i}"
                session.memories.insert(
                    NewMemory(
                        agent_id=f"agent-{i % AGENTS}",
                        project_id=("", "proj")[i % 2],
                        channel=("", "a", "b")[i % 3],
                        msg_id=f"m{i}" if i % 4 == 0 else "",
                        content=text,
                        source='{"id": "U1", "type": "user"}',
                        metadata=None,
                        timestamp=now,
                        created_at=now,
                        embedding=blob,
                        embedding_model="random-unit" if dim else None,
                        embedding_dim=dim,
                    )
                )
    for a in range(AGENTS):
        for e in range(size // 100):
            mem.archive_episode(
                f"agent-{a}",
                f"session {e} of agent {a}: " + " ".join(rng.choice(WORDS) for _ in range(20)),
                keywords=["k1", "k2"],
            )
        mem.update_profile(f"agent-{a}", f"profile of agent {a}")


def census(mem: Memory) -> dict[str, Any]:
    conn = mem.storage.db.connection()  # the SQLite file, counted behind the API's back, on purpose
    return {
        "counts": {
            t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
            for t in ("memories", "episodes", "profiles")
        },
        "contents": Counter(
            conn.execute("SELECT agent_id, project_id, channel, content FROM memories").fetchall()
        ),
        "vectors": conn.execute("SELECT COUNT(*) FROM memories WHERE embedding IS NOT NULL").fetchone()[0],
    }


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """(result, seconds)."""
    started = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - started


def heap_peak_mb(fn: Callable[[], Any]) -> float:
    """The Python heap peak while ``fn`` runs, in MB."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def run(size: int, dim: int | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        src_db, dst_db = Path(tmp) / "src.db", Path(tmp) / "dst.db"
        with open_memory(src_db) as src:
            build(src, size, dim)
            before = census(src)
            exported, export_s = timed(
                lambda: src.export_memories(None, "all.jsonl", include_embeddings=bool(dim))
            )
            export_peak = heap_peak_mb(
                lambda: src.export_memories(None, "again.jsonl", include_embeddings=bool(dim))
            )
        with open_memory(Path(tmp) / "traced.db") as traced:
            import_peak = heap_peak_mb(lambda: traced.import_memories("all.jsonl"))
        with open_memory(dst_db) as dst:
            imported, import_s = timed(lambda: dst.import_memories("all.jsonl"))
            after = census(dst)
            again = dst.import_memories("all.jsonl")
            unchanged = census(dst) == after
        lost = sum((before["contents"] - after["contents"]).values())
        duplicated = sum((after["contents"] - before["contents"]).values())
        ok = (
            before["counts"] == after["counts"]
            and lost == 0
            and duplicated == 0
            and unchanged
            and imported["error_count"] == 0
            and again["counts"]["memories"]["inserted"] == 0
            and before["vectors"] == after["vectors"]
        )
        return {
            "memories": size,
            "vectors": f"{dim}-d" if dim else "none",
            "file_mb": round(exported["bytes"] / 2**20, 1),
            "export_s": round(export_s, 2),
            "export_peak_mb": round(export_peak, 1),
            "import_s": round(import_s, 2),
            "import_peak_mb": round(import_peak, 1),
            "reimport_unchanged": unchanged,
            "lost": lost,
            "duplicated": duplicated,
            "vectors_kept": after["vectors"],
            "verified": ok,
        }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--memories", type=int, nargs="+", default=[10_000], help="database sizes (default 10000)"
    )
    parser.add_argument(
        "--dim", type=int, default=384, help="vector dimension of the embeddings run (0: skip it)"
    )
    parser.add_argument("--json", help="write the results to this file")
    args = parser.parse_args()
    results = []
    for size in args.memories:
        for dim in [None, args.dim] if args.dim else [None]:
            results.append(run(size, dim))
            print(f"done: {size} memories, vectors {dim or 'none'}", file=sys.stderr)
    headers = list(results[0])
    print_table(headers, [[r[h] for h in headers] for r in results])
    print(f"peak RSS of the whole run: {peak_rss_mb()} MB")
    write_json(args.json, {"benchmark": "portability", "results": results, "peak_rss_mb": peak_rss_mb()})
    return 0 if all(r["verified"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
