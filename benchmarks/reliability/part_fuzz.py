"""(d) Tool fuzz: hypothesis-generated arguments for every tool, the same cases sent through a stdio
server and through an HTTP server: crashes (server died), unanswered requests, ``internal`` errors,
malformed failures (not the ``{ok:false, error, error_code}`` shape), JSON-RPC-level errors."""

from __future__ import annotations

import math
import random
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _fuzz import suspect
from _rpc import HttpServer, HttpSession, StdioServer, server_env, tool_payload
from shared import SAMPLES_KEPT, Clock, Run, verdict

TITLE = "(d) fuzzing every tool"


OUTCOMES = ("ok", "refused", "internal", "malformed", "jsonrpc_error", "unanswered", "crash")


def classify(reply: dict[str, Any] | None) -> str:
    """What a tools/call reply says about the server: one of OUTCOMES (never "crash")."""
    if reply is None:
        return "unanswered"
    if "error" in reply and "result" not in reply:
        return "jsonrpc_error"
    if "http_status" in reply:
        return "jsonrpc_error"
    payload = tool_payload(reply)
    if payload is None or not isinstance(payload.get("ok"), bool):
        return "malformed"
    if payload["ok"]:
        return "ok"
    if not (isinstance(payload.get("error"), str) and payload["error"].strip() and payload.get("error_code")):
        return "malformed"
    return "internal" if payload["error_code"] == "internal" else "refused"


def fuzz_cases(per_tool: int, rng_seed: int) -> list[tuple[str, Any]]:
    from _fuzz import generate

    from cpersona.server.tools import TOOLS

    cases: list[tuple[str, Any]] = []
    for number, spec in enumerate(TOOLS):
        cases.extend((spec.name, args) for args in generate(spec.input_schema, per_tool, rng_seed + number))
    random.Random(rng_seed).shuffle(cases)
    return cases


def _sample(transport: str, tool: str, args: Any, reply: Any) -> dict[str, Any]:
    return {"transport": transport, "tool": tool, "arguments": repr(args)[:400], "reply": repr(reply)[:400]}


def seed_rows(call: Any) -> None:
    for agent in ("fz-a", "fz-b"):
        for i in range(5):
            call("store", {"agent_id": agent, "message": {"content": f"fuzz seed {agent} {i} zebra"}})
        call("archive_episode", {"agent_id": agent, "summary": f"fuzz seed episode {agent}"})


def fuzz_stdio(cases: list[tuple[str, Any]], work: Path, clock: Clock, batch: int = 20) -> dict[str, Any]:
    db = work / "fuzz-stdio" / "memory.db"
    db.parent.mkdir(parents=True)
    env = server_env(db, None)
    restarts = 0
    server = StdioServer(env, db.parent / f"stderr-{restarts}.log")
    server.initialize()
    seed_rows(lambda tool, args: server.wait([_send(server, tool, args)], 30))
    outcomes: Counter[str] = Counter()
    causes: Counter[str] = Counter()
    samples: dict[str, list[dict[str, Any]]] = {}
    sent = 0
    for start in range(0, len(cases), batch):
        if clock.left() < 30:
            break
        chunk = cases[start : start + batch]
        ids = []
        for tool, args in chunk:
            ids.append(_send(server, tool, args))
        replies = _settle(server, ids)
        died = not server.alive()
        for rid, (tool, args) in zip(ids, chunk, strict=True):
            outcome = classify(replies.get(rid))
            if outcome == "unanswered" and died:
                outcome = "crash"
            outcomes[outcome] += 1
            if outcome == "unanswered":
                causes[suspect(args)] += 1
            if outcome not in ("ok", "refused") and len(samples.setdefault(outcome, [])) < SAMPLES_KEPT:
                samples[outcome].append(_sample("stdio", tool, args, replies.get(rid)))
        sent += len(chunk)
        if died:
            restarts += 1
            server.kill()
            server = StdioServer(env, db.parent / f"stderr-{restarts}.log")
            server.initialize()
    exit_code = server.close()
    return {
        "calls": sent,
        "outcomes": dict(outcomes),
        "unanswered_by_input": dict(causes),
        "samples": samples,
        "restarts": restarts,
        "exit_code": exit_code,
        "unparsable_stdout_lines": server.unparsable_lines,
    }


def _settle(server: StdioServer, ids: list[int], timeout: float = 30.0, quiet: float = 2.0) -> dict[int, Any]:
    """Replies for ``ids``; a request still unanswered once a later ping is answered and ``quiet``
    seconds pass without any further reply counts as unanswered (no 30 s wait per batch)."""
    ping = server.request("ping")
    deadline = time.monotonic() + timeout
    last_count, last_change = -1, time.monotonic()
    while time.monotonic() < deadline:
        got = server.wait([*ids, ping], 0.2)
        if all(i in got for i in ids) or server.eof:
            break
        if len(got) != last_count:
            last_count, last_change = len(got), time.monotonic()
        elif ping in got and time.monotonic() - last_change > quiet:
            break
    return {i: server.replies[i] for i in ids if i in server.replies}


def _send(server: StdioServer, tool: str, args: Any) -> int:
    rid = server.next_id()
    try:
        data = server.call_tool_message(rid, tool, args)
    except (ValueError, RecursionError):  # cannot be encoded as JSON at all: not a case a client can send
        data = server.call_tool_message(rid, tool, {"unencodable": True})
    server.send(data)
    return rid


