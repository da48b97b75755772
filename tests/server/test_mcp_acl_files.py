"""Grants hold for data inside export/import files (docs/decisions.md#portability), over HTTP with real MCP clients.

The attack of issue 17: an admin exports agent b to ``b-backup.jsonl``; client C (admin on c
only) tries to copy that file into c, to learn what it holds with a dry run, and to replace
it. Every step must fail for C, and nothing of b may reach c.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import http_server, mcp_session
from test_mcp_acl import transport

from cpersona.acl import WILDCARD, Level, add_client

pytestmark = pytest.mark.slow

SECRET = "bravo's launch code is 0451"


@dataclass
class FileServer:
    url: str
    exports: Path
    tokens: dict[str, str]

    def session(self, client: str) -> Any:
        return mcp_session(transport(self.url, self.tokens[client]))


@pytest.fixture(scope="module")
def file_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FileServer]:
    tmp = tmp_path_factory.mktemp("aclfiles")
    acl = tmp / "acl.toml"
    tokens = {
        "ops": add_client(acl, "ops", {WILDCARD: Level.ADMIN}),
        "C": add_client(acl, "C", {"agent-c": Level.ADMIN}),
        "auditor": add_client(acl, "auditor", {"agent-b": Level.READ, "agent-c": Level.ADMIN}),
    }
    exports = tmp / "exports"
    with http_server(tmp, CPERSONA_ACL_FILE=str(acl), CPERSONA_EXPORT_DIR=str(exports)) as (url, _proc):
        server = FileServer(url, exports, tokens)
        with server.session("ops") as ops:
            assert ops.call("store", {"agent_id": "agent-b", "message": {"content": SECRET}})["ok"]
            assert ops.call("archive_episode", {"agent_id": "agent-b", "summary": "bravo's episode"})["ok"]
            assert ops.call("update_profile", {"agent_id": "agent-b", "profile": "bravo's profile"})["ok"]
            assert ops.call("store", {"agent_id": "agent-c", "message": {"content": "charlie's own note"}})[
                "ok"
            ]
        yield server


def refused(response: dict[str, Any], *codes: str) -> bool:
    return response["ok"] is False and response["error_code"] in codes


def c_holds_nothing_of_b(session: Any) -> bool:
    listed = session.call("list_memories", {"agent_id": "agent-c"})
    profile = session.call("get_profile", {"agent_id": "agent-c"})
    episodes = session.call("list_episodes", {"agent_id": "agent-c"})
    return (
        all("bravo" not in m["content"] for m in listed["items"])
        and not (profile.get("profile") or "").startswith("bravo")
        and episodes["total"] == 0
    )


def test_the_export_folder_attack_fails_at_every_step_for_client_c(file_server: FileServer) -> None:
    with file_server.session("ops") as ops:
        backup = ops.call("export_memories", {"agent_id": "agent-b", "output_path": "b-backup.jsonl"})
        assert backup["ok"], backup
    backup_path = Path(backup["path"])
    original = backup_path.read_bytes()
    assert SECRET in original.decode()
    # Each ACL client has its own folder: the operator's file is not in C's.
    assert backup_path.parent == (file_server.exports / "clients" / "ops").resolve()

    with file_server.session("C") as c:
        assert refused(c.call("recall", {"agent_id": "agent-b", "query": "launch code"}), "forbidden")
        # Step 1: copy b's backup into c.
        copy = c.call("import_memories", {"input_path": "b-backup.jsonl", "target_agent_id": "agent-c"})
        assert refused(copy, "invalid_file"), copy
        # Step 2: a dry run says nothing about the file (no header, no counts).
        dry = c.call(
            "import_memories", {"input_path": "b-backup.jsonl", "target_agent_id": "agent-c", "dry_run": True}
        )
        assert refused(dry, "invalid_file") and "header" not in dry and "counts" not in dry, dry
        # The operator's file by absolute path, by '..', and by a path through the clients folder.
        for path in (str(backup_path), "../ops/b-backup.jsonl", "../../clients/ops/b-backup.jsonl"):
            for dry_run in (False, True):
                probe = c.call(
                    "import_memories", {"input_path": path, "target_agent_id": "agent-c", "dry_run": dry_run}
                )
                assert refused(probe, "path_refused"), (path, probe)
                assert "agent-b" not in probe["error"] and "counts" not in probe
        # Step 3: replace b's backup.
        overwrite = c.call(
            "export_memories", {"agent_id": "agent-c", "output_path": "b-backup.jsonl", "overwrite": True}
        )
        assert overwrite["ok"], overwrite  # lands in C's own folder
        assert Path(overwrite["path"]).parent == (file_server.exports / "clients" / "C").resolve()
        for path in (str(backup_path), "../ops/b-backup.jsonl"):
            again = c.call("export_memories", {"agent_id": "agent-c", "output_path": path, "overwrite": True})
            assert refused(again, "path_refused"), again
        assert c_holds_nothing_of_b(c)
    assert backup_path.read_bytes() == original


def test_a_file_of_b_placed_in_cs_folder_is_still_refused(file_server: FileServer) -> None:
    """The operator hands C a copy of b's backup: C's grants still decide (the file holds b's rows)."""
    with file_server.session("ops") as ops:
        backup = Path(
            ops.call("export_memories", {"agent_id": "agent-b", "output_path": "b-2.jsonl"})["path"]
        )
    c_folder = file_server.exports / "clients" / "C"
    c_folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(backup, c_folder / "handed-over.jsonl")
    original = (c_folder / "handed-over.jsonl").read_bytes()
    with file_server.session("C") as c:
        for dry_run in (True, False):
            probe = c.call(
                "import_memories",
                {"input_path": "handed-over.jsonl", "target_agent_id": "agent-c", "dry_run": dry_run},
            )
            assert refused(probe, "forbidden"), probe
            assert "header" not in probe and "counts" not in probe and "agent-b" not in probe["error"]
        replace = c.call(
            "export_memories", {"agent_id": "agent-c", "output_path": "handed-over.jsonl", "overwrite": True}
        )
        assert refused(replace, "forbidden"), replace
        assert c_holds_nothing_of_b(c)
    assert (c_folder / "handed-over.jsonl").read_bytes() == original


def test_a_client_with_read_on_b_may_copy_b_into_its_own_agent(file_server: FileServer) -> None:
    """The grants, not the folder, decide: read on b and admin on c allow copying b's file into c."""
    with file_server.session("auditor") as auditor:
        exported = auditor.call("export_memories", {"agent_id": "agent-c", "output_path": "c.jsonl"})
        assert exported["ok"], exported
    with file_server.session("ops") as ops:
        backup = Path(
            ops.call("export_memories", {"agent_id": "agent-b", "output_path": "b-3.jsonl"})["path"]
        )
    shutil.copy(backup, file_server.exports / "clients" / "auditor" / "b.jsonl")
    with file_server.session("auditor") as auditor:
        dry = auditor.call(
            "import_memories", {"input_path": "b.jsonl", "target_agent_id": "agent-c", "dry_run": True}
        )
        assert dry["ok"] and dry["header"]["agent_id"] == "agent-b", dry
        assert dry["counts"]["memories"]["inserted"] == 1
        # Without a target the rows would land in agent b, where the auditor has only read.
        keep = auditor.call("import_memories", {"input_path": "b.jsonl"})
        assert refused(keep, "forbidden"), keep
