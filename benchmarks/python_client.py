"""Recall at 10,000 memories through the Python SDK 1.x client and the TypeScript SDK client, one server.

    python benchmarks/python_client.py DATA_DIR --py1 PYTHON --ts-dir DIR [--size 10000] [--queries 100]
        [--rounds 2] [--schemas full,envelope] [--models-dir DIR] [--json out.json]

``DATA_DIR`` holds LoCoMo conversation files (rows and questions, as benchmarks/latency.py). ``--py1``
is an interpreter with the Python SDK 1.x that most Python agents pin (``python3 -m venv /tmp/mcp1 &&
/tmp/mcp1/bin/pip install mcp==1.30``); ``--ts-dir`` a folder with the TypeScript SDK installed
(``npm install --prefix DIR @modelcontextprotocol/sdk@1``) and ``node`` (18 or newer) on the PATH.

For each ``CPERSONA_OUTPUT_SCHEMAS`` value one ``cpersona serve --transport streamable-http`` serves a
file of ``--size`` rows (random unit vectors of the MiniLM dimension; queries embedded by the real
model); the two clients take turns on it (Python, TypeScript, TypeScript, Python ...; ``--rounds``
rounds of ``--queries`` recalls each, limit 10), each in its own process, each validating every
answer against the listed ``outputSchema`` as it does by default. Printed: per client and schema
form, recall wall p50/p95, the ratio Python/TypeScript of the p50s, and the 1.x SDK's own check of one
recall answer (``jsonschema.validate`` against the listed schema, as its ClientSession runs it per call).
No assertion on timings.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import latency as lat  # noqa: E402
from _common import machine, minilm_models_dir, print_table, summary_ms, write_json  # noqa: E402
from _rpc import HttpServer, server_env  # noqa: E402

TOKEN = "python-client-bench-token-0123456789"

#: The Python SDK 1.x client: list tools (the outputSchemas it validates against), warm up, time recalls.
PY1_CLIENT = r"""
import asyncio, json, sys, time
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client

url, token, agent = sys.argv[1], sys.argv[2], sys.argv[3]
questions = json.loads(sys.stdin.read())

async def main():
    async with streamablehttp_client(url, headers={"Authorization": f"Bearer {token}"}) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            for q in questions[:5]:
                await session.call_tool("recall", {"agent_id": agent, "query": q, "limit": 10})
            samples = []
            for q in questions:
                t0 = time.perf_counter()
                result = await session.call_tool("recall", {"agent_id": agent, "query": q, "limit": 10})
                samples.append((time.perf_counter() - t0) * 1000)
                assert result.structuredContent["ok"] is True, result.structuredContent
            # The SDK's own check of one answer, alone: jsonschema.validate as ClientSession calls it.
            from jsonschema import validate
            from referencing import Registry
            schema = next(t.outputSchema for t in (await session.list_tools()).tools if t.name == "recall")
            checks = []
            for _ in range(30):
                t0 = time.perf_counter()
                validate(result.structuredContent, schema, registry=Registry())
                checks.append((time.perf_counter() - t0) * 1000)
            print(json.dumps({"samples": samples, "validate": checks}))

asyncio.run(main())
"""

#: The TypeScript SDK client: the same steps (listTools caches its output validators, as hosts do).
TS_CLIENT = r"""
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { readFileSync } from "node:fs";

