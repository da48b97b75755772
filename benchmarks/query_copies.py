"""The query kernel's graphs on this CPU: how close each int8 copy is to float32, and how fast it embeds.

    python benchmarks/query_copies.py ../shared/data/locomo --models-dir DIR [--questions 400]
        [--timed 200] [--json out.json]

MiniLM (int8 weights), the graphs the check in ``query_kernel.py`` chooses among, built as
``OnnxBackend`` builds them: float32 (the model's own session, ``CPERSONA_EMBED_THREADS``), the
per-block copy (``int8_matmul.py``) and the two outlier copies (``int8_outliers.py``: u8s8, and u8u8
with the weights shifted to uint8), each on one thread. Reported per graph: the lowest cosine to the
float32 vector over ``--questions`` LoCoMo questions (shuffled, seed 1) and over the check's probe
texts (the check takes a copy at 0.995 or more), and the wall time of one query embedding, p50 / p95
over ``--timed`` questions, the graphs in a shuffled order per question so drift hits each alike.
Which copy passes depends on the CPU: u8s8's 16-bit sums saturate where it has no VNNI
(docs/models.md#the-query-kernel). No assertion on timings.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import print_table, summary_ms, write_json  # noqa: E402
from _locomo_data import Conversation, conversation_files  # noqa: E402

from cpersona.embed.registry import load_manifest  # noqa: E402
from cpersona.embed.runtime import int8_copies, int8_matmul, int8_outliers, query_kernel  # noqa: E402
from cpersona.embed.runtime.onnx_backend import OnnxBackend  # noqa: E402

MODEL = "all-minilm-l6-v2"


def graphs(backend: OnnxBackend) -> dict[str, Any]:
    """Name → ONNX Runtime session: float32 and the three int8 copies the check may take, each built as
    the check builds it (``int8_copies``)."""
    maker = backend.int8_copy_maker()
    per_block = int8_matmul.rewrite(maker.path)
    if per_block is None:
        raise SystemExit(f"{MODEL} stores no int8 MatMul weights here")
    peaks = int8_copies.outlier_peaks(maker, per_block)
    sessions = {"float32": backend._session, "per-block": maker.session_of(per_block.model)}
    for kind in int8_outliers.KINDS:
        sessions[kind] = int8_copies.outlier_copy(maker, peaks, kind)
        if sessions[kind] is None:
            raise SystemExit(f"the {kind} copy could not be built here")
    return sessions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data_dir", type=Path, help="directory of LoCoMo conversation JSON files")
    parser.add_argument("--models-dir", type=Path, required=True)
    parser.add_argument("--questions", type=int, default=400, help="questions for the lowest cosine")
    parser.add_argument("--timed", type=int, default=200, help="questions timed per graph")
    parser.add_argument("--json")
    args = parser.parse_args()

    questions = [
        q["question"]
        for p in conversation_files(args.data_dir, None)
        for q in Conversation.load(p).questions()
    ]
    random.Random(1).shuffle(questions)
    questions = questions[: args.questions]
    backend = OnnxBackend(load_manifest(MODEL), args.models_dir / MODEL, query_kernel="exact")
    backend.load()
    sessions = graphs(backend)
    prompt = backend._prompt("query")

    def vectors(session: Any, texts: list[str] | tuple[str, ...]) -> np.ndarray:
        return np.array([backend._run([t], prompt, session)[0] for t in texts])

    reference = vectors(sessions["float32"], questions)
    probe_reference = vectors(sessions["float32"], query_kernel.PROBE_TEXTS)
    times: dict[str, list[float]] = {name: [] for name in sessions}
    order = list(sessions)
    for text in questions[: args.timed]:
        random.shuffle(order)
        for name in order:
            start = time.perf_counter()
            backend._run([text], prompt, sessions[name])
            times[name].append(time.perf_counter() - start)
    report: dict[str, Any] = {}
    rows = []
    for name, session in sessions.items():
        lowest = float((vectors(session, questions) * reference).sum(axis=1).min())
        probes = float((vectors(session, query_kernel.PROBE_TEXTS) * probe_reference).sum(axis=1).min())
        timing = summary_ms(times[name])
        passes = name == "float32" or probes >= query_kernel.MIN_COSINE
        report[name] = {
            "lowest_cosine": lowest,
            "probe_lowest_cosine": probes,
            "passes_check": passes,
            **timing,
        }
        rows.append(
            [
                name,
                f"{lowest:.4f}",
                f"{probes:.4f}",
                "yes" if passes else "no",
                timing["p50_ms"],
                timing["p95_ms"],
            ]
        )
    print(f"{len(questions)} questions, {args.timed} timed per graph")
    print_table(["graph", "lowest cosine", "probes", "passes", "p50 ms", "p95 ms"], rows)
    write_json(args.json, {"graphs": report, "questions": len(questions), "timed": args.timed})
    backend.close()


if __name__ == "__main__":
    main()
