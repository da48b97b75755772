"""The query embedding as a server meets it: one query at a time, with idle time between queries.

    python benchmarks/query_session_gaps.py ../shared/data/locomo --models-dir DIR [--queries 150]
        [--gap-ms 20] [--rounds 2] [--json out.json]

A recall's query embedding rarely follows another one at once: an agent thinks between recalls. After
an idle gap the pool's threads are asleep and the caches hold other work, so a session setting that wins
back to back (``benchmarks/query_embedding_ab.py``) can lose here. Five settings of the same MiniLM
files, each in a process of its own (one variant's spinning threads must not take the cores another is
measured on: in one process they do), run in turn over ``--rounds`` so the machine's drift hits each
alike:

- ``float32, 2 threads``: the float32 graph as stored texts are embedded (``default_threads()`` on two
  cores, spinning off): every query's path with ``CPERSONA_EMBED_QUERY_KERNEL=exact``;
- ``float32, 1 thread``: the same graph without a thread pool;
- ``float32, spin``: two threads that spin between ops (and go on spinning for a while after a run);
- ``float32, spin + stop``: the same with ``session.force_spinning_stop`` (spinning ends with the run);
- ``int8 copy``: the query kernel (``CPERSONA_EMBED_QUERY_KERNEL=auto``, ``query_kernel.py``): the
  int8 copy of the graph, one thread, as chosen by its check at load (the choice is printed).

Per variant: the wall p50/p95 of one ``OnnxBackend.embed([q], "query")`` (LoCoMo questions), the
process CPU per query *including* the ``--gap-ms`` sleep after it (what threads spinning through the
gap cost), and the CPU share of one idle second after the last query. No assertion on timings.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import latency as lat  # noqa: E402
from _common import print_table, summary_ms, write_json  # noqa: E402

#: name -> (intra-op threads, allow_spinning, force_spinning_stop, query kernel)
VARIANTS = {
    "float32, 2 threads": ("2", "0", "0", "exact"),
    "float32, 1 thread": ("1", "0", "0", "exact"),
    "float32, spin": ("2", "1", "0", "exact"),
    "float32, spin + stop": ("2", "1", "1", "exact"),
    "int8 copy": ("2", "0", "0", "auto"),
}


def measure(
    model_dir: Path, questions: list[str], threads: str, spin: str, stop: str, kernel: str, gap: float
) -> dict[str, Any]:
    """One variant, in this process: per-query wall, CPU per query with its gap, idle CPU share."""
    from cpersona.embed.registry import load_manifest
    from cpersona.embed.runtime.onnx_backend import OnnxBackend

    backend = OnnxBackend(load_manifest(lat.MODEL), model_dir, threads=int(threads), query_kernel=kernel)
    base = backend._session_options

    def options(ort: Any, *args: Any) -> Any:
        opts = base(ort, *args)
        opts.add_session_config_entry("session.intra_op.allow_spinning", spin)
        opts.add_session_config_entry("session.force_spinning_stop", stop)
        return opts

    if kernel == "exact":  # the int8 copy keeps the backend's own options (one thread, spinning off)
        backend._session_options = options  # type: ignore[method-assign]
    backend.load()
    choice = backend.choose_query_kernel()
    for q in questions[:10]:
        backend.embed([q], "query")
    walls: list[float] = []
    cpu0 = time.process_time()
    for q in questions:
        started = time.perf_counter()
        backend.embed([q], "query")
        walls.append(time.perf_counter() - started)
        time.sleep(gap)
    cpu_per_query = (time.process_time() - cpu0) / len(questions)
    idle0 = time.process_time()
    time.sleep(1.0)
    return {
        "walls_s": walls,
        "cpu_per_query_ms": cpu_per_query * 1000,
        "idle_cpu_share": time.process_time() - idle0,
        "query_kernel": choice.as_dict(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path, help="directory of LoCoMo conversation JSON files")
    parser.add_argument("--models-dir", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--gap-ms", type=float, default=20.0, help="idle time after each query")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json")
    parser.add_argument(
        "--child", nargs=4, metavar=("THREADS", "SPIN", "STOP", "KERNEL"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    _texts, questions = lat.corpus(args.data_dir)
    random.Random(0).shuffle(questions)
    questions = questions[: args.queries]
    model_dir = args.models_dir / lat.MODEL
    if args.child:
        json.dump(measure(model_dir, questions, *args.child, args.gap_ms / 1000), sys.stdout)
        return 0

    results: dict[str, list[dict[str, Any]]] = {name: [] for name in VARIANTS}
    for _ in range(args.rounds):
        for name, (threads, spin, stop, kernel) in VARIANTS.items():
            command = [sys.executable, __file__, str(args.data_dir), "--models-dir", str(args.models_dir)]
            command += [
                "--queries",
                str(args.queries),
                "--gap-ms",
                str(args.gap_ms),
                "--child",
                threads,
                spin,
                stop,
                kernel,
            ]
            out = subprocess.run(command, check=True, capture_output=True, text=True, env=os.environ.copy())
            results[name].append(json.loads(out.stdout))
    print("wall p50 ms of each process, in run order per round:")
    for name, runs in results.items():
        print(f"  {name:22s}", "  ".join(f"{summary_ms(run['walls_s'])['p50_ms']:7.3f}" for run in runs))
    rows, report = [], {}
    for name, runs in results.items():
        walls = summary_ms([w for run in runs for w in run["walls_s"]])
        cpu = sum(run["cpu_per_query_ms"] for run in runs) / len(runs)
        idle = max(run["idle_cpu_share"] for run in runs)
        report[name] = {
            "wall_ms": walls,
            "cpu_per_query_ms": round(cpu, 3),
            "idle_cpu_share_max": round(idle, 3),
            "query_kernels": [run["query_kernel"] for run in runs],
        }
        rows.append([name, walls["p50_ms"], walls["p95_ms"], round(cpu, 3), round(idle, 3)])
    print(
        f"one query embedding at a time, {args.gap_ms:g} ms idle after each, {args.rounds} processes per variant"
    )
    print_table(
        ["variant", "wall p50 ms", "wall p95 ms", "CPU per query ms (incl. gap)", "idle CPU share"], rows
    )
    print("the int8 variant's check chose:", [k["kernel"] for k in report["int8 copy"]["query_kernels"]])
    write_json(args.json, {"gap_ms": args.gap_ms, "queries": args.queries, "variants": report})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
