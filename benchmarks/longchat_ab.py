"""Recall speed on stored long histories, two servers A/B over MCP stdio, answers compared.

    python benchmarks/longchat_ab.py STORED_DIR DATA --models-dir DIR [--histories 2] [--rounds 3]
        [--a-src TREE] [--b-src TREE] [--a-env CPERSONA_X=v ...] [--b-env ...] [--b-folded]
        [--json out.json]

``STORED_DIR`` holds the files ``longchat.py --keep-stored`` wrote (one per history, agent
``longchat``); ``DATA`` is the ``longchat.json`` (or its directory) whose questions are asked. Per
history, two ``cpersona serve`` processes over stdio, each on its own copy of the stored file and with
a private model (``CPERSONA_MODEL_SHARING=off``): A and B differ by source tree (``--a-src`` /
``--b-src``: a checkout whose ``cpersona`` package the server imports, e.g. a ``git worktree`` of
another commit), by settings (``--a-env`` / ``--b-env``), or by B's copy having its memory keyword
indexes folded into one segment each before it opens (``--b-folded``: FTS5 ``optimize``, what the
idle worker does; storage/sqlite/keyword_fold.py). A raw JSON-RPC client times each recall from the
request's write to its reply (no output-schema checks: the server's time).

Every question is asked of both servers in turn, the order alternating per question, ``--rounds``
times (a round suffix makes each question new to the servers). Printed: p50 / p95 per server, B / A
at p50, the p50 of the paired per-question differences (what to read on a noisy machine), and the
share of recalls whose top 10 (refs in order) were the same in A and B. No assertion on timings.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import env_pairs, percentile, print_table, write_json  # noqa: E402
from _rpc import StdioServer, server_env, tool_payload  # noqa: E402
from longchat import AGENT, LIMIT, load  # noqa: E402

#: The memory keyword indexes ``--b-folded`` folds.
FTS_TABLES = ("memories_fts", "memories_words")
#: Seconds both servers idle after warming up (the query kernel's check runs once after a load).
SETTLE_SECONDS = 8.0


def fold(db: Path) -> None:
    """Merge each memory keyword index of ``db`` into one segment (FTS5 ``optimize``)."""
    with sqlite3.connect(db) as conn:
        for table in FTS_TABLES:
            conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")


def stored_file(stored: Path, history_id: str) -> Path:
    """The file ``longchat.py --keep-stored`` wrote for ``history_id``."""
    found = sorted(stored.glob(f"{history_id}-*.db"))
    if not found:
        raise SystemExit(f"no stored file for history {history_id} in {stored}")
    return found[0]


def start(
    name: str, source: Path, work: Path, models_dir: Path, src: Path | None, env: dict[str, str], folded: bool
) -> StdioServer:
    """One server on a copy of ``source`` (its keyword indexes folded first when ``folded``)."""
    db = work / f"{name}.db"
    shutil.copy(source, db)
    if folded:
        fold(db)
    extra = {"CPERSONA_MODEL_SHARING": "off", **env}
    if src is not None:
        extra["PYTHONPATH"] = os.pathsep.join(p for p in (str(src), os.environ.get("PYTHONPATH", "")) if p)
    server = StdioServer(server_env(db, models_dir, **extra), work / f"{name}.log")
    server.initialize()
    return server


def recall(server: StdioServer, question: str) -> tuple[float, list[str]]:
    """(seconds, the refs in order) of one recall."""
    rid = server.next_id()
    began = time.perf_counter()
    server.send(
        server.call_tool_message(rid, "recall", {"agent_id": AGENT, "query": question, "limit": LIMIT})
    )
    reply = server.wait([rid], 120)[rid]
    took = time.perf_counter() - began
    payload = tool_payload(reply) or {}
    return took, [row["ref"] for row in payload.get("results") or []]


def one_history(
    args: argparse.Namespace, history: dict[str, Any], work: Path, samples: dict[str, list[float]]
) -> tuple[int, int]:
    """Time one history's questions on A and B; (recalls compared, recalls with the same top 10)."""
    source = stored_file(args.stored, history["history_id"])
    servers = {
        "A": start("A", source, work, args.models_dir, args.a_src, env_pairs(args.a_env), False),
        "B": start("B", source, work, args.models_dir, args.b_src, env_pairs(args.b_env), args.b_folded),
    }
    questions = [q["question"] for q in history["questions"]]
    same = compared = 0
    try:
        for question in questions:  # warm up: every question once, then idle
            for server in servers.values():
                recall(server, f"{question} warm up")
        time.sleep(SETTLE_SECONDS)
        for round_ in range(args.rounds):
            for n, question in enumerate(questions):
                asked = f"{question} {round_}"
                order = ["A", "B"] if (n + round_) % 2 == 0 else ["B", "A"]
                tops = {}
                for name in order:
                    took, tops[name] = recall(servers[name], asked)
                    samples[name].append(took)
                compared += 1
                same += tops["A"] == tops["B"]
    finally:
        for server in servers.values():
            server.close()
    return compared, same


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("stored", type=Path, help="the --keep-stored directory of longchat.py")
    parser.add_argument("data", type=Path, help="longchat.json or the cache dir holding it")
    parser.add_argument("--models-dir", type=Path, required=True)
    parser.add_argument("--split", choices=("choose", "confirm", "all"), default="all")
    parser.add_argument("--histories", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--a-src", type=Path, help="a source tree whose cpersona server A runs")
    parser.add_argument("--b-src", type=Path, help="a source tree whose cpersona server B runs")
    parser.add_argument("--a-env", nargs="*", default=[], help="CPERSONA_X=v settings of server A")
    parser.add_argument("--b-env", nargs="*", default=[], help="CPERSONA_X=v settings of server B")
    parser.add_argument("--b-folded", action="store_true", help="fold B's copy's keyword indexes first")
    parser.add_argument("--json")
    args = parser.parse_args()
    histories = load(args.data, args.split)[: args.histories]
    samples: dict[str, list[float]] = {"A": [], "B": []}
    compared = same = 0
    with tempfile.TemporaryDirectory() as tmp:
        for history in histories:
            work = Path(tmp) / history["history_id"]
            work.mkdir()
            n, k = one_history(args, history, work, samples)
            compared, same = compared + n, same + k
    a, b = samples["A"], samples["B"]
    differences = [y - x for x, y in zip(a, b, strict=True)]
    rows = [
        [name, round(percentile(v, 50) * 1000, 2), round(percentile(v, 95) * 1000, 2), len(v)]
        for name, v in samples.items()
    ]
    print_table(["server", "recall p50 ms", "p95 ms", "recalls"], rows)
    ratio = percentile(b, 50) / percentile(a, 50)
    paired = percentile(differences, 50) * 1000
    print(
        f"B / A at p50: {ratio:.3f}; paired difference B - A, p50: {paired:+.2f} ms; same top 10: {same}/{compared}"
    )
    write_json(
        args.json,
        {
            "servers": {
                name: {"p50_ms": row[1], "p95_ms": row[2], "recalls": row[3]}
                for name, row in zip(samples, rows, strict=True)
            },
            "b_over_a_p50": round(ratio, 4),
            "paired_difference_p50_ms": round(paired, 3),
            "same_top10": same,
            "compared": compared,
            "args": {k: str(v) for k, v in vars(args).items()},
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
