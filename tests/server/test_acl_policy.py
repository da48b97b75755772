"""The ACL file and the access policy as plain Python: parsing, grants, tool classes, narrowing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cpersona.acl import (
    WILDCARD,
    AclError,
    Client,
    Level,
    add_client,
    hash_token,
    load_acl,
    merge_grants,
    parse_acl,
)
from cpersona.errors import Forbidden
from cpersona.server.access import TOOL_ACCESS, authorise, named_agents
from cpersona.server.tools import TOOLS, tool_names

DOCS = Path(__file__).resolve().parents[2] / "docs" / "tools.md"


def client(**grants: str) -> Client:
    mapped = {("*" if agent == "ALL" else agent): Level[level.upper()] for agent, level in grants.items()}
    return Client("c", "0" * 64, mapped)


# -- the file ----------------------------------------------------------------------------------


def test_add_client_stores_only_the_hash_and_keeps_comments(tmp_path: Path) -> None:
    path = tmp_path / "acl.toml"
    path.write_text("# operator's note: rotate quarterly\n", encoding="utf-8")
    token = add_client(path, "ci-bot", merge_grants(read=["a", "b"], write=["b"]))
    second = add_client(path, "ops", {WILDCARD: Level.ADMIN})
    text = path.read_text(encoding="utf-8")
    assert "rotate quarterly" in text
    assert token not in text and second not in text
    assert hash_token(token) in text
    assert len(token) >= 32 and token != second
    assert path.stat().st_mode & 0o777 == 0o600
    acl = load_acl(path)
    assert [c.name for c in acl.clients] == ["ci-bot", "ops"]
    assert acl.authenticate(token).grants == {"a": Level.READ, "b": Level.WRITE}  # type: ignore[union-attr]
    assert acl.authenticate(second).name == "ops"  # type: ignore[union-attr]
    assert acl.authenticate(token + "x") is None and acl.authenticate("") is None
    with pytest.raises(AclError, match="already exists"):
        add_client(path, "ci-bot", {"a": Level.READ})
    with pytest.raises(AclError, match="client name"):
        add_client(path, "bad name", {"a": Level.READ})


def test_odd_agent_ids_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "acl.toml"
    odd = ['quote"d', "back\\slash", "tab\tand\nnewline", "ünïcødé 🦉", ""]
    token = add_client(path, "odd", {agent: Level.WRITE for agent in odd})
    found = load_acl(path).authenticate(token)
    assert found is not None and set(found.grants) == set(odd)


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ('[clients.a]\ntoken_sha256 = "' + "a" * 64 + '"\ngrants = { "x" = "read" \n', 3, "invalid TOML"),
        ('# c\n\n[clients.a]\ntoken_sha256 = "' + "a" * 64 + '"\ngrants = { "x" = "owner" }\n', 5, "owner"),
        ('[clients.a]\ntoken_sha256 = "not-a-hash"\n', 2, "token_sha256"),
        ('[clients.a]\ngrants = { "x" = "read" }\n', 1, "token_sha256"),
        ('[clients.a]\ntoken_sha256 = "' + "a" * 64 + '"\ntoken = "plain"\n', 3, "unknown key 'token'"),
        ('\n[client.a]\ntoken_sha256 = "' + "a" * 64 + '"\n', 2, "unknown top-level key"),
        (
            '[clients.a]\ntoken_sha256 = "'
            + "a" * 64
            + '"\n\n[clients.b]\ntoken_sha256 = "'
            + "a" * 64
            + '"\n',
            4,
            "same token hash",
        ),
        ('[clients.a]\ntoken_sha256 = "' + "a" * 64 + '"\ngrants = ["x"]\n', 3, "must be a table"),
        (
            '[clients.Ops]\ntoken_sha256 = "'
            + "a" * 64
            + '"\n\n[clients.ops]\ntoken_sha256 = "'
            + "b" * 64
            + '"\n',
            4,
            "only in case",  # client names name export folders (portability/grants.py)
        ),
    ],
)
def test_malformed_acl_names_the_line(tmp_path: Path, text: str, line: int, words: str) -> None:
    with pytest.raises(AclError) as caught:
        parse_acl(text, tmp_path / "acl.toml")
    message = str(caught.value)
    assert words in message, message
    assert re.search(rf"\bline {line}\b", message), message


def test_missing_acl_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(AclError, match="cannot read"):
        load_acl(tmp_path / "nope.toml")


def test_levels_are_hierarchical_and_the_wildcard_covers_every_agent() -> None:
    c = client(a="admin", b="read", ALL="read")
    assert c.may("a", Level.READ) and c.may("a", Level.WRITE) and c.may("a", Level.ADMIN)
    assert c.may("b", Level.READ) and not c.may("b", Level.WRITE)
    assert c.may("anyone", Level.READ) and not c.may("anyone", Level.WRITE)
    assert client(a="read").level_on("b") is None  # deny by default
    assert client(a="read", b="write").agents_at(Level.WRITE) == frozenset({"b"})
    assert client(ALL="write").agents_at(Level.READ) is None


def test_merge_grants_keeps_the_highest_level() -> None:
    assert merge_grants(read=["a", "b"], write=["b"], admin=["a"]) == {"a": Level.ADMIN, "b": Level.WRITE}
    assert merge_grants(admin=["a"], read=["a"]) == {"a": Level.ADMIN}


# -- the policy ---------------------------------------------------------------------------------


def test_every_tool_has_exactly_one_access_class() -> None:
    assert set(TOOL_ACCESS) == set(tool_names())


def test_an_unclassified_tool_is_refused_even_without_an_acl() -> None:
    with pytest.raises(Forbidden, match="no access class"):
        authorise(None, "brand_new_tool", {})


def test_every_agent_argument_is_checked() -> None:
    # The policy checks arguments named *agent_id; a schema with another name for an agent would slip through.
    for spec in TOOLS:
        for name in spec.input_schema["properties"]:
            assert "agent" not in name or name.endswith("agent_id"), (spec.name, name)
    assert named_agents(
        {"source_agent_id": "a", "target_agent_id": "b", "agent_id": "c", "query": "agent_id"}
    ) == ["a", "b", "c"]


def test_docs_state_each_tools_class() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for name, rule in TOOL_ACCESS.items():
        section = text.split(f"## `{name}`", 1)
        assert len(section) == 2, f"docs/tools.md has no section for {name}"
        body = section[1].split("\n## ", 1)[0]
        assert f"Access: **{rule.label}**" in body, f"docs/tools.md does not state the access class of {name}"


def test_read_client_is_refused_writes_and_other_agents() -> None:
    reader = client(a="read")
    assert authorise(reader, "recall", {"agent_id": "a"}) is None
    for tool, args in [
        ("store", {"agent_id": "a", "message": {"content": "x"}}),
        ("recall", {"agent_id": "b"}),
        ("list_memories", {"agent_id": "b"}),
        ("get_contents", {"agent_id": "b", "refs": ["mem:1"]}),
        ("delete_memory", {"memory_id": 1, "agent_id": "a"}),
        ("export_memories", {"agent_id": "a", "output_path": "x.jsonl"}),
        ("merge_memories", {"source_agent_id": "a", "target_agent_id": "b"}),
        ("check_health", {}),  # without agent_id it scans every agent
        ("check_health", {"agent_id": "a", "fix": True}),
        ("pause_persistence", {"ttl_seconds": 5}),
        ("check_update", {"apply": True}),
        ("import_memories", {"input_path": "x.jsonl"}),
    ]:
        with pytest.raises(Forbidden):
            authorise(reader, tool, args)


def test_unscoped_calls_are_narrowed_to_granted_agents() -> None:
    c = client(a="write", b="read")
    assert authorise(c, "list_memories", {}) == frozenset({"a", "b"})
    assert authorise(c, "delete_memory", {"memory_id": 3}) == frozenset({"a"})
    assert authorise(client(ALL="write"), "delete_memory", {"memory_id": 3}) is None
    assert authorise(client(ALL="read"), "check_health", {}) is None
    assert authorise(client(ALL="admin"), "pause_persistence", {"ttl_seconds": 5}) is None


def test_process_wide_status_is_open_to_any_client() -> None:
    c = client(a="read")
    for tool in ("get_queue_status", "persistence_status", "get_operating_context", "check_update"):
        assert authorise(c, tool, {}) is None
    assert authorise(None, "delete_agent_data", {"agent_id": "z"}) is None  # no ACL: single-user model
