"""(c) Concurrent HTTP clients: 8 clients × 250 mixed calls (store, recall, list, get_contents,
profiles) on one HTTP server: throughput, p50/p95, errors, lost, duplicates."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _common import summary_ms
from _rpc import HttpServer, HttpSession, server_env, tool_payload
from shared import SAMPLES_KEPT, Clock, Run, all_rows, open_memory, verdict

TITLE = "(c) 8 HTTP clients"


def part_http(
    work: Path, models_dir: Path | None, clock: Clock, clients: int = 8, calls: int = 250
) -> dict[str, Any]:
    db = work / "http" / "memory.db"
    db.parent.mkdir(parents=True)
    token = "reliability-benchmark-token-" + "x" * 16
    server = HttpServer(server_env(db, models_dir, CPERSONA_AUTH_TOKEN=token), db.parent / "server.log")
    latencies: list[float] = []
    errors: list[Any] = []
    stored: dict[str, set[str]] = {}
    lock = threading.Lock()

    def client(c: int) -> None:
        rng = random.Random(c)
        session = HttpSession(server.url, token, timeout=120)
        agent = f"http-{c % 4}"
        own_refs: list[str] = []
        try:
            for i in range(calls):
                if clock.left() < 20:
                    break
                roll = rng.random()
                if roll < 0.4:
                    text = f"client {c} call {i}: note about {rng.choice(['ports', 'rain', 'tea', 'maps'])}"
                    tool, args = "store", {"agent_id": agent, "message": {"content": text}}
                elif roll < 0.7:
                    tool, args = (
                        "recall",
                        {"agent_id": agent, "query": rng.choice(["ports", "rain note", "maps"])},
                    )
                elif roll < 0.8:
                    tool, args = "list_memories", {"agent_id": agent, "limit": 20}
                elif roll < 0.9 and own_refs:
                    tool, args = (
                        "get_contents",
                        {"agent_id": agent, "refs": rng.sample(own_refs, min(3, len(own_refs)))},
                    )
                elif roll < 0.95:
                    tool, args = (
                        "update_profile",
                        {"agent_id": agent, "profile": f"profile by client {c} at {i}"},
                    )
                else:
                    tool, args = "get_profile", {"agent_id": agent}
                began = time.monotonic()
                try:
                    reply = session.call_tool(tool, args)
                except Exception as exc:  # transport failure counts as an error, the run goes on
                    reply = {"exception": f"{type(exc).__name__}: {exc}"}
                took = time.monotonic() - began
                payload = tool_payload(reply) if reply else None
                with lock:
                    latencies.append(took)
                    if payload is None or payload.get("ok") is not True:
                        errors.append({"tool": tool, "reply": reply})
                    elif tool == "store":
                        stored.setdefault(agent, set()).add(args["message"]["content"])  # type: ignore[index]
                        own_refs.append(payload["ref"])
        finally:
            session.close()

    began = time.monotonic()
    threads = [threading.Thread(target=client, args=(c,), daemon=True) for c in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=max(30.0, clock.left()))
    elapsed = time.monotonic() - began
    server.stop()
    memory = open_memory(db, None)
    try:
        lost = duplicates = 0
        for agent, texts in stored.items():
            counts = Counter(row["content"] for row in all_rows(memory, agent))
            lost += sum(1 for text in texts if counts[text] == 0)
            duplicates += sum(n - 1 for n in counts.values() if n > 1)
    finally:
        memory.close()
    done = len(latencies)
    return {
        "clients": clients,
        "calls_planned": clients * calls,
        "calls": done,
        "seconds": round(elapsed, 2),
        "calls_per_second": round(done / elapsed, 1) if elapsed else 0.0,
        **summary_ms(latencies),
        "errors": len(errors),
        "lost": lost,
        "duplicates": duplicates,
        "error_samples": errors[:SAMPLES_KEPT],
        "passed": done == clients * calls and not errors and lost == 0 and duplicates == 0,
    }


def run(r: Run) -> dict[str, Any]:
    return part_http(r.work, r.models_dir, r.clock)


def rows(h: dict[str, Any]) -> list[list[Any]]:
    """This part's lines of the closing table."""
    return [
        [
            "(c) 8 HTTP clients",
            "calls / errors / lost / duplicates",
            f"{h['calls']} / {h['errors']} / {h['lost']} / {h['duplicates']}",
            f"{h['calls_planned']} / 0 / 0 / 0",
            verdict(h["passed"]),
        ],
        [
            "(c) 8 HTTP clients",
            "calls/s, p50 / p95 ms",
            f"{h['calls_per_second']}, {h['p50_ms']:.1f} / {h['p95_ms']:.1f}",
            "-",
            "-",
        ],
    ]


def notes(result: dict[str, Any]) -> None:
    """After the table: the failed calls' replies, if any."""
    if result.get("error_samples"):
        print("\nhttp error samples:", *result["error_samples"], sep="\n  ")
