"""Time from process start to the MCP ``initialize`` answer, and to a usable model.

    python benchmarks/startup.py [--runs 5] [--models-dir DIR] [--json out.json]

A real MCP client (the ``mcp`` package over stdio) launches ``cpersona serve``
each run and measures: spawn → initialize answered; spawn → tools/list;
spawn → first recall without a loading advisory (model ready). The baseline,
``python -c "import mcp"`` (spawn → exit), runs interleaved with the servers so a
noisy machine affects both alike; the table shows each initialize p50 minus it.
Scenarios:
keyword-only (mode none) and the all-MiniLM-L6-v2 ONNX model loading in the
background (assembled from its PyPI packages unless --models-dir is given).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import print_table, summary_ms, write_json  # noqa: E402


async def one_run(env: dict[str, str]) -> dict[str, float]:
    """Launch one server and time its milestones (seconds)."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    command = shutil.which("cpersona") or str(Path(sys.executable).with_name("cpersona"))
    target = StdioServerParameters(command=command, args=["serve"], env=env)
    started = time.perf_counter()
    async with Client(target, read_timeout_seconds=120) as client:
        initialized = time.perf_counter() - started
        await client.list_tools()
        listed = time.perf_counter() - started
        ready = float("nan")
        deadline = started + 120
        while time.perf_counter() < deadline:
            result = await client.call_tool("recall", {"agent_id": "bench", "query": "warm up"})
            advisory = (result.structured_content or {}).get("advisory") or {}
            if advisory.get("state") != "unknown":
                ready = time.perf_counter() - started
                break
            await anyio.sleep(0.01)
    return {"initialize": initialized, "tools_list": listed, "model_ready": ready}


def sdk_import() -> float:
    """Seconds for a fresh interpreter to import the MCP SDK and exit."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import mcp"], check=True)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--models-dir", type=Path)
    parser.add_argument("--json")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        models_dir = args.models_dir
        if models_dir is None:
            from cpersona.embed.install.assemble import assemble_minilm
            from cpersona.embed.install.fetch import install_from

            models_dir = Path(tmp) / "models"
            install_from(
                assemble_minilm(Path(tmp) / "src"), "all-minilm-l6-v2", models_dir, stream=sys.stderr
            )
        base = {
            "CPERSONA_UPDATE_CHECK": "false",
            "CPERSONA_AUTO_FETCH_MODEL": "false",
            "HF_HUB_OFFLINE": "1",
            "CPERSONA_MODELS_DIR": str(models_dir),
        }
        scenarios = {
            "keyword-only": {"CPERSONA_EMBEDDING_MODE": "none"},
            "onnx all-minilm-l6-v2": {
                "CPERSONA_EMBEDDING_MODE": "onnx",
                "CPERSONA_EMBEDDING_MODEL": "all-minilm-l6-v2",
            },
        }
        results: dict[str, dict[str, dict[str, float]]] = {}
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in scenarios}
        baseline: list[float] = []
        for i in range(args.runs):  # interleaved: every scenario sees the same machine load
            baseline.append(sdk_import())
            for name, extra in scenarios.items():
                env = {**base, **extra, "CPERSONA_DB_PATH": str(Path(tmp) / f"{name}-{i}.db")}
                runs[name].append(anyio.run(one_run, env))
        for name, got in runs.items():
            results[name] = {k: summary_ms([r[k] for r in got]) for k in got[0]}
        sdk = summary_ms(baseline)

    print_table(
        [
            "scenario",
            "initialize p50 ms",
            "p95",
            "minus SDK import p50",
            "tools/list p50 ms",
            "model ready p50 ms",
            "p95",
        ],
        [["python -c 'import mcp'", sdk["p50_ms"], sdk["p95_ms"], 0.0, "", "", ""]]
        + [
            [
                name,
                r["initialize"]["p50_ms"],
                r["initialize"]["p95_ms"],
                round(r["initialize"]["p50_ms"] - sdk["p50_ms"], 1),
                r["tools_list"]["p50_ms"],
                r["model_ready"]["p50_ms"],
                r["model_ready"]["p95_ms"],
            ]
            for name, r in results.items()
        ],
    )
    write_json(args.json, {"benchmark": "startup", "runs": args.runs, "sdk_import": sdk, "results": results})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
