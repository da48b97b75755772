"""(a) SIGKILL during a store burst: a stdio server gets 400 pipelined stores and is SIGKILLed after a
random number of replies. Every acknowledged store must be in the file with its content; the file is
then checked (check_health: integrity, FTS) and re-opened with the model, which must back-fill every
row left without a vector."""

from __future__ import annotations

import random
import sys
import threading
import time
from pathlib import Path
from typing import Any

from _rpc import StdioServer, server_env, tool_payload
from shared import Clock, Run, fetch_contents, open_memory, verdict

TITLE = "(a) SIGKILL during store bursts"
BURST = 400


def kill_run(index: int, work: Path, models_dir: Path | None, rng: random.Random) -> dict[str, Any]:
    db = work / f"kill-{index:02d}" / "memory.db"
    db.parent.mkdir(parents=True)
    server = StdioServer(server_env(db, models_dir), db.parent / "stderr.log")
    server.initialize()
    ids = [server.next_id() for _ in range(BURST)]
    contents = {
        rid: f"kill run {index} note {n}: token{rng.getrandbits(40):x} about the garden"
        for n, rid in enumerate(ids)
    }

    def burst() -> None:
        for rid in ids:
            if not server.send(
                server.call_tool_message(
                    rid, "store", {"agent_id": "kill", "message": {"content": contents[rid]}}
                )
            ):
                return

    threading.Thread(target=burst, daemon=True).start()
    target = rng.randint(20, BURST - 60)
    deadline = time.monotonic() + 120
    while server.count_replies() < target + 1 and time.monotonic() < deadline and server.alive():
        time.sleep(0.002)
    server.kill()
    acknowledged: dict[int, str] = {}
    for rid in ids:
        payload = tool_payload(server.replies.get(rid, {}))
        if payload and payload.get("result") == "stored":
            acknowledged[int(payload["id"])] = contents[rid]
    memory = open_memory(db, models_dir)
    try:
        found = fetch_contents(memory, "kill", sorted(acknowledged))
        lost = sum(1 for row_id, text in acknowledged.items() if found.get(row_id) != text)
        persisted = memory.list_memories("kill", limit=0)["total"]
        queued_after_kill = memory.get_queue_status()["depth"]
        if models_dir is not None:
            memory.drain_queue()
        health = memory.check_health("kill")
    finally:
        memory.close()
    checks = health["checks"]
    missing_vectors = checks["vectors"]["memories"]["missing"] if models_dir else None
    return {
        "acknowledged": len(acknowledged),
        "persisted": persisted,
        "lost": lost,
        "integrity_ok": checks["integrity"]["status"] == "healthy",
        "fts_ok": checks["fts"]["status"] == "healthy",
        "queued_after_kill": queued_after_kill,
        "vectors_missing_after_backfill": missing_vectors,
    }


def part_kill(
    runs: int, work: Path, models_dir: Path | None, clock: Clock, rng: random.Random
) -> dict[str, Any]:
    results = []
    for index in range(runs):
        if clock.left() < 60:
            break
        results.append(kill_run(index, work, models_dir, rng))
        print(f"  kill run {index + 1}/{runs}: {results[-1]}", file=sys.stderr)
    good = [
        r
        for r in results
        if r["lost"] == 0
        and r["integrity_ok"]
        and r["fts_ok"]
        and (models_dir is None or r["vectors_missing_after_backfill"] == 0)
    ]
    return {
        "runs_planned": runs,
        "runs": len(results),
        "runs_clean": len(good),
        "acknowledged": sum(r["acknowledged"] for r in results),
        "lost": sum(r["lost"] for r in results),
        "persisted": sum(r["persisted"] for r in results),
        "integrity_failures": sum(not r["integrity_ok"] for r in results),
        "fts_failures": sum(not r["fts_ok"] for r in results),
        "queued_after_kill": sum(r["queued_after_kill"] for r in results),
        "vectors_missing_after_backfill": None
        if models_dir is None
        else sum(r["vectors_missing_after_backfill"] or 0 for r in results),
        "passed": len(good) == runs,
        "per_run": results,
    }


def run(r: Run) -> dict[str, Any]:
    return part_kill(r.args.kill_runs, r.work, r.models_dir, r.clock, random.Random(r.seed))


def rows(k: dict[str, Any]) -> list[list[Any]]:
    """This part's lines of the closing table."""
    return [
        [
            "(a) kill",
            "clean runs",
            f"{k['runs_clean']} / {k['runs_planned']}",
            f"{k['runs_planned']}",
            verdict(k["passed"]),
        ],
        [
            "(a) kill",
            "acknowledged / lost",
            f"{k['acknowledged']} / {k['lost']}",
            "lost 0",
            verdict(k["lost"] == 0),
        ],
        [
            "(a) kill",
            "integrity / FTS failures",
            f"{k['integrity_failures']} / {k['fts_failures']}",
            "0 / 0",
            verdict(k["integrity_failures"] == k["fts_failures"] == 0),
        ],
        [
            "(a) kill",
            "queued at kill / unembedded after back-fill",
            f"{k['queued_after_kill']} / {k['vectors_missing_after_backfill']}",
            "- / 0",
            verdict(k["vectors_missing_after_backfill"] in (0, None)),
        ],
    ]
