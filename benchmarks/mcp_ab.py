"""Two versions of the server through MCP, interleaved: what a change to the MCP path saves, on a busy machine.

    python benchmarks/mcp_ab.py ../shared/data/locomo --base-src DIR [--src DIR] [--size 10000] [--queries 200]
        [--rounds 2] [--models-dir DIR] [--json out.json]

``--base-src`` is a source tree whose ``cpersona`` package is the "a" side (e.g. ``git archive main | tar -x
-C DIR``); the "b" side is the installed package, or ``--src`` (e.g. a git worktree). Both serve a copy of the same file of LoCoMo-derived rows
(``latency.fill``) over stdio to one real MCP client, which alternates the calls (a, b, b, a, a, b, ...), so the
machine's drift hits both alike: sequential runs on a shared two-core machine compare the neighbours, not
the code. Measured once both servers report a calibrated gate (their background self-calibration has
finished) with model sharing off on both (each holds its own model: the same cost on both sides).

Per side: recall (and the trivial ``persistence_status``) wall p50/p95, the p50 of the per-call differences b − a, the
server's CPU per call (/proc/<pid>/stat) and the client's thread CPU per call (its parsing and the SDK's
outputSchema check). Each recall's refs must be the same on both sides. No assertion on timings.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

import latency as lat  # noqa: E402
from _common import KERNEL_SETTLE_SECONDS, TRIVIAL_TOOL, print_table, summary_ms, write_json  # noqa: E402


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _env(db: Path, models_dir: Path, marker: str, source: Path | None) -> dict[str, str]:
    env = {**lat.env_for(db, models_dir, "onnx"), "CPERSONA_MODEL_SHARING": "off"}
    env["CPERSONA_BENCH_MARKER"] = marker
    env.pop("PYTHONPATH", None)
    if source is not None:  # ahead of the installed package on the child's sys.path
        env["PYTHONPATH"] = str(source)
    return env


async def _until_calibrated(client: Any, started: float) -> float:
    """Seconds from ``started`` until ``client``'s server answers a recall with a calibrated gate."""
    while time.perf_counter() - started < 300:
        result = await client.call_tool("recall", {"agent_id": lat.AGENT, "query": "warm up"})
        content = result.structured_content or {}
        if (content.get("search") or {}).get("vector") and (content.get("gate") or {}).get(
            "kind"
        ) == "calibrated":
            return round(time.perf_counter() - started, 1)
        await anyio.sleep(0.1)
    raise SystemExit("a server never reported a calibrated gate")


