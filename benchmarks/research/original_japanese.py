"""The original CPersona (PyPI ``cpersona``) on the Japanese paragraphs, over MCP stdio, beside ours.

    python benchmarks/research/original_japanese.py benchmarks/results/japanese \
        --command /path/to/venv/bin/cpersona [--split choose] [--env CPERSONA_RECALL_MODE=rrf ...]

Runs any MCP server command that has ``store`` and ``recall`` tools with the original's argument shapes
(``store(agent_id, message{id, content})``, ``recall(agent_id, query, limit)``): every paragraph stored,
every question of the split recalled with limit 10, hit@1 / top5 / MRR of the gold paragraph. Used to see
where the original's keyword-only ranking differs from ours (docs/decisions.md); never to choose a
constant on held-out data (this data is our own: benchmarks/_japanese_data.py).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _japanese_data import load  # noqa: E402
from japanese import score  # noqa: E402


class Client:
    """One request at a time over stdio (newline-delimited JSON-RPC)."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.next = 0
        self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "lab", "version": "1"},
            },
        )
        self.notify("notifications/initialized")

    def notify(self, method: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps({"jsonrpc": "2.0", "method": method}) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.next += 1
        message = {"jsonrpc": "2.0", "id": self.next, "method": method, "params": params}
        self.proc.stdin.write((json.dumps(message, ensure_ascii=False) + "\n").encode())
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("server closed its output")
            reply = json.loads(line)
            if reply.get("id") == self.next:
                return reply

    def tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        reply = self.request("tools/call", {"name": name, "arguments": arguments})
        result = reply.get("result") or {}
        if isinstance(result.get("structuredContent"), dict):
            return result["structuredContent"]
        for part in result.get("content", []):
            if part.get("type") == "text":
                try:
                    return json.loads(part["text"])
                except ValueError:
                    return {"text": part["text"]}
        return {"error": reply.get("error")}

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data", type=Path)
    parser.add_argument("--command", required=True, help="the server's executable (its 'serve' is not added)")
    parser.add_argument("--arg", action="append", default=[], help="arguments after the command")
    parser.add_argument("--split", default="all")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for the server")
    parser.add_argument("--json", type=Path, help="write each question's ranked paragraph ids here")
    args = parser.parse_args()
    data = load(args.data)
    paragraphs = data["paragraphs"]
    questions = [q for q in data["questions"] if args.split == "all" or q["split"] == args.split]
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CPERSONA_", "EMBEDDING_"))}
        env.update(
            CPERSONA_DB_PATH=str(Path(tmp) / "o.db"),
            CPERSONA_UPDATE_CHECK="false",
            CPERSONA_EMBEDDING_MODE="none",
            CPERSONA_OPERATING_CONTEXT="off",
        )
        env.update(dict(item.split("=", 1) for item in args.env))
        client = Client([args.command, *args.arg], env)
        ids: dict[Any, str] = {}
        for p in paragraphs:
            out = client.tool("store", {"agent_id": "ja", "message": {"id": p["id"], "content": p["text"]}})
            ids[out.get("id")] = p["id"]
        by_content = {p["text"]: p["id"] for p in paragraphs}
        paragraph_ids = {p["id"] for p in paragraphs}
        totals = {"hit@1": 0.0, "top5": 0.0, "mrr": 0.0}
        per_question: dict[str, list[str]] = {}
        for q in questions:
            out = client.tool("recall", {"agent_id": "ja", "query": q["question"], "limit": 10})
            rows = list(reversed(out.get("results") or out.get("memories") or out.get("messages") or []))
            # The original's rows carry the message id we stored as ``id``, and their content cut to 500
            # characters, so a long paragraph is found by its id; a server that returns its own row id
            # instead is mapped back by the id its store returned, or by the content.
            ranked = [
                str(r.get("id"))
                if str(r.get("id")) in paragraph_ids
                else by_content.get(str(r.get("content", "")), ids.get(r.get("id"), ""))
                for r in rows
            ]
            per_question[q["id"]] = ranked
            for metric, value in score(ranked, q["gold"]).items():
                if metric in totals:
                    totals[metric] += value
        client.close()
    n = len(questions)
    print(f"{n} questions: " + "  ".join(f"{metric} {total / n:.3f}" for metric, total in totals.items()))
    if args.json:
        args.json.write_text(json.dumps(per_question, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
