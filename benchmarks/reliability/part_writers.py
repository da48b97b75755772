"""(b) Racing writers: 4 stdio server processes on ONE file, 500 stores each, half of them identical
across the 4 (same order, so they race): errors, lost (acknowledged but absent), duplicates (the
same content twice in an agent)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _rpc import StdioServer, server_env, tool_payload
from shared import SAMPLES_KEPT, Clock, Run, all_rows, open_memory, verdict

TITLE = "(b) 4 stdio writers on one file"


def part_writers(
    work: Path, models_dir: Path | None, clock: Clock, writers: int = 4, per_writer: int = 500
) -> dict[str, Any]:
    db = work / "writers" / "memory.db"
    db.parent.mkdir(parents=True)
    servers = [StdioServer(server_env(db, models_dir), db.parent / f"stderr-{w}.log") for w in range(writers)]
    for server in servers:
        server.initialize()
    plans: list[list[tuple[int, str, str]]] = []
    for w, server in enumerate(servers):
        plan = []
        for k in range(per_writer):
            agent, text = (
                ("race", f"shared race item {k // 2}")
                if k % 2 == 0
                else (f"race-{w}", f"writer {w} own item {k // 2}")
            )
            plan.append((server.next_id(), agent, text))
        plans.append(plan)
    start = threading.Barrier(writers)

    def send_all(server: StdioServer, plan: list[tuple[int, str, str]]) -> None:
        start.wait()
        for rid, agent, text in plan:
            server.send(
                server.call_tool_message(rid, "store", {"agent_id": agent, "message": {"content": text}})
            )

    began = time.monotonic()
    threads = [
        threading.Thread(target=send_all, args=(s, p), daemon=True)
        for s, p in zip(servers, plans, strict=True)
    ]
    for thread in threads:
        thread.start()
    errors, missing, samples = 0, 0, []
    acknowledged: dict[str, set[str]] = {}
    for server, plan in zip(servers, plans, strict=True):
        replies = server.wait([rid for rid, _, _ in plan], max(30.0, min(600.0, clock.left() - 30)))
        for rid, agent, text in plan:
            payload = tool_payload(replies[rid]) if rid in replies else None
            if rid not in replies:
                missing += 1
            elif payload is None or payload.get("ok") is not True:
                errors += 1
                if len(samples) < SAMPLES_KEPT:
                    samples.append(replies[rid])
            else:
                acknowledged.setdefault(agent, set()).add(text)
    elapsed = time.monotonic() - began
    exit_codes = [server.close() for server in servers]
    memory = open_memory(db, None)
    try:
        lost = duplicates = rows = 0
        for agent, texts in acknowledged.items():
            counts = Counter(row["content"] for row in all_rows(memory, agent))
            rows += sum(counts.values())
            lost += sum(1 for text in texts if counts[text] == 0)
            duplicates += sum(n - 1 for n in counts.values() if n > 1)
    finally:
        memory.close()
    expected_rows = per_writer // 2 + writers * (per_writer - per_writer // 2)
    return {
        "writers": writers,
        "stores": writers * per_writer,
        "seconds": round(elapsed, 2),
        "errors": errors,
        "unanswered": missing,
        "lost": lost,
        "duplicates": duplicates,
        "rows": rows,
        "rows_expected": expected_rows,
        "exit_codes": exit_codes,
        "error_samples": samples,
        "passed": errors == 0 and missing == 0 and lost == 0 and duplicates == 0 and rows == expected_rows,
    }


def run(r: Run) -> dict[str, Any]:
    return part_writers(r.work, r.models_dir, r.clock)


def rows(w: dict[str, Any]) -> list[list[Any]]:
    """This part's lines of the closing table."""
    return [
        [
            "(b) 4 stdio writers",
            "errors / unanswered / lost / duplicates",
            f"{w['errors']} / {w['unanswered']} / {w['lost']} / {w['duplicates']}",
            "0 / 0 / 0 / 0",
            verdict(w["passed"]),
        ],
        [
            "(b) 4 stdio writers",
            "rows (expected)",
            f"{w['rows']} ({w['rows_expected']})",
            "equal",
            verdict(w["rows"] == w["rows_expected"]),
        ],
    ]


def notes(result: dict[str, Any]) -> None:
    """After the table: the failed calls' replies, if any."""
    if result.get("error_samples"):
        print("\nwriters error samples:", *result["error_samples"], sep="\n  ")
