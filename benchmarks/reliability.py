"""Reliability under abuse: SIGKILLs, racing server processes, concurrent HTTP clients, fuzzed arguments.

    python benchmarks/reliability.py [--models-dir DIR | --keyword-only] [--kill-runs 20]
        [--fuzz-calls 5400] [--max-seconds 1500] [--json out.json]

Loopback only (the servers bind 127.0.0.1, the update index points at a dead
loopback port); every part is bounded in count and in time and stops by itself.

(a) kill: a ``cpersona serve`` process over stdio gets a burst of 400 stores
    pipelined on its stdin and is SIGKILLed after a random number of replies.
    Every acknowledged store must be in the file with its content; the file is
    then checked (check_health: integrity, FTS) and re-opened with the model,
    which must back-fill every row left without a vector.
(b) writers: 4 stdio server processes on ONE file, 500 stores each, half of
    them identical across the 4 (same order, so they race): errors, lost
    (acknowledged but absent), duplicates (the same content twice in an agent).
(c) http: 8 clients × 250 mixed calls (store, recall, list, get_contents,
    profiles) on one HTTP server: throughput, p50/p95, errors, lost, duplicates.
(d) fuzz: hypothesis-generated arguments for every tool, the same cases sent
    through a stdio server and through an HTTP server: crashes (server died),
    unanswered requests, ``internal`` errors, malformed failures (not the
    ``{ok:false, error, error_code}`` shape), JSON-RPC-level errors.

Without --models-dir the all-MiniLM-L6-v2 model is assembled from its PyPI
packages (like benchmarks/locomo.py); --keyword-only runs without a model
(the back-fill check is then skipped).
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import print_table, summary_ms, write_json  # noqa: E402
from _fuzz import suspect  # noqa: E402
from _rpc import HttpServer, HttpSession, StdioServer, server_env, tool_payload  # noqa: E402

from cpersona.config import Settings  # noqa: E402
from cpersona.memory import Memory  # noqa: E402

MODEL = "all-minilm-l6-v2"
BURST = 400
SAMPLES_KEPT = 6


class Clock:
    """The whole run's time budget."""

    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds

    def left(self) -> float:
        return self.deadline - time.monotonic()


def open_memory(db: Path, models_dir: Path | None) -> Memory:
    settings = Settings(
        db_path=db,
        models_dir=models_dir or db.parent / "models",
        embedding_mode="onnx" if models_dir else "none",
        embedding_model=MODEL,
        update_check=False,
        auto_fetch_model=False,
        task_retry_delay=0,
    )
    memory = Memory(settings)
    memory.wait_until_ready(120)
    return memory


def fetch_contents(memory: Memory, agent: str, ids: list[int]) -> dict[int, str]:
    """Contents of ``ids`` (memories of ``agent``) through the API, 20 refs per call."""
    found: dict[int, str] = {}
    for start in range(0, len(ids), 20):
        refs = [f"mem:{i}" for i in ids[start : start + 20]]
        for row in memory.get_contents(agent, refs)["items"]:
            found[int(row["id"])] = row["content"]
    return found


def all_rows(memory: Memory, agent: str) -> list[dict[str, Any]]:
    listed = memory.list_memories(agent, limit=1000)
    if listed["total"] > len(listed["items"]):
        raise RuntimeError(f"agent {agent} has more than 1000 rows; the benchmark keeps agents smaller")
    return list(listed["items"])


# -- (a) SIGKILL during a store burst ---------------------------------------------------------


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


# -- (b) racing stdio writers on one file -------------------------------------------------------


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


# -- (c) concurrent HTTP clients -----------------------------------------------------------------


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


# -- (d) fuzzing every tool over stdio and HTTP ---------------------------------------------------

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

    from cpersona.server.schemas import TOOLS

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
    from cpersona.server.schemas import TOOLS

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


# -- main ------------------------------------------------------------------------------------------