def fuzz_http(cases: list[tuple[str, Any]], work: Path, clock: Clock, workers: int = 4) -> dict[str, Any]:
    db = work / "fuzz-http" / "memory.db"
    db.parent.mkdir(parents=True)
    token = "fuzz-token-" + "y" * 24
    server = HttpServer(server_env(db, None, CPERSONA_AUTH_TOKEN=token), db.parent / "server.log")
    seeder = HttpSession(server.url, token)
    seed_rows(seeder.call_tool)
    seeder.close()
    outcomes: Counter[str] = Counter()
    samples: dict[str, list[dict[str, Any]]] = {}
    lock = threading.Lock()
    causes: Counter[str] = Counter()
    crashed = threading.Event()

    def worker(part: list[tuple[str, Any]]) -> None:
        session = HttpSession(server.url, token, timeout=30)
        try:
            for tool, args in part:
                if clock.left() < 30 or crashed.is_set():
                    break
                try:
                    reply = session.call_tool(tool, args)
                    outcome = classify(reply)
                except (ValueError, RecursionError):
                    reply, outcome = None, "skipped_unencodable"
                except Exception as exc:  # timeout or connection failure
                    reply = {"exception": f"{type(exc).__name__}: {exc}"}
                    outcome = "crash" if not server.alive() else "unanswered"
                    if outcome == "crash":
                        crashed.set()
                with lock:
                    outcomes[outcome] += 1
                    if outcome == "unanswered":
                        causes[suspect(args)] += 1
                    if (
                        outcome not in ("ok", "refused")
                        and len(samples.setdefault(outcome, [])) < SAMPLES_KEPT
                    ):
                        samples[outcome].append(_sample("http", tool, args, reply))
        finally:
            session.close()

    threads = [
        threading.Thread(target=worker, args=(cases[w::workers],), daemon=True) for w in range(workers)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=max(30.0, clock.left()))
    alive = server.alive()
    server.stop()
    return {
        "calls": sum(outcomes.values()),
        "outcomes": dict(outcomes),
        "unanswered_by_input": dict(causes),
        "samples": samples,
        "server_alive_at_end": alive,
    }


def part_fuzz(total: int, work: Path, clock: Clock, rng_seed: int) -> dict[str, Any]:
    from cpersona.server.tools import TOOLS

    per_tool = max(1, math.ceil(total / 2 / len(TOOLS)))
    began = time.monotonic()
    cases = fuzz_cases(per_tool, rng_seed)
    generated = time.monotonic() - began
    print(
        f"  fuzz: {len(cases)} cases generated in {generated:.0f}s; sending over stdio and HTTP",
        file=sys.stderr,
    )
    stdio = fuzz_stdio(cases, work, clock)
    http = fuzz_http(cases, work, clock)
    combined: Counter[str] = Counter(stdio["outcomes"]) + Counter(http["outcomes"])
    calls = stdio["calls"] + http["calls"]
    bad = combined["crash"] + combined["unanswered"] + combined["internal"] + combined["malformed"]
    return {
        "calls": calls,
        "calls_planned": 2 * len(cases),
        "tools": len(TOOLS),
        "cases_per_tool": per_tool,
        "generation_seconds": round(generated, 1),
        "seed": rng_seed,
        "crashes": combined["crash"],
        "unanswered": combined["unanswered"],
        "internal": combined["internal"],
        "malformed_failures": combined["malformed"],
        "jsonrpc_errors": combined["jsonrpc_error"],
        "ok": combined["ok"],
        "refused": combined["refused"],
        "stdio": stdio,
        "http": http,
        "passed": bad == 0 and calls >= total,
    }


def run(r: Run) -> dict[str, Any]:
    return part_fuzz(r.args.fuzz_calls, r.work, r.clock, r.seed)


def rows(f: dict[str, Any]) -> list[list[Any]]:
    """This part's lines of the closing table."""
    return [
        [
            "(d) fuzz",
            "calls (stdio + HTTP)",
            f"{f['calls']} ({f['stdio']['calls']} + {f['http']['calls']})",
            "≥ 5,000",
            verdict(f["calls"] >= 5000),
        ],
        [
            "(d) fuzz",
            "crashes / unanswered / internal",
            f"{f['crashes']} / {f['unanswered']} / {f['internal']}",
            "0 / 0 / 0",
            verdict(f["crashes"] == f["unanswered"] == f["internal"] == 0),
        ],
        [
            "(d) fuzz",
            "malformed failures / JSON-RPC errors",
            f"{f['malformed_failures']} / {f['jsonrpc_errors']}",
            "0 / -",
            verdict(f["malformed_failures"] == 0),
        ],
        ["(d) fuzz", "ok / refused (ok:false)", f"{f['ok']} / {f['refused']}", "-", "-"],
    ]


def notes(f: dict[str, Any]) -> None:
    """After the table: what went unanswered, by input, and samples of every bad outcome."""
    for transport in ("stdio", "http"):
        causes = f[transport].get("unanswered_by_input")
        if causes:
            print(f"\nfuzz {transport}: unanswered requests by input: {causes}")
        for outcome, items in f[transport]["samples"].items():
            print(f"\nfuzz {transport} {outcome} ({f[transport]['outcomes'].get(outcome, 0)}), e.g.:")
            for item in items:
                print(f"  {item['tool']}: {item['arguments'][:200]}\n    -> {item['reply'][:200]}")
