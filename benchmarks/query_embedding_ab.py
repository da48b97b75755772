"""Query embedding, session variants A/B: one short recall query at a time, interleaved in one process.

    python benchmarks/query_embedding_ab.py ../shared/data/locomo --models-dir DIR [--queries 200]
        [--rounds 3] [--variants NAME ...] [--json out.json]

Each variant is an ``OnnxBackend`` of the same MiniLM files with one session option changed from
today's (``intra_op_num_threads`` = ``default_threads()``, spinning off, ``ORT_ENABLE_ALL``, no arena):

- ``threads 1``: one intra-op thread (all work on the calling thread: no pool wake-ups per op);
- ``spinning on``: the pool's threads spin between ops instead of sleeping;
- ``graph extended`` / ``graph basic``: ``ORT_ENABLE_EXTENDED`` / ``ORT_ENABLE_BASIC`` instead of ``ORT_ENABLE_ALL``;
- ``arena on``: ONNX Runtime's CPU memory arena (allocations reused between runs);
- ``saved graph``: the graph ONNX Runtime optimised (``ORT_ENABLE_ALL``, written once with
  ``optimized_model_filepath``) loaded with optimisations off: what a copy saved at install or
  first load would give (its session creation time is printed beside today's);
- ``saved graph t1``: the same with one intra-op thread;
- ``int8 dynamic`` / ``int8 dynamic t1``: the constant-folded float graph quantised with ONNX Runtime's
  ``quantize_dynamic`` (the MatMuls with weights, per tensor; ``MatMulInteger``: activations
  quantised per call, uint8 × int8, VNNI):
  *not* the same vectors; its largest element-wise difference and lowest cosine to today's are
  printed (needs the ``onnx`` package).

``--variants`` picks some (default: all; ``today`` is always included).

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
import os
import random
import shutil
import sys
import tempfile
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


def _basic(ort: Any, opts: Any) -> None:
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC


def _arena(ort: Any, opts: Any) -> None:
    opts.enable_cpu_mem_arena = True


def _session_seconds(path: Path, threads: int, level: str) -> tuple[Any, float]:
    """A session of ``path`` with today's options but optimisation ``level``, and its creation time."""
    import onnxruntime as ort

    backend = OnnxBackend(load_manifest(lat.MODEL), path.parent.parent, threads=threads)
    opts = backend._session_options(ort)
    opts.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    t0 = time.perf_counter()
    session = ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])
    return session, time.perf_counter() - t0


def _saved_graph(model_dir: Path, work: Path) -> Path:
    """The graph ONNX Runtime optimised at ``ORT_ENABLE_ALL``, written once to ``work``."""
    import onnxruntime as ort

    path = work / "optimised" / "onnx" / "model.onnx"
    path.parent.mkdir(parents=True, exist_ok=True)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.optimized_model_filepath = str(path)
    opts.log_severity_level = 3
    ort.InferenceSession(str(model_dir / "onnx" / "model.onnx"), opts, providers=["CPUExecutionProvider"])
    return path