const [url, token, agent] = process.argv.slice(2);
const questions = JSON.parse(readFileSync(0, "utf8"));
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "cpersona-bench", version: "1" });
await client.connect(transport);
await client.listTools();
for (const q of questions.slice(0, 5)) {
  await client.callTool({ name: "recall", arguments: { agent_id: agent, query: q, limit: 10 } });
}
const samples = [];
for (const q of questions) {
  const t0 = performance.now();
  const result = await client.callTool({ name: "recall", arguments: { agent_id: agent, query: q, limit: 10 } });
  samples.push(performance.now() - t0);
  if (result.structuredContent.ok !== true) throw new Error(JSON.stringify(result.structuredContent));
}
console.log(JSON.stringify({ samples, validate: [] }));
await client.close();
"""


def run_client(command: list[str], questions: list[str], cwd: Path) -> dict[str, list[float]]:
    """``{samples, validate}`` in ms from one client process (validate: the 1.x SDK's check alone)."""
    done = subprocess.run(
        command, input=json.dumps(questions), capture_output=True, text=True, cwd=cwd, timeout=900
    )
    if done.returncode != 0:
        raise SystemExit(f"{command[0]} client failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def wait_for_vectors(url: str, py1: str, work: Path) -> None:
    """Until the server's recall reports vector search (the model loaded), through the 1.x client."""
    deadline = time.monotonic() + 300
    probe = work / "probe.py"
    marker = "            # The SDK's own check"
    probe.write_text(
        PY1_CLIENT.split(marker)[0]
        + '            print(json.dumps({"vector": [1.0 if result.structuredContent["search"]["vector"] else 0.0]}))\n'
        + "\nasyncio.run(main())\n"
    )
    while time.monotonic() < deadline:
        flags = run_client([py1, str(probe), url, TOKEN, lat.AGENT], ["warm up"], work)["vector"]
        if flags and flags[-1] == 1.0:
            return
        time.sleep(1)
    raise SystemExit("the server never answered with vector search")


def bench(
    args: argparse.Namespace, work: Path, db: Path, models_dir: Path, questions: list[str]
) -> dict[str, Any]:
    py_script, ts_dir = work / "py1_client.py", work / "ts"
    py_script.write_text(PY1_CLIENT)
    ts_dir.mkdir(exist_ok=True)
    (ts_dir / "client.mjs").write_text(TS_CLIENT)
    if not (ts_dir / "node_modules").exists():
        (ts_dir / "node_modules").symlink_to(Path(args.ts_dir).resolve() / "node_modules")
    node = shutil.which("node") or "node"
    out: dict[str, Any] = {}
    for detail in args.schemas.split(","):
        env = server_env(
            db,
            models_dir,
            CPERSONA_AUTH_TOKEN=TOKEN,
            CPERSONA_OUTPUT_SCHEMAS=detail,
            CPERSONA_MODEL_SHARING="off",
            CPERSONA_RECENT_RECALL_PENALTY="1.0",
        )
        server = HttpServer(env, work / f"server-{detail}.log")
        try:
            wait_for_vectors(server.url, args.py1, work)
            samples: dict[str, list[float]] = {"python-1.x": [], "typescript": []}
            checks: list[float] = []
            for round_ in range(args.rounds):
                order = ["python-1.x", "typescript"] if round_ % 2 == 0 else ["typescript", "python-1.x"]
                for client in order:
                    command = (
                        [args.py1, str(py_script), server.url, TOKEN, lat.AGENT]
                        if client == "python-1.x"
                        else [node, str(ts_dir / "client.mjs"), server.url, TOKEN, lat.AGENT]
                    )
                    answer = run_client(command, questions, ts_dir)
                    samples[client] += answer["samples"]
                    checks += answer["validate"]
        finally:
            server.stop()
        out[detail] = {client: summary_ms([s / 1000 for s in values]) for client, values in samples.items()}
        out[detail]["python_1x_validate_one_answer"] = summary_ms([c / 1000 for c in checks])
        out[detail]["ratio_p50"] = round(
            out[detail]["python-1.x"]["p50_ms"] / out[detail]["typescript"]["p50_ms"], 2
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--py1", required=True, help="a Python with mcp==1.30 (the SDK 1.x client)")
    parser.add_argument("--ts-dir", required=True, help="a folder with @modelcontextprotocol/sdk installed")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--schemas", default="full,envelope", help="CPERSONA_OUTPUT_SCHEMAS values to serve")
    parser.add_argument("--models-dir", type=Path)
    parser.add_argument("--json")
    args = parser.parse_args()
    texts, questions = lat.corpus(args.data_dir)
    questions = questions[: args.queries]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        models_dir = args.models_dir or minilm_models_dir(work)
        meta = lat.model_meta(models_dir)
        db = work / "memory.db"
        lat.fill(db, texts, args.size, meta)
        result = bench(args, work, db, models_dir, questions)
    print(
        f"recall at {args.size:,} memories, {len(questions)} queries x {args.rounds} rounds per client, limit 10"
    )
    print_table(
        [
            "outputSchema",
            "client",
            "p50 ms",
            "p95 ms",
            "python/typescript (p50)",
            "1.x check of one answer p50 ms",
        ],
        [
            [
                detail,
                client,
                row[client]["p50_ms"],
                row[client]["p95_ms"],
                row["ratio_p50"] if client == "python-1.x" else "",
                row["python_1x_validate_one_answer"]["p50_ms"] if client == "python-1.x" else "",
            ]
            for detail, row in result.items()
            for client in ("python-1.x", "typescript")
        ],
    )
    write_json(args.json, {"size": args.size, "queries": len(questions), "machine": machine(), **result})


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
