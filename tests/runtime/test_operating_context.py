"""The operator's context file: served whole or by section, re-read per call, malformed never fatal."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from cpersona.config import Settings
from cpersona.runtime import operating_context
from cpersona.server.app import base_instructions, instructions

CONTEXT = """\
# House rules for the agents of this machine
[rules]
language = "English"
never = ["commit secrets", "push to main"]

[team]
owner = "Ana"
since = 2024-03-01
"""


@pytest.fixture
def ctx_settings(tmp_path: Path) -> Settings:
    return Settings(
        db_path=tmp_path / "memory.db", operating_context_path=tmp_path / "ctx" / "operating-context.toml"
    )


def write(settings: Settings, text: str | bytes) -> Path:
    path = settings.operating_context_path
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_missing_file_is_ok_with_a_hint(ctx_settings: Settings) -> None:
    answer = operating_context.get(ctx_settings)
    assert answer["ok"] is True and answer["context"] is None and answer["enabled"] is True
    assert str(ctx_settings.operating_context_path) in answer["hint"]
    assert operating_context.instructions_block(ctx_settings) is None
    assert operating_context.problem(ctx_settings) is None
    assert instructions(ctx_settings) == base_instructions(ctx_settings)


def test_whole_file_and_one_section(ctx_settings: Settings) -> None:
    write(ctx_settings, CONTEXT)
    whole = operating_context.get(ctx_settings)
    assert whole["ok"] is True and whole["sections"] == ["rules", "team"]
    assert whole["context"]["rules"]["never"] == ["commit secrets", "push to main"]
    assert whole["context"]["team"]["since"] == "2024-03-01"  # TOML dates travel as ISO text
    team = operating_context.get(ctx_settings, "team")
    assert team["ok"] is True and team["section"] == "team" and team["context"]["owner"] == "Ana"


def test_unknown_section_names_the_sections(ctx_settings: Settings) -> None:
    write(ctx_settings, CONTEXT)
    answer = operating_context.get(ctx_settings, "budget")
    assert answer["ok"] is False and answer["error_code"] == "unknown_section"
    assert "'budget'" in answer["error"] and "rules, team" in answer["error"]


def test_edits_show_on_the_next_call_without_restart(ctx_settings: Settings) -> None:
    write(ctx_settings, CONTEXT)
    assert operating_context.get(ctx_settings, "team")["context"]["owner"] == "Ana"
    write(ctx_settings, CONTEXT.replace("Ana", "Bo"))
    assert operating_context.get(ctx_settings, "team")["context"]["owner"] == "Bo"


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ('[rules]\nlanguage = "English"\nnever = [unquoted]\n', 3),
        ("[rules]\nlanguage = \n", 2),
        ("a = 1\na = 2\n", 2),
        ("[rules\n", 1),
    ],
)
def test_malformed_file_reports_the_error_and_line(
    ctx_settings: Settings, text: str, line: int, caplog: pytest.LogCaptureFixture
) -> None:
    write(ctx_settings, text)
    answer = operating_context.get(ctx_settings)
    assert answer["ok"] is False and answer["error_code"] == "operating_context_invalid"
    assert "invalid TOML" in answer["error"] and answer["line"] == line
    problem = operating_context.problem(ctx_settings)
    assert problem is not None and f"line {line}" in problem
    with caplog.at_level(logging.WARNING, logger="cpersona.operating_context"):
        assert instructions(ctx_settings) == base_instructions(ctx_settings)  # left out, start-up goes on
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1


def test_unreadable_files_are_reported_not_raised(ctx_settings: Settings) -> None:
    write(ctx_settings, b'title = "caf\xe9"\n')
    answer = operating_context.get(ctx_settings)
    assert answer["ok"] is False and "UTF-8" in answer["error"]
    write(ctx_settings, "x = 1\n" + "#" * operating_context.MAX_FILE_BYTES)
    assert "limit" in operating_context.get(ctx_settings)["error"]
    ctx_settings.operating_context_path.unlink()
    ctx_settings.operating_context_path.mkdir()
    answer = operating_context.get(ctx_settings)
    assert answer["ok"] is False and "not a regular file" in answer["error"]


def test_off_switch_serves_nothing(ctx_settings: Settings) -> None:
    write(ctx_settings, CONTEXT)
    off = ctx_settings.with_overrides(operating_context=False)
    answer = operating_context.get(off, "rules")
    assert answer["ok"] is True and answer["enabled"] is False and answer["context"] is None
    assert instructions(off) == base_instructions(off)
    write(ctx_settings, "broken = [")
    assert operating_context.problem(off) is None


def test_instructions_carry_the_file(ctx_settings: Settings) -> None:
    write(ctx_settings, CONTEXT)
    text = instructions(ctx_settings)
    assert text.startswith(base_instructions(ctx_settings))
    assert 'never = ["commit secrets", "push to main"]' in text and "get_operating_context" in text
    write(ctx_settings, "notes = '''\n" + "n" * (operating_context.MAX_INSTRUCTION_CHARS * 2) + "\n'''\n")
    long = operating_context.instructions_block(ctx_settings)
    assert long is not None and len(long) < operating_context.MAX_INSTRUCTION_CHARS + 400
    assert "cut here" in long


@pytest.mark.parametrize("value", ["off", "false", "0", "no", "OFF"])
def test_off_switch_parses_like_every_boolean(value: str) -> None:
    assert Settings.from_env({"CPERSONA_OPERATING_CONTEXT": value}).operating_context is False


def test_path_setting(tmp_path: Path) -> None:
    path = tmp_path / "ctx.toml"
    assert Settings.from_env({"CPERSONA_OPERATING_CONTEXT_PATH": str(path)}).operating_context_path == path
    default = Settings.from_env({}).operating_context_path
    assert default == Path.home() / ".cpersona" / "operating-context.toml"


def test_a_non_boolean_switch_is_a_config_error() -> None:
    from cpersona.config import ConfigError

    with pytest.raises(ConfigError, match="CPERSONA_OPERATING_CONTEXT"):
        Settings.from_env({"CPERSONA_OPERATING_CONTEXT": "sometimes"})
