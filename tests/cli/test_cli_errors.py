"""CLI defects a new user meets (issue 17, defect 8): clear messages and exit codes, never a traceback."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_cli_commands import executable, run

from cpersona.cli.main import EXIT_CONFIG
from cpersona.config import Settings
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.http.listen import EXIT_BIND
from cpersona.memory import Memory

pytestmark = pytest.mark.slow


def no_traceback(done: subprocess.CompletedProcess[str]) -> bool:
    return "Traceback" not in done.stderr and "Traceback" not in done.stdout


# -- reembed -----------------------------------------------------------------------------------


def test_reembed_without_the_model_is_one_clear_line(tmp_path: Path) -> None:
    assert run(tmp_path, "store", "a", "one row").returncode == 0
    done = run(
        tmp_path, "reembed", CPERSONA_EMBEDDING_MODE="onnx", CPERSONA_EMBEDDING_MODEL="all-minilm-l6-v2"
    )
    assert done.returncode == 1 and no_traceback(done), done.stderr
    assert "not installed" in done.stderr and "cpersona fetch-model all-minilm-l6-v2" in done.stderr
    as_json = run(
        tmp_path,
        "reembed",
        "--json",
        CPERSONA_EMBEDDING_MODE="onnx",
        CPERSONA_EMBEDDING_MODEL="all-minilm-l6-v2",
    )
    result = json.loads(as_json.stdout)
    assert as_json.returncode == 1 and result["ok"] is False and result["fault"] == "model_missing"


def test_reembed_with_an_unsupported_dimension_is_a_configuration_error(
    tmp_path: Path, minilm_models_dir: Path
) -> None:
    done = run(
        tmp_path,
        "reembed",
        CPERSONA_EMBEDDING_MODE="onnx",
        CPERSONA_EMBEDDING_MODEL="all-minilm-l6-v2",
        CPERSONA_MODELS_DIR=str(minilm_models_dir),
        CPERSONA_EMBEDDING_DIM="7",
    )
    assert done.returncode == EXIT_CONFIG and no_traceback(done), done.stderr
    assert "CPERSONA_EMBEDDING_DIM=7" in done.stderr and "384" in done.stderr


def test_reembed_counts_what_it_found_queued(tmp_path: Path, minilm_models_dir: Path) -> None:
    # Seeded in-process, keyword-only (0 vectors): reembed is under test here, store in test_cli_commands.
    settings = Settings(
        db_path=tmp_path / "memory.db", embedding_mode="none", update_check=False, auto_fetch_model=False
    )
    with Memory(settings, backend=NoEmbeddings(), start_background=False) as memory:
        for i in range(5):
            assert memory.store("a", f"row {i}")["result"] == "stored"
    env = {
        "CPERSONA_EMBEDDING_MODE": "onnx",
        "CPERSONA_EMBEDDING_MODEL": "all-minilm-l6-v2",
        "CPERSONA_MODELS_DIR": str(minilm_models_dir),
    }
    # A checkup --fix queues the rows first (as a server would): reembed then finds them waiting.
    assert run(
        tmp_path, "checkup", "--fix", "--checks", "vectors", CPERSONA_EMBEDDING_MODE="onnx"
    ).returncode in (
        0,
        1,
        3,
    )
    done = run(tmp_path, "reembed", "--json", **env)
    result = json.loads(done.stdout)
    assert done.returncode == 0 and result["processed"] == 5 and result["queued"] == 5, result
    assert result["remaining"] == 0
    again = run(tmp_path, "reembed", **env)
    assert again.returncode == 0 and "re-embedded 0 of 0" in again.stdout, again.stdout


# -- export / import paths ---------------------------------------------------------------------


def test_export_dash_is_standard_output_and_import_dash_standard_input(tmp_path: Path) -> None:
    assert run(tmp_path, "store", "a", "travels through a pipe").returncode == 0
    out = run(tmp_path, "export", "-", "--quiet")
    assert out.returncode == 0 and no_traceback(out), out.stderr
    lines = [json.loads(x) for x in out.stdout.splitlines()]
    assert lines[0]["type"] == "header" and lines[1]["content"] == "travels through a pipe"
    assert "exported 1 memory" in out.stderr  # the summary keeps out of the data
    assert not (tmp_path / "-").exists()
    other = tmp_path / "other"
    other.mkdir()
    back = run(other, "import", "-", "--agent", "b", stdin=out.stdout)
    assert back.returncode == 0 and "imported: 1 memory" in back.stdout, back.stderr


@pytest.mark.parametrize(
    ("path", "expect"),
    [
        ("/dev/stdout", "use - "),
        ("/proc/x.jsonl", "cannot create"),
        ("README.md/x.jsonl", "is a file, not a directory"),
        ("x" * 300 + ".jsonl", "too long"),
    ],
)
def test_export_to_impossible_places_says_why(tmp_path: Path, path: str, expect: str) -> None:
    (tmp_path / "README.md").write_text("# not a folder\n")
    assert run(tmp_path, "store", "a", "row").returncode == 0
    done = subprocess.run(
        [executable(), "export", path, "--quiet"],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and no_traceback(done), done.stderr
    assert expect in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_import_from_impossible_places_says_why(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# not a folder\n")
    for path, expect in (
        ("README.md/x.jsonl", "is a file, not a directory"),
        ("/proc", "is a directory"),
        ("/dev/null", "not a regular file"),
    ):
        done = run(tmp_path, "import", path if path.startswith("/") else str(tmp_path / path))
        assert done.returncode == 1 and no_traceback(done), done.stderr
        assert expect in done.stderr or "empty" in done.stderr, (path, done.stderr)


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "pipe.jsonl"
    os.mkfifo(path)
    yield path


def test_export_force_never_replaces_a_device_or_fifo(tmp_path: Path, fifo: Path) -> None:
    # Own nodes only: a regression must not replace the machine's /dev/full (issue 17 saw that).
    targets = [str(fifo)]
    try:
        os.mknod(tmp_path / "full", stat.S_IFCHR | 0o666, os.makedev(1, 7))  # what /dev/full is
        targets.append(str(tmp_path / "full"))
    except PermissionError:
        pass  # creating a device node needs root; the FIFO case still runs
    assert run(tmp_path, "store", "a", "row").returncode == 0
    for target in targets:
        before = os.stat(target)
        done = run(tmp_path, "export", target, "--force", "--quiet")
        assert done.returncode == 1 and no_traceback(done), done.stderr
        assert "not a regular file" in done.stderr and "use -" in done.stderr
        after = os.stat(target)
        assert stat.S_IFMT(after.st_mode) == stat.S_IFMT(before.st_mode) and after.st_ino == before.st_ino


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CPERSONA_", "EMBEDDING_"))}
    env.update(
        CPERSONA_DB_PATH=str(tmp_path / "memory.db"),
        CPERSONA_MODELS_DIR=str(tmp_path / "models"),
        CPERSONA_EMBEDDING_MODE="none",
        CPERSONA_UPDATE_CHECK="false",
        CPERSONA_AUTO_FETCH_MODEL="false",
        CPERSONA_OPERATING_CONTEXT="off",
    )
    return env


# -- a port already taken ----------------------------------------------------------------------


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


@pytest.mark.parametrize("command", ["ui", "serve"])
def test_a_taken_port_is_said_before_any_url_with_its_own_exit_code(
    tmp_path: Path, taken_port: int, command: str
) -> None:
    args = ["ui", "--port", str(taken_port)]
    extra = {}
    if command == "serve":
        args = ["serve", "--transport", "streamable-http", "--port", str(taken_port)]
        extra = {"CPERSONA_AUTH_TOKEN": "a-token-of-sixteen-chars"}
    done = run(tmp_path, *args, **extra)
    assert done.returncode == EXIT_BIND and EXIT_BIND not in (0, 1, 2, 3), done.stderr
    assert no_traceback(done), done.stderr
    assert f"port {taken_port}" in done.stderr and "already in use" in done.stderr
    assert "http://" not in done.stderr and "open " not in done.stderr, done.stderr
    assert not (tmp_path / "memory.db").exists()  # nothing was opened before the bind
