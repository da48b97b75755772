"""The quality-gate curve for benchmarks/locomo.py: gate off / heuristic / strict / balanced / lenient,
on real questions and on negative questions (another conversation's questions asked here).

Everything goes through the product: ``Memory.calibrate_threshold`` and ``Memory.set_recall_precision``
calibrate the agent from its own corpus (probe questions shipped with the package; no LoCoMo
question is used for calibration), and ``Memory.recall`` answers with the real pipeline and its gate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cpersona.config import Settings
from cpersona.memory import Memory
from cpersona.retrieval.gate import HEURISTIC_TOP_COSINE, GatePolicy, QualityGate
from cpersona.retrieval.pipeline import GateStage, NoGate, RecallPipeline

LEVELS = ("off", "heuristic", "strict", "balanced", "lenient")
AGENT = "locomo"


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
    real: list[dict[str, Any]],
    negatives: list[dict[str, Any]],
    ranked_ids: Callable[[list[dict[str, Any]]], list[str]],
    score: Callable[[list[str], list[str]], dict[str, float]],
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
        real_rows = []
        for qa in real:
            results = mem.recall(AGENT, qa["question"], limit=limit)["results"]
            evidence = [e for e in qa.get("evidence", []) if e]
            real_rows.append(score(ranked_ids(results), evidence))
        neg_empty = []
        for qa in negatives:
            results = mem.recall(AGENT, qa["question"], limit=limit)["results"]
            neg_empty.append(1.0 if not [r for r in results if r.get("type") != "profile"] else 0.0)
        out[level] = {"real": real_rows, "negative_empty": neg_empty, **info}
    return out


def summarise(per_conv: dict[str, dict[str, dict[str, Any]]], levels: tuple[str, ...]) -> dict[str, Any]:
    """recall@10, NDCG@10, real-empty share, negative-empty share per level, per conversation and overall."""

    def stats(real: list[dict[str, float]], neg: list[float]) -> dict[str, float]:
        n = len(real) or 1
        return {
            "recall@10": sum(r["recall@10"] for r in real) / n,
            "ndcg@10": sum(r["ndcg@10"] for r in real) / n,
            "real_empty": sum(r["empty"] for r in real) / n,
            "negative_empty": sum(neg) / (len(neg) or 1),
            "n_real": len(real),
            "n_negative": len(neg),
        }

    report: dict[str, Any] = {"per_conversation": {}, "overall": {}}
    for level in levels:
        all_real: list[dict[str, float]] = []
        all_neg: list[float] = []
        for conv, by_level in per_conv.items():
            entry = by_level[level]
            report["per_conversation"].setdefault(conv, {})[level] = {
                **stats(entry["real"], entry["negative_empty"]),
                **{k: entry[k] for k in ("threshold", "vector_threshold") if k in entry},
            }
            all_real += entry["real"]
            all_neg += entry["negative_empty"]
        report["overall"][level] = stats(all_real, all_neg)
    return report
