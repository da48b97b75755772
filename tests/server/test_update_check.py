"""The update check against a real HTTP stand-in for the package index on 127.0.0.1."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from index_standin import closed_port_url, index_standin, release

from cpersona.config import Settings
from cpersona.server.update_check import (
    CACHE_NAME,
    INTERVAL_SECONDS,
    UpdateChecker,
    UpdateCheckFailed,
    parse_releases,
)

CURRENT = "0.1.0"


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def checker(tmp_path: Path, url: str, *, enabled: bool = True, clock: Clock | None = None) -> UpdateChecker:
    settings = Settings(db_path=tmp_path / "memory.db", update_check=enabled, update_index_url=url)
    return UpdateChecker(settings, clock=clock or Clock(), current=CURRENT, timeout=3.0)


RELEASES = {"0.1.0": release(), "0.2.0": release(), "0.3.0rc1": release()}


def test_disabled_means_no_request_and_no_file(tmp_path: Path) -> None:
    with index_standin(RELEASES) as index:
        c = checker(tmp_path, index.url, enabled=False)
        assert c.start_background() is None
        assert c.background_check() is False
        report = c.report()
        assert report["ok"] is True and report["enabled"] is False and report["latest"] is None
        applied = c.apply()
        assert applied["ok"] is False and applied["error_code"] == "update_check_disabled"
        assert index.seen == []
    assert not (tmp_path / CACHE_NAME).exists()
    assert list(tmp_path.iterdir()) == []


def test_one_request_per_24_hours(tmp_path: Path) -> None:
    clock = Clock()
    with index_standin(RELEASES) as index:
        assert checker(tmp_path, index.url, clock=clock).background_check() is True
        assert len(index.json_requests()) == 1
        clock.now += INTERVAL_SECONDS - 60  # a second start within 24 h reads the cache
        assert checker(tmp_path, index.url, clock=clock).background_check() is False
        report = checker(tmp_path, index.url, clock=clock).report()
        assert report["cached"] is True and report["latest"] == "0.2.0"
        assert len(index.json_requests()) == 1
        clock.now += 120  # past 24 h
        assert checker(tmp_path, index.url, clock=clock).background_check() is True
        assert len(index.json_requests()) == 2
    cache = json.loads((tmp_path / CACHE_NAME).read_text())
    assert cache["latest"] == "0.2.0" and cache["last_ok"] is True
    assert sorted(p.name for p in tmp_path.iterdir()) == [CACHE_NAME]  # no temp file left behind


def test_request_carries_nothing_about_the_deployment(tmp_path: Path) -> None:
    with index_standin(RELEASES) as index:
        checker(tmp_path, index.url + "/").background_check()
        (seen,) = index.seen
    assert seen.path == "/cpersona-embedded/json"  # no query string
    assert seen.headers["user-agent"] == f"cpersona-embedded/{CURRENT}"
    assert set(seen.headers) <= {"host", "user-agent", "accept-encoding", "connection"}


def test_report_says_current_latest_and_newer(tmp_path: Path) -> None:
    with index_standin(RELEASES) as index:
        report = checker(tmp_path, index.url).report()
    assert report == {
        **report,
        "ok": True,
        "enabled": True,
        "current": CURRENT,
        "latest": "0.2.0",  # the release candidate is not offered
        "newer_available": True,
        "current_yanked": False,
        "cached": False,
    }
    assert report["checked_at"].endswith("Z")


def test_withdrawn_current_version_is_detected(tmp_path: Path) -> None:
    releases = {"0.0.9": release(), "0.1.0": release(yanked=True), "0.1.1": release(yanked=True)}
    with index_standin(releases) as index:
        report = checker(tmp_path, index.url).report()
    assert report["current_yanked"] is True
    assert report["latest"] == "0.0.9" and report["newer_available"] is False


def test_a_release_is_withdrawn_only_when_all_its_files_are() -> None:
    partly = [*release(yanked=True), *release()]
    latest, yanked = parse_releases({"releases": {"1.0": partly, "2.0": release(yanked=True), "3.0": []}})
    assert latest == "1.0" and yanked == ["2.0"]


def test_offline_is_silent_fast_and_cached_as_a_failure(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = closed_port_url()
    c = checker(tmp_path, url)
    with caplog.at_level(logging.DEBUG, logger="cpersona.update_check"):
        assert c.background_check() is True
    assert all(r.levelno <= logging.DEBUG for r in caplog.records)
    cache = json.loads((tmp_path / CACHE_NAME).read_text())
    # Fast: the refused connection ended the check, not its timeout (asserted by the cause, never by a
    # wall-clock bound, which was 3.5 s above the 3.0 s timeout and so could not fail).
    assert cache["last_ok"] is False and "127.0.0.1" in cache["last_error"]
    assert "Connection refused" in cache["last_error"] and "timed out" not in cache["last_error"]
    assert c.background_check() is False  # the failed attempt counts: no retry storm on every start
    report = c.report()  # an explicit check asks again and says it failed
    assert report["ok"] is False and report["error_code"] == "update_check_failed"


def test_background_thread_never_blocks_and_writes_the_cache(tmp_path: Path) -> None:
    with index_standin(RELEASES) as index:
        thread = checker(tmp_path, index.url).start_background()
        assert thread is not None and thread.daemon
        thread.join(5)
        assert len(index.json_requests()) == 1
    assert json.loads((tmp_path / CACHE_NAME).read_text())["latest"] == "0.2.0"


@pytest.mark.parametrize(
    ("status", "body"),
    [(500, None), (200, b"<html>not json</html>"), (200, b'{"info": {}}'), (200, b"[1, 2]")],
)
def test_bad_index_answers_fail_cleanly(tmp_path: Path, status: int, body: bytes | None) -> None:
    with index_standin(RELEASES) as index:
        index.status, index.body = status, body
        c = checker(tmp_path, index.url)
        assert c.background_check() is True
        report = c.report()
    assert report["ok"] is False and report["error_code"] == "update_check_failed"


def test_a_corrupt_cache_just_means_check_again(tmp_path: Path) -> None:
    (tmp_path / CACHE_NAME).write_text("{not json")
    with index_standin(RELEASES) as index:
        assert checker(tmp_path, index.url).background_check() is True
        assert len(index.json_requests()) == 1


def test_apply_false_never_runs_pip_and_apply_true_reports_pip_failing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with index_standin({"0.1.0": release(), "99.0.0": release()}) as index:
        # pip reads its index from its own environment; point it at the stand-in, which has nothing.
        monkeypatch.setenv("PIP_INDEX_URL", f"{index.url}/simple/")
        monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
        monkeypatch.setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        monkeypatch.setenv("PIP_RETRIES", "0")
        monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
        c = checker(tmp_path, index.url)
        report = c.report()
        assert report["newer_available"] is True and "command" not in report
        assert index.simple_requests() == []  # apply=false: pip never ran
        applied = c.apply()
        assert index.simple_requests() != []  # apply=true: pip ran, against the stand-in
    assert applied["ok"] is False and applied["error_code"] == "update_failed"
    assert applied["command"][1:] == ["-m", "pip", "install", "--upgrade", "cpersona-embedded==99.0.0"]
    assert applied["exit_code"] != 0 and applied["applied"] is False
    assert "99.0.0" in applied["stderr_tail"] and applied["error"].startswith("pip exited with")


def test_apply_with_nothing_newer_installs_nothing(tmp_path: Path) -> None:
    with index_standin({"0.1.0": release()}) as index:
        applied = checker(tmp_path, index.url).apply()
        assert index.simple_requests() == []
    assert applied["ok"] is True and applied["applied"] is False and "command" not in applied


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
        max_leaves=12,
    )
)
def test_parse_releases_never_crashes_on_arbitrary_json(payload: Any) -> None:
    try:
        latest, yanked = parse_releases(payload)
    except UpdateCheckFailed:
        return
    assert latest is None or isinstance(latest, str)
    assert all(isinstance(v, str) for v in yanked)


def test_index_url_setting() -> None:
    assert Settings.from_env({}).update_index_url == "https://pypi.org/pypi"
    s = Settings.from_env(
        {"CPERSONA_UPDATE_INDEX_URL": "http://127.0.0.1:9/pypi/", "CPERSONA_UPDATE_CHECK": "off"}
    )
    assert s.update_index_url == "http://127.0.0.1:9/pypi" and s.update_check is False
