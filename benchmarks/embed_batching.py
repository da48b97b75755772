"""How texts are grouped into inference batches (embed/runtime/batching.py): its cost model, and what
it saves when a memory is stored.

    python benchmarks/embed_batching.py --data ../shared/data/locomo --models-dir DIR [--rows 60] [--json out.json]

1. **The cost model**: one ``embed_documents`` call of ``rows`` texts of exactly ``width`` tokens
   each (one word repeated), p50 over ``--repeats`` visits in shuffled order, for a grid of rows × widths; the constants of
   ``cost = k × rows × width × (1 + width / quadratic_at) + overhead`` fitted by least squares (the
   ``quadratic_at`` of the best fit over a range), printed beside the ones the code uses.
2. **Storing**: the pieces a store embeds in one call (a memory's text, its lead, its blocks:
   ``services/long_records.py``) for ``--rows`` long memories (LoCoMo turns inside ~2,000-character
   answers, as ``long_records.py`` builds them) and the same turns cut to 160 characters; each
   memory's pieces embedded with the batches cut as before (``fixed_batches``: sorted, then every 16)
   and as now (``plan_batches``), the two in turn per memory. Printed: p50 / p95 per memory, the
   ratio of p50s, and how far the vectors moved (the lowest cosine between the two plans' vectors of a
   piece: padding is masked, so only float rounding differs).
3. **A back-fill call**: the first 256 turns of LoCoMo 26 (short texts of mixed lengths, each with its
   lead where it has one) embedded in one call, as the back-fill queue and an import embed them, under
   both plans in turn, ``--repeats`` times.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, minilm_models_dir, print_table, summary_ms, write_json  # noqa: E402
from _locomo_data import Conversation  # noqa: E402
from long_records import long_rows, turns  # noqa: E402

from cpersona.embed.registry import load_manifest  # noqa: E402
from cpersona.embed.runtime import batching  # noqa: E402
from cpersona.embed.runtime.onnx_backend import OnnxBackend  # noqa: E402
from cpersona.services.long_records import embedding_inputs  # noqa: E402

MODEL = "all-minilm-l6-v2"
WIDTHS = (16, 32, 64, 128, 192, 256)
ROWS = (1, 2, 4, 8, 16)


def text_of_width(backend: OnnxBackend, width: int) -> str:
    """A text the tokenizer reads as exactly ``width`` tokens (its two special tokens included)."""
    text = " ".join(["memory"] * (width - 2))
    if len(backend.token_ids([text])[0]) != width:
        raise SystemExit(f"the tokenizer does not read {width - 2} repeated words as {width} tokens")
    return text


def grid_seconds(backend: OnnxBackend, repeats: int) -> list[tuple[int, int, float]]:
    """(rows, width, p50 seconds of one call of ``rows`` texts of ``width`` tokens) for the whole grid;
    each repeat visits every point once in a fresh random order, so the machine's drift spreads evenly."""
    texts = {width: text_of_width(backend, width) for width in WIDTHS}
    points = [(rows, width) for width in WIDTHS for rows in ROWS]
    took: dict[tuple[int, int], list[float]] = {point: [] for point in points}
    rng = random.Random(32)
    for _ in range(repeats):
        for rows, width in rng.sample(points, len(points)):
            start = time.perf_counter()
            backend.embed_documents([texts[width]] * rows)  # equal lengths, at most 16: one batch
            took[(rows, width)].append(time.perf_counter() - start)
    return [(rows, width, statistics.median(took[(rows, width)])) for rows, width in points]


def fit(points: list[tuple[int, int, float]]) -> dict[str, float]:
    """k, overhead (seconds) and quadratic_at of the fit by least relative error (a 5 ms call weighs as
    much as a 1 s one, so the small calls, which show the overhead, are not drowned); the overhead also
    in tokens (overhead / k)."""
    best: dict[str, float] = {}
    y = np.array([s for _, _, s in points])
    for quadratic_at in (128.0, 192.0, 256.0, 384.0, 512.0, 768.0, 1024.0, 2048.0, 1e9):
        x = np.array([r * w * (1 + w / quadratic_at) for r, w, _ in points])
        design = np.vstack([x, np.ones_like(x)]).T
        (k, overhead), *_ = np.linalg.lstsq(design / y[:, None], np.ones_like(y), rcond=None)
        error = float(np.sum((design @ np.array([k, overhead]) / y - 1) ** 2))
        if not best or error < best["rel_sq_error"]:
            best = {
                "k": float(k),
                "overhead_s": float(overhead),
                "quadratic_at": quadratic_at,
                "rel_sq_error": error,
            }
    best["overhead_tokens"] = best["overhead_s"] / best["k"]
    return best


