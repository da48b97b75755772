"""What a time cue costs per recall: interleaved A/B on one LoCoMo conversation (issue 22).

    python benchmarks/time_cue_cost.py ../shared/data/locomo --models-dir DIR [--conversation 41] [--rounds 3]

Stores the conversation once (every turn one memory, timestamp = its session date), then asks each
question under every arm in turn — no cue (the in-query reader on, as shipped), the reader off, and
the question's session period as a ``sure`` / ``likely`` / ``vague`` time_cue — in an order that
rotates, after one untimed call that caches the question's embedding, so machine load and the
embedding fall on all arms alike. Prints p50 / p95 wall time per arm (ms) and the ratio to "none".
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import data_models_parser, model_memory, print_table  # noqa: E402
from _locomo_data import Conversation, conversation_files  # noqa: E402
from locomo import session_cue  # noqa: E402

from cpersona.retrieval.pipeline import RecallPipeline  # noqa: E402

ARMS = ("none", "reader-off", "sure", "likely", "vague")


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def main() -> int:
    parser = data_models_parser(__doc__)
    parser.add_argument("--conversation", default="41")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    data = Conversation.load(conversation_files(args.data_dir, [args.conversation])[0])
    samples: dict[str, list[float]] = {arm: [] for arm in ARMS}
    with model_memory(args.models_dir, args.model, recent_recall_penalty=1.0) as mem:
        settings = mem.settings
        for dia_id, content, stamp in data.turns():
            mem.store("locomo", content, msg_id=dia_id, timestamp=stamp)
        dates = data.session_dates()
        pipelines = {
            True: RecallPipeline(settings),
            False: RecallPipeline(settings.with_overrides(query_dates=False)),
        }
        questions = [q for q in data.questions() if q.get("evidence")]
        for round_no in range(args.rounds):
            for index, qa in enumerate(questions):
                # Untimed first call: the query's embedding is cached after it, for every arm alike.
                mem.recall("locomo", qa["question"], limit=10, record=False)
                shift = (index + round_no) % len(ARMS)  # rotate the order: no arm always goes first
                for arm in ARMS[shift:] + ARMS[:shift]:
                    mem.recaller.pipeline = pipelines[arm != "reader-off"]
                    cue = session_cue(qa, dates, arm) if arm in ("sure", "likely", "vague") else None
                    start = time.perf_counter()
                    mem.recall("locomo", qa["question"], limit=10, record=False, time_cue=cue)
                    samples[arm].append(time.perf_counter() - start)
    base = statistics.median(samples["none"])
    print_table(
        ["arm", "p50 ms", "p95 ms", "p50 / none", "n"],
        [
            [
                arm,
                round(pct(s, 0.5), 2),
                round(pct(s, 0.95), 2),
                round(statistics.median(s) / base, 3),
                len(s),
            ]
            for arm, s in samples.items()
        ],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
