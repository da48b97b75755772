"""Where a recall's time goes, outside the keyword channels: CPU per call, stage by stage, and through MCP.

    python benchmarks/recall_path.py ../shared/data/locomo [--size 10000] [--db FILE] [--queries 200]
        [--models-dir DIR] [--stdio-variant NAME=VALUE ...]... [--json out.json]

On a file of LoCoMo-derived rows with random unit vectors (``latency.fill``; or a copy of ``--db``):

- in-process stages, per call: the query embedding; the pipeline with all channels, with the keyword
  channels only, with the vector channel only; with the context channel off; after calibrating the
  agent, with the calibrated gate keyed on evidence (cosine + coverage) and on the top cosine alone;
  ``Memory.recall``; ``dispatch_tool("recall")`` (the MCP layer's own part: validation, shaping,
  JSON hygiene); and one ``calibrate_threshold`` of the whole file (wall and process CPU);
- through MCP, three servers on one copy of the file, each with a client of its own, called in turn
  per query (the order rotates, so a busy machine's drift hits all three alike): the SDK's python
  client over stdio; a raw newline-delimited JSON-RPC client over stdio (``_rpc.StdioServer``); a raw
  HTTP client over streamable HTTP (``_rpc.HttpSession``, httpx2). The raw clients do no pydantic
  or jsonschema work, so their figures are the server's; the SDK's figure adds its client. Per
  client: recall latency, the server's CPU per recall (from /proc/<pid>/stat) and its event loop
  thread's share of it (/proc/<pid>/task/<pid>/stat: the SDK's handling and the reply's shaping and
  serialisation; the tool runs on a worker thread), next to a trivial
  tool (``persistence_status``) for the round trip itself, once every server's background self-calibration of the
  agent has finished (the in-process stages run calibrated too; a calibration of 10k rows competes
  with every recall for the two cores while it runs), and the SDK client's own share: checking each
  recall result against the listed outputSchema as the SDK client does it (jsonschema, compiled once);
  every process (this one, each server) holds its own model: a private model-sharing directory, so
  no other cpersona process on the machine embeds for it or through it;
- then each server alone, the questions back to back through its client (in the rotation each
  server's caches are another's between its calls; alone they are its own, as for one agent's server);
- each server's RSS idle after the warm-up and its peak (VmHWM);
- ``--stdio-variant CPERSONA_X=v ...`` (repeatable): one more raw stdio server per occurrence, with
  those settings, called in the same rotation: an A/B of a setting through MCP in one sitting (e.g.
  ``--stdio-variant CPERSONA_EMBED_QUERY_OVERLAP=true``), reported as the p50 of its per-call wall
  differences to the plain raw stdio server, with its top 10s compared like the others'.

Every stage is reported as wall p50 and CPU per call (thread CPU for the pipeline, process CPU where
other threads work: ONNX Runtime's pool, BLAS threads). CPU is what to compare across runs on a busy
machine: wall time there measures the neighbours. No assertion on timings anywhere.
"""

from __future__ import annotations

import argparse
import os
import random
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import latency as lat  # noqa: E402
from _common import (
    KERNEL_SETTLE_SECONDS,
    QUERY_CACHE_OFF,
    QUERY_CACHE_OFF_ENV,
    TRIVIAL_TOOL,
    env_pairs,
    logged_query_kernel,
    print_table,
    summary_ms,
    write_json,
)  # noqa: E402
from _rpc import HttpServer, HttpSession, StdioServer, tool_payload  # noqa: E402

from cpersona.config import Settings  # noqa: E402
from cpersona.core.text import utc_now  # noqa: E402
from cpersona.memory import Memory  # noqa: E402
from cpersona.retrieval import fusion  # noqa: E402
from cpersona.retrieval.gate import QualityGate  # noqa: E402
from cpersona.retrieval.pipeline import RecallPipeline, RecallRequest  # noqa: E402
from cpersona.server.dispatch import dispatch_tool  # noqa: E402
from cpersona.storage.scope import Scope  # noqa: E402
from cpersona.storage.values import VectorQuery  # noqa: E402


def _measure(calls: list[Callable[[], Any]], clock: Callable[[], float]) -> dict[str, Any]:
    wall: list[float] = []
    cpu: list[float] = []
    for call in calls:
        w0, c0 = time.perf_counter(), clock()
        call()
        wall.append(time.perf_counter() - w0)
        cpu.append(clock() - c0)
    return {"wall": summary_ms(wall), "cpu": summary_ms(cpu)}


