"""Long commands are never silent (issue 35): a progress bar in whole numbers, and on Ctrl-C what was
committed, that running the command again finishes the job, and exit 130; the run again does."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROWS = 20_000


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CPERSONA_", "EMBEDDING_"))}
    env.update(
        CPERSONA_DB_PATH=str(tmp / "memory.db"),
        CPERSONA_EMBEDDING_MODE="none",
        CPERSONA_UPDATE_CHECK="false",
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


def _export_file(path: Path, rows: int = ROWS) -> Path:
    # An export file as `cpersona export` writes it (the format is docs/tools.md#export_memories').
    stamp = "2026-11-01T10:00:00.000000Z"
    header = {
        "type": "header",
        "format": "cpersona-export",
        "version": 1,
        "exported_at": stamp,
        "source_schema_version": 6,
        "agent_id": None,
        "include_embeddings": False,
        "embedding_model": None,
        "embedding_dim": None,
        "counts": {"memories": rows, "episodes": 0, "profiles": 0},
    }
    with path.open("w", encoding="utf-8") as out:
        out.write(json.dumps(header) + "\n")
        for i in range(rows):
            row = {
                "type": "memory",
                "source_id": i + 1,
                "agent_id": "big",
                "project_id": "",
                "channel": "",
                "msg_id": "",
                "content": f"memory number {i} about topic {i % 97}",
                "source": None,
                "metadata": None,
                "timestamp": stamp,
                "created_at": stamp,
                "recall_count": 0,
                "last_recalled_at": None,
                "locked": False,
            }
            out.write(json.dumps(row) + "\n")
    return path


def _cpersona(*args: str) -> list[str]:
    return [sys.executable, "-m", "cpersona", *args]


@pytest.mark.slow
def test_an_interrupted_import_says_what_it_kept_and_the_run_again_finishes(tmp_path: Path) -> None:
    source = _export_file(tmp_path / "big.jsonl")
    env = _env(tmp_path)
    proc = subprocess.Popen(
        _cpersona("import", str(source)), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stderr is not None
    said = b""
    deadline = time.monotonic() + 120
    while b" records" not in said:  # the bar is up: the import is under way
        assert time.monotonic() < deadline and proc.poll() is None, said
        if select.select([proc.stderr], [], [], 0.2)[0]:
            said += os.read(proc.stderr.fileno(), 65536)
    proc.send_signal(signal.SIGINT)  # what one Ctrl-C in the terminal sends
    out, err = proc.communicate(timeout=120)
    text = (said + err).decode()
    assert proc.returncode == 130, text
    assert "stopping after the current batch" in text
    line = next(x for x in text.splitlines() if "was cancelled after" in x)
    kept = int(line.split("was cancelled after ")[1].split(" of ")[0].replace(",", ""))
    assert 0 < kept < ROWS and f"of {ROWS:,} records" in line
    assert "again finishes the job" in text
    assert text.count("again finishes the job") == 1  # each hint once
    # The bar counts whole records ("4000/20000"), never "4000.0/20000.0".
    assert f"/{ROWS}" in text and ".0/" not in text
    again = subprocess.run(
        _cpersona("import", "--quiet", str(source)), env=env, capture_output=True, text=True, timeout=300
    )
    assert again.returncode == 0, again.stderr
    assert f"imported: {ROWS - kept} memories" in again.stdout
    assert f"already present (skipped): {kept} memories" in again.stdout


@pytest.mark.slow
def test_a_command_that_fails_at_once_shows_no_empty_bar(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    done = subprocess.run(
        _cpersona("import", str(bad)), env=_env(tmp_path), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1
    assert "records" not in done.stderr and "it/s" not in done.stderr, done.stderr
    assert done.stderr.startswith("cpersona: ")


@pytest.mark.slow
def test_calibrate_with_no_agent_of_ten_memories_says_so(tmp_path: Path, minilm_models_dir: Path) -> None:
    env = _env(
        tmp_path,
        CPERSONA_EMBEDDING_MODE="onnx",
        CPERSONA_EMBEDDING_MODEL="all-minilm-l6-v2",
        CPERSONA_MODELS_DIR=str(minilm_models_dir),
    )
    for text in ("Ana prefers short commit messages", "Bob takes the train"):
        stored = subprocess.run(
            _cpersona("store", "ana", text), env=env, capture_output=True, text=True, timeout=120
        )
        assert stored.returncode == 0, stored.stderr
    done = subprocess.run(_cpersona("calibrate"), env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "needs 10 memories and no agent has that many yet (the most is 2)" in done.stdout
    assert "is calibrated and current" not in done.stdout


@pytest.mark.slow
def test_reembed_shows_its_progress(tmp_path: Path, minilm_models_dir: Path) -> None:
    rows = 800
    source = _export_file(tmp_path / "rows.jsonl", rows)
    keyword_only = _env(tmp_path)
    imported = subprocess.run(
        _cpersona("import", "--quiet", str(source)), env=keyword_only, capture_output=True, timeout=120
    )
    assert imported.returncode == 0, imported.stderr
    env = _env(
        tmp_path,
        CPERSONA_EMBEDDING_MODE="onnx",
        CPERSONA_EMBEDDING_MODEL="all-minilm-l6-v2",
        CPERSONA_MODELS_DIR=str(minilm_models_dir),
        CPERSONA_MODEL_SHARING="off",
    )
    done = subprocess.run(_cpersona("reembed"), env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert f"re-embedded {rows} of {rows} queued rows" in done.stdout
    # The bar (stderr) counted the rows in whole numbers up to the total.
    assert f"/{rows} [" in done.stderr and " rows/s" in done.stderr and ".0/" not in done.stderr
