"""Ours against the original on Japanese questions, split by how much of its paragraph a question repeats.

    python benchmarks/research/japanese_overlap.py \
        --set DATA OURS.json ORIGINAL.json [--set ...] [--arm none/default/uncalibrated] [--json out.json]

DATA as for benchmarks/japanese.py; OURS.json written by ``japanese.py DATA --split all --json``; ORIGINAL.json
by ``research/original_japanese.py DATA --split all --json`` (each question's ranked paragraph ids). Every
question of every set is pooled and given its overlap: the share of its character trigrams that occur in
its gold paragraph. Prints hit@1 / MRR of both servers per quarter of overlap, then for the questions at
or above each overlap threshold.

Why: the held-out Japanese set (JGLUE's JSQuAD) is easier for the original than JaQuAD is (its hit@1
there is .893; on JaQuAD .78 to .81), and its questions repeat more of their paragraph. Reading both
servers on the JaQuAD questions where the original scores as it does on JSQuAD estimates our lead there
without touching JSQuAD
(docs/research/recall-round-three/japanese.md#the-originals-japanese-figures-corrected).
Nothing is chosen on it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import print_table, write_json  # noqa: E402
from _japanese_data import load  # noqa: E402
from japanese import score  # noqa: E402

THRESHOLDS = (0.0, 0.3, 0.35, 0.4, 0.45, 0.5)


class Question(NamedTuple):
    overlap: float
    ours_hit: float
    ours_rr: float
    original_hit: float
    original_rr: float


def trigrams(text: str) -> set[str]:
    return {text[i : i + 3] for i in range(len(text) - 2)}


def overlap(question: str, paragraph: str) -> float:
    """The share of the question's character trigrams that its paragraph holds."""
    asked = trigrams(question)
    return len(asked & trigrams(paragraph)) / len(asked) if asked else 0.0


def questions_of(data: Path, ours: Path, original: Path, arm: str) -> list[Question]:
    """Each question of ``data`` with both servers' hit@1 and reciprocal rank."""
    corpus = load(data)
    text = {p["id"]: p["text"] for p in corpus["paragraphs"]}
    ours_rows = {row["id"]: row for row in json.loads(ours.read_text())["rows"][arm]}
    original_ranked: dict[str, list[str]] = json.loads(original.read_text())
    found = []
    for q in corpus["questions"]:
        if q["id"] not in ours_rows or q["id"] not in original_ranked:
            raise SystemExit(f"{q['id']} of {data} is missing from a result file: run both with --split all")
        ours_scores, original_scores = ours_rows[q["id"]], score(original_ranked[q["id"]], q["gold"])
        found.append(
            Question(
                overlap(q["question"], text[q["gold"]]),
                ours_scores["hit@1"],
                ours_scores["mrr"],
                original_scores["hit@1"],
                original_scores["mrr"],
            )
        )
    return found


def row(label: str, part: Sequence[Question]) -> list[object]:
    n = len(part)
    return [
        label,
        n,
        sum(q.ours_hit for q in part) / n,
        sum(q.ours_rr for q in part) / n,
        sum(q.original_hit for q in part) / n,
        sum(q.original_rr for q in part) / n,
    ]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--set", nargs=3, action="append", required=True, metavar=("DATA", "OURS", "ORIGINAL")
    )
    parser.add_argument("--arm", default="none/default/uncalibrated", help="the row key of OURS.json")
    parser.add_argument("--json", help="write the tables here")
    args = parser.parse_args()
    pooled = sorted(
        (
            q
            for data, ours, original in args.set
            for q in questions_of(Path(data), Path(ours), Path(original), args.arm)
        ),
        key=lambda q: q.overlap,
    )
    n = len(pooled)
    headers = ["questions", "n", "ours hit@1", "ours MRR", "original hit@1", "original MRR"]
    quarters = []
    for i in range(4):
        part = pooled[i * n // 4 : (i + 1) * n // 4]
        quarters.append(row(f"quarter {i + 1}: overlap {part[0].overlap:.2f}-{part[-1].overlap:.2f}", part))
    print_table(headers, quarters)
    print()
    at_least = [row(f"overlap >= {t:.2f}", [q for q in pooled if q.overlap >= t]) for t in THRESHOLDS]
    print_table(headers, at_least)
    write_json(args.json, {"headers": headers, "quarters": quarters, "at_least": at_least})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
