"""The original CPersona (PyPI ``cpersona``) on our long user–assistant histories, over MCP stdio.

    python benchmarks/research/original_longchat.py benchmarks/results/longchat-multi \
        --command /path/to/venv/bin/cpersona --models-dir DIR [--split choose] [--histories N] [--json out.json]

The same histories, questions and metrics as ``benchmarks/longchat.py`` (its ``score``), the same model:
our ``cpersona embed-server`` contract (``POST /embed {"texts"}``) is served in this process on
loopback with MiniLM, and the original embeds through it (``CPERSONA_EMBEDDING_MODE=http``). Per
history one fresh original server: every turn stored as ``store(agent_id, message{id, content,
timestamp})`` with content ``"<role>: <text>"`` as ours, then, once its queue is empty, every question
recalled with ``limit`` 10 and its own defaults. Printed like ``longchat.py``: means per question type and
wording, recall p50 / p95 as the client sees it. Used to compare the original with ours on data we
built (docs/benchmarks.md), never to choose a constant on held-out data.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import percentile, print_table, write_json  # noqa: E402
from longchat import LIMIT, METRICS, TEMPORAL, TYPES, WORDINGS, load, score  # noqa: E402
from original_japanese import Client  # noqa: E402

from cpersona.config import Settings  # noqa: E402
from cpersona.embed.runtime.embed_server import start_embed_server  # noqa: E402
from cpersona.embed.runtime.factory import create_backend  # noqa: E402

AGENT = "longchat"


def original_env(db: Path, embed_url: str) -> dict[str, str]:
    """The original's server environment: this file, embeddings from ``embed_url``, nothing else of ours."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CPERSONA_", "EMBEDDING_"))}
    env.update(
        CPERSONA_DB_PATH=str(db),
        CPERSONA_UPDATE_CHECK="false",
        CPERSONA_EMBEDDING_MODE="http",
        CPERSONA_EMBEDDING_URL=f"{embed_url}/embed",
        CPERSONA_OPERATING_CONTEXT="off",
    )
    return env


@contextmanager
def embedding_server(models_dir: Path, model: str) -> Iterator[str]:
    """Our ``cpersona embed-server`` contract on loopback with ``model``; yields its URL."""
    settings = Settings(
        models_dir=models_dir, embedding_model=model, model_sharing="off", auto_fetch_model=False
    )
    backend = create_backend(settings)
    backend.load()
    server, _ = start_embed_server(backend)
    try:
        yield server.url
    finally:
        server.shutdown()
        server.server_close()


def store_history(client: Client, history: dict[str, Any], cut: int | None = None) -> dict[str, str]:
    """Every turn stored as ``"<role>: <text>"`` (cut to ``cut`` characters) with its id and time;
    returns turn id by content and by the row id ``store`` answered with (when it answers one), to map
    a server's rows back."""
    turn_of: dict[str, str] = {}
    for session in history["sessions"]:
        for turn in session["turns"]:
            text = turn["text"][:cut] if cut else turn["text"]
            content = f"{turn['role']}: {text}"
            turn_of[content] = turn["turn_id"]
            message = {"id": turn["turn_id"], "content": content, "timestamp": turn["time"]}
            out = client.tool("store", {"agent_id": AGENT, "message": message})
            if out.get("ok") is False or "error" in out:
                print(f"  note: {turn['turn_id']}: {str(out)[:200]}", file=sys.stderr)
            if isinstance(out.get("id"), int):  # our server answers the row id it stored
                turn_of[f"row:{out['id']}"] = turn["turn_id"]
    return turn_of


def settle(client: Client, deadline_s: float = 300.0) -> float | None:
    """Until the original's write queue is empty (every stored row embedded), then one more second;
    the seconds that took, or None when ``deadline_s`` passed first."""
    started = time.monotonic()
    while time.monotonic() - started < deadline_s:
        status = client.tool("get_queue_status", {})
        pending = [v for k, v in status.items() if "pending" in k and isinstance(v, int)]
        if not any(pending):
            time.sleep(1.0)
            return round(time.monotonic() - started, 1)
        time.sleep(0.5)
    return None


