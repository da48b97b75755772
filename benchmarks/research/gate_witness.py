"""Whether the channels' agreement could be a second witness for the gate (issue 32, 2026-12-07).

    python benchmarks/research/gate_witness.py ../shared/data/locomo --models-dir DIR [--json out.json]

Per conversation: every turn stored through ``Memory`` (as ``benchmarks/locomo.py`` stores them, a fresh
file each), one ``calibrate_threshold`` (what self-calibration does), then every real question
(categories 1-4), negative (the next conversation's questions) and renamed negative (the same, its
speakers renamed to this conversation's) recalled with ``trace=true``. Per query: the gate's margin
(its evidence minus the calibrated threshold) and four witnesses read from the trace's channel lists —
how many of the vector channel's 10 (or 5) best rows a keyword channel also ranks in its 10 (or 5)
best, whether the vector channel's best row is in a keyword list at all, and how far the best cosine
stands above the next nine.

Reported: each feature's AUC, real questions against negatives and against renamed ones; then, for
``margin + λ · witness / sd(witness)``, the share of negatives and renamed negatives answered empty when each
conversation's cut is placed where exactly as many real questions fall below it as fall below the
calibrated threshold today (an oracle cut: it asks whether the witness separates better, not where a
calibration would put the cut).
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import data_models_parser, minilm_models_dir, model_memory, print_table, write_json  # noqa: E402
from _locomo_data import Conversation, paired_conversations  # noqa: E402

from cpersona.memory import Memory  # noqa: E402
from cpersona.retrieval.pipeline import RecallPipeline  # noqa: E402

AGENT = "locomo"
WITNESSES = ("agree10", "agree5", "top1_in_keyword", "vector_gap")
WEIGHTS = (0.0, 0.01, 0.02, 0.03, 0.05, 0.08)
KEYWORD_CHANNELS = ("fts_words", "fts_memories")
QUERY_SETS = ("real", "negative", "renamed")
Features = dict[str, float]


def features(gate: dict[str, Any], lists: dict[str, list[str]], vector_scores: Sequence[float]) -> Features:
    """The margin and the witnesses of one traced recall."""
    vector = lists.get("vector", [])
    keyword = [lists.get(name, []) for name in KEYWORD_CHANNELS]

    def agree(depth: int) -> float:
        best_keyword = {ref for hits in keyword for ref in hits[:depth]}
        return float(len(set(vector[:depth]) & best_keyword))

    anywhere = {ref for hits in keyword for ref in hits}
    gap = float(vector_scores[0] - np.mean(vector_scores[1:10])) if len(vector_scores) > 2 else 0.0
    return {
        "margin": float(gate["evidence"]) - float(gate["threshold"]),
        "agree10": agree(10),
        "agree5": agree(5),
        "top1_in_keyword": 1.0 if vector and vector[0] in anywhere else 0.0,
        "vector_gap": gap,
    }


def auc(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """P(a positive scores above a negative), ties counted half."""
    pos, neg = np.asarray(positives, dtype=float)[:, None], np.asarray(negatives, dtype=float)[None, :]
    return float((pos > neg).mean() + 0.5 * (pos == neg).mean())


def equal_real_cut(real_scores: Sequence[float], empties: int) -> float:
    """A cut below which exactly ``empties`` of the real questions fall (midway between neighbours)."""
    ordered = np.sort(np.asarray(real_scores, dtype=float))
    if empties <= 0:
        return float(ordered[0]) - 1e-9
    if empties >= len(ordered):
        return float(ordered[-1]) + 1e-9
    return float((ordered[empties - 1] + ordered[empties]) / 2)


def real_empties(sets: dict[str, Any]) -> int:
    """How many of a conversation's real questions fall below the calibrated threshold (answered empty)."""
    return sum(f["margin"] < 0 for f in sets["real"])


def empty_share(scores: Sequence[float], cut: float) -> float:
    return float(np.mean(np.asarray(scores, dtype=float) < cut)) if len(scores) else 0.0


def _traced(memory: Memory, question: str) -> Features:
    answer = memory.recall(AGENT, question, limit=10, record=False, trace=True)
    channels = answer["trace"]["channels"]
    lists = {name: [hit["ref"] for hit in channel["hits"]] for name, channel in channels.items()}
    scores = [hit["score"] for hit in channels.get("vector", {}).get("hits", [])]
    gate = answer["gate"]
    if "evidence" not in gate:
        raise SystemExit(f"the gate did not key on evidence ({gate.get('kind')}): was calibration skipped?")
    return features(gate, lists, scores)


