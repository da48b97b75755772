"""Settings: the spec's names and defaults, aliases, bad values, the settings table and the README's."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
from pathlib import Path
from typing import Any

import pytest

from cpersona.config import ConfigError, Row, Settings, settings_table

ROOT = Path(__file__).resolve().parents[2]


def test_defaults_are_the_specs() -> None:
    s = Settings.from_env({})
    # rsf, not the spec's rrf: a measured departure (docs/decisions.md).
    assert (s.max_memories, s.recall_mode, s.rrf_k) == (None, "rsf", 60)
    assert (s.episode_decay_rate, s.episode_decay_floor) == (0.01, 0.5)
    assert (s.recent_recall_window_min, s.recent_recall_penalty) == (5.0, 1.0)
    assert (s.recall_preview_chars, s.max_content_length, s.max_profile_length) == (500, 16000, 2000)
    assert (s.embedding_mode, s.embedding_model) == ("onnx", "jina-v5-nano")
    assert (s.transport, s.http_host, s.http_port) == ("stdio", "127.0.0.1", 8402)
    assert s.fused_gate_enabled is True and s.confidence_enabled is False
    assert s.db_path.name == "memory.db"


def test_prefixed_names_win_over_aliases() -> None:
    s = Settings.from_env({"EMBEDDING_MODE": "http", "EMBEDDING_HTTP_URL": "http://127.0.0.1:1/embed"})
    assert s.embedding_mode == "http" and s.embedding_url == "http://127.0.0.1:1/embed"
    s = Settings.from_env({"EMBEDDING_MODE": "http", "CPERSONA_EMBEDDING_MODE": "none"})
    assert s.embedding_mode == "none"


@pytest.mark.parametrize(
    "env",
    [
        {"CPERSONA_MAX_MEMORIES": "lots"},
        {"CPERSONA_MAX_MEMORIES": "0"},
        {"CPERSONA_RECALL_MODE": "magic"},
        {"CPERSONA_EPISODE_PENALTY_ENABLED": "maybe"},
        {"CPERSONA_EPISODE_DECAY_RATE": "fast"},
        {"CPERSONA_TRANSPORT": "carrier-pigeon"},
        {"CPERSONA_EMBED_QUERY_OVERLAP": "sometimes"},
    ],
)
def test_bad_values_raise_a_config_error_naming_the_variable(env: dict[str, str]) -> None:
    name = next(iter(env))
    with pytest.raises(ConfigError, match=name):
        Settings.from_env(env)


def test_query_overlap_is_on_with_postgresql_unless_set() -> None:
    url = {"CPERSONA_DB_URL": "postgresql://u@localhost/db"}
    assert Settings.from_env({}).query_overlap is False  # auto, the SQLite file
    assert Settings.from_env(url).query_overlap is True  # auto, PostgreSQL
    for raw, value in (("auto", None), ("true", True), ("off", False)):
        s = Settings.from_env({**url, "CPERSONA_EMBED_QUERY_OVERLAP": raw})
        assert s.embed_query_overlap is value
    assert Settings.from_env({**url, "CPERSONA_EMBED_QUERY_OVERLAP": "false"}).query_overlap is False
    assert Settings.from_env({"CPERSONA_EMBED_QUERY_OVERLAP": "yes"}).query_overlap is True


def test_operating_context_off_switch() -> None:
    assert Settings.from_env({"CPERSONA_OPERATING_CONTEXT": "off"}).operating_context is False
    assert Settings.from_env({}).operating_context is True


def test_every_variable_read_is_in_the_readme_table() -> None:
    names = set(
        re.findall(
            r'"(CPERSONA_[A-Z_]+|EMBEDDING_[A-Z_]+)"',
            "".join(
                (ROOT / "cpersona" / "config" / name).read_text() for name in ("settings.py", "fields.py")
            ),
        )
    )
    readme = (ROOT / "README.md").read_text()
    missing = sorted(n for n in names if f"`{n}`" not in readme)
    assert names and missing == []


def test_db_url_selects_postgresql_and_refuses_other_schemes() -> None:
    from cpersona.config import ConfigError, Settings

    url = "postgresql://cpersona@db.example.com/cpersona?sslmode=verify-full"
    chosen = Settings.from_env({"CPERSONA_DB_URL": url, "CPERSONA_PG_VECTOR_INDEX": "exact"})
    assert chosen.db_url == url and chosen.pg_vector_index == "exact"
    assert Settings.from_env({}).db_url is None and Settings.from_env({}).pg_vector_index == "hnsw"
    for bad in ({"CPERSONA_DB_URL": "mysql://x/y"}, {"CPERSONA_PG_VECTOR_INDEX": "ivf"}):
        with pytest.raises(ConfigError):
            Settings.from_env(bad)


# -- the settings table ------------------------------------------------------------------------


def _load_table_generator() -> Any:
    spec = importlib.util.spec_from_file_location(
        "gen_config_table", ROOT / "scripts" / "gen_config_table.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CHOICE_ROWS = [row for row in settings_table() if row.choices]


def test_the_readme_configuration_table_is_generated_from_the_settings_table() -> None:
    generator = _load_table_generator()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert generator.BEGIN in readme and generator.END in readme, "README.md lost its generated table"
    stale = "README.md's configuration table is stale: run python scripts/gen_config_table.py"
    assert generator.render(readme) == readme, stale
    for row in settings_table():  # one line per variable, with its default and its doc
        line = next(line for line in readme.splitlines() if line.startswith(f"| `{row.var.name}`"))
        assert generator.default_cell(row) in line and row.var.doc in line


def test_every_field_is_a_row_once_and_every_variable_has_one_name() -> None:
    rows = settings_table()
    assert {row.attr for row in rows} == {f.name for f in dataclasses.fields(Settings)} - {
        "runtime_dir",
        "settings_file",  # where the values came from, not a value
        "origins",
    }
    names = [name for row in rows for name in (row.var.name, *row.var.aliases)]
    assert len(names) == len(set(names))
    assert all(row.var.name.startswith("CPERSONA_") and row.var.doc.strip() for row in rows)


@pytest.mark.parametrize("row", CHOICE_ROWS, ids=lambda row: row.var.name)
def test_a_choice_outside_its_list_is_refused_in_code_and_in_the_environment(row: Row) -> None:
    for build in (
        lambda: Settings(**{row.attr: "bogus"}),
        lambda: Settings.from_env({row.var.name: "bogus"}),
    ):
        with pytest.raises(ConfigError) as refused:
            build()
        message = str(refused.value)
        assert row.var.name in message and all(choice in message for choice in row.choices), message
    for choice in row.choices:  # every listed choice is accepted, in any case from the environment
        assert getattr(Settings.from_env({row.var.name: choice.upper()}), row.attr) == choice


def test_settings_built_in_code_are_held_to_the_same_bounds() -> None:
    with pytest.raises(ConfigError, match="CPERSONA_RECALL_MODE.*rsf, rrf, cascade"):
        Settings(recall_mode="bogus")  # type: ignore[arg-type]
    for bad in ({"rrf_k": 0}, {"context_weight": 1.5}, {"context_weight": float("nan")}, {"max_memories": 0}):
        with pytest.raises(ConfigError, match=r"CPERSONA_[A-Z_]+"):
            Settings(**bad)
    with pytest.raises(ConfigError, match="CPERSONA_TRANSPORT"):
        Settings().with_overrides(transport="carrier-pigeon")
    assert Settings(max_memories=None, http_port=0, context_weight=0.0).http_port == 0


def test_a_secret_value_is_never_echoed_in_the_error() -> None:
    with pytest.raises(ConfigError, match="CPERSONA_DB_URL") as refused:
        Settings.from_env({"CPERSONA_DB_URL": "mysql://admin:hunter2@db.example.com/x"})
    assert "hunter2" not in str(refused.value)
    with pytest.raises(ConfigError, match="CPERSONA_DB_URL") as refused:
        Settings(db_url="mysql://admin:hunter2@db.example.com/x")
    assert "hunter2" not in str(refused.value)


@pytest.mark.parametrize(
    "row", [r for r in settings_table() if r.default not in (None, ())], ids=lambda r: r.var.name
)
def test_each_default_written_out_reads_back_as_itself(row: Row) -> None:
    default = row.default
    text = ("true" if default else "false") if isinstance(default, bool) else str(default)
    assert getattr(Settings.from_env({row.var.name: text}), row.attr) == default
    assert row.problem(default) is None


@pytest.mark.parametrize("argv", [["serve", "--port", "-1"], ["ui", "--port", "-2"]])
def test_a_flag_outside_its_settings_bounds_is_a_configuration_error(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cpersona.cli.main import EXIT_CONFIG, main

    monkeypatch.setenv("CPERSONA_DB_PATH", str(tmp_path / "memory.db"))
    assert main(argv) == EXIT_CONFIG
    assert "configuration error" in capsys.readouterr().err and not (tmp_path / "memory.db").exists()


def test_a_required_fault_test_fails_instead_of_skipping(monkeypatch: pytest.MonkeyPatch) -> None:
    from required import FS_FAULTS, unavailable

    monkeypatch.delenv(FS_FAULTS, raising=False)
    with pytest.raises(pytest.skip.Exception):
        unavailable("no chattr here")
    monkeypatch.setenv(FS_FAULTS, "1")
    with pytest.raises(pytest.fail.Exception, match="must run the test"):
        unavailable("no chattr here")