def _turn_of_row(row: dict[str, Any], session_of: dict[str, str], turn_of: dict[str, str]) -> str:
    """The turn id a returned row stands for, or "" when none maps."""
    row_id = row.get("id")
    if str(row_id) in session_of:
        return str(row_id)
    if row.get("type", "memory") != "memory":  # ours numbers episodes apart from memories
        return ""
    if isinstance(row_id, int) and f"row:{row_id}" in turn_of:
        return turn_of[f"row:{row_id}"]
    return turn_of.get(str(row.get("content")), "")


def ask_original(
    command: str, url: str, history: dict[str, Any], tmp: Path
) -> tuple[list[dict[str, Any]], list[float]]:
    """Store ``history`` in a fresh original server and score each of its questions."""
    client = Client([command], original_env(tmp / f"{history['history_id']}.db", url))
    session_of = {t["turn_id"]: s["session_id"] for s in history["sessions"] for t in s["turns"]}
    try:
        turn_of = store_history(client, history)
        settle(client)
        client.tool("recall", {"agent_id": AGENT, "query": "warm-up", "limit": LIMIT})
        rows, samples = [], []
        for q in history["questions"]:
            start = time.perf_counter()
            out = client.tool("recall", {"agent_id": AGENT, "query": q["question"], "limit": LIMIT})
            samples.append(time.perf_counter() - start)
            found = out.get("results") or out.get("memories") or out.get("messages") or []
            # The original's rows carry the message id we stored as ``id`` (their content is cut to 500
            # characters); ours carry the row id ``store`` answered with (and a preview of long content).
            ranked = [_turn_of_row(r, session_of, turn_of) for r in reversed(found)]
            rows.append(
                {
                    "question_id": q["question_id"],
                    "type": q["question_type"],
                    "wording": q.get("wording", ""),
                    "ranked": ranked,
                    **score([t for t in ranked if t], q, session_of),
                }
            )
        return rows, samples
    finally:
        client.close()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data", type=Path)
    parser.add_argument("--command", required=True, help="the original's executable (cpersona)")
    parser.add_argument("--models-dir", type=Path, required=True)
    parser.add_argument("--model", default="all-minilm-l6-v2")
    parser.add_argument("--split", choices=("choose", "confirm", "all"), default="all")
    parser.add_argument("--histories", type=int)
    parser.add_argument("--json")
    args = parser.parse_args()
    histories = load(args.data, args.split)[: args.histories]
    rows: list[dict[str, Any]] = []
    samples: list[float] = []
    with embedding_server(args.models_dir, args.model) as url, tempfile.TemporaryDirectory() as tmp:
        for n, history in enumerate(histories, 1):
            got, times = ask_original(args.command, url, history, Path(tmp))
            rows += got
            samples += times
            print(f"  {n}/{len(histories)} {history['history_id']} done", file=sys.stderr)
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups["overall"].append(r)
        groups[r["type"]].append(r)
        groups[f"wording: {r['wording']}"].append(r)
    table = []
    for name in ("overall", *TYPES, TEMPORAL, *(f"wording: {w}" for w in WORDINGS)):
        group = groups.get(name)
        if not group:
            continue
        means = [
            sum(r[m] for r in group if m in r) / max(1, sum(m in r for r in group))
            if any(m in r for r in group)
            else float("nan")
            for m in METRICS
        ]
        table.append([name, "original-2.5", *means, len(group)])
    print(f"\n{len(histories)} histories, split {args.split}")
    print_table(["type", "server", *METRICS, "n"], table)
    print(
        f"\nrecall as the client sees it: p50 {percentile(samples, 50) * 1000:.1f} ms, "
        f"p95 {percentile(samples, 95) * 1000:.1f} ms"
    )
    write_json(args.json, {"split": args.split, "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
