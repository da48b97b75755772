"""Query embedding, session variants A/B: one short recall query at a time, interleaved in one process.

    python benchmarks/query_embedding_ab.py ../shared/data/locomo --models-dir DIR [--queries 200]
        [--rounds 3] [--json out.json]

Each variant is an ``OnnxBackend`` of the same MiniLM files with one session option changed from
today's (``intra_op_num_threads`` = ``default_threads()``, spinning off, ``ORT_ENABLE_ALL``):

- ``threads 1``: one intra-op thread (all work on the calling thread: no pool wake-ups per op);
- ``spinning on``: the pool's threads spin between ops instead of sleeping;
- ``graph extended``: ``ORT_ENABLE_EXTENDED`` instead of ``ORT_ENABLE_ALL``.

Per query the variants run in rotating order, so a busy machine's drift hits each alike. Reported:
wall p50/p95 and process CPU (ONNX Runtime's pool threads included) per call, the per-query wall
difference to today's session, the largest element-wise difference of the vectors to today's (the
pinned reference values in tests/embed allow 1e-4), the RSS a second session costs (what a separate
single-query session would add), and where one call's time goes on the calling thread (tokenizer,
input arrays, ``session.run``, pooling + normalisation; one-thread session, thread CPU).
No assertion on timings.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import latency as lat  # noqa: E402
from _common import print_table, summary_ms, write_json  # noqa: E402

from cpersona.embed.registry import load_manifest  # noqa: E402
from cpersona.embed.runtime.onnx_backend import OnnxBackend, default_threads  # noqa: E402
from cpersona.embed.runtime.pooling import pool, truncate_and_normalise  # noqa: E402

TODAY = "today"


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _variant(model_dir: Path, threads: int, tweak: Callable[[Any, Any], None] | None) -> OnnxBackend:
    backend = OnnxBackend(load_manifest(lat.MODEL), model_dir, threads=threads)
    if tweak is not None:
        base = backend._session_options

        def options(ort: Any) -> Any:
            opts = base(ort)
            tweak(ort, opts)
            return opts

        backend._session_options = options  # type: ignore[method-assign]
    backend.load()
    return backend


def _spinning(ort: Any, opts: Any) -> None:
    opts.add_session_config_entry("session.intra_op.allow_spinning", "1")


def _extended(ort: Any, opts: Any) -> None:
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED


def _stages(backend: OnnxBackend, questions: list[str]) -> dict[str, Any]:
    """Thread CPU of the parts of one ``embed([q], "query")`` on the calling thread."""
    prompt = backend.manifest.query_prompt
    tokenizer, session, output = backend._tokenizer, backend._session, backend.manifest.output_name
    samples: dict[str, list[float]] = {
        "tokenizer": [],
        "input arrays": [],
        "session.run": [],
        "pool + norm": [],
    }
    for q in questions:
        c0 = time.thread_time()
        encodings = backend._encode(tokenizer, [q], prompt)
        c1 = time.thread_time()
        feeds, mask = backend._feeds(encodings)
        c2 = time.thread_time()
        (hidden,) = session.run([output], feeds)
        c3 = time.thread_time()
        truncate_and_normalise(pool(backend.manifest.pooling, hidden, mask), backend.embedding_dim)
        c4 = time.thread_time()
        for name, value in zip(samples, (c1 - c0, c2 - c1, c3 - c2, c4 - c3), strict=True):
            samples[name].append(value)
    return {name: summary_ms(values) for name, values in samples.items()}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path, help="directory of LoCoMo conversation JSON files")
    parser.add_argument("--models-dir", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json")
    args = parser.parse_args()
    _texts, questions = lat.corpus(args.data_dir)
    random.Random(0).shuffle(questions)
    questions = questions[: args.queries]
    model_dir = args.models_dir / lat.MODEL

    threads = default_threads()
    rss0 = _rss_mb()
    today = _variant(model_dir, threads, None)
    today.embed(questions[:16], "query")
    rss1 = _rss_mb()
    variants = {TODAY: today, "threads 1": _variant(model_dir, 1, None)}
    variants["threads 1"].embed(questions[:16], "query")
    rss2 = _rss_mb()
    variants["spinning on"] = _variant(model_dir, threads, _spinning)
    variants["graph extended"] = _variant(model_dir, threads, _extended)

    reference = np.stack([today.embed([q], "query")[0] for q in questions])
    max_diff = {
        name: float(np.abs(np.stack([b.embed([q], "query")[0] for q in questions]) - reference).max())
        for name, b in variants.items()
    }
    names = list(variants)
    wall: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    for _ in range(args.rounds):
        for i, q in enumerate(questions):
            for name in names[i % len(names) :] + names[: i % len(names)]:
                w0, c0 = time.perf_counter(), time.process_time()
                variants[name].embed([q], "query")
                wall[name].append(time.perf_counter() - w0)
                cpu[name].append(time.process_time() - c0)
    out: dict[str, Any] = {}
    for name in names:
        diffs = [b - a for a, b in zip(wall[TODAY], wall[name], strict=True)]
        out[name] = {
            "wall": summary_ms(wall[name]),
            "process_cpu": summary_ms(cpu[name]),
            "wall_minus_today": summary_ms(diffs),
            "max_abs_diff_to_today": max_diff[name],
        }
    stages = _stages(variants["threads 1"], questions * args.rounds)
    print(f"today's session: {threads} intra-op threads; {len(questions)} queries x {args.rounds} rounds\n")
    print_table(
        ["variant", "wall p50", "wall p95", "CPU p50", "CPU mean", "wall − today p50", "max |Δ| to today"],
        [
            [
                name,
                r["wall"]["p50_ms"],
                r["wall"]["p95_ms"],
                r["process_cpu"]["p50_ms"],
                r["process_cpu"]["mean_ms"],
                r["wall_minus_today"]["p50_ms"],
                f"{r['max_abs_diff_to_today']:.1e}",
            ]
            for name, r in out.items()
        ],
    )
    print("\nOne call on the calling thread (threads 1), thread CPU ms:")
    print_table(["part", "p50", "mean"], [[k, v["p50_ms"], v["mean_ms"]] for k, v in stages.items()])
    print(f"\nRSS MB: the first session +{rss1 - rss0:.1f}, a second one +{rss2 - rss1:.1f}")
    write_json(
        args.json,
        {
            "benchmark": "query_embedding_ab",
            "threads_today": threads,
            "queries": len(questions),
            "rounds": args.rounds,
            "variants": out,
            "stages": stages,
            "rss_first_session_mb": round(rss1 - rss0, 1),
            "rss_second_session_mb": round(rss2 - rss1, 1),
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
