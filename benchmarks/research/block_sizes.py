"""Block size and overlap for long records, on the vector channel alone (docs/retrieval.md#long-records).

    python benchmarks/research/block_sizes.py --data ../shared/data/locomo --models-dir DIR [--rows 500]

The long history of ``benchmarks/long_records.py`` (LoCoMo 26's turns deep inside long answers); each
row is scored by its best vector (its own, or a block's under each setting), and recall@10 / NDCG@10 of
the evidence rows are printed per setting: the vector channel's share of what blocks change, without
fusion or the gate (those are measured by long_records.py with the chosen setting). Settings are
(block share of the window, overlap share of a block); the first is the shipped one.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import print_table  # noqa: E402
from _locomo_data import Conversation  # noqa: E402
from _retrieval_metrics import score_question  # noqa: E402
from long_records import long_rows  # noqa: E402

from cpersona.embed.registry import load_manifest  # noqa: E402
from cpersona.embed.runtime import blocks  # noqa: E402
from cpersona.embed.runtime.onnx_backend import OnnxBackend  # noqa: E402

SETTINGS = [(0.75, 0.25), (0.5, 0.25), (1.0, 0.25), (0.75, 0.0), (0.75, 0.5)]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--models-dir", type=Path, required=True)
    parser.add_argument("--rows", type=int, default=500)
    args = parser.parse_args()
    load = lambda name: Conversation.load(args.data / f"{name}.json")  # noqa: E731
    asked = load("26")
    rows = long_rows(asked, load("30"), load("41"), args.rows, 1300)
    backend = OnnxBackend(load_manifest("all-minilm-l6-v2"), args.models_dir / "all-minilm-l6-v2")
    backend.load()
    questions = asked.real()
    queries = np.stack([backend.embed_query(q["question"]) for q in questions])
    own = backend.embed_documents([content for _, content, _ in rows])
    cache: dict[str, np.ndarray] = {}
    table = []
    for share, overlap in [(None, None), *SETTINGS]:
        best = queries @ own.T  # (questions, rows): each row's own vector
        count = 0
        if share is not None:
            blocks._BLOCK_SHARE, blocks._OVERLAP_SHARE = share, overlap
            for r, (_, content, _) in enumerate(rows):
                texts = [content[s:e] for _, s, e in blocks.block_spans(content, 256)]
                todo = [t for t in texts if t not in cache]
                if todo:
                    cache.update(zip(todo, backend.embed_documents(todo), strict=True))
                if texts:
                    count += len(texts)
                    best[:, r] = np.maximum(
                        best[:, r], (queries @ np.stack([cache[t] for t in texts]).T).max(axis=1)
                    )
        scores = []
        for qi, q in enumerate(questions):
            order = np.argsort(-best[qi])[:10]
            scores.append(score_question([rows[i][0] for i in order], q["evidence"]))
        name = (
            "own vectors only" if share is None else f"block {share:.2f} of the window, overlap {overlap:.2f}"
        )
        mean = {k: sum(s[k] for s in scores) / len(scores) for k in ("recall@10", "ndcg@10")}
        table.append([name, count, round(mean["recall@10"], 3), round(mean["ndcg@10"], 3)])
    print_table(["vector channel alone", "blocks", "recall@10", "NDCG@10"], table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
