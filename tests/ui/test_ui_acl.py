"""The browser view under an ACL file (CPERSONA_ACL_FILE): real HTTP against a real ``cpersona ui`` process.

A read client granted one agent and an admin client on ``*`` log in with their own tokens; each sees
and changes only what its grants allow. The single CPERSONA_AUTH_TOKEN is ignored under an ACL.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest
from ui_helpers import UiServer, cpersona_executable, ui_env, ui_server

from cpersona.acl import Level, add_client, load_acl
from cpersona.config import Settings
from cpersona.memory import Memory
from cpersona.ui.access import AllowAll, ClientAccess, DenyAll, grants_for_request
from cpersona.ui.security import Guard, ui_refusal

OWN, OTHER = "kestrel-team", "osprey-team"
SINGLE_TOKEN = "the-single-ui-token-0123456789"


def _memory(tmp: Path) -> Memory:
    return Memory(
        Settings(db_path=tmp / "memory.db", embedding_mode="none", update_check=False), start_background=False
    )


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert found, "the page carries no CSRF field"
    return found.group(1)


@dataclass
class AclView:
    server: UiServer
    tmp: Path
    reader: str
    admin: str
    own_id: int
    other_id: int


@pytest.fixture(scope="module")
def acl_view(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AclView]:
    tmp = tmp_path_factory.mktemp("ui-acl")
    with _memory(tmp) as memory:
        own_id = memory.store(OWN, "kestrel nesting plan for the spring survey")["id"]
        other_id = memory.store(OTHER, "osprey confidential survey budget")["id"]
    acl_file = tmp / "acl.toml"
    reader = add_client(acl_file, "reader", {OWN: Level.READ})
    admin = add_client(acl_file, "boss", {"*": Level.ADMIN})
    with ui_server(tmp, CPERSONA_ACL_FILE=str(acl_file), CPERSONA_AUTH_TOKEN=SINGLE_TOKEN) as server:
        yield AclView(server, tmp, reader, admin, own_id, other_id)


@contextmanager
def _login(view: AclView, token: str) -> Iterator[httpx2.Client]:
    with httpx2.Client(base_url=view.server.base) as client:
        form = client.get("/login")
        assert form.status_code == 200 and "cpersona acl add-client" in form.text
        done = client.post("/login", data={"csrf": _csrf(form.text), "token": token})
        assert done.status_code == 303 and done.headers["location"] == "/", done.text
        yield client


def _row(tmp: Path, agent: str, memory_id: int) -> dict[str, object]:
    with _memory(tmp) as memory:
        items = memory.get_contents(agent, [f"mem:{memory_id}"])["items"]
    assert items, f"mem:{memory_id} of {agent} is gone"
    return dict(items[0])


def test_under_an_acl_even_loopback_needs_a_login(acl_view: AclView) -> None:
    with httpx2.Client(base_url=acl_view.server.base) as client:
        first = client.get("/")
        assert first.status_code == 303 and first.headers["location"] == "/login"
        assert client.get(f"/memories?agent={OWN}").status_code == 303
        assert client.get("/health").status_code == 303
        assert client.post("/memory/lock", data={"agent": OWN, "id": str(acl_view.own_id)}).status_code == 401


def test_a_wrong_token_and_the_single_token_are_refused(acl_view: AclView) -> None:
    with httpx2.Client(base_url=acl_view.server.base) as client:
        for token in ("not-a-client-token-at-all-000000", SINGLE_TOKEN, acl_view.reader[:-1]):
            login = client.get("/login").text
            refused = client.post("/login", data={"csrf": _csrf(login), "token": token})
            assert refused.status_code == 401 and "wrong token" in refused.text, token
            assert client.get("/").status_code == 303  # still not logged in
        bearer = httpx2.get(acl_view.server.base + "/", headers={"Authorization": f"Bearer {SINGLE_TOKEN}"})
        assert bearer.status_code == 303
    assert "CPERSONA_AUTH_TOKEN is ignored" in acl_view.server.log.read_text(errors="replace")


def test_the_read_client_sees_only_its_agent(acl_view: AclView) -> None:
    with _login(acl_view, acl_view.reader) as client:
        agents = client.get("/")
        assert agents.status_code == 200 and OWN in agents.text and OTHER not in agents.text
        own = client.get(f"/memories?agent={OWN}")
        assert own.status_code == 200 and "kestrel nesting plan" in own.text and OTHER not in own.text
        # Read only: the page offers no change.
        assert "/memory/delete" not in own.text and "/memory/lock" not in own.text
        detail = client.get(f"/memory?agent={OWN}&id={acl_view.own_id}")
        assert detail.status_code == 200 and "<textarea" not in detail.text
        for path in (
            f"/memories?agent={OTHER}",
            f"/episodes?agent={OTHER}",
            f"/profile?agent={OTHER}",
            f"/memory?agent={OTHER}&id={acl_view.other_id}",
            f"/episode?agent={OTHER}&id=1",
        ):
            refused = client.get(path)
            assert refused.status_code == 403 and "your grants do not allow read" in refused.text, path
            assert "osprey confidential" not in refused.text, path
        missing = client.get(f"/episode?agent={OWN}&id=999")
        assert missing.status_code == 404 and "no episode ep:999" in missing.text
        whole = client.get("/memories")  # every agent at once needs read on '*'
        assert whole.status_code == 403 and "choose one of your agents" in whole.text
        assert "osprey confidential" not in whole.text
        health = client.get("/health")
        assert health.status_code == 403 and "admin" in health.text


def test_the_read_client_may_search_its_agent_but_not_another(acl_view: AclView) -> None:
    with _login(acl_view, acl_view.reader) as client:
        form = client.get("/search")
        assert (
            form.status_code == 200 and OTHER not in form.text
        )  # the agent picker lists granted agents only
        own = client.get("/search", params={"q": "kestrel", "agent": OWN})
        assert own.status_code == 200 and "kestrel nesting plan" in own.text
        other = client.get("/search", params={"q": "osprey", "agent": OTHER})
        assert other.status_code == 403 and "your grants do not allow read on osprey-team" in other.text
        assert "osprey confidential" not in other.text
        anywhere = client.get("/search", params={"q": "osprey"})
        assert anywhere.status_code == 403 and "osprey confidential" not in anywhere.text


def test_the_read_client_cannot_change_its_agent_even_with_a_valid_csrf_token(acl_view: AclView) -> None:
    before = _row(acl_view.tmp, OWN, acl_view.own_id)
    with _login(acl_view, acl_view.reader) as client:
        csrf = _csrf(client.get(f"/memories?agent={OWN}").text)
        key = {"csrf": csrf, "agent": OWN, "id": str(acl_view.own_id)}
        for path, extra in (
            ("/memory/edit", {"content": "overwritten", "confirmed": "1"}),
            ("/memory/delete", {"confirmed": "1"}),
            ("/memory/lock", {}),
            ("/memory/edit", {"content": "overwritten"}),
        ):
            refused = client.post(path, data={**key, **extra})
            assert refused.status_code == 403 and "your grants do not allow write" in refused.text, path
        assert client.get(f"/memory/delete?agent={OWN}&id={acl_view.own_id}").status_code == 403
        other = client.post(
            "/memory/delete", data={**key, "agent": OTHER, "id": str(acl_view.other_id), "confirmed": "1"}
        )
        assert other.status_code == 403
    after = _row(acl_view.tmp, OWN, acl_view.own_id)
    assert after["content"] == before["content"] and after["locked"] == before["locked"]
    _row(acl_view.tmp, OTHER, acl_view.other_id)  # still there


def test_the_admin_client_sees_both_agents_health_and_may_change(acl_view: AclView) -> None:
    with _login(acl_view, acl_view.admin) as client:
        agents = client.get("/")
        assert agents.status_code == 200 and OWN in agents.text and OTHER in agents.text
        assert "osprey confidential" in client.get(f"/memories?agent={OTHER}").text
        assert "osprey confidential" in client.get("/memories").text
        assert client.get("/health").status_code == 200
        found = client.get("/search", params={"q": "osprey", "agent": OTHER})
        assert found.status_code == 200 and "osprey confidential" in found.text
        # The positive control for the read client's refusal: the same POST works with write access.
        page = client.get(f"/memories?agent={OTHER}").text
        assert "/memory/lock" in page
        locked = client.post(
            "/memory/lock", data={"csrf": _csrf(page), "agent": OTHER, "id": str(acl_view.other_id)}
        )
        assert locked.status_code == 303
    assert _row(acl_view.tmp, OTHER, acl_view.other_id)["locked"]


def test_a_client_token_works_as_a_bearer_too(acl_view: AclView) -> None:
    base = acl_view.server.base
    page = httpx2.get(base + "/", headers={"Authorization": f"Bearer {acl_view.reader}"})
    assert page.status_code == 200 and OWN in page.text and OTHER not in page.text
    refused = httpx2.get(
        base + f"/memories?agent={OTHER}", headers={"Authorization": f"Bearer {acl_view.reader}"}
    )
    assert refused.status_code == 403


def test_a_malformed_acl_file_refuses_start_naming_the_line(tmp_path: Path) -> None:
    acl_file = tmp_path / "acl.toml"
    add_client(acl_file, "reader", {OWN: Level.READ})
    text = acl_file.read_text(encoding="utf-8")
    acl_file.write_text(text + '\n[clients.bad]\ntoken_sha256 = "nothex"\n', encoding="utf-8")
    bad_line = len((text + "\n[clients.bad]\n").splitlines()) + 1
    done = subprocess.run(
        [cpersona_executable(), "ui", "--port", "1"],
        env=ui_env(tmp_path, CPERSONA_ACL_FILE=str(acl_file)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "refusing to serve the browser view" in done.stderr and f"line {bad_line}" in done.stderr


def test_a_missing_acl_file_refuses_start(tmp_path: Path) -> None:
    # Refused before anything binds, even on a bind that an ACL would otherwise allow without the token.
    done = subprocess.run(
        [cpersona_executable(), "ui", "--host", "0.0.0.0", "--port", "1"],
        env=ui_env(tmp_path, CPERSONA_ACL_FILE=str(tmp_path / "missing.toml")),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "cannot read ACL file" in done.stderr


def test_grants_and_signed_client_sessions_in_process(tmp_path: Path) -> None:
    acl_file = tmp_path / "acl.toml"
    token = add_client(acl_file, "writer", {OWN: Level.WRITE})
    add_client(acl_file, "boss", {"*": Level.ADMIN})
    acl = load_acl(acl_file)
    writer = ClientAccess(acl.clients[0])
    assert writer.allows("read", OWN) and writer.allows("write", OWN) and not writer.allows("admin", OWN)
    assert not writer.allows("read", OTHER) and not writer.allows("read", None) and not writer.unrestricted
    boss = ClientAccess(acl.clients[1])
    assert boss.unrestricted and boss.allows("admin", None) and boss.allows("write", OTHER)
    assert not DenyAll().allows("read", OWN) and AllowAll().allows("admin", None)
    # What the memory page passes to get_history / traverse as the agents this client may read.
    assert writer.readable_agents() == frozenset({OWN}) and boss.readable_agents() is None
    assert DenyAll().readable_agents() == frozenset() and AllowAll().readable_agents() is None
    # An ACL guards every bind: beyond loopback needs no single token (refused without ACL: test_ui_security).
    assert ui_refusal("10.0.0.2", None, acl=True) is None and ui_refusal("10.0.0.2", None) is not None
    guard = Guard("127.0.0.1", 8403, None, acl=acl)
    assert guard.login_required and guard.login(token) == (True, acl.clients[0])
    assert guard.login("wrong") == (False, None)
    sid, cookie = guard.new_cookie(True, "writer")
    assert guard.read_session(cookie) == (sid, True, "writer")
    assert guard.read_session(cookie.replace("@writer", "@boss", 1)) is None  # the name is signed
    assert guard.client_named("writer") is acl.clients[0] and guard.client_named("ghost") is None

    class State:
        pass

    state = State()
    state.guard, state.client = guard, acl.clients[1]  # type: ignore[attr-defined]
    assert isinstance(grants_for_request(state), ClientAccess)
    state.client = None  # type: ignore[attr-defined]
    assert isinstance(grants_for_request(state), DenyAll)
    state.guard = Guard("127.0.0.1", 8403, None)  # type: ignore[attr-defined]
    assert isinstance(grants_for_request(state), AllowAll)
