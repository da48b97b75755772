"""A memory's page in the browser view: what it supersedes, what superseded it (with the banner that it is
not the current fact), and its declared links both ways — escaped, capped, and never showing a row of an
agent the logged-in client may not read (a real ``cpersona ui`` under an ACL file)."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx2
import pytest
from ui_helpers import UiServer, ui_server

from cpersona.acl import Level, add_client
from cpersona.config import Settings
from cpersona.memory import Memory
from cpersona.ui import pages
from cpersona.ui.relations import SHOWN_PER_SECTION, LinkLine, Relations, memory_relations

OWN, OTHER = "kestrel-team", "osprey-team"
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'
#: The rest of a row memory_facts reads (for pages rendered in-process).
_FACTS = {
    "project_id": "",
    "channel": "",
    "msg_id": "",
    "timestamp": "",
    "created_at": "",
    "recall_count": 0,
    "last_recalled_at": None,
    "embedding_model": None,
    "source": None,
    "metadata": None,
}


@dataclass
class Seeded:
    server: UiServer
    reader: str
    admin: str
    ids: dict[str, int]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    tmp = tmp_path_factory.mktemp("ui-relations")
    settings = Settings(db_path=tmp / "memory.db", embedding_mode="none", update_check=False)
    with Memory(settings, start_background=False) as memory:
        ids = {"secret": memory.store(OTHER, "osprey confidential survey budget")["id"]}
        ids["first"] = memory.store(OWN, f"Nest boxes go up in March {HOSTILE}")["id"]
        ids["second"] = memory.store(OWN, "Nest boxes go up in April", supersedes=[f"mem:{ids['first']}"])[
            "id"
        ]
        ids["third"] = memory.store(
            OWN,
            "Nest boxes go up in May",
            supersedes=[f"mem:{ids['second']}"],
            associations=[
                {"relation": "about", "entity": HOSTILE},
                {"relation": "budget_in", "to": f"mem:{ids['secret']}"},  # another agent's row
            ],
        )["id"]
        # The other agent links its row to the middle one: an incoming link the reader must not see.
        memory.declare_associations(
            OTHER, f"mem:{ids['secret']}", [{"relation": "cites", "to": f"mem:{ids['second']}"}]
        )
        ids["hub"] = memory.store(
            OWN,
            "Survey sites of the spring count",
            associations=[{"relation": "site", "entity": f"site {n:02d}"} for n in range(50)],
        )["id"]
        memory.declare_associations(
            OWN, f"mem:{ids['hub']}", [{"relation": "site", "entity": f"site {n:02d}"} for n in range(50, 60)]
        )
        ids["plain"] = memory.store(OWN, "A memory with no chain and no links")["id"]
    acl_file = tmp / "acl.toml"
    reader = add_client(acl_file, "reader", {OWN: Level.READ})
    admin = add_client(acl_file, "boss", {"*": Level.ADMIN})
    with ui_server(tmp, CPERSONA_ACL_FILE=str(acl_file)) as server:
        yield Seeded(server, reader, admin, ids)


@contextmanager
def _login(seeded: Seeded, token: str) -> Iterator[httpx2.Client]:
    with httpx2.Client(base_url=seeded.server.base) as client:
        form = client.get("/login").text
        csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', form)
        assert csrf
        assert client.post("/login", data={"csrf": csrf.group(1), "token": token}).status_code == 303
        yield client


def _page(client: httpx2.Client, memory_id: int) -> str:
    got = client.get(f"/memory?agent={OWN}&id={memory_id}")
    assert got.status_code == 200, got.text
    return got.text


def _link(memory_id: int, agent: str = OWN) -> str:
    return f'href="/memory?agent={agent}&amp;id={memory_id}"'


def _section(page: str, testid: str) -> str:
    found = re.search(rf'data-testid="{testid}">(.*?)</ol>', page, re.S)
    assert found, f"no {testid} section"
    return found.group(1)


def test_a_superseded_memory_says_it_is_not_current_and_links_both_ways(seeded: Seeded) -> None:
    ids = seeded.ids
    with _login(seeded, seeded.reader) as client:
        middle = _page(client, ids["second"])
        banner = re.search(r'data-testid="superseded-banner">(.*?)</p>', middle, re.S)
        assert banner and "Not the current fact" in banner.group(1)
        assert _link(ids["third"]) in banner.group(1)  # the current one, linked
        assert _link(ids["first"]) in _section(middle, "supersedes")
        after = _section(middle, "superseded-by")
        assert _link(ids["third"]) in after and "superseded the one before on 20" in after

        oldest = _page(client, ids["first"])
        assert "superseded-banner" in oldest and 'data-testid="supersedes"' not in oldest
        after = _section(oldest, "superseded-by")  # the whole chain down to the current one, nearest first
        assert after.index(_link(ids["second"])) < after.index(_link(ids["third"]))

        newest = _page(client, ids["third"])
        assert "superseded-banner" not in newest and 'data-testid="superseded-by"' not in newest
        before = _section(newest, "supersedes")
        assert before.index(_link(ids["first"])) < before.index(_link(ids["second"]))

        plain = _page(client, ids["plain"])
        for testid in ("superseded-banner", "supersedes", "superseded-by", "link"):
            assert f'data-testid="{testid}"' not in plain


def test_a_hostile_entity_and_content_are_escaped(seeded: Seeded) -> None:
    with _login(seeded, seeded.admin) as client:
        newest = _page(client, seeded.ids["third"])
        oldest = _page(client, seeded.ids["first"])
    for page in (newest, oldest):
        assert "<script>" not in page and "<img" not in page
    entity = re.search(r'entity <strong class="entity">(.*?)</strong>', newest)
    assert entity and html.unescape(entity.group(1)) == HOSTILE  # the entity name, shown as text
    assert "<code>about</code>" in newest


def test_the_links_never_show_an_agent_the_client_may_not_read(seeded: Seeded) -> None:
    ids = seeded.ids
    with _login(seeded, seeded.reader) as client:
        newest = _page(client, ids["third"])
        middle = _page(client, ids["second"])
        refused = client.get(f"/memory?agent={OTHER}&id={ids['secret']}")
    assert refused.status_code == 403
    for page in (newest, middle):
        assert OTHER not in page and "osprey" not in page and "budget_in" not in page and "cites" not in page
        assert _link(ids["secret"], OTHER) not in page
    assert newest.count('data-testid="link"') == 1  # the entity only
    with _login(seeded, seeded.admin) as client:
        newest = _page(client, ids["third"])
        middle = _page(client, ids["second"])
    assert _link(ids["secret"], OTHER) in newest and "budget_in" in newest and "→ out" in newest
    assert _link(ids["secret"], OTHER) in middle and "cites" in middle and "← in" in middle
    assert "osprey confidential" in middle


def test_many_links_are_capped_with_a_note(seeded: Seeded) -> None:
    with _login(seeded, seeded.reader) as client:
        hub = _page(client, seeded.ids["hub"])
    assert hub.count('data-testid="link"') == SHOWN_PER_SECTION
    assert 'data-testid="links-more"' in hub and f"cpersona links mem:{seeded.ids['hub']}" in hub


def test_hostile_values_in_every_slot_render_as_text() -> None:
    # A relation cannot hold markup (the API's pattern refuses it); the template must escape it anyway.
    row = {"ref": "mem:1", "id": 1, "agent_id": HOSTILE, "content": HOSTILE, "superseded_by": "mem:2"}
    other = {**row, "ref": "mem:2", "id": 2}
    shown = Relations(
        current=other,
        superseded_at=HOSTILE,
        before=[{**other, "superseded_at": HOSTILE, "superseded_by": HOSTILE}],
        links=[LinkLine("in", HOSTILE, other, None), LinkLine("out", HOSTILE, None, HOSTILE)],
        links_more=True,
    )
    page = str(pages.memory_page({**row, **_FACTS}, pages.View("c", True), relations=shown))
    assert "<script>" not in page and "<img" not in page and page.count("&lt;script&gt;") >= 5


def test_the_sections_follow_a_branching_chain() -> None:
    # mem:3 superseded mem:1 and mem:2 at once; mem:4 superseded mem:3. Seen from mem:3.
    def r(n: int, by: int | None = None) -> dict[str, object]:
        row: dict[str, object] = {"ref": f"mem:{n}", "id": n, "agent_id": "a", "content": f"row {n}"}
        if by is not None:
            row |= {"superseded_by": f"mem:{by}", "superseded_at": f"2026-0{n}-01T00:00:00Z"}
        return row

    chain = [r(1, 3), r(2, 3), r(3, 4), r(4)]
    empty = {"results": [], "truncated": False}
    shown = memory_relations(chain[2], {"history": chain, "current": "mem:4"}, empty, empty)
    assert [b["ref"] for b in shown.before] == ["mem:1", "mem:2"]
    assert [(s.row["ref"], s.at) for s in shown.after] == [("mem:4", "2026-03-01T00:00:00Z")]
    assert shown.current is not None and shown.current["ref"] == "mem:4"
    top = memory_relations(chain[3], {"history": chain, "current": "mem:4"}, empty, empty)
    assert [b["ref"] for b in top.before] == ["mem:1", "mem:2", "mem:3"] and top.current is None
    side = memory_relations(chain[0], {"history": chain, "current": "mem:4"}, empty, empty)
    assert side.before == [] and [s.row["ref"] for s in side.after] == ["mem:3", "mem:4"]


def test_a_long_chain_shows_the_nearest_older_rows_and_counts_the_rest() -> None:
    n = SHOWN_PER_SECTION + 5
    chain = [
        {"ref": f"mem:{i}", "id": i, "agent_id": "a", "content": "", "superseded_by": f"mem:{i + 1}"}
        for i in range(1, n)
    ] + [{"ref": f"mem:{n}", "id": n, "agent_id": "a", "content": ""}]
    empty = {"results": [], "truncated": False}
    shown = memory_relations(chain[-1], {"history": chain, "current": f"mem:{n}"}, empty, empty)
    assert len(shown.before) == SHOWN_PER_SECTION and shown.before_more == n - 1 - SHOWN_PER_SECTION
    assert shown.before[-1]["ref"] == f"mem:{n - 1}"  # the nearest ones are kept
    page = str(pages.memory_page({**chain[-1], **_FACTS}, pages.View("c", True), relations=shown))
    assert f"… and {shown.before_more} older ones" in page


def test_the_memory_list_marks_superseded_rows(seeded: Seeded) -> None:
    ids = seeded.ids
    with _login(seeded, seeded.reader) as client:
        listing = client.get(f"/memories?agent={OWN}")
    assert listing.status_code == 200
    for key in ("first", "second"):
        assert f'data-testid="superseded-{ids[key]}"' in listing.text
    for key in ("third", "hub", "plain"):
        assert f'data-testid="superseded-{ids[key]}"' not in listing.text
