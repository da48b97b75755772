"""The hook command (`python -S …/cpersona/hooks/launch.py`), run as the host runs it, without a server: the
in-process keyword-only answer, and every failure ending in exit 0, no injection and one log line."""

from __future__ import annotations

import socket
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from cpersona.config import Settings
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.hooks.answer import COMPACTED, prompt_msg_id
from cpersona.hooks.endpoint import socket_path
from cpersona.hosts.hooks_file import is_ours
from cpersona.memory import Memory
from tests.hosts.hook_helpers import claude_input, hook_argv, injected, run_hook


@pytest.fixture
def place(tmp_path: Path) -> tuple[Path, Path]:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    return tmp_path / "memory.db", runtime


def _settings(db: Path) -> Settings:
    return Settings(db_path=db, embedding_mode="none", update_check=False, auto_fetch_model=False)


@pytest.fixture
def stocked(place: tuple[Path, Path]) -> tuple[Path, Path]:
    """A database where alice has memories, a profile and an episode (keyword-only: no model)."""
    db, runtime = place
    with Memory(_settings(db), backend=NoEmbeddings(), start_background=False) as memory:
        memory.store("alice", "We chose PostgreSQL 16 for the billing service after the load test.")
        memory.store("alice", "The deploy key for staging rotates every ninety days.")
        memory.store("bob", "Bob's billing service runs on MySQL.")
        memory.update_profile("alice", "Alice's coding agent; terse answers, tests first.")
        memory.archive_episode("alice", "Migrated the billing schema; open: the invoice export.")
    return db, runtime


def _log(tmp_path: Path) -> Path:
    return tmp_path / "hooks.log"


def test_prompt_injects_matching_memories_refs_included(stocked: tuple[Path, Path], tmp_path: Path) -> None:
    db, runtime = stocked
    log = _log(tmp_path)
    done = run_hook(
        hook_argv("prompt", db=db, runtime=runtime, extra=("--log", str(log))),
        claude_input("prompt", prompt="which database did we choose for billing?"),
    )
    assert done.returncode == 0
    text = injected(done)
    assert text is not None and "PostgreSQL 16" in text and "[mem:1" in text
    assert "MySQL" not in text  # bob's rows are not alice's
    assert len(text) <= 1500
    assert "answered in-process, keyword-only" in log.read_text()  # no server: said once in the log


def test_prompt_with_nothing_relevant_injects_nothing(stocked: tuple[Path, Path]) -> None:
    db, runtime = stocked
    done = run_hook(
        hook_argv("prompt", db=db, runtime=runtime), claude_input("prompt", prompt="zebra giraffe")
    )
    assert done.returncode == 0 and done.stdout == b""


def test_session_start_names_the_agent_with_profile_and_newest_episode(stocked: tuple[Path, Path]) -> None:
    db, runtime = stocked
    done = run_hook(hook_argv("session-start", db=db, runtime=runtime), claude_input("session-start"))
    text = injected(done)
    assert text is not None
    assert 'agent_id is "alice"' in text
    assert "terse answers, tests first" in text
    assert "invoice export" in text and "ep:1" in text
    assert len(text) <= 3000


def test_compaction_marker_reminds_once(stocked: tuple[Path, Path]) -> None:
    db, runtime = stocked
    pre = run_hook(hook_argv("pre-compact", db=db, runtime=runtime), claude_input("pre-compact"))
    assert pre.returncode == 0 and pre.stdout == b""  # PreCompact output reaches no model
    first = run_hook(
        hook_argv("prompt", db=db, runtime=runtime), claude_input("prompt", prompt="zebra giraffe")
    )
    assert injected(first) == COMPACTED
    second = run_hook(
        hook_argv("prompt", db=db, runtime=runtime), claude_input("prompt", prompt="zebra giraffe")
    )
    assert second.stdout == b""
    other = run_hook(
        hook_argv("prompt", db=db, runtime=runtime), claude_input("prompt", session="sess-2", prompt="zebra")
    )
    assert other.stdout == b""  # another session was not compacted


def test_captured_prompts_are_stored_once_verbatim(stocked: tuple[Path, Path]) -> None:
    db, runtime = stocked
    argv = hook_argv("prompt", db=db, runtime=runtime, extra=("--capture-prompts",))
    prompt = "Remember: the  invoice export  uses CSV."
    for _ in range(2):
        assert run_hook(argv, claude_input("prompt", prompt=prompt)).returncode == 0
    with Memory(_settings(db), backend=NoEmbeddings(), start_background=False) as memory:
        rows = [
            r for r in memory.list_memories("alice", limit=50)["items"] if r["msg_id"].startswith("hook:")
        ]
    assert [r["content"] for r in rows] == [prompt]
    assert rows[0]["msg_id"] == prompt_msg_id("sess-1", prompt)


