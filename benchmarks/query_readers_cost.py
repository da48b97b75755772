"""What the question readers cost on the longest queries: every trigger word, alone and in ordered pairs,
repeated to the query cap, recalled keyword-only (so the readers' cost is not hidden by an embedding).

    python benchmarks/query_readers_cost.py [--pairs 30] [--show 15] [--json out.json]

The readers decide from the query's words what a question asks (session diversity's counts, orders,
comparisons and spans of time; the role and speaker rules; replies; recency; time cues). A reader written
as one regex with ``.*`` or ``[^?]*`` between its parts backtracks on a query that repeats its openers:
"which first" repeated to 8,000 characters once took 8 s per recall. Each query is recalled once after
a warm-up against a three-row memory; printed are the slowest and the median, in milliseconds.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import keyword_only_memory, machine, print_table, write_json  # noqa: E402

from cpersona.core.limits import MAX_QUERY_CHARS  # noqa: E402

# The readers' trigger words (diversity, query_form, role, replies, recency, time cues, compares), the
# most backtracking-prone first: ``--pairs N`` pairs the first N.
WORDS = [
    "which", "what", "who", "where", "when", "how long", "how much", "how many", "how often", "first",
    "last", "before", "after", "between", "since", "or", "than", "more", "most", "the most", "longest",
    "did you", "you said", "your answer", "I", "my", "now", "these days", "currently", "yesterday",
    "last week", "in May 2023", "2023年5月", "先週", "Caroline:", "[8 May 2023]", "user:", "in total",
    "one of the", "どちらが", "高", "?", "ago", "days", "time", "was", "did", "when did", "what time", "on",
    "the", "a", "and", "1", "May", "2023", "-", "'s", "Mr.", "X",
]  # fmt: skip
ROWS = [
    "Caroline: I went to the LGBTQ support group yesterday.",
    "user: I live in Kyoto now.",
    "assistant: Kyoto is lovely in May.",
]


def repeated(words: tuple[str, ...]) -> str:
    """``words`` repeated to just under the query cap."""
    unit = " ".join(words) + " "
    return (unit * (MAX_QUERY_CHARS // len(unit) + 1))[: MAX_QUERY_CHARS - 10]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--pairs", type=int, default=30, help="pair the first N trigger words (0: words alone)"
    )
    parser.add_argument("--show", type=int, default=15, help="how many of the slowest to print")
    parser.add_argument("--json", help="write every query's time here")
    args = parser.parse_args()
    combos = [(w,) for w in WORDS] + list(itertools.permutations(WORDS[: args.pairs], 2))
    timings: list[tuple[float, tuple[str, ...]]] = []
    with keyword_only_memory(auto_calibrate=False) as mem:
        for text in ROWS:
            mem.store("a", text)
        mem.recall("a", "warm-up", limit=10, record=False)
        for combo in combos:
            query = repeated(combo)
            started = time.perf_counter()
            mem.recall("a", query, limit=10, record=False)
            timings.append((time.perf_counter() - started, combo))
    timings.sort(reverse=True)
    print(f"{len(timings)} queries of {MAX_QUERY_CHARS - 10} characters, keyword-only")
    print_table(
        ["repeated", "ms"], [[" + ".join(combo), round(s * 1000, 1)] for s, combo in timings[: args.show]]
    )
    print(f"median {statistics.median(s for s, _ in timings) * 1000:.1f} ms")
    write_json(
        args.json,
        {"machine": machine(), "ms": {" + ".join(c): round(s * 1000, 2) for s, c in timings}},
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
