"""Moving in from the original CPersona: a database it wrote, opened by starting ``Memory`` on it.

    python benchmarks/move_in.py [--memories 10000] [--versions 2.5.12 2.6.14]
                                 [--locomo /work/shared/data/locomo] [--venvs DIR] [--json out.json]

For each version, the original from PyPI (a throwaway venv, scripts/original_cpersona.py) writes
``--memories`` memories (five agents, three projects, three channels, msg_ids, sources, metadata,
locks, episodes, profiles) with all-MiniLM-L6-v2 vectors from this project's embed-server. Then a
``Memory`` started on the file moves it in, timed. Checked: rows per table and per agent equal, every
content byte-identical (the multiset of agent, project, channel, content), every vector kept byte for
byte as all-minilm-l6-v2, locks and msg_ids carried.

With ``--locomo``: the conversations' turns (one agent per conversation, as benchmarks/locomo.py stores
them) are written by the original 2.5.12 with MiniLM vectors, moved in, and recall@10 over the
questions of categories 1-4 is compared with a fresh ingest of the same turns into this edition
(both recall with the in-process MiniLM; the difference must be within 0.01).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from _common import minilm_models_dir, print_table, write_json  # noqa: E402
from _locomo_data import Conversation, conversation_files  # noqa: E402
from _retrieval_metrics import LIMIT, score_question  # noqa: E402
from original_cpersona import MINILM_LABEL, ensure_venv, minilm_endpoint, write_with_original  # noqa: E402

from cpersona.config import Settings  # noqa: E402
from cpersona.memory import Memory  # noqa: E402
from cpersona.storage.scope import Scope  # noqa: E402

AGENTS = ("ada", "ben", "cleo", "dev", "eli")
PROJECTS = ("", "garden", "travel")
CHANNELS = ("", "chat", "mail")
WORDS = [
    "tea",
    "garden",
    "train",
    "Lisbon",
    "chess",
    "report",
    "meeting",
    "key",
    "flower",
    "peanut",
    "river",
    "market",
    "violin",
    "bicycle",
    "invoice",
    "harbour",
    "lantern",
    "recipe",
    "mountain",
    "library",
]


def synthetic_plan(n: int) -> dict[str, Any]:
    """``n`` distinct memories over five agents, three projects and three channels, with the rest."""
    memories = []
    for i in range(n):
        words = " ".join(WORDS[(i * k + k) % len(WORDS)] for k in range(1, 7))
        message: dict[str, Any] = {
            "content": f"Note {i}: {words}.",
            "timestamp": f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:00:00Z",
        }
        if i % 2 == 0:
            message["id"] = f"m-{i}"
        if i % 3 == 0:
            message["source"] = {"kind": "user", "n": i}
        if i % 7 == 0:
            message["metadata"] = {"tags": [WORDS[i % len(WORDS)]]}
        memories.append(
            {
                "agent_id": AGENTS[i % len(AGENTS)],
                "project_id": PROJECTS[(i // 5) % 3],
                "channel": CHANNELS[(i // 15) % 3],
                "message": message,
            }
        )
    episodes = [
        {
            "agent_id": AGENTS[i % len(AGENTS)],
            "summary": f"Session {i} about {WORDS[i % len(WORDS)]}",
            "keywords": "a,b",
        }
        for i in range(max(1, n // 200))
    ]
    profiles = [{"agent_id": a, "content": f"{a} is a test user"} for a in AGENTS]
    return {"memories": memories, "lock": list(range(0, n, 500)), "episodes": episodes, "profiles": profiles}


def _rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def settings_for(db: Path, models_dir: Path, mode: str = "onnx") -> Settings:
    return Settings(
        db_path=db,
        models_dir=models_dir,
        embedding_mode=mode,  # type: ignore[arg-type]
        embedding_model="all-minilm-l6-v2",
        update_check=False,
        auto_fetch_model=False,
        auto_calibrate=False,
        operating_context_path=db.parent / "none.toml",
    )


def move_in_run(
    python: Path | None,
    version: str,
    n: int,
    url: str,
    work: Path,
    models_dir: Path,
    given: Path | None = None,
) -> dict[str, Any]:
    """The original writes ``n`` memories (or ``given`` is a database it wrote before); starting ``Memory``
    moves them in; everything is compared."""
    db = work / f"original-{version}" / "memory.db"
    db.parent.mkdir(parents=True)
    start = time.perf_counter()
    if given is not None:
        shutil.copyfile(given, db)
    else:
        assert python is not None
        write_with_original(python, db, synthetic_plan(n), url=url, label=MINILM_LABEL)
    written_s = time.perf_counter() - start
    theirs = {
        "memories": _rows(
            db, "SELECT agent_id, project_id, channel, content, embedding, locked, msg_id FROM memories"
        ),
        "episodes": _rows(db, "SELECT agent_id, summary FROM episodes"),
        "profiles": _rows(db, "SELECT agent_id, content FROM profiles"),
    }
    start = time.perf_counter()
    memory = Memory(settings_for(db, models_dir, "none"), start_background=False, self_calibration=False)
    moved_s = time.perf_counter() - start
    try:
        report = memory.moved_in or {}
    finally:
        memory.close()
    ours = {
        "memories": _rows(
            db,
            "SELECT agent_id, project_id, channel, content, embedding, locked, msg_id, embedding_model FROM memories",
        ),
        "episodes": _rows(db, "SELECT agent_id, summary FROM episodes"),
        "profiles": _rows(db, "SELECT agent_id, content FROM profiles"),
    }
    key = [(r[0], r[1], r[2], r[3]) for r in theirs["memories"]]
    vectors = {(r[0], r[1], r[2], r[3]): r[4] for r in theirs["memories"]}
    return {
        "version": version,
        "memories": len(theirs["memories"]),
        "original_write_s": round(written_s, 1),
        "move_in_s": round(moved_s, 2),
        "counts_equal": {t: len(theirs[t]) == len(ours[t]) for t in theirs},
        "per_agent_equal": Counter(r[0] for r in theirs["memories"])
        == Counter(r[0] for r in ours["memories"]),
        "content_identical": Counter(key) == Counter((r[0], r[1], r[2], r[3]) for r in ours["memories"]),
        "vectors_kept": sum(
            1
            for r in ours["memories"]
            if r[7] == "all-minilm-l6-v2" and r[4] == vectors[(r[0], r[1], r[2], r[3])]
        ),
        "vectors_in_original": sum(1 for r in theirs["memories"] if r[4] is not None),
        "locks_equal": sum(r[5] for r in theirs["memories"]) == sum(r[5] for r in ours["memories"]),
        "msg_ids_equal": Counter(r[6] for r in theirs["memories"]) == Counter(r[6] for r in ours["memories"]),
        "not_carried": report.get("not_carried"),
        "db_bytes": db.stat().st_size,
    }


def _recall_at_10(memory: Memory, agent: str, conv: Conversation) -> tuple[float, int]:
    rows = memory.storage.session().memories.list_recent(Scope(agent), 10**9)
    to_dia = {r["id"]: r["msg_id"] for r in rows}
    scores = []
    for qa in conv.real():
        results = memory.recall(agent, qa["question"], limit=LIMIT)["results"]
        ranked = [to_dia.get(r["id"], "") for r in reversed(results) if r["type"] == "memory"]
        scores.append(score_question(ranked, [e for e in qa["evidence"] if e])["recall@10"])
    return sum(scores) / len(scores), len(scores)


def locomo_run(python: Path, data_dir: Path, url: str, work: Path, models_dir: Path) -> list[list[Any]]:
    """recall@10 per conversation: moved in from the original vs a fresh ingest into this edition."""
    convs = [Conversation.load(p) for p in conversation_files(data_dir, None)]
    plan = {
        "memories": [
            {"agent_id": f"locomo-{c.name}", "message": {"id": dia, "content": text, "timestamp": stamp}}
            for c in convs
            for dia, text, stamp in c.turns()
        ]
    }
    moved_db = work / "locomo-moved" / "memory.db"
    moved_db.parent.mkdir(parents=True)
    write_with_original(python, moved_db, plan, url=url, label=MINILM_LABEL)
    fresh_db = work / "locomo-fresh" / "memory.db"
    fresh_db.parent.mkdir(parents=True)
    table = []
    with (
        Memory(settings_for(moved_db, models_dir), self_calibration=False) as moved,
        Memory(settings_for(fresh_db, models_dir), self_calibration=False) as fresh,
    ):
        for mem in (moved, fresh):
            if not mem.wait_until_ready(300):
                raise SystemExit(f"model did not load: {mem.embedding_status()}")
            mem.embeddings.settle_query_kernel()
        for conv in convs:
            for dia, text, stamp in conv.turns():
                fresh.store(f"locomo-{conv.name}", text, msg_id=dia, timestamp=stamp)
        assert moved.get_queue_status()["depth"] == 0, "every moved vector should have been kept"
        for conv in convs:
            agent = f"locomo-{conv.name}"
            a, n = _recall_at_10(moved, agent, conv)
            b, _ = _recall_at_10(fresh, agent, conv)
            table.append([conv.name, n, round(a, 4), round(b, 4), round(a - b, 4)])
    return table


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--versions", nargs="*", default=["2.5.12", "2.6.14"], help="none: --locomo alone")
    parser.add_argument("--locomo", type=Path, help="a LoCoMo folder (*.json conversations)")
    parser.add_argument("--venvs", type=Path, default=Path(tempfile.gettempdir()) / "cpersona-original-venvs")
    parser.add_argument(
        "--databases",
        nargs="+",
        type=Path,
        help="databases the original wrote before (one per --versions entry, e.g. kept from an earlier run): "
        "moved in without writing new ones",
    )
    parser.add_argument(
        "--keep", type=Path, help="copy each database the original wrote here, for --databases"
    )
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    args.venvs.mkdir(parents=True, exist_ok=True)
    # The host entry the original ran under names its model: what a 2.5 database's vectors were made with.
    os.environ["EMBEDDING_MODEL"] = MINILM_LABEL
    results: dict[str, Any] = {"runs": []}
    with tempfile.TemporaryDirectory() as tmp, minilm_endpoint(args.venvs) as url:
        work = Path(tmp)
        models_dir = minilm_models_dir(work / "ours", stream=sys.stderr)
        for index, version in enumerate(args.versions):
            given = args.databases[index] if args.databases else None
            python = None if given else ensure_venv(args.venvs, version)
            run = move_in_run(python, version, args.memories, url, work, models_dir, given)
            results["runs"].append(run)
            if args.keep and given is None:
                args.keep.mkdir(parents=True, exist_ok=True)
                backups = sorted((work / f"original-{version}").glob("memory.original-v*.db"))
                shutil.copyfile(backups[-1], args.keep / f"original-{version}-{args.memories}.db")
        if results["runs"]:
            keys = [k for k in results["runs"][0] if k != "version"]
            print_table(["check", *args.versions], [[k, *(r[k] for r in results["runs"])] for k in keys])
        if args.locomo:
            table = locomo_run(ensure_venv(args.venvs, "2.5.12"), args.locomo, url, work, models_dir)
            results["locomo"] = table
            print()
            print_table(
                ["conversation", "questions", "recall@10 moved in", "recall@10 fresh", "difference"], table
            )
    write_json(args.json, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
