"""The browser view says the gate and the search in words, shows why an answer is empty, and names an
agent id that owns nothing (only agents the logged-in client may read): real HTTP against a real
``cpersona ui`` process."""

from __future__ import annotations

import re
from pathlib import Path

import httpx2
import pytest
from ui_helpers import ui_server

from cpersona.acl import Level, add_client
from cpersona.config import Settings
from cpersona.memory import Memory

pytestmark = pytest.mark.slow


def seed(tmp: Path) -> None:
    settings = Settings(db_path=tmp / "memory.db", embedding_mode="none", update_check=False)
    with Memory(settings, start_background=False) as memory:
        memory.store("ana", "the staging database moved to port 5433")
        memory.store("ana", "Ana's runbook: roll back with helm")
        memory.store("secret-team", "the secret budget")


def test_search_says_the_gate_and_why_in_words_and_names_an_unknown_agent(tmp_path: Path) -> None:
    seed(tmp_path)
    with ui_server(tmp_path) as server, httpx2.Client(base_url=server.base) as client:
        empty = client.get("/search", params={"agent": "ana", "q": "volcanoes of Peru"})
        assert empty.status_code == 200
        said = re.search(r'data-testid="explanation">([^<]+)<', empty.text)
        assert said and "keyword-only" in said.group(1)
        facts = re.search(r'data-testid="recall-facts">(.*?)</div>', empty.text, re.S)
        assert facts and "No gate: keyword-only recall" in facts.group(1)
        assert "Search:" in facts.group(1) and "{&quot;" not in facts.group(1) and '{"' not in facts.group(1)
        found = client.get("/search", params={"agent": "ana", "q": "staging database port"})
        reason = re.search(r'data-testid="match-reason">(.*?)</dl>', found.text, re.S)
        assert reason and "made of" in reason.group(1) and "{" not in reason.group(1)  # factors as words
        assert 'data-testid="explanation"' not in found.text
        notice = "agent &#x27;anna&#x27; has no rows; known agents: &#x27;ana&#x27;, &#x27;secret-team&#x27;"
        for path in ("/memories", "/episodes", "/profile"):
            page = client.get(path, params={"agent": "anna"})
            assert page.status_code == 200 and notice in page.text, path
        search = client.get("/search", params={"agent": "anna", "q": "helm"})
        assert notice in search.text
        assert 'data-testid="notice"' not in client.get("/memories", params={"agent": "ana"}).text


def test_under_an_acl_the_notice_names_only_the_clients_agents(tmp_path: Path) -> None:
    seed(tmp_path)
    acl = tmp_path / "acl.toml"
    token = add_client(acl, "reader", {"ana": Level.READ, "empty-team": Level.READ})
    with (
        ui_server(tmp_path, CPERSONA_ACL_FILE=str(acl)) as server,
        httpx2.Client(base_url=server.base) as client,
    ):
        form = client.get("/login").text
        csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', form)
        assert csrf
        assert client.post("/login", data={"csrf": csrf.group(1), "token": token}).status_code == 303
        for path, params in (
            ("/memories", {"agent": "empty-team"}),
            ("/search", {"agent": "empty-team", "q": "budget"}),
        ):
            page = client.get(path, params=params)
            assert page.status_code == 200
            assert "agent &#x27;empty-team&#x27; has no rows; known agents: &#x27;ana&#x27;<" in page.text, (
                path
            )
            assert "secret-team" not in page.text


def test_the_server_clamps_limit_to_the_forms_maximum(tmp_path: Path) -> None:
    settings = Settings(db_path=tmp_path / "memory.db", embedding_mode="none", update_check=False)
    with Memory(settings, start_background=False) as memory:
        for i in range(130):
            memory.store("ana", f"kestrel sighting number {i}")
    with ui_server(tmp_path) as server, httpx2.Client(base_url=server.base) as client:
        for asked, used in (("5000", 100), ("100", 100), ("7", 7), ("0", 1), ("-3", 1), ("lots", 10)):
            page = client.get("/search", params={"agent": "ana", "q": "kestrel", "limit": asked})
            assert page.status_code == 200, asked
            assert f'name="limit" type="number" min="1" max="100" value="{used}"' in page.text, asked
            assert page.text.count('data-testid="result"') == used, asked
            assert f"<h2>{used} result{'' if used == 1 else 's'}</h2>" in page.text, asked


def test_the_address_is_said_plainly_and_counts_read_in_the_right_number(tmp_path: Path) -> None:
    settings = Settings(db_path=tmp_path / "memory.db", embedding_mode="none", update_check=False)
    with Memory(settings, start_background=False) as memory:
        memory.store("ana", "kestrel sighting")
        memory.archive_episode("ana", "one session about kestrels", keywords=["kestrel"])
        memory.store("bob", "first")
        memory.store("bob", "second")
    with ui_server(tmp_path) as server, httpx2.Client(base_url=server.base) as client:
        agents = client.get("/").text
        said = server.log.read_text(errors="replace")
    # The address is a line for the person: no log level or logger name in front of it.
    assert f"cpersona ui: open http://127.0.0.1:{server.port}/ in a browser" in said
    assert "WARNING" not in said and "cpersona.ui" not in said  # no log level, no logger name
    assert "1 memory, 1 episode" in agents and "2 memories, 0 episodes" in agents
    assert "1 memories" not in agents