def test_codex_input_is_understood(stocked: tuple[Path, Path]) -> None:
    db, runtime = stocked
    codex = {
        "session_id": "thread-1",
        "turn_id": "turn-1",
        "transcript_path": None,
        "cwd": "/tmp",
        "hook_event_name": "UserPromptSubmit",
        "model": "gpt-5",
        "permission_mode": "default",
        "prompt": "which database did we choose for billing?",
    }
    done = run_hook(hook_argv("prompt", db=db, runtime=runtime, host="codex"), codex)
    assert "PostgreSQL 16" in (injected(done) or "")


# -- never blocks: exit 0, nothing injected, one log line --------------------------------------


@pytest.mark.parametrize(
    ("stdin", "said"),
    [
        (b"{not json", "not JSON"),
        (b"", "no input"),
        (b"[1, 2]", "not an object"),
        (b'{"prompt": 5, "hook_event_name": "UserPromptSubmit"}', "'prompt' is int"),
        (b'{"hook_event_name": "Stop"}', "this hook handles UserPromptSubmit"),
        (b"\xff\xfe", "not JSON"),
        (b'{"prompt": "' + b"x" * 1_100_000 + b'"}', "over the 1,000,000-byte limit"),
    ],
)
def test_bad_input_never_blocks(stocked: tuple[Path, Path], tmp_path: Path, stdin: bytes, said: str) -> None:
    db, runtime = stocked
    log = _log(tmp_path)
    done = run_hook(hook_argv("prompt", db=db, runtime=runtime, extra=("--log", str(log))), stdin)
    assert (done.returncode, done.stdout) == (0, b"")
    lines = log.read_text().splitlines()
    assert len(lines) == 1 and said in lines[0] and "nothing injected" in lines[0]


def test_missing_database_never_blocks_and_creates_nothing(place: tuple[Path, Path], tmp_path: Path) -> None:
    db, runtime = place
    log = _log(tmp_path)
    done = run_hook(
        hook_argv("session-start", db=db, runtime=runtime, extra=("--log", str(log))),
        claude_input("session-start"),
    )
    assert (done.returncode, done.stdout) == (0, b"")
    assert f"no database at {db}" in log.read_text()
    assert not db.exists()


def test_bad_arguments_never_block(stocked: tuple[Path, Path]) -> None:
    done = run_hook([*hook_argv("prompt", db=stocked[0], runtime=stocked[1])[:4], "no-such-event"], b"{}")
    assert (done.returncode, done.stdout) == (0, b"")


def test_locked_database_gives_up_within_budget(stocked: tuple[Path, Path], tmp_path: Path) -> None:
    db, runtime = stocked
    log = _log(tmp_path)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        done = run_hook(
            hook_argv(
                "prompt",
                db=db,
                runtime=runtime,
                extra=("--capture-prompts", "--budget", "1.5", "--log", str(log)),
            ),
            claude_input("prompt", prompt="which database did we choose for billing?"),
        )
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert (done.returncode, done.stdout) == (0, b"")
    text = log.read_text()
    assert len(text.splitlines()) == 1 and "nothing injected" in text


@pytest.fixture
def silent_server(stocked: tuple[Path, Path]) -> Iterator[Path]:
    """A listener on the hook socket that accepts and never answers (a server stuck in a recall)."""
    db, runtime = stocked
    path = socket_path(runtime, str(db))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(4)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield path
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()


def test_slow_server_past_budget_never_blocks(
    stocked: tuple[Path, Path], silent_server: Path, tmp_path: Path
) -> None:
    db, runtime = stocked
    log = _log(tmp_path)
    done = run_hook(
        hook_argv("prompt", db=db, runtime=runtime, extra=("--budget", "0.5", "--log", str(log))),
        claude_input("prompt", prompt="which database did we choose for billing?"),
    )
    assert (done.returncode, done.stdout) == (0, b"")
    assert "did not answer within 0.5 s, nothing injected" in log.read_text()


def test_the_module_form_answers_too(stocked: tuple[Path, Path]) -> None:
    # `python -m cpersona.hooks …` is the same hook with site's start-up; written by hand, it is still ours.
    db, runtime = stocked
    argv = hook_argv("prompt", db=db, runtime=runtime)
    done = run_hook(
        [argv[0], "-m", "cpersona.hooks", *argv[3:]], claude_input("prompt", prompt="billing database")
    )
    assert "PostgreSQL 16" in (injected(done) or "")
    assert is_ours(" ".join([argv[0], "-m", "cpersona.hooks", *argv[3:]]))


def test_session_start_after_compaction_reminds_to_archive(stocked: tuple[Path, Path]) -> None:
    # Claude Code starts the session again with source "compact" after compacting it.
    db, runtime = stocked
    done = run_hook(
        hook_argv("session-start", db=db, runtime=runtime), claude_input("session-start", source="compact")
    )
    text = injected(done) or ""
    assert COMPACTED in text and 'agent_id is "alice"' in text
