"""The gate side of benchmarks/locomo.py: the default path with and without (simulated) self-calibration,
and the gate curve (off / heuristic / strict / balanced / lenient), each on real questions, negatives and
renamed negatives.

Negatives = the next conversation's questions (categories 1-4) asked against this one's memories;
renamed negatives = the same questions with that conversation's speakers renamed to this one's
(``_locomo_data.Conversation.renamed_negatives_for``). "Empty" = no memory or episode row returned.

Everything goes through the product: ``Memory.calibrate_threshold`` and ``Memory.set_recall_precision``
calibrate the agent from its own corpus (probe questions shipped with the package; no LoCoMo
question is used for calibration), and ``Memory.recall`` answers with the real pipeline and its gate.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cpersona.config import Settings
from cpersona.memory import Memory
from cpersona.retrieval.gate import HEURISTIC_TOP_COSINE, GatePolicy, QualityGate
from cpersona.retrieval.pipeline import GateStage, NoGate, RecallPipeline

LEVELS = ("off", "heuristic", "strict", "balanced", "lenient")
#: The default path: as shipped before any calibration, and after the one calibration self-calibration
#: makes once the agent has grown (simulated by one calibrate_threshold call after storing); and, for
#: comparison, the same calibration keyed on the top cosine alone (the gate before scoring version 2).
DEFAULT_ARMS = ("uncalibrated", "self-calibrated", "self-calibrated-cosine")
AGENT = "locomo"
SETS = ("real", "negative", "renamed")


@dataclass(frozen=True)
class QuestionSets:
    """What one conversation's database is asked."""

    real: list[dict[str, Any]]  # this conversation's scored questions
    negative: list[str]
    renamed: list[str]


Ranked = Callable[[list[dict[str, Any]]], list[str]]
Score = Callable[[list[str], list[str]], dict[str, float]]


def _empty(results: list[dict[str, Any]]) -> float:
    return 1.0 if not [r for r in results if r.get("type") != "profile"] else 0.0


def ask(mem: Memory, sets: QuestionSets, ranked_ids: Ranked, score: Score, limit: int) -> dict[str, Any]:
    """Every question of ``sets`` through ``mem.recall`` with its current pipeline."""
    real_rows = []
    for qa in sets.real:
        results = mem.recall(AGENT, qa["question"], limit=limit, record=False)["results"]
        real_rows.append(score(ranked_ids(results), [e for e in qa.get("evidence", []) if e]))
    out: dict[str, Any] = {"real": real_rows}
    for name in ("negative", "renamed"):
        questions: list[str] = getattr(sets, name)
        out[f"{name}_empty"] = [
            _empty(mem.recall(AGENT, q, limit=limit, record=False)["results"]) for q in questions
        ]
    return out


def default_arms(
    mem: Memory, settings: Settings, sets: QuestionSets, ranked_ids: Ranked, score: Score, limit: int
) -> dict[str, dict[str, Any]]:
    """The production pipeline and gate, before and after one calibration of the agent."""
    out: dict[str, dict[str, Any]] = {}
    mem.recaller.pipeline = RecallPipeline(settings, gate=mem.calibration.gate())
    out["uncalibrated"] = ask(mem, sets, ranked_ids, score, limit)
    if settings.recall_precision != "balanced":
        raise SystemExit("the default path is measured at the default precision (balanced)")
    cal = mem.calibrate_threshold(AGENT)
    out["self-calibrated"] = {
        **ask(mem, sets, ranked_ids, score, limit),
        "threshold": cal["gate"].get("threshold"),
        "entities": cal["gate"].get("entities"),
    }
    # The same calibration keyed on the top cosine: balanced cuts at the probes' p90 top cosine.
    cosine = GatePolicy("calibrated", "balanced", 1.0, cal["gate"]["probe_top_cosine"]["p90"])
    mem.recaller.pipeline = RecallPipeline(
        settings, gate=QualityGate(lambda agent: cosine, settings.autocut_min_results)
    )
    out["self-calibrated-cosine"] = {
        **ask(mem, sets, ranked_ids, score, limit),
        "threshold": cosine.threshold,
    }
    mem.recaller.pipeline = RecallPipeline(settings, gate=mem.calibration.gate())
    return out