def table(report: dict[str, Any]) -> list[list[Any]]:
    rows: list[list[Any]] = []

    def verdict(ok: bool) -> str:
        return "ok" if ok else "FAIL"

    if "kill" in report:
        k = report["kill"]
        rows += [
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
    if "writers" in report:
        w = report["writers"]
        rows += [
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
    if "http" in report:
        h = report["http"]
        rows += [
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
    if "fuzz" in report:
        f = report["fuzz"]
        rows += [
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
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models-dir", type=Path, help=f"models dir with {MODEL} installed (else assembled)")
    parser.add_argument("--keyword-only", action="store_true", help="no model: skip the back-fill check")
    parser.add_argument("--kill-runs", type=int, default=20)
    parser.add_argument(
        "--fuzz-calls", type=int, default=5400, help="fuzzed calls in total (half stdio, half HTTP)"
    )
    parser.add_argument("--parts", default="kill,writers,http,fuzz", help="comma-separated subset to run")
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--max-seconds", type=float, default=1800, help="the run stops itself after this")
    parser.add_argument("--json", help="write the full report here")
    args = parser.parse_args()
    parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    clock = Clock(args.max_seconds)
    rng = random.Random(args.seed)
    report: dict[str, Any] = {"benchmark": "reliability", "seed": args.seed}
    with tempfile.TemporaryDirectory(prefix="cpersona-reliability-") as tmp:
        work = Path(tmp)
        models_dir: Path | None = None
        if not args.keyword_only:
            models_dir = args.models_dir
            if models_dir is None:
                from cpersona.embed.install.assemble import assemble_minilm
                from cpersona.embed.install.fetch import install_from

                source = assemble_minilm(work / "minilm-src")
                models_dir = work / "models"
                install_from(source, MODEL, models_dir, stream=sys.stderr)
        report["model"] = MODEL if models_dir else "none (keyword-only)"
        began = time.monotonic()
        if "kill" in parts:
            print("(a) SIGKILL during store bursts ...", file=sys.stderr)
            report["kill"] = part_kill(args.kill_runs, work, models_dir, clock, rng)
        if "writers" in parts and clock.left() > 60:
            print("(b) 4 stdio writers on one file ...", file=sys.stderr)
            report["writers"] = part_writers(work, models_dir, clock)
        if "http" in parts and clock.left() > 60:
            print("(c) 8 HTTP clients ...", file=sys.stderr)
            report["http"] = part_http(work, models_dir, clock)
        if "fuzz" in parts and clock.left() > 60:
            print("(d) fuzzing every tool ...", file=sys.stderr)
            report["fuzz"] = part_fuzz(args.fuzz_calls, work, clock, args.seed)
        report["seconds"] = round(time.monotonic() - began, 1)
        report["stopped_by_time_limit"] = clock.left() <= 60
    print_table(["part", "measure", "value", "target", "verdict"], table(report))
    for name in ("writers", "http"):
        if report.get(name, {}).get("error_samples"):
            print(f"\n{name} error samples:", *report[name]["error_samples"], sep="\n  ")
    if "fuzz" in report:
        for transport in ("stdio", "http"):
            causes = report["fuzz"][transport].get("unanswered_by_input")
            if causes:
                print(f"\nfuzz {transport}: unanswered requests by input: {causes}")
            for outcome, items in report["fuzz"][transport]["samples"].items():
                print(
                    f"\nfuzz {transport} {outcome} ({report['fuzz'][transport]['outcomes'].get(outcome, 0)}), e.g.:"
                )
                for item in items:
                    print(f"  {item['tool']}: {item['arguments'][:200]}\n    -> {item['reply'][:200]}")
    print(
        f"\ntotal {report['seconds']} s{' (stopped by the time limit)' if report['stopped_by_time_limit'] else ''}"
    )
    write_json(args.json, report)
    passed = all(report[p]["passed"] for p in ("kill", "writers", "http", "fuzz") if p in report)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
