"""Build the original CPersona's files that tests/portability reads, with the original itself.

    python scripts/make_original_fixtures.py [--venvs DIR] [--out tests/portability/fixtures]

Installs ``cpersona==2.5.12`` and ``cpersona==2.6.14`` from PyPI into throwaway venvs (kept under
``--venvs`` for reuse), then has each write, through its own handlers (scripts/original_cpersona.py):

- ``original-<version>.db.gz``: three agents, three projects, three channels, msg_ids, sources and
  metadata, two locked rows, recalled rows, episodes (one resolved, with start and end), profiles,
  vectors of all-MiniLM-L6-v2 (384-d) from this project's own embed-server; 2.6.14 also declares
  associations (entities, aliases, mentions, relations, one correction between two memories) so its
  newer tables hold rows;
- ``original-<version>.jsonl``: its ``export_memories`` file of that database (1.0 / 1.1), vectors included;
- ``original-2.5.12-unknown-model.db.gz``: the same rows with 8-d vectors of a model we do not know.

The databases are gzipped (an SQLite file of a few rows is mostly empty pages); the plan is in
``PLAN`` below, so a test can name what must come through.
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from original_cpersona import (  # noqa: E402 - the helper beside this script
    MINILM_LABEL,
    UNKNOWN_LABEL,
    ensure_venv,
    minilm_endpoint,
    unknown_endpoint,
    write_with_original,
)

AGENTS = ("alice", "bob", "carol")
PROJECTS = ("", "garden", "travel")
CHANNELS = ("", "chat", "mail")
TOPICS = (
    "prefers green tea in the morning",
    "is planting tomatoes along the south fence",
    "booked a train to Lisbon for the second week of May",
    "keeps the spare key under the blue flower pot",
    "is allergic to peanuts",
    "wants the quarterly report by Friday",
    "plays chess on Tuesday evenings",
    "moved the meeting with Dana to Thursday",
)


def plan() -> dict[str, Any]:
    """What each original writes (the same for both versions)."""
    memories = []
    for i in range(24):
        agent = AGENTS[i % 3]
        message: dict[str, Any] = {
            "content": f"{agent.title()} {TOPICS[i % len(TOPICS)]} (note {i})",
            "timestamp": f"2024-0{1 + i % 9}-1{i % 10}T0{i % 10}:15:00+02:00",
        }
        if i % 4 == 0:
            message["id"] = f"msg-{i}"
        if i % 3 == 0:
            message["source"] = {"kind": "user", "client": "fixture"}
        if i % 5 == 0:
            message["metadata"] = {"importance": i % 3, "tags": ["fixture", agent]}
        memories.append(
            {
                "agent_id": agent,
                "project_id": PROJECTS[(i // 3) % 3],
                "channel": CHANNELS[(i // 9) % 3],
                "message": message,
            }
        )
    return {
        "memories": memories,
        "lock": [1, 7],
        "episodes": [
            {
                "agent_id": "alice",
                "project_id": "garden",
                "channel": "chat",
                "summary": "Alice and the assistant planned the vegetable beds",
                "keywords": "garden,tomatoes,beds",
                "resolved": True,
                "history": [
                    {
                        "role": "user",
                        "content": "Where should the tomatoes go?",
                        "timestamp": "2024-03-01T09:00:00Z",
                    },
                    {
                        "role": "assistant",
                        "content": "Along the south fence.",
                        "timestamp": "2024-03-01T09:05:00Z",
                    },
                ],
            },
            {"agent_id": "bob", "summary": "Bob asked about the Lisbon trip", "keywords": "travel,lisbon"},
            {
                "agent_id": "carol",
                "project_id": "travel",
                "channel": "mail",
                "summary": "Carol sorted her inbox",
            },
        ],
        "profiles": [
            {"agent_id": "alice", "content": "Alice: gardener, drinks green tea, allergic to peanuts."},
            {"agent_id": "bob", "content": "Bob: chess on Tuesdays; travelling to Lisbon in May."},
        ],
        "recalls": [{"agent_id": "alice", "query": "green tea"}, {"agent_id": "bob", "query": "chess"}],
        "associations": [
            {
                "agent_id": "alice",
                "project_id": "",
                "channel": "",
                "anchor": 0,
                "entities": [{"name": "Alice", "aliases": ["Al"]}],
                # memory 6 is corrected by memory 9 (its role vocabulary: the object supersedes the subject)
                "relations": [[0, "related_to", 3], [0, "mentions", "Alice"], [6, "supersedes", 9]],
            }
        ],
    }


def _gzip(db: Path, out: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    with out.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as dst:
        dst.write(db.read_bytes())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--venvs", type=Path, default=Path(tempfile.gettempdir()) / "cpersona-original-venvs")
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).resolve().parents[1] / "tests/portability/fixtures"
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    args.venvs.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        with minilm_endpoint(args.venvs) as url:
            for version in ("2.5.12", "2.6.14"):
                python = ensure_venv(args.venvs, version)
                db = work / f"original-{version}.db"
                the_plan = plan() | {"export": str(work / f"original-{version}.jsonl")}
                if version.startswith("2.5"):
                    the_plan.pop("associations")  # 2.5 has no associations
                write_with_original(python, db, the_plan, url=url, label=MINILM_LABEL)
                _gzip(db, args.out / f"original-{version}.db.gz")
                shutil.copyfile(work / f"original-{version}.jsonl", args.out / f"original-{version}.jsonl")
                print(f"wrote the {version} fixtures")
        with unknown_endpoint() as url:
            python = ensure_venv(args.venvs, "2.5.12")
            db = work / "original-2.5.12-unknown-model.db"
            the_plan = plan()
            the_plan.pop("associations")
            write_with_original(python, db, the_plan, url=url, label=UNKNOWN_LABEL)
            _gzip(db, args.out / "original-2.5.12-unknown-model.db.gz")
            print("wrote the unknown-model fixture")


if __name__ == "__main__":
    main()
