"""The user settings file: settings that stick without an environment variable (README.md#settings-file).

A TOML file of ``CPERSONA_*`` names and values, the same names and values as the environment
variables (README "Configuration"), at ``<user config dir>/settings.toml`` (``~/.config/cpersona/``
on Linux, platformdirs' choice elsewhere) or wherever ``CPERSONA_SETTINGS_FILE`` points. An MCP
host starts the server with almost none of the shell's environment, but the same user's settings
file is read all the same, so a choice written once (``cpersona fetch-model`` writes the model it
installed when none was chosen) holds for the shell, every host and ``cpersona register``.

The environment overrides the file, name by name. ``cpersona.config.Settings.from_env`` is the
only reader; it remembers where each value came from (``Settings.origins``), which ``doctor`` shows.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Collection, Mapping
from pathlib import Path

import platformdirs

from cpersona.core.atomic import atomic_text

#: The variable that moves the settings file (tests, several profiles on one account).
SETTINGS_FILE_VARIABLE = "CPERSONA_SETTINGS_FILE"
SETTINGS_FILE_NAME = "settings.toml"


class SettingsFileError(ValueError):
    """The settings file cannot be read as ``NAME = value`` lines; the message names the file."""


def settings_file_path(env: Mapping[str, str] | None = None) -> Path:
    """Where the settings file is (whether or not it exists)."""
    e = os.environ if env is None else env
    chosen = (e.get(SETTINGS_FILE_VARIABLE) or "").strip()
    if chosen:
        return Path(chosen).expanduser()
    return Path(platformdirs.user_config_dir("cpersona", appauthor=False)) / SETTINGS_FILE_NAME


def read_settings_file(path: Path, known: Collection[str] | None = None) -> dict[str, str]:
    """The file's settings as environment-style text values; {} when there is no file. A name not in
    ``known`` (when given: the settings table's variables) is refused."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise SettingsFileError(f"settings file {path}: {exc.strerror or exc}") from exc
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsFileError(f"settings file {path}: {exc}") from exc
    values: dict[str, str] = {}
    for name, value in table.items():
        if not name.startswith("CPERSONA_") or name == SETTINGS_FILE_VARIABLE:
            raise SettingsFileError(
                f"settings file {path}: {name!r} is not a setting (names are the CPERSONA_* variables)"
            )
        if isinstance(value, bool):  # before int: TOML's true is a Python bool, and bool is an int
            values[name] = "true" if value else "false"
        elif isinstance(value, str | int | float):
            values[name] = str(value)
        else:
            raise SettingsFileError(f"settings file {path}: {name} must be a string, number or boolean")
    unknown = sorted(set(values) - set(known)) if known is not None else []
    if unknown:
        raise SettingsFileError(f"settings file {path}: unknown setting {', '.join(unknown)}")
    return values


def save_setting(path: Path, name: str, value: str) -> None:
    """Set ``name = value`` in the file (created if missing), keeping its other settings."""
    values = read_settings_file(path)
    values[name] = value
    with atomic_text(path) as out:
        out.write(
            "# CPersona user settings: CPERSONA_* names, as in the environment (which overrides them).\n"
        )
        for key, text in values.items():
            out.write(
                f"{key} = {json.dumps(text, ensure_ascii=False)}\n"
            )  # a JSON string is a TOML basic string