def measure(
    data: Conversation, other: Conversation, models_dir: Path, first_turns: int | None = None
) -> dict[str, Any]:
    """One conversation (its first ``first_turns`` turns, or all; real questions only where every
    evidence turn is stored): every query's features under the product's calibrated gate, and the
    threshold it calibrated."""
    # One explicit calibration after the last store, as locomo.py (model_memory: none in the background).
    with model_memory(models_dir, "all-minilm-l6-v2", recent_recall_penalty=1.0) as memory:
        memory.embeddings.settle_query_kernel()
        turns = data.turns()[:first_turns]  # None: every turn
        stored = {dia_id for dia_id, _, _ in turns}
        for dia_id, content, stamp in turns:
            memory.store(AGENT, content, msg_id=dia_id, timestamp=stamp)
        gate = memory.calibrate_threshold(AGENT)["gate"]
        memory.recaller.pipeline = RecallPipeline(memory.settings, gate=memory.calibration.gate())
        return {
            "rows": len(turns),
            "threshold": gate["threshold"],
            "probe_top_cosine_p90": gate["probe_top_cosine"]["p90"],
            "real": [
                _traced(memory, qa["question"])
                for qa in data.real()
                if {e for e in qa.get("evidence", []) if e} <= stored  # answerable from the turns stored
            ],
            "negative": [_traced(memory, q) for q in other.negatives_for(data)],
            "renamed": [_traced(memory, q) for q in other.renamed_negatives_for(data)],
        }


def oracle_rows(per_conv: dict[str, dict[str, Any]]) -> list[list[Any]]:
    """Per witness and weight: negatives / renamed empty per conversation and pooled, at the cut that
    empties as many real questions as the calibrated threshold does. A witness is taken in units of its
    standard deviation over every query, so one weight means the same for each."""
    every = [f for sets in per_conv.values() for kind in QUERY_SETS for f in sets[kind]]
    rows = []
    for witness in WITNESSES:
        spread = float(np.std([f[witness] for f in every])) or 1.0
        for weight in WEIGHTS:

            def score(f: Features, w: str = witness, lam: float = weight / spread) -> float:
                return f["margin"] + lam * f[w]

            cells: list[Any] = [witness, weight]
            pooled = {"negative": [0.0, 0], "renamed": [0.0, 0]}
            for sets in per_conv.values():
                empties = real_empties(sets)
                cut = equal_real_cut([score(f) for f in sets["real"]], empties)
                shares = []
                for kind in ("negative", "renamed"):
                    scores = [score(f) for f in sets[kind]]
                    share = empty_share(scores, cut)
                    pooled[kind][0] += share * len(scores)
                    pooled[kind][1] += len(scores)
                    shares.append(f"{share:.3f}")
                cells.append(" / ".join(shares) + f" ({empties} real)")
            cells.append(" / ".join(f"{s / max(n, 1):.3f}" for s, n in pooled.values()))
            rows.append(cells)
    return rows


def main() -> None:
    parser = data_models_parser(__doc__, model=False, models_required=False)
    parser.add_argument("--json", default=None)
    parser.add_argument(
        "--first-turns",
        type=int,
        default=None,
        help="store only each conversation's first N turns (how the calibrated threshold moves with the corpus's size)",
    )
    args = parser.parse_args()
    if args.first_turns is not None and args.first_turns < 10:
        parser.error("--first-turns must be at least 10 (calibration needs 10 memories with vectors)")
    pairs = paired_conversations(args.data_dir, None)
    with tempfile.TemporaryDirectory() as tmp:
        models_dir = args.models_dir or minilm_models_dir(Path(tmp))
        per_conv = {data.name: measure(data, other, models_dir, args.first_turns) for data, other in pairs}
    print_table(
        ["conversation", "rows", "threshold", "probes' top cosine p90", "real questions empty"],
        [
            [
                c,
                sets["rows"],
                sets["threshold"],
                sets["probe_top_cosine_p90"],
                real_empties(sets),
            ]
            for c, sets in per_conv.items()
        ],
    )
    names = ["margin", *WITNESSES]
    auc_rows: list[list[Any]] = []
    for conv, sets in per_conv.items():
        for name in names:
            real = [f[name] for f in sets["real"]]
            auc_rows.append(
                [
                    conv,
                    name,
                    auc(real, [f[name] for f in sets["negative"]]),
                    auc(real, [f[name] for f in sets["renamed"]]),
                ]
            )
    print("\nAUC, real questions against negatives and against renamed negatives:")
    print_table(["conversation", "feature", "real vs negatives", "real vs renamed"], auc_rows)
    rows = oracle_rows(per_conv)
    print(
        "\nmargin + weight x witness, cut where as many real questions fall below as today; negatives / renamed empty:"
    )
    print_table(["witness", "weight", *[f"{c}" for c in per_conv], "pooled"], rows)
    write_json(args.json, {"per_conversation": per_conv, "auc": auc_rows, "oracle": rows})


if __name__ == "__main__":
    main()
