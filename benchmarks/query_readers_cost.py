"""What the question readers cost on the longest queries: every trigger word, alone and in ordered pairs,
repeated to the query cap, recalled keyword-only (so the readers' cost is not hidden by an embedding).

    python benchmarks/query_readers_cost.py [--pairs 30] [--show 15] [--json out.json]
    python benchmarks/query_readers_cost.py --rows [--pairs 24] ...   # the same for stored rows

The readers decide from the query's words what a question asks (session diversity's counts, orders,
comparisons and spans of time; the role and speaker rules; replies; recency; time cues). A reader written
as one regex with ``.*`` or ``[^?]*`` between its parts backtracks on a query that repeats its openers:
"which first" repeated to 8,000 characters once took 8 s per recall. Each query is recalled once after
a warm-up against a three-row memory; printed are the slowest and the median, in milliseconds.

``--rows`` does the same on the store side: each repetition (of the trigger words and of the secret
guard's patterns; pairs of the first N/2 of each) is stored as one row at the content cap, into an agent
of its own, then recalled with its first and last word; printed is the slower of store and recall.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import keyword_only_memory, machine, print_table, write_json  # noqa: E402

from cpersona.core.limits import MAX_QUERY_CHARS  # noqa: E402
from cpersona.errors import Rejected  # noqa: E402

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
#: Words the secret guard and the row readers look for in stored text, for ``--rows``.
ROW_WORDS = [
    "password=", "token:", "sk-", "AKIA", "-----BEGIN", "eyJ", "ghp_", "api_key", "Bearer", "://", "@",
    "user:pass@", "=", ":", "\n", "\t", ".", "!", "?", "。", "？", "Q:", "A:", "http", "www.", "/", "\\",
    "_", "x" * 40, "0x", "aaaa", "ab",
]  # fmt: skip
ROWS = [
    "Caroline: I went to the LGBTQ support group yesterday.",
    "user: I live in Kyoto now.",
    "assistant: Kyoto is lovely in May.",
]


def repeated(words: tuple[str, ...], cap: int = MAX_QUERY_CHARS) -> str:
    """``words`` repeated to just under ``cap`` characters."""
    unit = " ".join(words) + " "
    return (unit * (cap // len(unit) + 1))[: cap - 10]


def time_queries(combos: list[tuple[str, ...]]) -> list[tuple[float, tuple[str, ...]]]:
    """Each repetition recalled once, keyword-only, against a three-row memory: (seconds, words)."""
    timings = []
    with keyword_only_memory(auto_calibrate=False) as mem:
        for text in ROWS:
            mem.store("a", text)
        mem.recall("a", "warm-up", limit=10, record=False)
        for combo in combos:
            query = repeated(combo)
            started = time.perf_counter()
            mem.recall("a", query, limit=10, record=False)
            timings.append((time.perf_counter() - started, combo))
    return timings


def time_rows(combos: list[tuple[str, ...]]) -> list[tuple[float, tuple[str, ...]]]:
    """Each repetition stored as one row at the content cap (an agent each), then recalled with its
    first and last word: (the slower of the two, in seconds; words). A refused row (empty once
    cleaned) still counts its store call."""
    timings = []
    with keyword_only_memory(auto_calibrate=False) as mem:
        cap = mem.settings.max_content_length
        for n, combo in enumerate(combos):
            agent = f"rows{n}"
            started = time.perf_counter()
            with contextlib.suppress(Rejected):  # refused (nothing left once cleaned): its time still counts
                mem.store(agent, repeated(combo, cap))
            stored = time.perf_counter() - started
            started = time.perf_counter()
            mem.recall(agent, f"{combo[0]} {combo[-1]}", limit=10, record=False)
            timings.append((max(stored, time.perf_counter() - started), combo))
    return timings


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--pairs", type=int, default=30, help="pair the first N trigger words (0: words alone)"
    )
    parser.add_argument("--show", type=int, default=15, help="how many of the slowest to print")
    parser.add_argument("--json", help="write every query's time here")
    parser.add_argument("--rows", action="store_true", help="stored rows at the content cap, not queries")
    args = parser.parse_args()
    if args.rows:
        words = ROW_WORDS[: args.pairs // 2] + WORDS[: args.pairs // 2]
        combos = [(w,) for w in ROW_WORDS + WORDS] + list(itertools.permutations(words, 2))
        timings = time_rows(combos)
    else:
        combos = [(w,) for w in WORDS] + list(itertools.permutations(WORDS[: args.pairs], 2))
        timings = time_queries(combos)
    timings.sort(reverse=True)
    print(f"{len(timings)} {'rows' if args.rows else 'queries'} at the cap, keyword-only")
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