def _gate_for(mem: Memory, settings: Settings, level: str, method: str) -> tuple[GateStage, dict[str, Any]]:
    if level == "off":
        return NoGate("benchmark: gate off"), {}
    if level == "heuristic":
        policy = GatePolicy("heuristic", None, None, HEURISTIC_TOP_COSINE)
        return QualityGate(lambda agent: policy, settings.autocut_min_results), {
            "threshold": HEURISTIC_TOP_COSINE
        }
    mem.set_recall_precision(AGENT, level)
    cal = mem.calibrate_threshold(AGENT, method=method)  # same thresholds; recorded for the report
    return QualityGate(mem.calibration.policy_for, settings.autocut_min_results), {
        "threshold": cal["gate"]["threshold"],
        "vector_threshold": cal["vector"]["threshold"],
    }


def gate_curve(
    mem: Memory,
    settings: Settings,
    sets: QuestionSets,
    ranked_ids: Ranked,
    score: Score,
    *,
    levels: tuple[str, ...],
    method: str,
    limit: int,
) -> dict[str, dict[str, Any]]:
    """Per level: metrics of every real question (with ``empty``) and the negatives' empty flags."""
    out: dict[str, dict[str, Any]] = {}
    for level in levels:
        gate, info = _gate_for(mem, settings, level, method)
        mem.recaller.pipeline = RecallPipeline(settings, gate=gate)
        out[level] = {**ask(mem, sets, ranked_ids, score, limit), **info}
    mem.set_recall_precision(AGENT, "")  # back to the global precision
    return out


def stats(entry: dict[str, Any]) -> dict[str, Any]:
    """recall@10, NDCG@10 and the empty shares of one (conversation, arm or level)."""
    real = entry["real"]
    n = len(real) or 1
    out = {
        "recall@10": sum(r["recall@10"] for r in real) / n,
        "ndcg@10": sum(r["ndcg@10"] for r in real) / n,
        "real_empty": sum(r["empty"] for r in real) / n,
        "n_real": len(real),
    }
    for name in ("negative", "renamed"):
        flags = entry.get(f"{name}_empty", [])
        out[f"{name}_empty"] = sum(flags) / (len(flags) or 1)
        out[f"n_{name}"] = len(flags)
    for key in ("threshold", "vector_threshold", "entities"):
        if key in entry:
            out[key] = entry[key]
    return out


def pool(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Several conversations' answers (``by_cat``, ``real`` and the negatives' empty flags) as one,
    question-weighted: what ``stats`` reads for "overall"."""
    pooled: dict[str, Any] = {
        "by_cat": defaultdict(list),
        "real": [],
        "negative_empty": [],
        "renamed_empty": [],
    }
    for entry in entries:
        for cat, scored in entry["by_cat"].items():
            pooled["by_cat"][cat] += scored
        for key in ("real", "negative_empty", "renamed_empty"):
            pooled[key] += entry[key]
    return pooled


def summarise(per_conv: dict[str, dict[str, dict[str, Any]]], keys: tuple[str, ...]) -> dict[str, Any]:
    """Per key (level or arm): per conversation and overall (question-weighted)."""
    report: dict[str, Any] = {"per_conversation": {}, "overall": {}}
    for key in keys:
        pooled: dict[str, Any] = {"real": [], "negative_empty": [], "renamed_empty": []}
        for conv, by_key in per_conv.items():
            entry = by_key[key]
            report["per_conversation"].setdefault(conv, {})[key] = stats(entry)
            for field in pooled:
                pooled[field] += entry.get(field, [])
        report["overall"][key] = stats(pooled)
    return report
