"""Host hooks end to end: the exact commands ``cpersona register … --hooks`` wrote, fed the host's JSON.

    python benchmarks/hooks.py /work/shared/data/locomo [--memories 10000] [--questions 60] [--host both]

On a temporary HOME that already has a Claude Code settings file: a database of ``--memories``
rows (each LoCoMo conversation's turns under its own agent, the rest filler rows under other
agents, all embedded with all-MiniLM-L6-v2 from PyPI), then per host and conversation:
``cpersona register HOST --hooks --agent-id <that conversation's agent>``, the server started
with the exact entry register wrote (stdin open, as a host keeps it), and the exact prompt-hook
command run through the shell for each question, timed from spawn to exit. Prints per host and
conversation: p50 / p95 ms per prompt (and, for scale, the p50 of a bare ``python -c pass``
through the same shell at the same time), the share of the conversation's questions (categories
1-4 with evidence) whose injection holds an evidence turn, and the share of the next
conversation's questions (asked of this agent) with no injection at all; plus what the
session-start hook injected (agent_id, profile, newest episode).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import minilm_models_dir, percentile, print_table  # noqa: E402
from benchmarks._locomo_data import Conversation, conversation_files  # noqa: E402
from cpersona.hosts.hooks_file import is_ours  # noqa: E402

MODEL = "all-minilm-l6-v2"
REF = re.compile(r"\[mem:(\d+)")
CLAUDE_SETTINGS = {"theme": "dark", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}


def host_input(host: str, event: str, session: str, **fields: Any) -> dict[str, Any]:
    """The JSON each host sends (docs/hosts-claude-code.md, docs/hosts-codex.md)."""
    names = {"session-start": "SessionStart", "prompt": "UserPromptSubmit"}
    data: dict[str, Any] = {
        "session_id": session,
        "transcript_path": None if host == "codex" else "/tmp/t.jsonl",
        "cwd": "/tmp",
        "hook_event_name": names[event],
        "permission_mode": "default",
    }
    if host == "codex":
        data.update(model="gpt-5", turn_id="turn-1")
    if event == "session-start":
        data["source"] = "startup"
    data.update(fields)
    return data


def fill(db: Path, models: Path, convs: list[Conversation], total: int) -> dict[str, dict[int, str]]:
    """Store every conversation under ``locomo-<name>`` and filler up to ``total`` rows; id -> dia_id per agent."""
    from cpersona.config import Settings
    from cpersona.memory import Memory
    from cpersona.storage.scope import Scope

    settings = Settings(
        db_path=db, embedding_model=MODEL, models_dir=models, update_check=False, auto_fetch_model=False
    )
    ids: dict[str, dict[int, str]] = {}
    with Memory(settings, self_calibration=False) as mem:
        if not mem.wait_until_ready(300):
            raise SystemExit(f"model did not load: {mem.embedding_status()}")
        stored = 0
        for conv in convs:
            agent = f"locomo-{conv.name}"
            for dia_id, content, stamp in conv.turns():
                mem.store(agent, content, msg_id=dia_id, timestamp=stamp)
                stored += 1
            mem.update_profile(agent, f"Memory of the conversations between {' and '.join(conv.speakers)}.")
            mem.archive_episode(
                agent, f"Read {len(conv.turns())} turns of {conv.name}; open: answer questions."
            )
        n = 0
        while stored < total:  # filler: the same turns again under other agents (other people's memories)
            for conv in convs:
                for dia_id, content, stamp in conv.turns():
                    if stored >= total:
                        break
                    mem.store(f"filler-{n}", content, msg_id=f"{conv.name}:{dia_id}", timestamp=stamp)
                    stored += 1
            n += 1
        print(f"stored {stored} memories; embedding them ...", file=sys.stderr)
        mem.drain_queue()
        for conv in convs:  # what self-calibration does on its own once the agent has grown
            mem.calibrate(f"locomo-{conv.name}")
        for conv in convs:
            rows = mem.storage.session().memories.list_recent(Scope(f"locomo-{conv.name}"), 10**9)
            ids[f"locomo-{conv.name}"] = {int(r["id"]): str(r["msg_id"]) for r in rows}
    return ids


def registered(
    home: Path, env: dict[str, str], host: str, agent: str
) -> tuple[dict[str, Any], dict[str, str]]:
    """Run register; return the server entry it wrote and the hook commands (host event -> command)."""
    done = subprocess.run(
        [str(Path(sys.executable).with_name("cpersona")), "register", host, "--hooks", "--agent-id", agent],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise SystemExit(f"register failed: {done.stderr}")
    if host == "claude-code":
        entry = json.loads((home / ".claude.json").read_text())["mcpServers"]["cpersona"]
        hooks = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]
    else:
        import tomllib

        entry = tomllib.loads((home / ".codex" / "config.toml").read_text())["mcp_servers"]["cpersona"]
        hooks = json.loads((home / ".codex" / "hooks.json").read_text())["hooks"]
    commands = {
        event: h["command"]
        for event, groups in hooks.items()
        for g in groups
        for h in g["hooks"]
        if is_ours(h["command"])
    }
    return entry, commands


def run_command(command: str, payload: dict[str, Any], env: dict[str, str]) -> tuple[float, str | None]:
    """(ms from spawn to exit, the injected context or None)."""
    start = time.perf_counter()
    done = subprocess.run(
        command, shell=True, input=json.dumps(payload).encode(), capture_output=True, env=env
    )
    ms = (time.perf_counter() - start) * 1000
    out = done.stdout.decode().strip()
    return ms, (json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else None)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("locomo", type=Path, help="folder of LoCoMo conversation files (*.json)")
    parser.add_argument("--memories", type=int, default=10_000, help="rows in the database (default 10000)")
    parser.add_argument(
        "--questions", type=int, default=60, help="questions per conversation and set (0: all)"
    )
    parser.add_argument("--host", choices=("claude-code", "codex", "both"), default="both")
    parser.add_argument("--conversations", nargs="*", help="conversation names (default: all in the folder)")
    args = parser.parse_args()
    convs = [Conversation.load(p) for p in conversation_files(args.locomo, args.conversations)]
    hosts = ["claude-code", "codex"] if args.host == "both" else [args.host]
    rows = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        home = tmp / "home"
        (home / ".claude").mkdir(parents=True)
        (home / ".claude" / "settings.json").write_text(json.dumps(CLAUDE_SETTINGS))
        (tmp / "xdg").mkdir(mode=0o700)
        models = minilm_models_dir(tmp)
        db = tmp / "memory.db"
        t0 = time.perf_counter()
        ids = fill(db, models, convs, args.memories)
        print(f"filled and embedded in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        base = {k: v for k, v in os.environ.items() if not k.startswith("CPERSONA_")}
        base.update(HOME=str(home), XDG_RUNTIME_DIR=str(tmp / "xdg"))
        reg_env = {
            **base,
            "CPERSONA_DB_PATH": str(db),
            "CPERSONA_EMBEDDING_MODEL": MODEL,
            "CPERSONA_MODELS_DIR": str(models),
            "CPERSONA_UPDATE_CHECK": "false",
            "CPERSONA_AUTO_FETCH_MODEL": "false",
        }
        for host in hosts:
            for index, conv in enumerate(convs):
                agent = f"locomo-{conv.name}"
                other = convs[(index + 1) % len(convs)]
                entry, commands = registered(home, reg_env, host, agent)
                server = subprocess.Popen(
                    [entry["command"], *entry["args"]],
                    env={**base, **entry["env"]},
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=(tmp / f"serve-{host}-{conv.name}.log").open("wb"),
                )
                try:
                    rows.append(measure(host, conv, other, agent, commands, ids[agent], base, args.questions))
                    print("measured:", rows[-1], file=sys.stderr, flush=True)
                finally:
                    if server.stdin is not None:
                        server.stdin.close()
                    server.wait(30)
    load = os.getloadavg()
    print(
        f"load average during the run: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} CPUs"
    )
    print_table(
        [
            "host",
            "conversation",
            "prompts",
            "p50 ms",
            "p95 ms",
            "bare python p50",
            "evidence injected",
            "empty on other",
            "start",
        ],
        rows,
    )
    return 0


def measure(
    host: str,
    conv: Conversation,
    other: Conversation,
    agent: str,
    commands: dict[str, str],
    dia_of: dict[int, str],
    env: dict[str, str],
    limit: int,
) -> list[Any]:
    """One host × conversation: warm-up, session start, the questions, the other conversation's questions."""
    prompt_cmd = commands["UserPromptSubmit"]
    socket = Path(shlex.split(prompt_cmd)[shlex.split(prompt_cmd).index("--socket") + 1])
    deadline = time.monotonic() + 120
    while not socket.exists():  # the server listens once it has started
        if time.monotonic() > deadline:
            raise SystemExit(f"the server never opened {socket}")
        time.sleep(0.1)
    for _ in range(3):  # the server's first recalls load the model and settle its kernel
        run_command(prompt_cmd, host_input(host, "prompt", "warm", prompt="warm-up question"), env)
    _, start_text = run_command(commands["SessionStart"], host_input(host, "session-start", "s"), env)
    start_ok = (
        bool(start_text) and f'"{agent}"' in start_text and "Profile:" in start_text and "ep:" in start_text
    )
    real = conv.real()[:limit] if limit else conv.real()
    negatives = other.negatives_for(conv)[:limit] if limit else other.negatives_for(conv)
    bare = []  # what the machine charges any Python start right now: the floor under every hook figure
    for _ in range(20):
        start = time.perf_counter()
        subprocess.run(f"{shlex.quote(sys.executable)} -c pass", shell=True, env=env)
        bare.append((time.perf_counter() - start) * 1000)
    times, hits = [], 0
    for qa in real:
        ms, text = run_command(prompt_cmd, host_input(host, "prompt", "s", prompt=qa["question"]), env)
        times.append(ms)
        found = {dia_of.get(int(i)) for i in REF.findall(text or "")}
        hits += bool(found & set(qa["evidence"]))
    empty = 0
    for question in negatives:
        ms, text = run_command(prompt_cmd, host_input(host, "prompt", "s", prompt=question), env)
        times.append(ms)
        empty += text is None
    return [
        host,
        conv.name,
        len(times),
        round(percentile(times, 50), 1),
        round(percentile(times, 95), 1),
        round(percentile(bare, 50), 1),
        f"{hits / max(1, len(real)):.0%} of {len(real)}",
        f"{empty / max(1, len(negatives)):.0%} of {len(negatives)}",
        "agent_id, profile, episode" if start_ok else "MISSING",
    ]


if __name__ == "__main__":
    raise SystemExit(main())
