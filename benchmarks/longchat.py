"""Retrieval on long user–assistant chat histories: one fresh database per history, default settings.

    python benchmarks/_longchat_data.py benchmarks/results/longchat --source /path/to/alpaca_eval.git
    python benchmarks/longchat.py benchmarks/results/longchat --models-dir DIR [--split choose|confirm|all]
        [--arms default,original,rsf-no-context,gate-off] [--arm NAME:CPERSONA_X=v,CPERSONA_Y=w ...]
        [--cut 160] [--histories 10] [--json out.json]

The data (built by benchmarks/_longchat_data.py: real chat answers as haystack, planted facts, one question
per history of five types) is read from DATA (a longchat.json or the cache dir holding it). Per history,
every turn is stored as one memory through the Python API (content "<role>: <text>", msg_id = turn id,
timestamp = the turn's time, in order) into a fresh SQLite file; then, per arm, a copy of that file is
opened with the arm's settings (storing does not depend on them, except CPERSONA_EMBEDDING_MODE: arms
with another mode store their own file) and each question is recalled with limit 10:

- "uncalibrated": as a new user gets it (the gate on, the heuristic floor);
- "calibrated": after one ``calibrate_threshold`` of the agent, which is what self-calibration does in the
  background once the agent has grown.

Metrics per question (recall answers worst → best; the LAST element is the best match):
  session@5   an evidence session holds one of the top 5 rows;
  all@10      every evidence session holds one of the top 10 rows;
  ndcg@10     NDCG over the ranked list of sessions of the top 10 rows (each session once, at its best
              row; relevant = an evidence session);
  turns@10    share of the evidence turns in the top 10;
  empty       no memory row came back;
  newest@5    knowledge updates only: the newest statement (the answer) is in the top 5 and ranks above
              the older statement.
Averages per question type, per wording (close to the evidence or a paraphrase) and overall; recall p50 /
p95 in ms per arm and state.

Arms: presets (``ARM_PRESETS``) or ``--arm name:VAR=value,...`` with CPERSONA_ settings as in the
environment. ``--cut 160`` cuts every turn to 160 characters before storing (the speed ratio of long to
short rows; an assistant fact planted deep in an answer is cut away, so its questions measure nothing).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sqlite3
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import QUERY_CACHE_OFF, parse_overrides, percentile, print_table, write_json  # noqa: E402
from _longchat_compare import QUESTION_TYPE as COMPARE  # noqa: E402
from _longchat_data import load  # noqa: E402
from _longchat_facts import TYPES  # noqa: E402
from _longchat_temporal import QUESTION_TYPE as TEMPORAL  # noqa: E402

from cpersona.config import Settings  # noqa: E402
from cpersona.embed.runtime.blocks import LEAD_MIN_CHARS  # noqa: E402
from cpersona.embed.runtime.none_backend import NoEmbeddings  # noqa: E402
from cpersona.memory import Memory  # noqa: E402
from cpersona.storage.scope import Scope  # noqa: E402
from cpersona.storage.sqlite.migrations import MIGRATIONS  # noqa: E402

AGENT = "longchat"
LIMIT = 10
STATES = ("uncalibrated", "calibrated")
ARM_PRESETS: dict[str, dict[str, str]] = {
    "default": {},
    # The original CPersona's pipeline: reciprocal-rank fusion, no quality gate, no context channel.
    "original": {
        "CPERSONA_RECALL_MODE": "rrf",
        "CPERSONA_CONTEXT_WEIGHT": "0",
        "CPERSONA_FUSED_GATE_ENABLED": "false",
    },
    "rsf-no-context": {"CPERSONA_CONTEXT_WEIGHT": "0"},
    "gate-off": {"CPERSONA_FUSED_GATE_ENABLED": "false"},
    "keyword-only": {"CPERSONA_EMBEDDING_MODE": "none"},
}
#: How a question is worded against its evidence (benchmarks/_longchat_facts.py): close or paraphrase.
WORDINGS = ("close", "paraphrase")
METRICS = ("session@5", "all@10", "ndcg@10", "turns@10", "empty", "newest@5")


def read_arms(parser: argparse.ArgumentParser, presets: str, specs: list[str]) -> dict[str, dict[str, Any]]:
    """``--arms`` (comma-separated ``ARM_PRESETS`` names) and ``--arm NAME:CPERSONA_X=v,...`` as
    Settings changes per arm name; a bad one ends the command through ``parser.error``."""
    arms: dict[str, dict[str, Any]] = {}
    for name in filter(None, (a.strip() for a in presets.split(","))):
        if name not in ARM_PRESETS:
            parser.error(f"unknown arm {name!r}; presets: {', '.join(ARM_PRESETS)}")
        arms[name] = parse_overrides(",".join(f"{k}={v}" for k, v in ARM_PRESETS[name].items()))
    for spec in specs:
        name, sep, overrides = spec.partition(":")
        if not sep or not name:
            parser.error(f"--arm {spec!r}: expected NAME:CPERSONA_X=v,...")
        arms[name] = parse_overrides(overrides)
    return arms


def score(ranked: list[str], question: dict[str, Any], session_of: dict[str, str]) -> dict[str, float]:
    """The metrics of one question; ``ranked`` is best-first turn ids."""
    evidence_sessions = set(question["evidence_session_ids"])
    evidence_turns = set(question["evidence_turn_ids"])
    top5 = {session_of.get(t) for t in ranked[:5]}
    top10 = [session_of.get(t) for t in ranked[:LIMIT]]
    sessions: list[str | None] = []
    for s in top10:
        if s not in sessions:
            sessions.append(s)
    dcg = sum(1 / math.log2(i + 2) for i, s in enumerate(sessions) if s in evidence_sessions)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(evidence_sessions), LIMIT)))
    out = {
        "session@5": 1.0 if top5 & evidence_sessions else 0.0,
        "all@10": 1.0 if evidence_sessions <= set(top10) else 0.0,
        "ndcg@10": dcg / ideal,
        "turns@10": len(evidence_turns & set(ranked[:LIMIT])) / len(evidence_turns),
        "empty": 0.0 if ranked else 1.0,
    }
    if question["question_type"] == "knowledge-update":
        newest = question["answer_turn_ids"][-1]
        older = [t for t in question["evidence_turn_ids"] if t != newest]
        position = {t: i for i, t in enumerate(ranked)}
        above = all(position.get(o, 10**6) > position.get(newest, 10**6) for o in older)
        out["newest@5"] = 1.0 if newest in ranked[:5] and above else 0.0
    return out


def store_history(history: dict[str, Any], settings: Settings, cut: int | None) -> None:
    """Every turn of ``history`` as one memory, in order, into ``settings.db_path``."""
    backend = NoEmbeddings() if settings.embedding_mode == "none" else None
    with Memory(settings, backend=backend, self_calibration=False) as mem:
        if backend is None and not mem.wait_until_ready(300):
            raise SystemExit(f"model did not load: {mem.embedding_status()}")
        for session in history["sessions"]:
            for turn in session["turns"]:
                text = turn["text"][:cut] if cut else turn["text"]
                out = mem.store(
                    AGENT, f"{turn['role']}: {text}", msg_id=turn["turn_id"], timestamp=turn["time"]
                )
                if out["result"] != "stored":
                    print(f"  note: {turn['turn_id']} {out['result']}: {out.get('reason')}", file=sys.stderr)
        mem.worker.drain()  # rows whose embedding was deferred get it before the file is copied


def copy_db(source: Path, target: Path) -> None:
    """A consistent copy of a closed SQLite database (the backup API, so WAL contents come along)."""
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)


def ask(
    history: dict[str, Any],
    settings: Settings,
    session_of: dict[str, str],
    samples: dict[str, list[float]],
    repeats: int = 1,
) -> dict[str, list[dict[str, Any]]]:
    """Every question of ``history`` against ``settings.db_path``, uncalibrated then calibrated; each is
    recalled ``repeats`` times for the timings (the first answer is scored)."""
    backend = NoEmbeddings() if settings.embedding_mode == "none" else None
    out: dict[str, list[dict[str, Any]]] = {}
    with Memory(settings, backend=backend, self_calibration=False) as mem:
        if backend is None and not mem.wait_until_ready(300):
            raise SystemExit(f"model did not load: {mem.embedding_status()}")
        mem.embeddings.settle_query_kernel()  # one query kernel for every question, as in a warm server
        mem.recall(AGENT, "warm-up", limit=LIMIT, record=False)  # the first recall pays one-off costs
        rows = mem.storage.session().memories.list_recent(Scope(AGENT), 10**9)
        turn_of = {r["id"]: r["msg_id"] for r in rows}
        for state in STATES:
            if state == "calibrated":
                if backend is not None:
                    break  # keyword-only: calibration measures cosines, so there is nothing to calibrate
                mem.calibrate_threshold(AGENT)
            for q in history["questions"]:
                start = time.perf_counter()
                results = mem.recall(AGENT, q["question"], limit=LIMIT, record=False)["results"]
                samples[state].append(time.perf_counter() - start)
                for _ in range(repeats - 1):  # more timing samples: one question per history is few
                    start = time.perf_counter()
                    mem.recall(AGENT, q["question"], limit=LIMIT, record=False)
                    samples[state].append(time.perf_counter() - start)
                ranked = [turn_of.get(r["id"], "") for r in reversed(results) if r.get("type") == "memory"]
                scored = score(ranked, q, session_of)
                out.setdefault(state, []).append(
                    {
                        "question_id": q["question_id"],
                        "type": q["question_type"],
                        "wording": q.get("wording", ""),
                        **scored,
                    }
                )
    return out


def run(
    histories: list[dict[str, Any]],
    arms: dict[str, dict[str, Any]],
    base: Settings,
    cut: int | None,
    keep: Path | None = None,
    repeats: int = 1,
) -> dict[str, Any]:
    """Every history × arm × state; per-question rows and recall timings."""
    rows: dict[str, dict[str, list[dict[str, Any]]]] = {a: defaultdict(list) for a in arms}
    timings: dict[str, dict[str, list[float]]] = {a: defaultdict(list) for a in arms}
    ingest: list[float] = []
    for n, history in enumerate(histories, 1):
        session_of = {t["turn_id"]: s["session_id"] for s in history["sessions"] for t in s["turns"]}
        with tempfile.TemporaryDirectory() as tmp:
            stored: dict[str, Path] = {}  # embedding mode → the stored file
            for arm, changes in arms.items():
                settings = base.with_overrides(**changes)
                mode = settings.embedding_mode
                if mode not in stored:
                    # The file's name carries a digest of the history, the schema's migration count and the
                    # lead blocks' floor, so changed data, or a file stored before a migration (block
                    # vectors came with one) or before lead blocks, is stored afresh.
                    digest = hashlib.sha1(json.dumps(history, sort_keys=True).encode()).hexdigest()[:10]
                    name = (
                        f"{history['history_id']}-{digest}-{mode}-{base.embedding_model}-cut{cut or 0}"
                        f"-schema{len(MIGRATIONS)}-lead{LEAD_MIN_CHARS}.db"
                    )
                    stored[mode] = (keep or Path(tmp)) / name
                    if not stored[mode].exists():
                        start = time.perf_counter()
                        partial = stored[mode].with_suffix(".partial")
                        for stale in partial.parent.glob(
                            partial.name + "*"
                        ):  # a killed run's file, -wal, -shm
                            stale.unlink()
                        store_history(history, base.with_overrides(db_path=partial, embedding_mode=mode), cut)
                        copy_db(partial, stored[mode])
                        for leftover in partial.parent.glob(partial.name + "*"):
                            leftover.unlink()
                        ingest.append(time.perf_counter() - start)
                copy = Path(tmp) / f"{arm}.db"
                copy_db(stored[mode], copy)
                for state, scored in ask(
                    history, settings.with_overrides(db_path=copy), session_of, timings[arm], repeats
                ).items():
                    rows[arm][state] += scored
                copy.unlink()
        print(f"  {n}/{len(histories)} {history['history_id']} done", file=sys.stderr)
    return {"rows": rows, "timings": timings, "ingest_s": ingest}


def gate_settled(answer: dict[str, Any]) -> bool:
    """Whether a recall ``answer`` of our server reports a settled gate: calibrated, or the heuristic
    floor self-calibration keeps for an agent of long records (docs/quality-gate.md#long-records-and-the-gate)."""
    gate = answer.get("gate") or {}
    return gate.get("kind") == "calibrated" or str(gate.get("reason", "")).startswith("long records")


def type_means(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Means of ``METRICS`` over every question, per question type and per wording (``newest@5`` over
    knowledge updates only: nan for a group without one); ``n`` per group."""
    groups = {
        "overall": rows,
        **{t: [r for r in rows if r["type"] == t] for t in (*TYPES, TEMPORAL, COMPARE)},
        **{f"wording: {w}": [r for r in rows if r.get("wording") == w] for w in WORDINGS},
    }
    out: dict[str, dict[str, float]] = {}
    for name, group in groups.items():
        if not group:
            continue
        means = {m: sum(r[m] for r in group if m in r) / max(1, sum(m in r for r in group)) for m in METRICS}
        if not any("newest@5" in r for r in group):
            means["newest@5"] = float("nan")
        out[name] = {**means, "n": len(group)}
    return out


def summarise(result: dict[str, Any]) -> dict[str, Any]:
    """Per arm and state: means per question type and overall, and recall p50/p95."""
    out: dict[str, Any] = {}
    for arm, by_state in result["rows"].items():
        for state, rows in by_state.items():
            entry: dict[str, Any] = type_means(rows)
            samples = result["timings"][arm][state]
            entry["recall_ms"] = {
                "p50": percentile(samples, 50) * 1000,
                "p95": percentile(samples, 95) * 1000,
            }
            out[f"{arm}/{state}"] = entry
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data", type=Path, help="longchat.json or the cache dir holding it")
    parser.add_argument("--models-dir", type=Path, required=True, help="models dir with the model installed")
    parser.add_argument("--model", default="all-minilm-l6-v2")
    parser.add_argument("--split", choices=("choose", "confirm", "all"), default="all")
    parser.add_argument("--histories", type=int, help="only the first N histories of the split")
    parser.add_argument(
        "--arms", default="default", help=f"comma-separated presets: {', '.join(ARM_PRESETS)}"
    )
    parser.add_argument("--arm", action="append", default=[], help="NAME:CPERSONA_X=v,... (repeatable)")
    parser.add_argument("--cut", type=int, help="cut every turn to this many characters before storing")
    parser.add_argument("--json", help="write the summary and per-question rows here")
    parser.add_argument(
        "--timing-repeats",
        type=int,
        default=1,
        help="recall each question this many times for the p50/p95 (the first answer is scored)",
    )
    parser.add_argument(
        "--keep-stored",
        type=Path,
        help="keep each history's stored database here and reuse it on later runs (a changed history is "
        "stored afresh, as is a file from before a schema migration; delete the dir after changing how "
        "turns are stored)",
    )
    args = parser.parse_args()
    arms = read_arms(parser, args.arms, args.arm)
    histories = load(args.data, args.split)[: args.histories]
    with tempfile.TemporaryDirectory() as tmp:
        base = Settings(
            **QUERY_CACHE_OFF,  # every recall embeds its query
            db_path=Path(tmp) / "unused.db",
            embedding_mode="onnx",
            models_dir=args.models_dir,
            embedding_model=args.model,
            update_check=False,
            auto_fetch_model=False,
            auto_calibrate=False,  # the harness calibrates once per agent itself ("calibrated")
        )
        if args.keep_stored:
            args.keep_stored.mkdir(parents=True, exist_ok=True)
        result = run(histories, arms, base, args.cut, args.keep_stored, args.timing_repeats)
    summary = summarise(result)
    print(
        f"\n{len(histories)} histories, split {args.split}"
        + (f", turns cut to {args.cut}" if args.cut else "")
    )
    table = []
    for group in ("overall", *TYPES, TEMPORAL, COMPARE, *(f"wording: {w}" for w in WORDINGS)):
        for key, entry in summary.items():
            if group in entry:
                table.append([group, key, *(entry[group][m] for m in METRICS), entry[group]["n"]])
    print_table(["type", "arm/state", *METRICS, "n"], table)
    print()
    print_table(
        ["arm/state", "recall p50 ms", "recall p95 ms"],
        [[k, e["recall_ms"]["p50"], e["recall_ms"]["p95"]] for k, e in summary.items()],
    )
    ingest = sorted(result["ingest_s"])
    if ingest:
        print(f"\nstoring one history: p50 {ingest[len(ingest) // 2]:.1f} s")
    write_json(
        args.json,
        {
            "split": args.split,
            "cut": args.cut,
            "arms": {k: {kk: str(vv) for kk, vv in v.items()} for k, v in arms.items()},
            "summary": summary,
            "rows": result["rows"],
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
