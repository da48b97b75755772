"""(e) SIGKILL during the embedding back-fill: rows stored without a vector (embeddings off), then a
stdio server with the model starts, queues them and back-fills in the background; it is SIGKILLed
when its queue worker has embedded a random share of them. The file is re-opened with the model and
the worker left to finish: every row must end with a vector (rows without one: 0), the queue empty,
``check_health`` clean, no row lost or changed.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path
from typing import Any

from _rpc import StdioServer, server_env, tool_payload
from shared import Clock, Run, fetch_contents, open_memory, verdict

TITLE = "(e) SIGKILL during the embedding back-fill"
ROWS = 600
AGENT = "bf"


def seed_rows(db: Path, rng: random.Random) -> dict[int, str]:
    """``ROWS`` memories stored with embeddings off (so none has a vector); id → content."""
    memory = open_memory(db, None)
    try:
        stored = {}
        for n in range(ROWS):
            text = (
                f"back-fill note {n}: {rng.choice(['tea', 'maps', 'rain', 'ports'])} {rng.getrandbits(32):x}"
            )
            stored[int(memory.store(AGENT, text)["id"])] = text
        return stored
    finally:
        memory.close()


def queue_processed(server: StdioServer) -> tuple[int, int] | None:
    """(tasks the worker embedded, queue depth) from get_queue_status, or None when unanswered."""
    rid = server.next_id()
    server.send(server.call_tool_message(rid, "get_queue_status", {}))
    payload = tool_payload(server.wait([rid], 30).get(rid, {}))
    if not payload or payload.get("ok") is not True:
        return None
    return int(payload.get("processed", 0)), int(payload.get("depth", 0))


def backfill_run(index: int, work: Path, models_dir: Path, rng: random.Random) -> dict[str, Any]:
    db = work / f"backfill-{index:02d}" / "memory.db"
    db.parent.mkdir(parents=True)
    stored = seed_rows(db, rng)
    target = rng.randint(ROWS // 10, ROWS * 9 // 10)
    server = StdioServer(server_env(db, models_dir), db.parent / "stderr.log")
    server.initialize(timeout=120)
    processed, depth = 0, ROWS
    deadline = time.monotonic() + 300
    while processed < target and server.alive() and time.monotonic() < deadline:
        status = queue_processed(server)
        if status is None:
            break
        processed, depth = status
        if depth == 0 and processed:
            break
        time.sleep(0.01)
    server.kill()
    memory = open_memory(db, models_dir)
    try:
        depth_at_restart = memory.get_queue_status()["depth"]
        finish = time.monotonic() + 300
        while memory.get_queue_status()["depth"] and time.monotonic() < finish:
            time.sleep(0.2)  # the restarted worker finishes the queue on its own
        health = memory.check_health(AGENT)
        found = fetch_contents(memory, AGENT, sorted(stored))
        counts = memory.stats()
        with_vectors = counts["memories_with_active_vectors"]
        queue_left = memory.get_queue_status()["depth"]
    finally:
        memory.close()
    checks = health["checks"]
    return {
        "embedded_before_kill": processed,
        "queued_at_restart": depth_at_restart,
        "rows": len(found),
        "changed_or_lost": sum(1 for i, text in stored.items() if found.get(i) != text),
        "without_vector": ROWS - with_vectors,
        "queue_left": queue_left,
        "missing_by_check": checks["vectors"]["memories"]["missing"],
        "integrity_ok": checks["integrity"]["status"] == "healthy",
        "fts_ok": checks["fts"]["status"] == "healthy",
    }


def part_backfill(
    runs: int, work: Path, models_dir: Path, clock: Clock, rng: random.Random
) -> dict[str, Any]:
    results = []
    for index in range(runs):
        if clock.left() < 120:
            break
        results.append(backfill_run(index, work, models_dir, rng))
        print(f"  back-fill kill run {index + 1}/{runs}: {results[-1]}", file=sys.stderr)
    clean = [
        r
        for r in results
        if r["without_vector"] == 0
        and r["queue_left"] == 0
        and r["changed_or_lost"] == 0
        and r["missing_by_check"] == 0
        and r["integrity_ok"]
        and r["fts_ok"]
    ]
    return {
        "runs_planned": runs,
        "runs": len(results),
        "runs_clean": len(clean),
        "rows_per_run": ROWS,
        "embedded_before_kill": [r["embedded_before_kill"] for r in results],
        "without_vector": sum(r["without_vector"] for r in results),
        "changed_or_lost": sum(r["changed_or_lost"] for r in results),
        "queue_left": sum(r["queue_left"] for r in results),
        "integrity_failures": sum(not r["integrity_ok"] for r in results),
        "fts_failures": sum(not r["fts_ok"] for r in results),
        "per_run": results,
        "passed": len(clean) == runs,
    }


def run(r: Run) -> dict[str, Any]:
    assert r.models_dir is not None
    return part_backfill(r.args.backfill_runs, r.work, r.models_dir, r.clock, random.Random(r.seed + 5))


def rows(e: dict[str, Any]) -> list[list[Any]]:
    """This part's lines of the closing table."""
    return [
        [
            "(e) back-fill kill",
            "clean runs (embedded before the kill)",
            f"{e['runs_clean']} / {e['runs_planned']} ({', '.join(map(str, e['embedded_before_kill']))} of {e['rows_per_run']})",
            f"{e['runs_planned']}",
            verdict(e["passed"]),
        ],
        [
            "(e) back-fill kill",
            "rows without a vector after restart / lost or changed",
            f"{e['without_vector']} / {e['changed_or_lost']}",
            "0 / 0",
            verdict(e["without_vector"] == 0 and e["changed_or_lost"] == 0),
        ],
        [
            "(e) back-fill kill",
            "queue left / integrity / FTS failures",
            f"{e['queue_left']} / {e['integrity_failures']} / {e['fts_failures']}",
            "0 / 0 / 0",
            verdict(e["queue_left"] == e["integrity_failures"] == e["fts_failures"] == 0),
        ],
    ]