def pieces_of(text: str, window: int) -> list[str]:
    """What a store embeds for ``text`` in one call (services/long_records.py)."""
    return embedding_inputs([text], window)[0]


def store_ab(backend: OnnxBackend, calls: list[list[str]]) -> dict[str, Any]:
    """Each call's texts embedded under both plans, in turn; seconds per call and the lowest cosine."""
    plans = {"fixed": batching.fixed_batches, "planned": batching.plan_batches}
    took: dict[str, list[float]] = {name: [] for name in plans}
    lowest = 1.0
    for n, pieces in enumerate(calls):
        vectors = {}
        for name in sorted(plans, reverse=n % 2 == 1):  # alternate which plan goes first
            backend.batch_plan = plans[name]
            start = time.perf_counter()
            vectors[name] = backend.embed_documents(pieces)
            took[name].append(time.perf_counter() - start)
        lowest = min(lowest, float(np.min(np.sum(vectors["fixed"] * vectors["planned"], axis=1))))
    backend.batch_plan = batching.plan_batches
    out: dict[str, Any] = {name: summary_ms(samples) for name, samples in took.items()}
    out["ratio_p50"] = round(out["planned"]["p50_ms"] / out["fixed"]["p50_ms"], 3)
    out["lowest_cosine"] = lowest
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--data", type=Path, required=True, help="the LoCoMo directory (26.json, 30.json, 41.json)"
    )
    parser.add_argument("--models-dir", type=Path, default=None)
    parser.add_argument("--rows", type=int, default=60, help="memories of each kind stored")
    parser.add_argument("--repeats", type=int, default=7, help="calls per point of the cost grid")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        models = args.models_dir or minilm_models_dir(Path(tmp))
        backend = OnnxBackend(load_manifest(MODEL), models / MODEL)
        backend.load()
        backend.batch_plan = batching.fixed_batches
        backend.embed_documents([text_of_width(backend, 64)] * 4)  # warm up
        points = grid_seconds(backend, args.repeats)
        model = fit(points)
        print_table(
            ["rows \\ width (ms)", *WIDTHS],
            [[rows, *(round(s * 1000, 2) for r, _, s in points if r == rows)] for rows in ROWS],
        )
        print(
            f"fit: overhead {model['overhead_tokens']:.0f} tokens ({model['overhead_s'] * 1000:.2f} ms), "
            f"quadratic_at {model['quadratic_at']:.0f}; the code uses {batching.CALL_OVERHEAD_TOKENS:.0f} "
            f"and {batching.QUADRATIC_AT:.0f}\n"
        )

        load = lambda name: Conversation.load(args.data / f"{name}.json")  # noqa: E731
        asked, extra = load("26"), load("30")
        long_texts = [text for _, text, _ in long_rows(asked, extra, load("41"), args.rows, 1300)]
        short_texts = [text[:160] for _, text, _ in turns(asked, extra, args.rows)]
        window = backend.max_tokens
        stores = {
            "store, long (~2,000 characters)": store_ab(backend, [pieces_of(t, window) for t in long_texts]),
            "store, cut to 160 characters": store_ab(backend, [pieces_of(t, window) for t in short_texts]),
        }
        backfill = [p for _, text, _ in asked.turns()[:256] for p in pieces_of(text, window)]
        stores[f"back-fill, {len(backfill)} texts in one call"] = store_ab(backend, [backfill] * args.repeats)
        print_table(
            ["call", "before: p50 / p95 ms", "now: p50 / p95 ms", "now / before", "lowest cosine"],
            [
                [
                    name,
                    f"{r['fixed']['p50_ms']:.1f} / {r['fixed']['p95_ms']:.1f}",
                    f"{r['planned']['p50_ms']:.1f} / {r['planned']['p95_ms']:.1f}",
                    f"{r['ratio_p50']:.2f}x",
                    f"{r['lowest_cosine']:.7f}",
                ]
                for name, r in stores.items()
            ],
        )
        backend.close()
    write_json(args.json, {"machine": machine(), "grid": points, "fit": model, "stores": stores})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