def _int8_dynamic(model_dir: Path, work: Path) -> Path:
    """The model's float graph (constant-folded by ONNX Runtime) quantised dynamically: MatMulInteger."""
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    folded = work / "basic.onnx"
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    opts.optimized_model_filepath = str(folded)
    opts.log_severity_level = 3
    ort.InferenceSession(str(model_dir / "onnx" / "model.onnx"), opts, providers=["CPUExecutionProvider"])
    path = work / "int8" / "onnx" / "model.onnx"
    path.parent.mkdir(parents=True, exist_ok=True)
    quantize_dynamic(str(folded), str(path), weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"])
    return path


def _with_session(model_dir: Path, threads: int, path: Path) -> OnnxBackend:
    """An OnnxBackend of the MiniLM files whose session is replaced by one of the graph at ``path``."""
    backend = _variant(model_dir, threads, None)
    backend._session, _ = _session_seconds(path, threads, "ORT_ENABLE_ALL")
    return backend


def _stages(backend: OnnxBackend, questions: list[str]) -> dict[str, Any]:
    """Thread CPU of the parts of one ``embed([q], "query")`` on the calling thread."""
    prompt = backend.manifest.query_prompt
    tokenizer, session, output = backend._tokenizer, backend._session, backend.manifest.output_name
    samples: dict[str, list[float]] = {
        "tokenizer": [],
        "input arrays": [],
        "session.run": [],
        "pool + norm": [],
        "tokenizer, encode() of one text": [],
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
        single = tokenizer.encode(prompt + q)
        c5 = time.thread_time()
        if single.ids != encodings[0].ids:
            raise SystemExit(f"encode() and encode_batch() disagree on {q!r}")
        for name, value in zip(samples, (c1 - c0, c2 - c1, c3 - c2, c4 - c3, c5 - c4), strict=True):
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
    parser.add_argument("--variants", nargs="+", help="the variants to compare with today's (default: all)")
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
    builders: dict[str, Callable[[], OnnxBackend]] = {
        "spinning on": lambda: _variant(model_dir, threads, _spinning),
        "graph extended": lambda: _variant(model_dir, threads, _extended),
        "graph basic": lambda: _variant(model_dir, threads, _basic),
        "arena on": lambda: _variant(model_dir, threads, _arena),
    }
    wanted = set(
        args.variants
        or ["threads 1", *builders, "saved graph", "saved graph t1", "int8 dynamic", "int8 dynamic t1"]
    )
    if "threads 1" not in wanted:
        del variants["threads 1"]
    for name, build in builders.items():
        if name in wanted:
            variants[name] = build()
    work = Path(tempfile.mkdtemp(prefix="query-embedding-ab-"))
    start_up: dict[str, float] = {}
    if wanted & {"saved graph", "saved graph t1"}:
        saved = _saved_graph(model_dir, work)
        # Session creation, each twice (the second with the file in the page cache), today's vs the saved graph's.
        for _ in range(2):
            start_up["today"] = _session_seconds(
                model_dir / "onnx" / "model.onnx", threads, "ORT_ENABLE_ALL"
            )[1]
            start_up["saved graph"] = _session_seconds(saved, threads, "ORT_DISABLE_ALL")[1]
        for name, count in (("saved graph", threads), ("saved graph t1", 1)):
            if name in wanted:
                variants[name] = _variant(model_dir, count, None)
                variants[name]._session = _session_seconds(saved, count, "ORT_DISABLE_ALL")[0]
    if wanted & {"int8 dynamic", "int8 dynamic t1"}:
        quantised = _int8_dynamic(model_dir, work)
        for name, count in (("int8 dynamic", threads), ("int8 dynamic t1", 1)):
            if name in wanted:
                variants[name] = _with_session(model_dir, count, quantised)

    reference = np.stack([today.embed([q], "query")[0] for q in questions])
    max_diff: dict[str, float] = {}
    min_cosine: dict[str, float] = {}
    for name, b in variants.items():
        got = np.stack([b.embed([q], "query")[0] for q in questions])
        max_diff[name] = float(np.abs(got - reference).max())
        min_cosine[name] = float((got * reference).sum(axis=1).min())
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
            "min_cosine_to_today": min_cosine[name],
        }
    stages = _stages(variants.get("threads 1", today), questions * args.rounds)
    print(f"today's session: {threads} intra-op threads; {len(questions)} queries x {args.rounds} rounds\n")
    print_table(
        [
            "variant",
            "wall p50",
            "wall p95",
            "CPU p50",
            "CPU mean",
            "wall − today p50",
            "max |Δ| to today",
            "min cos to today",
        ],
        [
            [
                name,
                r["wall"]["p50_ms"],
                r["wall"]["p95_ms"],
                r["process_cpu"]["p50_ms"],
                r["process_cpu"]["mean_ms"],
                r["wall_minus_today"]["p50_ms"],
                f"{r['max_abs_diff_to_today']:.1e}",
                f"{r['min_cosine_to_today']:.6f}",
            ]
            for name, r in out.items()
        ],
    )
    if start_up:
        print(
            f"\nsession creation: today's graph {start_up['today'] * 1e3:.0f} ms, the saved optimised graph "
            f"{start_up['saved graph'] * 1e3:.0f} ms"
        )
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
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
            "session_creation_s": start_up,
            "load_average": os.getloadavg(),
        },
    )
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
