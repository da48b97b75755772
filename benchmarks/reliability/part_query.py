"""(f) Query cost: the long-term and many-term queries an agent could send, against rows built to make
them expensive, in-process and over HTTP.

The corpus: 2,000 ordinary memories plus five 16,000-character rows whose trigrams repeat thousands
of times (``"a" * 16000``, ``"ab" * 8000``, a random {a, b} string, a CJK run, random letters). Each
query is recalled ``--query-repeats`` times after one warm-up: p50 / max time, the peak RSS growth
of one call (VmHWM reset through /proc/<pid>/clear_refs before each call, minus VmRSS before it) and
the RSS that stays after all calls. Issue 17's target: the 8,000-character single token costs under
0.2 s and under 20 MB over its baseline, about what the ordinary 8,000-character question costs.
With a model the vector path (embedding the query) is included.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from _rpc import HttpServer, HttpSession, server_env, tool_payload
from shared import Run, open_memory, proc_status_mb, reset_peak, verdict

from cpersona.core.limits import MAX_QUERY_CHARS

TITLE = "(f) long-term and many-term query costs"
TARGET_SECONDS = 0.2
TARGET_MB = 20.0
AGENT = "q"
WORDS = [
    "deploy",
    "pipeline",
    "staging",
    "cluster",
    "database",
    "password",
    "rotate",
    "meeting",
    "lunch",
    "budget",
    "report",
    "quarterly",
    "invoice",
    "customer",
    "ticket",
    "login",
    "garden",
    "painting",
    "sunrise",
    "kiln",
    "pottery",
    "violin",
    "tomato",
    "balcony",
]
WORST = "one 8,000-char token"
ORDINARY = "ordinary 8,000-char question"


def _ab_row(rng: random.Random) -> str:
    return "".join(rng.choice("ab") for _ in range(16000))


def corpus(rng: random.Random) -> tuple[list[str], str]:
    """Ordinary rows, then the five adversarial ones; also the random {a, b} row (for its windows)."""
    ordinary = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 30))) for _ in range(2000)]
    ab = _ab_row(rng)
    letters = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(16000))
    return [*ordinary, "a" * 16000, "ab" * 8000, ab, "東京" * 8000, letters], ab


def queries(rng: random.Random, ab_row: str) -> dict[str, str]:
    windows = list(dict.fromkeys(ab_row[i : i + 40] for i in range(0, 4000, 7)))
    return {
        ORDINARY: " ".join(rng.choice(WORDS) for _ in range(2000))[:MAX_QUERY_CHARS],
        WORST: "a" * MAX_QUERY_CHARS,
        "one 8,000-char {a,b} token": ab_row[:MAX_QUERY_CHARS],
        "one 8,000-char CJK run": ("東京" * 4000)[:MAX_QUERY_CHARS],
        "200 distinct 40-char {a,b} terms": " ".join(windows[:200])[:MAX_QUERY_CHARS],
        "2,000 identifier tokens": " ".join(f"id{i}x" for i in range(2000))[:MAX_QUERY_CHARS],
        "one 8,000-char token matching nothing": "q" * MAX_QUERY_CHARS,
        "1,300 short terms matching nothing": " ".join(f"zz{i}" for i in range(1300))[:MAX_QUERY_CHARS],
        # The question readers (retrieval/diversity.py): "which … first … or" once cost seconds this way.
        "666 'which first' openers": ("which first " * 700)[:MAX_QUERY_CHARS],
        "888 'how long' frames": ("how long " * 900)[:MAX_QUERY_CHARS],
    }


def measure(call: Callable[[str], Any], query: str, repeats: int, pid: int | str) -> dict[str, Any]:
    """Time ``repeats`` calls after a warm-up; peak RSS growth per call and RSS kept (MB)."""
    call(query)
    before_all = proc_status_mb(pid)["VmRSS"]
    times: list[float] = []
    peaks: list[float] = []
    for _ in range(repeats):
        reset = reset_peak(pid)
        before = proc_status_mb(pid)["VmRSS"]
        started = time.perf_counter()
        call(query)
        times.append(time.perf_counter() - started)
        after = proc_status_mb(pid)
        peaks.append(round((after["VmHWM"] if reset else after["VmRSS"]) - before, 1))
    return {
        "p50_ms": round(statistics.median(times) * 1000, 1),
        "max_ms": round(max(times) * 1000, 1),
        "peak_growth_mb": max(peaks),
        "kept_mb": round(proc_status_mb(pid)["VmRSS"] - before_all, 1),
        "peak_reset": reset_peak(pid),
    }


def run(r: Run) -> dict[str, Any]:
    rng = random.Random(r.seed)
    rows, ab_row = corpus(rng)
    asked = queries(rng, ab_row)
    db = r.work / "query" / "memory.db"
    db.parent.mkdir(parents=True)
    repeats = r.args.query_repeats
    results: dict[str, dict[str, Any]] = {}
    memory = open_memory(db, r.models_dir)
    try:
        for text in rows:
            memory.store(AGENT, text)
        if r.models_dir is not None:
            memory.drain_queue()

        def in_process(query: str) -> Any:
            out = memory.recall(AGENT, query, limit=10)
            if out.get("ok") is not True:
                raise RuntimeError(f"recall failed: {out}")
            return out

        for name, query in asked.items():
            results.setdefault(name, {})["in-process"] = measure(in_process, query, repeats, "self")
            print(f"  {name}: in-process {results[name]['in-process']}", file=sys.stderr)
    finally:
        memory.close()
    token = "reliability-query-token-" + "q" * 16
    server = HttpServer(server_env(db, r.models_dir, CPERSONA_AUTH_TOKEN=token), db.parent / "server.log")
    session = HttpSession(server.url, token, timeout=300)
    try:

        def over_http(query: str) -> Any:
            payload = tool_payload(session.call_tool("recall", {"agent_id": AGENT, "query": query}) or {})
            if not payload or payload.get("ok") is not True:
                raise RuntimeError(f"recall over HTTP failed: {payload}")
            return payload

        over_http("warm the model and the index")
        for name, query in asked.items():
            if r.clock.left() < 60:
                break
            results[name]["http"] = measure(over_http, query, repeats, server.proc.pid)
            print(f"  {name}: http {results[name]['http']}", file=sys.stderr)
        server_rss = proc_status_mb(server.proc.pid)
    finally:
        session.close()
        server.stop()
    worst = results[WORST]
    passed = all(
        m["p50_ms"] < TARGET_SECONDS * 1000 and m["peak_growth_mb"] < TARGET_MB for m in worst.values()
    ) and set(worst) == {"in-process", "http"}
    return {
        "repeats": repeats,
        "corpus_rows": len(rows),
        "vector_path": r.models_dir is not None,
        "queries": {name: len(q) for name, q in asked.items()},
        "results": results,
        "server_rss_end_mb": server_rss,
        "passed": passed,
    }


def rows(q: dict[str, Any]) -> list[list[Any]]:
    """This part's lines of the closing table: one per query and transport."""
    out: list[list[Any]] = []
    ordinary = q["results"][ORDINARY]
    for name, by_transport in q["results"].items():
        for transport, m in by_transport.items():
            base = ordinary.get(transport, {}).get("p50_ms") or 0
            ratio = f", {m['p50_ms'] / base:.1f}× ordinary" if base else ""
            is_worst = name == WORST
            out.append(
                [
                    "(f) query cost",
                    f"{name}, {transport}: p50 / max ms; peak / kept MB",
                    f"{m['p50_ms']:.0f} / {m['max_ms']:.0f}; {m['peak_growth_mb']:.1f} / {m['kept_mb']:.1f}{ratio}",
                    "< 200 ms, < 20 MB" if is_worst else "-",
                    verdict(m["p50_ms"] < TARGET_SECONDS * 1000 and m["peak_growth_mb"] < TARGET_MB)
                    if is_worst
                    else "-",
                ]
            )
    return out