async def interleaved(
    dbs: tuple[Path, Path],
    models_dir: Path,
    base_src: Path,
    questions: list[str],
    rounds: int,
    src: Path | None = None,
) -> dict[str, Any]:
    """Recall and the trivial tool on both servers, alternating per call."""
    from mcp import Client

    markers = (f"mcp-ab-a-{time.time()}", f"mcp-ab-b-{time.time()}")
    target_a = lat._target(_env(dbs[0], models_dir, markers[0], base_src))
    target_b = lat._target(_env(dbs[1], models_dir, markers[1], src))
    out: dict[str, Any] = {}
    async with (
        Client(target_a, read_timeout_seconds=300) as a,
        Client(target_b, read_timeout_seconds=300) as b,
    ):
        started = time.perf_counter()  # both servers are up: their calibrations run side by side
        out["calibrated_after_s"] = {
            "a": await _until_calibrated(a, started),
            "b": await _until_calibrated(b, started),
        }
        # Each server's query-kernel check starts 2 s after its first query: measure after it.
        await anyio.sleep(max(0.0, started + KERNEL_SETTLE_SECONDS - time.perf_counter()))
        pids = [lat.server_pid(marker) for marker in markers]
        if None in pids:
            raise SystemExit("server process not found")
        for client in (a, b):  # warm the page cache and the index on both
            for q in questions[:30]:
                await client.call_tool("recall", {"agent_id": lat.AGENT, "query": q, "limit": 10})
        for tool in ("recall", TRIVIAL_TOOL):
            wall: dict[str, list[float]] = {"a": [], "b": []}
            client_cpu: dict[str, list[float]] = {"a": [], "b": []}
            server0 = [_cpu_seconds(pid) for pid in pids if pid is not None]
            for _ in range(rounds):
                for i, q in enumerate(questions):
                    args = {"agent_id": lat.AGENT, "query": q, "limit": 10} if tool == "recall" else {}
                    refs = []
                    # Which side goes first alternates too: the first call's server may still be busy
                    # (ONNX Runtime's threads spin a while after a run) when the second one starts.
                    order = (("a", a), ("b", b)) if i % 2 == 0 else (("b", b), ("a", a))
                    for side, client in order:
                        w0, c0 = time.perf_counter(), time.thread_time()
                        result = await client.call_tool(tool, args)
                        wall[side].append(time.perf_counter() - w0)
                        client_cpu[side].append(time.thread_time() - c0)
                        content = result.structured_content or {}
                        refs.append([row["ref"] for row in content.get("results", [])])
                    if refs[0] != refs[1]:
                        raise SystemExit(f"the two sides answered {q!r} differently")
            calls = rounds * len(questions)
            server = [
                round((_cpu_seconds(pid) - c0) / calls * 1e3, 3)
                for pid, c0 in zip([p for p in pids if p is not None], server0, strict=True)
            ]
            out[tool] = {
                side: {
                    "wall": summary_ms(wall[side]),
                    "client_cpu": summary_ms(client_cpu[side]),
                    "server_cpu_ms_per_call": server[i],
                }
                for i, side in enumerate(("a", "b"))
            }
            out[tool]["b_minus_a"] = summary_ms([y - x for x, y in zip(wall["a"], wall["b"], strict=True)])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path, help="directory of LoCoMo conversation JSON files")
    parser.add_argument("--base-src", type=Path, required=True, help="source tree of the 'a' side")
    parser.add_argument(
        "--src", type=Path, help="source tree of the 'b' side (default: the installed package)"
    )
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--models-dir", type=Path, required=True)
    parser.add_argument("--json")
    args = parser.parse_args()
    if not (args.base_src / "cpersona" / "__init__.py").is_file():
        raise SystemExit(f"{args.base_src} holds no cpersona package")
    texts, questions = lat.corpus(args.data_dir)
    random.Random(0).shuffle(questions)
    questions = questions[: args.queries]
    with tempfile.TemporaryDirectory() as tmp:
        meta = lat.model_meta(args.models_dir)
        first = Path(tmp) / "a.db"
        lat.fill(first, texts, args.size, meta)
        second = Path(tmp) / "b.db"
        for suffix in ("", "-wal"):
            if Path(str(first) + suffix).exists():
                shutil.copy(str(first) + suffix, str(second) + suffix)
        result = anyio.run(
            interleaved, (first, second), args.models_dir, args.base_src, questions, args.rounds, args.src
        )
    rows = []
    for tool in ("recall", TRIVIAL_TOOL):
        for side in ("a", "b"):
            r = result[tool][side]
            rows.append(
                [
                    f"MCP {tool} ({side})",
                    r["wall"]["p50_ms"],
                    r["wall"]["p95_ms"],
                    r["server_cpu_ms_per_call"],
                    r["client_cpu"]["p50_ms"],
                ]
            )
        rows.append([f"MCP {tool}: b − a", result[tool]["b_minus_a"]["p50_ms"], "", "", ""])
    print_table(["", "wall p50 ms", "wall p95 ms", "server CPU ms/call", "client CPU p50 ms"], rows)
    print(f"\nself-calibration finished after {result['calibrated_after_s']} s (a, b)")
    write_json(
        args.json,
        {
            "benchmark": "mcp_ab",
            "size": args.size,
            "queries": len(questions),
            "base_src": str(args.base_src),
            **result,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
