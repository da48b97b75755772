"""The best passage's cost (retrieval/passage_rescore.py) at its bounds, without a database.

    python benchmarks/passage_cost.py [--repeats 20] [--json out.json]

One channel's list of 30 rows, each ``chars`` characters of words drawn from a small vocabulary the
query shares (the worst case: every query word matches everywhere), scored with 8 or 32 query words
(32 is ``MAX_WORDS``). Prints p50 / p95 ms of reading the occurrences (``where``, once per recall: the
two channels share them) and of one channel's ``rescore``. Rows past ``MAX_TEXT_CHARS`` cost what a
row at the cap does. A real history costs far less: about 0.7 ms per recall in all
(docs/retrieval.md#the-best-passage-long-records).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, print_table, summary_ms, write_json  # noqa: E402

from cpersona.retrieval import passage_rescore  # noqa: E402

VOCABULARY = [
    *(["data", "model", "table", "query", "index", "value", "result", "system", "memory", "record"]),
    *(f"other{i}" for i in range(200)),
]


def rows_of(chars: int, count: int, seed: int = 32) -> dict[int, str]:
    rng = random.Random(seed)
    return {i: " ".join(rng.choice(VOCABULARY) for _ in range(chars // 7)) for i in range(count)}


def timed(chars: int, words: int, repeats: int) -> dict[str, dict[str, float]]:
    texts = rows_of(chars, passage_rescore.LIST_ROWS)
    query = passage_rescore.query_words(" ".join(VOCABULARY[:words]))
    hits = [(rid, 1.0) for rid in texts]
    reading: list[float] = []
    scoring: list[float] = []
    for _ in range(repeats):
        start = time.perf_counter()
        found = passage_rescore.where(texts, query)
        reading.append(time.perf_counter() - start)
        start = time.perf_counter()
        passage_rescore.rescore(hits, found, query)
        scoring.append(time.perf_counter() - start)
    return {"where": summary_ms(reading), "rescore": summary_ms(scoring)}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    results = []
    for chars in (2_000, 16_000, 100_000):
        for words in (8, 32):
            results.append({"chars": chars, "words": words, **timed(chars, words, args.repeats)})
    print_table(
        ["row chars", "query words", "where p50 / p95 ms", "rescore p50 / p95 ms"],
        [
            [
                r["chars"],
                r["words"],
                f"{r['where']['p50_ms']} / {r['where']['p95_ms']}",
                f"{r['rescore']['p50_ms']} / {r['rescore']['p95_ms']}",
            ]
            for r in results
        ],
    )
    write_json(args.json, {"machine": machine(), "rows": passage_rescore.LIST_ROWS, "results": results})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