def _interleaved(a: list[Callable[[], Any]], b: list[Callable[[], Any]], rounds: int = 3) -> dict[str, Any]:
    """Thread CPU of two variants called alternately per query (A, B, A, B, ...), so the machine's
    drift hits both alike: p50 of each and the p50 of the per-call differences B − A."""
    cpu_a: list[float] = []
    cpu_b: list[float] = []
    for _ in range(rounds):
        for call_a, call_b in zip(a, b, strict=True):
            c0 = time.thread_time()
            call_a()
            c1 = time.thread_time()
            call_b()
            c2 = time.thread_time()
            cpu_a.append(c1 - c0)
            cpu_b.append(c2 - c1)
    diffs = [y - x for x, y in zip(cpu_a, cpu_b, strict=True)]
    return {"a": summary_ms(cpu_a), "b": summary_ms(cpu_b), "b_minus_a": summary_ms(diffs)}


def _private_runtime_dir(path: Path) -> Path:
    """A model-sharing directory of this process's own, so it loads the model itself: with the
    default per-user directory it would embed through whichever other cpersona process on the
    machine holds the model (or serve theirs), and a neighbour's work would land in its figures."""
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def in_process(db: Path, models_dir: Path, questions: list[str]) -> dict[str, Any]:
    """Per-stage CPU and wall time of one recall, in this process."""
    settings = Settings(
        **QUERY_CACHE_OFF,  # every recall embeds its query
        db_path=db,
        models_dir=models_dir,
        embedding_model=lat.MODEL,
        recent_recall_penalty=1.0,
        runtime_dir=_private_runtime_dir(db.parent / "run-in-process"),
    )
    out: dict[str, Any] = {}
    with Memory(settings, start_background=False) as mem:
        mem.embeddings.start()
        if not mem.wait_until_ready(300):
            raise SystemExit(f"model did not load: {mem.embedding_status()}")
        out["query_kernel"] = mem.embeddings.settle_query_kernel()  # one kernel for every stage below
        vectors = [mem.embeddings.embed_query(q) for q in questions]
        gate_pipeline = mem.recaller.pipeline

        def pipeline_calls(
            channels: frozenset[str] | None, with_vector: bool, pipeline: RecallPipeline | None = None
        ) -> list[Callable[[], Any]]:
            if pipeline is None:
                pipeline = gate_pipeline if channels is None else RecallPipeline(settings, channels=channels)

            def one(q: str, v: np.ndarray | None) -> Callable[[], Any]:
                def call() -> Any:
                    request = RecallRequest(scope=Scope(lat.AGENT), query=q, limit=10)
                    query = (
                        VectorQuery(v, mem.embeddings.model_id, mem.embeddings.dimension)
                        if with_vector
                        else None
                    )
                    with mem.storage.read() as session:
                        return pipeline.run(session, request, query_vector=query, now=utc_now())

                return call

            return [one(q, v) for q, v in zip(questions, vectors, strict=True)]

        keyword = frozenset({fusion.FTS_MEMORIES, fusion.FTS_WORDS, fusion.FTS_EPISODES})
        no_context = RecallPipeline(settings.with_overrides(context_weight=0.0), gate=gate_pipeline.gate)
        w0, c0 = time.perf_counter(), time.process_time()
        calibrated = mem.calibrate_threshold(lat.AGENT)
        out["calibrate_threshold"] = {
            "wall_s": round(time.perf_counter() - w0, 3),
            "cpu_s": round(time.process_time() - c0, 3),
            "rows": calibrated["rows"],
        }
        # The same calibration keyed on the top cosine (the policy read per recall, as the product does).
        cosine_gate = QualityGate(
            lambda agent: replace(mem.calibration.policy_for(agent), lexicon=None),
            settings.autocut_min_results,
        )
        stages: dict[str, tuple[list[Callable[[], Any]], Callable[[], float]]] = {
            "query embedding": (
                [lambda q=q: mem.embeddings.embed_query(q) for q in questions],
                time.process_time,
            ),
            "pipeline, all channels": (pipeline_calls(None, True), time.thread_time),
            "pipeline, keyword channels": (pipeline_calls(keyword, False), time.thread_time),
            "pipeline, vector channel": (pipeline_calls(frozenset({fusion.VECTOR}), True), time.thread_time),
            "pipeline, all channels, context off": (pipeline_calls(None, True, no_context), time.thread_time),
            "pipeline, calibrated gate (evidence)": (
                pipeline_calls(None, True, RecallPipeline(settings, gate=mem.calibration.gate())),
                time.thread_time,
            ),
            "pipeline, calibrated gate (top cosine)": (
                pipeline_calls(None, True, RecallPipeline(settings, gate=cosine_gate)),
                time.thread_time,
            ),
            "Memory.recall": (
                [lambda q=q: mem.recall(lat.AGENT, q, limit=10) for q in questions],
                time.process_time,
            ),
            "dispatch_tool recall": (
                [
                    lambda q=q: dispatch_tool(
                        mem, settings, "recall", {"agent_id": lat.AGENT, "query": q, "limit": 10}
                    )
                    for q in questions
                ],
                time.process_time,
            ),
        }
        for _ in range(2):  # the first pass loads the index and warms the page cache
            for name, (calls, clock) in stages.items():
                out[name] = _measure(calls, clock)
        evidence_gate = RecallPipeline(settings, gate=mem.calibration.gate())
        out["ab"] = {
            "context channel: off (a) vs on (b)": _interleaved(
                pipeline_calls(None, True, no_context), pipeline_calls(None, True)
            ),
            "calibrated gate: top cosine (a) vs evidence (b)": _interleaved(
                pipeline_calls(None, True, RecallPipeline(settings, gate=cosine_gate)),
                pipeline_calls(None, True, evidence_gate),
            ),
        }
    return out


