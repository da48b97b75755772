"""Every page of the browser view at a phone's width (400 px) and a desktop's (1,280 px), in real Chromium.

Each page is laid out at both widths, screenshotted, and measured: the page must not scroll
sideways (``document.documentElement.scrollWidth`` no more than ``clientWidth``, the window less
its vertical scroll bar, so stricter than ``innerWidth``) and no visible element may stick out
past the right edge (a clipped "Health" link, say). The store is seeded with the
things that break narrow layouts: long unbroken tokens, long agent and project names, wide
tables, a memory that happened long before it was stored. Screenshots go to the test's temporary
directory (named in the output); set ``UI_SCREENSHOTS_TO=DIR`` to keep a copy, and
``UI_DOC_SCREENSHOTS_TO=docs/screenshots`` to redraw the few small JPEGs the docs show.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from cdp import Browser, find_chromium
from ui_helpers import UiServer, ui_server

from cpersona.config import Settings
from cpersona.memory import Memory

pytestmark = pytest.mark.slow

WIDTHS = (400, 1280)
LONG_TOKEN = "sha256:" + "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" * 3
LONG_AGENT = "release-engineering-assistant-for-the-platform-team"
LONG_PROJECT = "infrastructure-migration-2026-q4-datacenter-consolidation"


@pytest.fixture(scope="module")
def chromium() -> str:
    found = find_chromium()
    if found is None:
        message = "headless Chromium is required for the browser tests: apt-get install -y chromium"
        if os.environ.get("CI") or os.environ.get("REQUIRE_CHROMIUM"):
            pytest.fail(message)
        pytest.skip(message)
    return found


@pytest.fixture(scope="module")
def screens(
    tmp_path_factory: pytest.TempPathFactory, minilm_models_dir: Path, chromium: str
) -> Iterator[tuple[UiServer, Browser, dict[str, str], Path]]:
    """A store seeded to stress narrow layouts, the view on it, Chromium, and the pages to look at."""
    tmp = tmp_path_factory.mktemp("ui-screens")
    shots = tmp / "screenshots"
    shots.mkdir()
    settings = Settings(
        db_path=tmp / "memory.db",
        models_dir=minilm_models_dir,
        embedding_mode="onnx",
        embedding_model="all-minilm-l6-v2",
        update_check=False,
        auto_fetch_model=False,
    )
    with Memory(settings) as memory:
        assert memory.wait_until_ready(120)
        for i in range(30):
            memory.store("ana", f"filler note {i:02d} about weekly chores", msg_id=f"f{i}")
        happened = memory.store(
            "ana",
            "The staging database moved to port 5433 on db-staging-2",
            project_id="work",
            channel="ops",
            timestamp="2026-03-04T09:15:00Z",
        )["id"]
        digest = memory.store(
            "ana", f"The release artefact digest is {LONG_TOKEN} (checked twice)", project_id="work"
        )["id"]
        memory.store(LONG_AGENT, f"Deploy window for {LONG_PROJECT} is Tuesday", project_id=LONG_PROJECT)
        # A superseded memory with links both ways, a long entity name among them: the banner, the chain
        # and the links table must fit a phone's width too.
        older = memory.store("ana", "The build cache lives on ci-cache-1", project_id="work")["id"]
        newer = memory.store(
            "ana",
            "The build cache moved to ci-cache-2",
            project_id="work",
            supersedes=[f"mem:{older}"],
            associations=[
                {"relation": "about", "entity": LONG_TOKEN[:190]},
                {"relation": "digest_of_the_release_artefact", "to": f"mem:{digest}"},
            ],
        )["id"]
        memory.declare_associations(
            "ana", f"mem:{digest}", [{"relation": "checked_for", "to": f"mem:{older}"}]
        )
        episode = memory.archive_episode(
            "ana",
            f"Session about moving the staging database; digest {LONG_TOKEN}",
            keywords="staging, database",
        )["id"]
        memory.update_profile("ana", "Ana is an SRE who likes <b>precise</b> answers\n" + LONG_TOKEN)
        memory.drain_queue()
    env = {
        "CPERSONA_EMBEDDING_MODE": "onnx",
        "CPERSONA_EMBEDDING_MODEL": "all-minilm-l6-v2",
        "CPERSONA_MODELS_DIR": str(minilm_models_dir),
    }
    pages = {
        "home": "/",
        "memories": "/memories",
        "memories-ana-page-2": "/memories?agent=ana&offset=25",
        "memory": f"/memory?agent=ana&id={happened}",
        "memory-long-token": f"/memory?agent=ana&id={digest}",
        "memory-superseded-linked": f"/memory?agent=ana&id={older}",
        "memory-current-linked": f"/memory?agent=ana&id={newer}",
        "episodes": "/episodes",
        "episode": f"/episode?agent=ana&id={episode}",
        "profile": "/profile?agent=ana",
        "search-empty": "/search",
        "search-results": "/search?agent=ana&q=which+port+does+the+staging+db+use%3F",
        "health": "/health",
        "confirm-delete": f"/memory/delete?agent=ana&id={happened}",
        "not-found": "/memory?agent=ana&id=999999",
    }
    with ui_server(tmp, **env) as server:
        browser = Browser(chromium, tmp / "chromium-profile")
        try:
            yield server, browser, pages, shots
        finally:
            try:
                if os.environ.get("UI_DOC_SCREENSHOTS_TO"):  # the few small pictures in docs/screenshots/
                    _doc_pictures(server, browser, pages, Path(os.environ["UI_DOC_SCREENSHOTS_TO"]))
            finally:
                browser.close()
            print(f"\nbrowser-view screenshots: {shots}")
            if os.environ.get("UI_SCREENSHOTS_TO"):
                shutil.copytree(shots, os.environ["UI_SCREENSHOTS_TO"], dirs_exist_ok=True)


def _doc_pictures(server: UiServer, browser: Browser, pages: dict[str, str], folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    search = pages["search-results"].replace("q=", "limit=4&q=")
    for name, path, width in (
        ("home", pages["home"], 400),
        ("memories", pages["memories-ana-page-2"], 400),
        ("search", search, 400),
        ("search", search, 1280),
        ("health", pages["health"], 400),
    ):
        browser.viewport(width)
        browser.goto(server.base + path)
        if name == "search":
            browser.evaluate("document.querySelector('details.why').open = true")
        browser.screenshot(folder / f"{name}-{width}.jpg")


@pytest.mark.parametrize("width", WIDTHS)
def test_no_page_scrolls_sideways(
    screens: tuple[UiServer, Browser, dict[str, str], Path], width: int
) -> None:
    server, browser, pages, shots = screens
    browser.viewport(width)
    wide: dict[str, dict[str, object]] = {}
    for name, path in pages.items():
        browser.goto(server.base + path)
        assert "Internal Server Error" not in browser.text(), name
        shot = browser.screenshot(shots / f"{name}-{width}.png")
        assert shot.stat().st_size > 2000
        measured = browser.overflow()
        assert measured["innerWidth"] == width
        if measured["scrollWidth"] > measured["clientWidth"] or measured["outside"]:
            wide[name] = measured
    # The search results again with every score breakdown unfolded (the drawings must fit too).
    browser.goto(server.base + pages["search-results"])
    assert browser.evaluate("document.querySelectorAll('details.why svg.shares').length") > 0
    browser.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")
    browser.screenshot(shots / f"search-results-open-{width}.png")
    measured = browser.overflow()
    if measured["scrollWidth"] > measured["clientWidth"] or measured["outside"]:
        wide["search-results-open"] = measured
    assert not wide, f"pages wider than {width} px (screenshots in {shots}): {wide}"


def test_navigation_is_whole_at_400_px(screens: tuple[UiServer, Browser, dict[str, str], Path]) -> None:
    server, browser, _, _ = screens
    browser.viewport(400)
    browser.goto(server.base + "/health")
    edges = browser.evaluate(
        "[...document.querySelectorAll('header nav a')].map(a => "
        "{ const r = a.getBoundingClientRect(); return [a.innerText, r.left, r.right]; })"
    )
    assert [e[0] for e in edges] == ["Agents", "Memories", "Episodes", "Search", "Health"]
    edge = browser.evaluate("document.documentElement.clientWidth")
    assert all(left >= 0 and right <= edge for _, left, right in edges), edges


def test_the_measure_catches_a_page_that_is_too_wide(
    screens: tuple[UiServer, Browser, dict[str, str], Path],
) -> None:
    # The check above must be able to fail: a 900 px wide element on a 400 px window is reported.
    server, browser, _, _ = screens
    browser.viewport(400)
    browser.goto(server.base + "/")
    browser.evaluate(
        "(() => { const d = document.createElement('div'); d.className = 'too-wide';"
        " d.textContent = 'x'; d.setAttribute('width', '900');"
        " d.style.width = '900px'; document.body.appendChild(d); })()"
    )
    measured = browser.overflow()
    assert measured["scrollWidth"] > measured["clientWidth"] and any(
        re.match(r"div\.too-wide", o) for o in measured["outside"]
    )


def test_login_and_read_only_pages_fit_too(
    screens: tuple[UiServer, Browser, dict[str, str], Path], tmp_path: Path
) -> None:
    # The pages of a token-protected view and of a read-only, keyword-only one (no model: its
    # search says so in words), at both widths.
    _, browser, _, shots = screens
    with Memory(
        Settings(db_path=tmp_path / "memory.db", embedding_mode="none", update_check=False)
    ) as memory:
        memory.store("ana", f"Keyword-only note with a digest {LONG_TOKEN}", project_id=LONG_PROJECT)
    wide: dict[str, dict[str, object]] = {}
    with ui_server(tmp_path, CPERSONA_AUTH_TOKEN="a-token-of-sufficient-length-0123") as locked:
        for width in WIDTHS:
            browser.viewport(width)
            browser.goto(locked.base + "/memories")
            assert "This view is protected" in browser.text()
            browser.screenshot(shots / f"login-{width}.png")
            measured = browser.overflow()
            if measured["scrollWidth"] > measured["clientWidth"] or measured["outside"]:
                wide[f"login-{width}"] = measured
    with ui_server(tmp_path, "--read-only") as read_only:
        for width in WIDTHS:
            browser.viewport(width)
            for name, path in (
                ("read-only-memories", "/memories"),
                ("keyword-search", "/search?q=digest"),
                ("keyword-health", "/health"),  # findings: the table of a store without vectors
            ):
                browser.goto(read_only.base + path)
                assert "Read-only view" in browser.text()
                browser.screenshot(shots / f"{name}-{width}.png")
                measured = browser.overflow()
                if measured["scrollWidth"] > measured["clientWidth"] or measured["outside"]:
                    wide[f"{name}-{width}"] = measured
    assert not wide, f"pages too wide (screenshots in {shots}): {wide}"


def test_at_1280_px_short_cells_keep_to_one_line(
    screens: tuple[UiServer, Browser, dict[str, str], Path],
) -> None:
    # "As today" on a desktop: a table with a long unbroken token in one row still lays its short
    # columns out on one line (a ref split as 'me / m:3 / 3' would pass the overflow check).
    server, browser, pages, _ = screens
    browser.viewport(1280)
    for name in ("memories", "episodes", "home"):
        browser.goto(server.base + pages[name])
        split = browser.evaluate(
            "[...document.querySelectorAll('table td:not(.wide) a, table td:not(.wide) .badge')]"
            ".filter(e => e.getClientRects().length > 1 || e.getBoundingClientRect().height > 30)"
            ".map(e => e.innerText)"
        )
        assert split == [], (name, split)
