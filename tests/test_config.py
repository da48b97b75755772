"""Settings: the spec's names and defaults, aliases, bad values, and the README table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cpersona.config import ConfigError, Settings

ROOT = Path(__file__).resolve().parents[1]


def test_defaults_are_the_specs() -> None:
    s = Settings.from_env({})
    # rsf, not the spec's rrf: a measured departure (docs/decisions.md).
    assert (s.max_memories, s.recall_mode, s.rrf_k) == (None, "rsf", 60)
    assert (s.episode_decay_rate, s.episode_decay_floor) == (0.01, 0.5)
    assert (s.recent_recall_window_min, s.recent_recall_penalty) == (5.0, 0.7)
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
    ],
)
def test_bad_values_raise_a_config_error_naming_the_variable(env: dict[str, str]) -> None:
    name = next(iter(env))
    with pytest.raises(ConfigError, match=name):
        Settings.from_env(env)


def test_operating_context_off_switch() -> None:
    assert Settings.from_env({"CPERSONA_OPERATING_CONTEXT": "off"}).operating_context is False
    assert Settings.from_env({}).operating_context is True


def test_every_variable_read_is_in_the_readme_table() -> None:
    names = set(
        re.findall(r'"(CPERSONA_[A-Z_]+|EMBEDDING_[A-Z_]+)"', (ROOT / "cpersona" / "config.py").read_text())
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
