"""The README's Python example runs as written (extracted from README.md, run in a fresh interpreter)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def python_example() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Python API") :]
    found = re.search(r"```python\n(.*?)```", section, flags=re.DOTALL)
    assert found, "README's Python API section has no python block"
    return found.group(1)


def test_the_readme_names_the_public_import() -> None:
    assert "from cpersona import Memory" in python_example()


def test_the_default_models_licence_is_stated_beside_the_setup_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = readme[readme.index("## Set up on a fresh machine") : readme.index("Run the tests")]
    assert "CC BY-NC 4.0" in setup and "non-commercial" in setup
    # The Apache-2.0 route is one command after the install, and the choice sticks (the settings file).
    assert "Apache-2.0" in setup and "pip install -e . && cpersona fetch-model all-minilm-l6-v2" in setup
    assert "settings file" in setup


@pytest.mark.slow
def test_the_readme_python_example_runs_as_written(tmp_path: Path, minilm_models_dir: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CPERSONA_", "EMBEDDING_"))}
    env.update(
        CPERSONA_DB_PATH=str(tmp_path / "memory.db"),
        CPERSONA_MODELS_DIR=str(minilm_models_dir),
        CPERSONA_EMBEDDING_MODEL="all-minilm-l6-v2",
        CPERSONA_UPDATE_CHECK="false",
        HF_HUB_OFFLINE="1",
    )
    done = subprocess.run(
        [sys.executable, "-c", python_example()],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    assert "The staging database moved to port 5433" in done.stdout
    assert "'cosine'" in done.stdout  # the model was waited for: the vector arm found it
