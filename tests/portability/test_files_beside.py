"""The original CPersona's files and settings beside its database: its JSON ACL file, its environment
variable names, its operating-context file. A host entry written for it starts this server unchanged."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from cpersona import config
from cpersona.acl import WILDCARD, AclError, Level, add_client, hash_token, load_acl
from cpersona.config import Settings
from cpersona.runtime import operating_context


def _acl(tmp_path: Path, clients: list[dict[str, object]]) -> Path:
    path = tmp_path / "acl.json"
    path.write_text(json.dumps({"clients": clients}, indent=2), encoding="utf-8")
    return path


def test_the_original_acl_file_is_read_as_ours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("BOT_TOKEN", "tok-from-the-environment-0123456789")
    path = _acl(
        tmp_path,
        [
            {"client_id": "ops", "token": "tok-ops-0123456789abcdef", "grants": {"*": "read-write"}},
            {
                "client_id": "bot",
                "token": "${BOT_TOKEN}",
                "grants": {"agent-a": "read-write", "agent-b": "read"},
            },
            {
                "client_id": "viewer",
                "token": "tok-viewer-0123456789ab",
                "grants": {"agent-a": "read", "x": "none"},
            },
            {"client_id": "local", "token": None, "grants": {"*": "read-write"}},
            {"client_id": "sso", "token": None, "grants": {"*": "read"}, "per_subject": True},
        ],
    )
    with caplog.at_level(logging.WARNING, logger="cpersona.acl"):
        acl = load_acl(path)
    assert [c.name for c in acl.clients] == ["ops", "bot", "viewer"]
    assert (
        "original CPersona's JSON format" in caplog.text
        and "'local'" in caplog.text
        and "'sso'" in caplog.text
    )
    ops = acl.authenticate("tok-ops-0123456789abcdef")
    assert ops is not None and ops.may("anyone", Level.ADMIN)  # read-write, the top of its lattice
    bot = acl.authenticate("tok-from-the-environment-0123456789")
    assert bot is not None and bot.name == "bot"
    assert bot.level_on("agent-a") == Level.ADMIN and bot.level_on("agent-b") == Level.READ
    assert bot.level_on("agent-c") is None
    viewer = acl.authenticate("tok-viewer-0123456789ab")
    assert viewer is not None and viewer.grants == {"agent-a": Level.READ}  # "none" is no grant
    assert acl.authenticate("${BOT_TOKEN}") is None
    assert all(c.token_sha256 != "tok-ops-0123456789abcdef" for c in acl.clients)
    assert acl.clients[0].token_sha256 == hash_token("tok-ops-0123456789abcdef")


@pytest.mark.parametrize(
    ("clients", "says"),
    [
        (
            [{"client_id": "a", "token": "t-0123456789abcdef", "grants": {"*": "read-write", "b": "read"}}],
            "less than its '*'",
        ),
        (
            [{"client_id": "a", "token": "t-0123456789abcdef", "grants": {"*": "read", "b": "none"}}],
            "less than its '*'",
        ),
        ([{"client_id": "a", "token": "${NOT_SET_ANYWHERE_X}", "grants": {}}], "NOT_SET_ANYWHERE_X is unset"),
        (
            [{"client_id": "a", "token": "t-0123456789abcdef", "grants": {"b": "owner"}}],
            "read, read-write, none",
        ),
        ([{"client_id": "a b", "token": "t-0123456789abcdef", "grants": {}}], "folder name"),
    ],
    ids=["exception-below-wildcard", "none-below-wildcard", "unset-env", "unknown-level", "bad-name"],
)
def test_an_original_acl_that_cannot_be_read_the_same_is_refused(
    tmp_path: Path, clients: list[dict[str, object]], says: str
) -> None:
    with pytest.raises(AclError, match=says):
        load_acl(_acl(tmp_path, clients))


def test_add_client_leaves_an_original_acl_file_alone(tmp_path: Path) -> None:
    path = _acl(
        tmp_path, [{"client_id": "ops", "token": "tok-ops-0123456789abcdef", "grants": {"*": "read"}}]
    )
    before = path.read_bytes()
    with pytest.raises(AclError, match="reads but does not edit"):
        add_client(path, "new", {WILDCARD: Level.READ})
    assert path.read_bytes() == before


def test_the_original_env_names_work_with_one_notice_each(caplog: pytest.LogCaptureFixture) -> None:
    config.original_env._NOTICED.clear()
    env = {
        "EMBEDDING_MODE": "http",
        "EMBEDDING_HTTP_URL": "http://127.0.0.1:8100/embed",
        "CPERSONA_DB_PATH": "/tmp/x.db",
        "CPERSONA_VECTOR_MIN_SIMILARITY": "0.3",
        "CPERSONA_FTS_ENABLED": "true",
    }
    with caplog.at_level(logging.WARNING, logger="cpersona.config"):
        settings = Settings.from_env(env)
        Settings.from_env(env)  # once per process
    assert settings.embedding_mode == "http" and settings.embedding_url == "http://127.0.0.1:8100/embed"
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "EMBEDDING_MODE is read as CPERSONA_EMBEDDING_MODE (this edition's name; set that instead)",
        "EMBEDDING_HTTP_URL is read as CPERSONA_EMBEDDING_URL (this edition's name; set that instead)",
        "the original CPersona's settings CPERSONA_FTS_ENABLED, CPERSONA_VECTOR_MIN_SIMILARITY have no effect "
        "in this edition",
    ]


def test_our_own_name_wins_over_the_original_s_silently(caplog: pytest.LogCaptureFixture) -> None:
    config.original_env._NOTICED.clear()
    with caplog.at_level(logging.WARNING, logger="cpersona.config"):
        settings = Settings.from_env({"CPERSONA_EMBEDDING_MODE": "none", "EMBEDDING_MODE": "http"})
    assert settings.embedding_mode == "none" and caplog.records == []


def test_the_original_operating_context_file_is_served(tmp_path: Path) -> None:
    # The original's format (version 1, [instructions], [registry]) at the path both editions default to.
    path = tmp_path / ".cpersona" / "operating-context.toml"
    path.parent.mkdir()
    path.write_text(
        'version = 1\ncontext_revision = "2026-01"\n\n[instructions]\nsummary = "Work for the garden club."\n\n'
        '[registry]\nproject_ids = ["garden", "travel"]\n',
        encoding="utf-8",
    )
    settings = Settings(db_path=tmp_path / "m.db", operating_context_path=path, update_check=False)
    answer = operating_context.get(settings)
    assert answer["ok"] and answer["context"]["instructions"]["summary"] == "Work for the garden club."
    assert answer["context"]["registry"]["project_ids"] == ["garden", "travel"]
    assert (
        Settings.from_env({}).operating_context_path == Path.home() / ".cpersona" / "operating-context.toml"
    )
