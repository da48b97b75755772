"""What the conversation-turn rules (retrieval/replies.py) cost inside a real recall.

    python benchmarks/research/replies_cost.py ../shared/data/locomo --models-dir DIR \
        [--conversations 26] [--json out.json]

Stores each LoCoMo conversation's turns (MiniLM, the production default path), then asks every
question once while timing ``replies.prefer_replies`` where the pipeline calls it, and the whole
recall around it. Prints p50 / p95 of both and the rows the rules read (the rows the gate kept).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import data_models_parser, model_memory, percentile, print_table, write_json  # noqa: E402
from _locomo_data import Conversation, conversation_files  # noqa: E402

from cpersona.retrieval import pipeline  # noqa: E402
from cpersona.retrieval.candidates import ScoredRow  # noqa: E402


def main() -> int:
    parser = data_models_parser(__doc__)
    parser.add_argument("--conversations", nargs="*")
    parser.add_argument("--json")
    args = parser.parse_args()

    rule_s: list[float] = []
    rows_read: list[int] = []
    original = pipeline.replies.prefer_replies

    def timed(rows: list[ScoredRow], query: str, weight: float) -> list[ScoredRow]:
        start = time.perf_counter()
        out = original(rows, query, weight)
        rule_s.append(time.perf_counter() - start)
        rows_read.append(len(rows))
        return out

    pipeline.replies.prefer_replies = timed  # type: ignore[assignment]
    recall_s: list[float] = []
    for path in conversation_files(args.data_dir, args.conversations):
        data = Conversation.load(path)
        with model_memory(args.models_dir, args.model) as mem:
            mem.embeddings.settle_query_kernel()
            for dia_id, content, stamp in data.turns():
                mem.store("locomo", content, msg_id=dia_id, timestamp=stamp)
            for qa in data.questions():
                start = time.perf_counter()
                mem.recall("locomo", qa["question"], limit=10, record=False)
                recall_s.append(time.perf_counter() - start)
    pipeline.replies.prefer_replies = original  # type: ignore[assignment]

    table = {
        "prefer_replies_us": {"p50": percentile(rule_s, 50) * 1e6, "p95": percentile(rule_s, 95) * 1e6},
        "recall_ms": {"p50": percentile(recall_s, 50) * 1e3, "p95": percentile(recall_s, 95) * 1e3},
        "rows_read": {"p50": percentile(rows_read, 50), "p95": percentile(rows_read, 95)},
    }
    print_table(
        ["measure", "p50", "p95", "n"],
        [
            [
                "the rules (µs)",
                table["prefer_replies_us"]["p50"],
                table["prefer_replies_us"]["p95"],
                len(rule_s),
            ],
            ["whole recall (ms)", table["recall_ms"]["p50"], table["recall_ms"]["p95"], len(recall_s)],
            ["rows read", table["rows_read"]["p50"], table["rows_read"]["p95"], len(rows_read)],
        ],
    )
    write_json(args.json, {"benchmark": "replies_cost", **table})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
