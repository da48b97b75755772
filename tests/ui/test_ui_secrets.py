"""The browser view's edit under the secret guard (issue 39), over real HTTP against a real ``cpersona ui``:
the confirm page shows and posts the text as it will be stored; refuse answers an error page, stores nothing."""

from __future__ import annotations

import re
from pathlib import Path

import httpx2
from ui_helpers import ui_server

from cpersona.config import Settings
from cpersona.memory import Memory

KEY = "AKIAQ7ZX4TYHGF2LMN8P"


def _memory(tmp: Path) -> Memory:
    settings = Settings(db_path=tmp / "memory.db", embedding_mode="none", update_check=False)
    return Memory(settings, start_background=False)


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert found, "the page carries no CSRF field"
    return found.group(1)


def test_an_edit_holding_a_key_is_confirmed_and_stored_redacted(tmp_path: Path) -> None:
    with _memory(tmp_path) as memory:
        mid = memory.store("ana", "the backup job signs in nightly")["id"]
    form = {"agent": "ana", "id": str(mid), "content": f"the backup job signs in with {KEY}"}
    with ui_server(tmp_path) as server, httpx2.Client(base_url=server.base) as client:
        csrf = _csrf(client.get("/memories").text)
        asked = client.post("/memory/edit", data={"csrf": csrf, **form})
        assert asked.status_code == 200 and "[redacted: aws-access-key]" in asked.text
        assert KEY not in asked.text
        done = client.post("/memory/edit", data={"csrf": csrf, **form, "confirmed": "1"})
        assert done.status_code == 303
        page = client.get(f"/memory?agent=ana&id={mid}").text
        assert "[redacted: aws-access-key]" in page and KEY not in page
    with _memory(tmp_path) as memory:
        stored = memory.get_contents("ana", [f"mem:{mid}"])["items"][0]["content"]
    assert stored == "the backup job signs in with [redacted: aws-access-key]"


def test_under_refuse_the_edit_is_an_error_page_and_nothing_changes(tmp_path: Path) -> None:
    with _memory(tmp_path) as memory:
        mid = memory.store("ana", "the backup job signs in nightly")["id"]
    form = {
        "agent": "ana",
        "id": str(mid),
        "content": f"the backup job signs in with {KEY}",
        "confirmed": "1",
    }
    with (
        ui_server(tmp_path, CPERSONA_SECRETS="refuse") as server,
        httpx2.Client(base_url=server.base) as client,
    ):
        csrf = _csrf(client.get("/memories").text)
        refused = client.post("/memory/edit", data={"csrf": csrf, **form})
        assert 400 <= refused.status_code < 500 and 'data-testid="error"' in refused.text
        assert "aws-access-key" in refused.text and KEY not in refused.text
    with _memory(tmp_path) as memory:
        stored = memory.get_contents("ana", [f"mem:{mid}"])["items"][0]["content"]
    assert stored == "the backup job signs in nightly"


def test_a_retired_memory_is_kept_in_the_view_and_says_so(tmp_path: Path) -> None:
    with _memory(tmp_path) as memory:
        mid = memory.store("ana", "the standup is in room Osprey")["id"]
        memory.retire_memory(mid, "we moved to Kestrel")
    with ui_server(tmp_path) as server, httpx2.Client(base_url=server.base) as client:
        listing = client.get("/memories?agent=ana").text
        assert "room Osprey" in listing
        page = client.get(f"/memory?agent=ana&id={mid}").text
        assert 'data-testid="retired-banner"' in page and "we moved to Kestrel" in page
