"""The user settings file: read once by Settings.from_env, overridden by the environment, shown by doctor."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cpersona.config import ConfigError, Settings
from cpersona.config.settings_file import read_settings_file, save_setting, settings_file_path


def _env(file: Path, **extra: str) -> dict[str, str]:
    return {"CPERSONA_SETTINGS_FILE": str(file), **extra}


def test_the_file_sets_what_the_environment_leaves_unset_and_says_where_each_came_from(
    tmp_path: Path,
) -> None:
    file = tmp_path / "settings.toml"
    file.write_text(
        'CPERSONA_EMBEDDING_MODEL = "all-minilm-l6-v2"\nCPERSONA_RECALL_PRECISION = "strict"\n'
        "CPERSONA_HTTP_PORT = 9000\nCPERSONA_UPDATE_CHECK = false\n"
    )
    settings = Settings.from_env(_env(file, CPERSONA_RECALL_PRECISION="lenient"))
    assert settings.embedding_model == "all-minilm-l6-v2"
    assert settings.http_port == 9000 and settings.update_check is False
    assert settings.recall_precision == "lenient"  # the environment overrides the file, name by name
    assert settings.settings_file == file
    assert settings.origins == {
        "embedding_model": f"settings file {file}",
        "http_port": f"settings file {file}",
        "update_check": f"settings file {file}",
        "recall_precision": "environment",
    }


def test_no_file_is_no_setting(tmp_path: Path) -> None:
    settings = Settings.from_env(_env(tmp_path / "absent.toml"))
    assert settings.origins == {} and settings.embedding_model == Settings().embedding_model


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("CPERSONA_EMBEDDING_MODEL = ", "settings file"),
        ('EMBEDDING = "x"\n', "is not a setting"),
        ('CPERSONA_NO_SUCH_THING = "x"\n', "unknown setting CPERSONA_NO_SUCH_THING"),
        ("CPERSONA_HTTP_PORT = -5\n", "CPERSONA_HTTP_PORT='-5': must be >= 0 (in the settings file"),
        (
            'CPERSONA_RECALL_PRECISION = "very"\n',
            "expected one of strict, balanced, lenient (in the settings file",
        ),
        ("CPERSONA_HTTP_PORT = [1]\n", "must be a string, number or boolean"),
    ],
)
def test_a_bad_file_is_refused_naming_the_file_and_the_setting(
    tmp_path: Path, text: str, complaint: str
) -> None:
    file = tmp_path / "settings.toml"
    file.write_text(text)
    with pytest.raises(ConfigError) as info:
        Settings.from_env(_env(file))
    assert complaint in str(info.value) and str(file) in str(info.value)


def test_save_keeps_the_other_settings(tmp_path: Path) -> None:
    file = tmp_path / "deeper" / "settings.toml"
    save_setting(file, "CPERSONA_RECALL_PRECISION", "strict")
    save_setting(file, "CPERSONA_EMBEDDING_MODEL", 'odd "name"')
    assert read_settings_file(file) == {
        "CPERSONA_RECALL_PRECISION": "strict",
        "CPERSONA_EMBEDDING_MODEL": 'odd "name"',
    }


def test_the_default_place_is_the_user_config_dir(tmp_path: Path) -> None:
    assert settings_file_path({}).name == "settings.toml"
    assert settings_file_path({}).parent.name == "cpersona"
    assert settings_file_path(_env(tmp_path / "x.toml")) == tmp_path / "x.toml"


def _cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("CPERSONA_", "EMBEDDING_"))}
    full.update(env, CPERSONA_UPDATE_CHECK="false")
    return subprocess.run(
        [sys.executable, "-m", "cpersona", *args], env=full, capture_output=True, text=True, timeout=120
    )


def test_doctor_shows_the_file_and_where_each_setting_came_from(tmp_path: Path) -> None:
    file = tmp_path / "settings.toml"
    file.write_text('CPERSONA_EMBEDDING_MODE = "none"\n')
    done = _cli(["doctor"], _env(file, CPERSONA_DB_PATH=str(tmp_path / "memory.db")))
    assert done.returncode == 0, done.stderr
    assert f"settings   file {file}\n" in done.stdout
    assert "CPERSONA_EMBEDDING_MODE=none  (settings file)" in done.stdout
    assert f"CPERSONA_DB_PATH={tmp_path / 'memory.db'}  (environment)" in done.stdout
    assert "docs/troubleshooting.md" in done.stdout


def test_fetch_model_does_not_override_a_model_chosen_in_the_environment(
    minilm_source_dir: Path, tmp_path: Path
) -> None:
    file = tmp_path / "settings.toml"
    env = _env(file, CPERSONA_EMBEDDING_MODEL="jina-v5-nano", CPERSONA_MODELS_DIR=str(tmp_path / "models"))
    done = _cli(["fetch-model", "all-minilm-l6-v2", "--from", str(minilm_source_dir)], env)
    assert done.returncode == 0, done.stderr
    assert not file.exists()
    assert "CPERSONA_EMBEDDING_MODEL from the environment" in done.stderr
