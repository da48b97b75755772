"""The ``cpersona`` console script run as a subprocess on a temporary database (keyword-only)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cpersona.cli.main import build_parser, command_names, format_recall

pytestmark = pytest.mark.slow


def executable() -> str:
    beside = Path(sys.executable).with_name("cpersona")
    return str(beside) if beside.exists() else (shutil.which("cpersona") or "cpersona")


def run(
    tmp_path: Path, *args: str, stdin: str | None = None, **env_extra: str
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CPERSONA_", "EMBEDDING_"))}
    env.update(
        CPERSONA_DB_PATH=str(tmp_path / "memory.db"),
        CPERSONA_MODELS_DIR=str(tmp_path / "models"),
        CPERSONA_EMBEDDING_MODE="none",
        CPERSONA_UPDATE_CHECK="false",
        CPERSONA_AUTO_FETCH_MODEL="false",
        CPERSONA_OPERATING_CONTEXT="off",
    )
    env.update(env_extra)
    return subprocess.run(
        [executable(), *args],
        env=env,
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_store_recall_stats(tmp_path: Path) -> None:
    first = run(tmp_path, "store", "cli-agent", "Zebra migration across the Serengeti follows the rains")
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("stored mem:")
    assert run(tmp_path, "store", "cli-agent", "A zebra crossing was repainted downtown").returncode == 0
    assert (
        run(
            tmp_path, "store", "cli-agent", "Billing migration finished on Tuesday", "--project", "P"
        ).returncode
        == 0
    )
    again = run(tmp_path, "store", "cli-agent", "Zebra migration across the Serengeti follows the rains")
    assert again.returncode == 0 and again.stdout.startswith("skipped")
    rejected = run(tmp_path, "store", "cli-agent", "   ")
    assert rejected.returncode == 1 and "rejected" in rejected.stderr
    piped = run(
        tmp_path, "store", "cli-agent", "-", "--msg-id", "stdin-1", "--json", stdin="from standard input\n"
    )
    assert json.loads(piped.stdout)["result"] == "stored"

    recall = run(tmp_path, "recall", "cli-agent", "zebra migration Serengeti rains")
    assert recall.returncode == 0, recall.stderr
    lines = recall.stdout.strip().splitlines()
    assert "best match" in lines[0]
    assert lines[-1].startswith("★ best") and "Serengeti" in lines[-1]
    assert sum(line.startswith("★ best") for line in lines) == 1
    assert "rsf" in lines[-1]  # the signal (default fusion) and score are shown

    as_json = json.loads(run(tmp_path, "recall", "cli-agent", "zebra", "--json").stdout)
    assert as_json["ok"] is True and as_json["results"]

    stats = run(tmp_path, "stats")
    assert stats.returncode == 0 and "memories: 4" in stats.stdout
    stats_json = json.loads(run(tmp_path, "stats", "--json").stdout)
    assert stats_json["counts"]["memories"] == 4


def test_bad_environment_value_exits_2_with_one_line(tmp_path: Path) -> None:
    done = run(tmp_path, "stats", CPERSONA_RRF_K="not-a-number")
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "CPERSONA_RRF_K" in done.stderr
    assert not (tmp_path / "memory.db").exists()


@pytest.mark.parametrize("command", ["stats", "serve"])
def test_unusable_database_exits_1_with_one_line(tmp_path: Path, command: str) -> None:
    not_sqlite = tmp_path / "notes.txt"
    not_sqlite.write_text("a shopping list, not a database")
    done = run(tmp_path, command, CPERSONA_DB_PATH=str(not_sqlite))
    assert done.returncode == 1 and done.stdout == ""
    lines = [line for line in done.stderr.strip().splitlines() if "cannot open the database" in line]
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert not_sqlite.read_text() == "a shopping list, not a database"


def test_bare_command_serves_stdio_and_keeps_stdout_clean(tmp_path: Path) -> None:
    # With stdin closed at once, the stdio server must exit cleanly having written nothing to stdout.
    done = run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""


def test_module_entry_point(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cpersona", "--version"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.startswith("cpersona ")


def test_parser_knows_the_commands() -> None:
    names = command_names(build_parser())
    assert {"serve", "store", "recall", "stats"} <= set(names)
    args = build_parser().parse_args(["serve", "--transport", "streamable-http", "--port", "9000"])
    assert (args.transport, args.port) == ("streamable-http", 9000)


def test_recall_output_says_keyword_only_from_search_vector(tmp_path: Path) -> None:
    # The header reads what recall returns (search.vector), in a real keyword-only run and both ways.
    recall = run(tmp_path, "recall", "cli-agent", "anything")
    assert recall.returncode == 0 and "keyword-only" in recall.stdout.splitlines()[0]
    vector_ran = {"results": [], "search": {"vector": True, "keyword": "fts"}}
    assert "keyword-only" not in format_recall(vector_ran)[0]
    assert "keyword-only" in format_recall({"results": [], "search": {"vector": False, "keyword": "fts"}})[0]


def test_acl_add_client_prints_the_token_once_and_list_hides_hashes(tmp_path: Path) -> None:
    acl = tmp_path / "acl.toml"
    added = run(tmp_path, "acl", "add-client", "bot", "--read", "a,b", "--write", "b", "--file", str(acl))
    assert added.returncode == 0, added.stderr
    token = added.stdout.strip()
    assert len(token) >= 32 and "\n" not in token
    text = acl.read_text()
    assert token not in text and "[clients.bot]" in text
    listed = run(tmp_path, "acl", "list", CPERSONA_ACL_FILE=str(acl))
    assert listed.returncode == 0 and "bot" in listed.stdout and "a=read, b=write" in listed.stdout
    from cpersona.acl import hash_token

    assert hash_token(token) not in listed.stdout and hash_token(token)[:8] in listed.stdout
    again = run(tmp_path, "acl", "add-client", "bot", "--read", "a", "--file", str(acl))
    assert again.returncode == 1 and "already exists" in again.stderr
    none = run(tmp_path, "acl", "add-client", "other", "--file", str(acl))
    assert none.returncode == 2 and "at least one grant" in none.stderr