def _client_validation(schema: dict[str, Any], answers: list[dict[str, Any]]) -> dict[str, Any]:
    """What the SDK client spends per recall result checking it against the listed outputSchema: the
    same steps (``validator_for``, an empty registry, ``best_match`` over ``iter_errors``), thread CPU."""
    from jsonschema.exceptions import best_match
    from jsonschema.validators import validator_for
    from referencing import Registry

    validator = validator_for(schema)(schema, registry=Registry())
    calls = [lambda answer=answer: best_match(validator.iter_errors(answer)) for answer in answers]
    for call in calls:
        if call() is not None:
            raise SystemExit("a recall result does not validate against its outputSchema")
    return _measure(calls, time.thread_time)


def _cpu_seconds(pid: int, thread: int | None = None) -> float:
    """CPU seconds of process ``pid``, or of its thread ``thread`` (the main thread's id is ``pid``)."""
    stat = Path(f"/proc/{pid}/stat" if thread is None else f"/proc/{pid}/task/{thread}/stat")
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _vm(pid: int, key: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


class _RawStdio:
    """The server over stdio spoken to with newline-delimited JSON-RPC (``_rpc.StdioServer``): no SDK
    client, so the wall time is the server's reply plus one pipe round trip and one ``json.loads``."""

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        self.server = StdioServer(env, log_path)
        self.server.initialize(timeout=120)
        self.pid = self.server.proc.pid

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        rid = self.server.next_id()
        self.server.send(self.server.call_tool_message(rid, tool, arguments))
        reply = self.server.wait([rid], 300).get(rid)
        if reply is None:
            raise SystemExit(f"raw stdio: no reply to {tool}")
        return tool_payload(reply) or {}

    def close(self) -> None:
        self.server.close()


class _RawHttp:
    """The server over streamable HTTP on loopback, spoken to with a plain HTTP client
    (``_rpc.HttpSession``: httpx2, the SDK's own HTTP library, but none of its MCP client)."""

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        token = secrets.token_urlsafe(24)
        self.server = HttpServer({**env, "CPERSONA_AUTH_TOKEN": token}, log_path)
        self.session = HttpSession(self.server.url, token, timeout=300)
        self.pid = self.server.proc.pid

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        reply = self.session.call_tool(tool, arguments)
        if reply is None:
            raise SystemExit(f"raw HTTP: no reply to {tool}")
        return tool_payload(reply) or {}

    def close(self) -> None:
        self.session.close()
        self.server.stop()


def _calibrated(content: dict[str, Any]) -> bool:
    return (
        bool((content.get("search") or {}).get("vector"))
        and (content.get("gate") or {}).get("kind") == "calibrated"
    )


def _top_refs(content: dict[str, Any]) -> list[Any]:
    return [row.get("ref") for row in content.get("results") or ()]


#: The clients of ``through_mcp``, in the order of the first query (later queries rotate it).
CLIENTS = ("sdk", "raw stdio", "raw http")


def _wall(r: dict[str, Any]) -> list[float]:
    return [r["wall"]["p50_ms"], r["wall"]["p95_ms"]]


def variant_name(settings: dict[str, str]) -> str:
    """A ``--stdio-variant``'s client name: ``raw stdio`` and its settings, without the prefix."""
    shown = " ".join(f"{k.removeprefix('CPERSONA_')}={v}" for k, v in settings.items())
    return f"raw stdio {shown}"


async def through_mcp(
    db: Path,
    models_dir: Path,
    questions: list[str],
    log_dir: Path,
    variants: dict[str, dict[str, str]] | None = None,
) -> dict[str, Any]:
    """Recall and the trivial tool through three clients of three servers on the same file, called in turn per
    query (the order rotates) so a busy machine's drift hits all alike: the SDK's python client over
    stdio, a raw JSON-RPC client over stdio, a raw HTTP client over streamable HTTP; plus one raw
    stdio server per entry of ``variants`` (client name → its extra settings). Per client: wall
    per call, the server's CPU per call, its RSS; for the SDK client also its outputSchema check."""
    from mcp import Client

    variants = variants or {}
    clients = (*CLIENTS, *variants)

    marker = f"recall-path-{time.time()}"
    # The warm-up pass asks the timed questions: every recall embeds its query all the same.
    env = {**lat.env_for(db, models_dir, "onnx"), **QUERY_CACHE_OFF_ENV}

    def own(name: str) -> dict[str, str]:  # each server its own model (see _private_runtime_dir)
        return {**env, "XDG_RUNTIME_DIR": str(_private_runtime_dir(log_dir / f"run-{name}"))}

    sdk_env = {**own("sdk"), "CPERSONA_BENCH_MARKER": marker}
    async with Client(lat._target(sdk_env), read_timeout_seconds=300) as client:
        logs = {"raw stdio": log_dir / "raw-stdio.log", "raw http": log_dir / "raw-http.log"}
        stdio = _RawStdio(own("stdio"), logs["raw stdio"])
        http = _RawHttp(own("http"), logs["raw http"])
        extra: dict[str, _RawStdio] = {}
        try:
            for k, (name, settings) in enumerate(variants.items()):
                logs[name] = log_dir / f"variant-{k}.log"
                extra[name] = _RawStdio({**own(f"variant-{k}"), **settings}, logs[name])
            sdk_pid = lat.server_pid(marker)
            if sdk_pid is None:
                raise SystemExit("server process not found")

            async def sdk_call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
                return (await client.call_tool(tool, arguments)).structured_content or {}

            async def raw_stdio_call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
                return stdio.call(tool, arguments)

            async def raw_http_call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
                return http.call(tool, arguments)

            def variant_call(name: str) -> Callable[[str, dict[str, Any]], Any]:
                async def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
                    return extra[name].call(tool, arguments)

                return call

            calls = {"sdk": sdk_call, "raw stdio": raw_stdio_call, "raw http": raw_http_call}
            calls.update({name: variant_call(name) for name in extra})
            pids = {"sdk": sdk_pid, "raw stdio": stdio.pid, "raw http": http.pid}
            pids.update({name: server.pid for name, server in extra.items()})
            # Wait for every server's background self-calibration (it competes for the cores while it runs).
            started = time.perf_counter()
            calibrated_after: dict[str, float | None] = dict.fromkeys(clients)
            while time.perf_counter() - started < 300 and None in calibrated_after.values():
                for name in clients:
                    if calibrated_after[name] is None:
                        content = await calls[name]("recall", {"agent_id": lat.AGENT, "query": "warm up"})
                        if _calibrated(content):
                            calibrated_after[name] = round(time.perf_counter() - started, 1)
                await anyio.sleep(0.05)
            # And for each server's query-kernel check (docs/models.md#the-query-kernel): every measured
            # recall uses the kernel its server settled on (read from the logs that are files).
            await anyio.sleep(max(0.0, started + KERNEL_SETTLE_SECONDS - time.perf_counter()))
            kernels = {name: logged_query_kernel(path) for name, path in logs.items()}
            out: dict[str, Any] = {
                "query_kernel": kernels,
                "calibrated_after_s": calibrated_after,
                "server_idle_rss_mb": {name: _vm(pid, "VmRSS") for name, pid in pids.items()},
            }
            recalled: list[dict[str, Any]] = []
            differing = 0
            for tool in ("recall", TRIVIAL_TOOL):
                for _ in range(2):  # the first pass warms the page cache and the index
                    wall: dict[str, list[float]] = {name: [] for name in clients}
                    cpu0 = {name: _cpu_seconds(pid) for name, pid in pids.items()}
                    loop0 = {name: _cpu_seconds(pid, pid) for name, pid in pids.items()}
                    if tool == "recall":
                        recalled.clear()
                        differing = 0
                    for i, q in enumerate(questions):
                        args = {"agent_id": lat.AGENT, "query": q, "limit": 10} if tool == "recall" else {}
                        answers: dict[str, dict[str, Any]] = {}
                        shift = i % len(clients)
                        for name in clients[shift:] + clients[:shift]:
                            t0 = time.perf_counter()
                            answers[name] = await calls[name](tool, args)
                            wall[name].append(time.perf_counter() - t0)
                        if tool == "recall":
                            recalled.append(answers["sdk"])
                            refs = {name: _top_refs(a) for name, a in answers.items()}
                            differing += len({tuple(r) for r in refs.values()}) > 1
                    for name in clients:
                        out.setdefault(tool, {})[name] = {
                            "wall": summary_ms(wall[name]),
                            "server_cpu_ms_per_call": round(
                                (_cpu_seconds(pids[name]) - cpu0[name]) / len(questions) * 1e3, 3
                            ),
                            # The event loop's thread: the SDK's request handling, reply shaping and
                            # serialisation; the tool itself runs on a worker thread.
                            "server_loop_cpu_ms_per_call": round(
                                (_cpu_seconds(pids[name], pids[name]) - loop0[name]) / len(questions) * 1e3, 3
                            ),
                        }
                    for name in extra:
                        diffs = [b - a for a, b in zip(wall["raw stdio"], wall[name], strict=True)]
                        out.setdefault(f"{tool}_minus_raw_stdio", {})[name] = summary_ms(diffs)
                    if tool == "recall":
                        out["recall_top10_differing_between_clients"] = differing
            # Then each server alone, its questions back to back (what one agent's client sees of one
            # server): in the rotation above the other servers' work evicts each one's caches between calls.
            for name in clients:
                alone: list[float] = []
                for q in questions:
                    t0 = time.perf_counter()
                    await calls[name]("recall", {"agent_id": lat.AGENT, "query": q, "limit": 10})
                    alone.append(time.perf_counter() - t0)
                out.setdefault("recall_alone", {})[name] = {"wall": summary_ms(alone)}
            listed = {tool.name: tool.output_schema for tool in (await client.list_tools()).tools}
            out["client_validation"] = _client_validation(listed["recall"] or {}, recalled)
            out["server_rss_after_mb"] = {name: _vm(pid, "VmRSS") for name, pid in pids.items()}
            out["server_peak_rss_mb"] = {name: _vm(pid, "VmHWM") for name, pid in pids.items()}
        finally:
            stdio.close()
            http.close()
            for server in extra.values():
                server.close()
    out["clients"] = list(clients)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path, help="directory of LoCoMo conversation JSON files")
    parser.add_argument("--size", type=int, default=10000, help="rows to fill (ignored with --db)")
    parser.add_argument("--db", type=Path, help="an existing file to copy instead of filling one")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--models-dir", type=Path)
    parser.add_argument(
        "--stdio-variant",
        nargs="+",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="one more raw stdio server with these settings (repeatable: one server each)",
    )
    parser.add_argument("--json")
    args = parser.parse_args()
    variants: dict[str, dict[str, str]] = {}
    for entries in args.stdio_variant:
        settings = env_pairs(entries)
        variants[variant_name(settings)] = settings
    texts, questions = lat.corpus(args.data_dir)
    random.Random(0).shuffle(questions)
    questions = questions[: args.queries]

    with tempfile.TemporaryDirectory() as tmp:
        models_dir = args.models_dir
        if models_dir is None:
            from cpersona.embed.install.assemble import assemble_minilm
            from cpersona.embed.install.fetch import install_from

            models_dir = Path(tmp) / "models"
            install_from(assemble_minilm(Path(tmp) / "src"), lat.MODEL, models_dir, stream=sys.stderr)
        meta = lat.model_meta(models_dir)
        for name, target in (("inproc.db", "in-process"), ("mcp.db", "mcp")):
            db = Path(tmp) / name
            if args.db is not None:
                for suffix in ("", "-wal"):
                    if Path(str(args.db) + suffix).exists():
                        shutil.copy(str(args.db) + suffix, str(db) + suffix)
            else:
                lat.fill(db, texts, args.size, meta)
            if target == "in-process":
                stages = in_process(db, models_dir, questions)
            else:
                mcp = anyio.run(through_mcp, db, models_dir, questions, Path(tmp), variants)

    calibration = stages.pop("calibrate_threshold")
    ab = stages.pop("ab")
    in_process_kernel = stages.pop("query_kernel")
    rows = [
        [name, r["wall"]["p50_ms"], r["wall"]["p95_ms"], r["cpu"]["p50_ms"], r["cpu"]["mean_ms"]]
        for name, r in stages.items()
    ]
    clients = mcp["clients"]
    rows += [
        [
            f"MCP {tool}, {client} client",
            mcp[tool][client]["wall"]["p50_ms"],
            mcp[tool][client]["wall"]["p95_ms"],
            "",
            mcp[tool][client]["server_cpu_ms_per_call"],
        ]
        for tool in ("recall", TRIVIAL_TOOL)
        for client in clients
    ]
    rows += [
        [f"MCP recall, {client} client, its server alone", *_wall(mcp["recall_alone"][client]), "", ""]
        for client in clients
    ]
    validation = mcp["client_validation"]
    rows.append(
        [
            "client: outputSchema check of a recall result (as the SDK does)",
            validation["wall"]["p50_ms"],
            validation["wall"]["p95_ms"],
            validation["cpu"]["p50_ms"],
            validation["cpu"]["mean_ms"],
        ]
    )
    print_table(["stage", "wall p50 ms", "wall p95 ms", "CPU p50 ms", "CPU mean ms"], rows)
    print("\nMCP, the server's CPU per call on its event loop's thread (ms):")
    print_table(
        ["tool", *clients],
        [
            [tool, *(mcp[tool][c]["server_loop_cpu_ms_per_call"] for c in clients)]
            for tool in ("recall", TRIVIAL_TOOL)
        ],
    )
    if variants:
        print("\nMCP, raw stdio variants: p50 of the per-call wall differences to the raw stdio server (ms):")
        print_table(
            ["variant", "recall p50", "recall mean", f"{TRIVIAL_TOOL} p50", f"{TRIVIAL_TOOL} mean"],
            [
                [
                    name,
                    mcp["recall_minus_raw_stdio"][name]["p50_ms"],
                    mcp["recall_minus_raw_stdio"][name]["mean_ms"],
                    mcp[f"{TRIVIAL_TOOL}_minus_raw_stdio"][name]["p50_ms"],
                    mcp[f"{TRIVIAL_TOOL}_minus_raw_stdio"][name]["mean_ms"],
                ]
                for name in variants
            ],
        )
    print("\nInterleaved A/B, thread CPU per pipeline run (ms):")
    print_table(
        ["comparison", "a p50", "b p50", "b − a p50", "b − a mean"],
        [
            [name, r["a"]["p50_ms"], r["b"]["p50_ms"], r["b_minus_a"]["p50_ms"], r["b_minus_a"]["mean_ms"]]
            for name, r in ab.items()
        ],
    )
    print(
        f"\ncalibrate_threshold of {calibration['rows']} rows: {calibration['wall_s']} s wall, "
        f"{calibration['cpu_s']} s process CPU"
    )
    print(
        "\n(MCP rows: the CPU column is the server process's CPU per call.) Recalls whose top 10 differed "
        f"between the {len(clients)} clients: {mcp['recall_top10_differing_between_clients']}"
    )
    print(f"\nthe servers' self-calibration finished after (s): {mcp['calibrated_after_s']}")
    print("in-process query kernel:", (in_process_kernel or {}).get("kernel"))
    print("the raw servers' query kernels (from their logs):", mcp["query_kernel"])
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for client in clients:
        print(
            f"{client} server RSS MB: idle {mcp['server_idle_rss_mb'][client]}, after the recalls "
            f"{mcp['server_rss_after_mb'][client]}, peak {mcp['server_peak_rss_mb'][client]}"
        )
    write_json(
        args.json,
        {
            "benchmark": "recall_path",
            "size": args.size,
            "db": str(args.db or ""),
            "queries": len(questions),
            "in_process": stages,
            "calibrate_threshold": calibration,
            "query_kernel_in_process": in_process_kernel,
            "ab": ab,
            "mcp": mcp,
            "load_average": os.getloadavg(),
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
