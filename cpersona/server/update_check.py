"""The update check (docs/tools.md#check_update, docs/decisions.md#update-check): is a newer cpersona-embedded released, or was this one withdrawn?

At server start a daemon thread asks the package index (PyPI's JSON API) for
this distribution's releases, at most once per 24 h: the answer (or the
failure) is cached in ``update-check.json`` beside the database. The request
carries nothing about the deployment: a plain GET of
``<index>/<distribution>/json`` with a User-Agent naming the version, no query
string, no other headers. Offline is silent (a debug log line). With
``CPERSONA_UPDATE_CHECK=false`` nothing is requested and no file is written.

``check_update(apply=false)`` reports; only ``apply=true`` installs, by
running pip on the interpreter that runs the server.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from cpersona.config import Settings
from cpersona.core.atomic import write_json
from cpersona.core.text import iso_seconds

log = logging.getLogger("cpersona.update_check")

DISTRIBUTION = "cpersona-embedded"
CACHE_NAME = "update-check.json"
#: At most one request to the index per this many seconds (24 h: docs/decisions.md#update-check).
INTERVAL_SECONDS = 24 * 60 * 60
#: Seconds to wait for the index; offline must be fast.
TIMEOUT_SECONDS = 3.0
#: Largest index answer read (cpersona's release list is tiny; this bounds a misbehaving server).
MAX_RESPONSE_BYTES = 8 * 1024 * 1024
#: Seconds pip may take before apply gives up on it.
PIP_TIMEOUT_SECONDS = 600
#: Characters of pip's output echoed back.
OUTPUT_TAIL_CHARS = 2000


class UpdateCheckFailed(Exception):
    """The index could not be reached or answered something unusable."""


def current_version(distribution: str = DISTRIBUTION) -> str:
    """The installed version of ``distribution`` ("0.0.0" when it is not installed)."""
    try:
        return version(distribution)
    except PackageNotFoundError:
        return "0.0.0"


def cache_path(settings: Settings) -> Path:
    """``update-check.json`` beside the database file."""
    return settings.db_path.parent / CACHE_NAME


def _parse(raw: str) -> Version | None:
    try:
        return Version(raw)
    except InvalidVersion:
        return None


def parse_releases(payload: Any) -> tuple[str | None, list[str]]:
    """(latest version, withdrawn versions) from a PyPI JSON API answer.

    A version is withdrawn ("yanked") when every one of its files is; latest is
    the highest version that is not withdrawn, preferring final releases.
    """
    if not isinstance(payload, dict) or not isinstance(payload.get("releases"), dict):
        raise UpdateCheckFailed("the index answer has no 'releases' object")
    available: list[Version] = []
    yanked: list[str] = []
    for raw, files in payload["releases"].items():
        parsed = _parse(str(raw))
        if parsed is None or not isinstance(files, list) or not files:
            continue  # unparseable or file-less releases cannot be installed anyway
        if all(isinstance(f, dict) and f.get("yanked") is True for f in files):
            yanked.append(str(raw))
        else:
            available.append(parsed)
    finals = [v for v in available if not v.is_prerelease and not v.is_devrelease]
    pool = finals or available
    return (str(max(pool)) if pool else None), sorted(yanked, key=lambda v: _parse(v) or Version("0"))


def fetch_releases(
    base_url: str, distribution: str, current: str, timeout: float
) -> tuple[str | None, list[str]]:
    """One GET of ``<base_url>/<distribution>/json``; raise UpdateCheckFailed on any problem."""
    url = f"{base_url.rstrip('/')}/{distribution}/json"
    request = urllib.request.Request(url, headers={"User-Agent": f"{distribution}/{current}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read(MAX_RESPONSE_BYTES + 1)
    except (OSError, ValueError) as exc:  # URLError, HTTPError, timeouts, bad URL
        raise UpdateCheckFailed(f"{url}: {exc}") from exc
    if len(body) > MAX_RESPONSE_BYTES:
        raise UpdateCheckFailed(f"{url}: answer larger than {MAX_RESPONSE_BYTES} bytes")
    try:
        payload = json.loads(body)
    except ValueError as exc:
        raise UpdateCheckFailed(f"{url}: not JSON ({exc})") from exc
    return parse_releases(payload)


def read_cache(path: Path) -> dict[str, Any] | None:
    """The cached record, or None when absent or unreadable (a bad cache just means "check again")."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_cache(path: Path, record: dict[str, Any]) -> None:
    """Write ``record`` atomically (cpersona.core.atomic)."""
    write_json(path, record)


def _within(record: dict[str, Any] | None, key: str, now: float) -> bool:
    # A timestamp in the future (clock set back) counts as stale, or the check could stop for good.
    stamp = record.get(key) if record else None
    return isinstance(stamp, int | float) and 0 <= now - stamp < INTERVAL_SECONDS


class UpdateChecker:
    """The update check for one database directory. Stateless apart from the cache file."""

    def __init__(
        self,
        settings: Settings,
        *,
        clock: Callable[[], float] = time.time,
        timeout: float = TIMEOUT_SECONDS,
        distribution: str = DISTRIBUTION,
        current: str | None = None,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.timeout = timeout
        self.distribution = distribution
        self.current = current or current_version(distribution)
        self.path = cache_path(settings)

    # -- the request ---------------------------------------------------------------------
    def _check_now(self, previous: dict[str, Any] | None) -> dict[str, Any]:
        """Ask the index once and cache the outcome (a failure is cached too, keeping the last success)."""
        now = self.clock()
        record: dict[str, Any] = dict(previous or {})
        record.update(
            checked_at=now,
            checked_at_iso=iso_seconds(now),
            index_url=self.settings.update_index_url,
            distribution=self.distribution,
        )
        try:
            latest, yanked = fetch_releases(
                self.settings.update_index_url, self.distribution, self.current, self.timeout
            )
        except UpdateCheckFailed as exc:
            record.update(last_ok=False, last_error=str(exc))
        else:
            record.update(last_ok=True, last_error=None, latest=latest, yanked=yanked)
            record.update(succeeded_at=now, succeeded_at_iso=iso_seconds(now))
        try:
            write_cache(self.path, record)
        except OSError as exc:
            log.debug("update check: cannot write %s: %s", self.path, exc)
        return record

    def background_check(self) -> bool:
        """The start-up check: request only when no attempt was made in 24 h; True when a request was made.

        Never raises, never logs above debug: an offline machine must not hear about it.
        """
        if not self.settings.update_check:
            return False
        try:
            previous = read_cache(self.path)
            if _within(previous, "checked_at", self.clock()):
                log.debug("update check: cached result from the last 24 h, no request")
                return False
            record = self._check_now(previous)
            if record.get("last_ok"):
                log.debug("update check: latest %s (running %s)", record.get("latest"), self.current)
            else:
                log.debug("update check failed: %s", record.get("last_error"))
            return True
        except Exception as exc:  # a background nicety must never take the server down
            log.debug("update check crashed: %s", exc, exc_info=True)
            return False

    def start_background(self) -> threading.Thread | None:
        """Run ``background_check`` in a daemon thread (None when disabled); start-up never waits for it."""
        if not self.settings.update_check:
            return None
        thread = threading.Thread(target=self.background_check, name="cpersona-update-check", daemon=True)
        thread.start()
        return thread

    # -- the tool -------------------------------------------------------------------------
    def report(self) -> dict[str, Any]:
        """The ``check_update(apply=false)`` answer: current, latest, newer_available, current_yanked, cached.

        Uses the cache when a check succeeded in the last 24 h; otherwise asks the
        index now (the caller asked explicitly). A failed request is ``ok: false``.
        """
        base: dict[str, Any] = {"current": self.current, "distribution": self.distribution}
        if not self.settings.update_check:
            return {
                "ok": True,
                **base,
                "enabled": False,
                "latest": None,
                "newer_available": None,
                "current_yanked": None,
                "checked_at": None,
                "cached": False,
                "note": "update checks are disabled (CPERSONA_UPDATE_CHECK=false): no request was made",
            }
        record = read_cache(self.path)
        cached = _within(record, "succeeded_at", self.clock())
        if not cached:
            record = self._check_now(record)
            if not record.get("last_ok"):
                return {
                    "ok": False,
                    "error": f"could not reach the package index: {record.get('last_error')}",
                    "error_code": "update_check_failed",
                    **base,
                    "enabled": True,
                }
        assert record is not None
        latest = record.get("latest")
        yanked = [str(v) for v in record.get("yanked") or []]
        newer = None
        current_v, latest_v = _parse(self.current), _parse(str(latest)) if latest else None
        if current_v is not None and latest_v is not None:
            newer = latest_v > current_v
        return {
            "ok": True,
            **base,
            "enabled": True,
            "latest": latest,
            "newer_available": newer,
            "current_yanked": self.current in yanked,
            "checked_at": record.get("succeeded_at_iso"),
            "cached": cached,
            "index_url": record.get("index_url"),
        }

    def apply(self) -> dict[str, Any]:
        """``check_update(apply=true)``: pip-install the latest release when it is newer; say what ran."""
        if not self.settings.update_check:
            return {
                "ok": False,
                "error": "update checks are disabled (CPERSONA_UPDATE_CHECK=false); "
                "enable them to apply updates",
                "error_code": "update_check_disabled",
                "current": self.current,
            }
        report = self.report()
        if not report["ok"]:
            return report
        if not report["newer_available"]:
            return {**report, "applied": False, "note": "nothing to install: no release newer than this one"}
        requirement = f"{self.distribution}=={report['latest']}"
        command = [sys.executable, "-m", "pip", "install", "--upgrade", requirement]
        try:
            done = subprocess.run(  # a fixed argv, never a shell
                command, capture_output=True, text=True, timeout=PIP_TIMEOUT_SECONDS, stdin=subprocess.DEVNULL
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return {
                "ok": False,
                "error": f"could not run pip: {exc}",
                "error_code": "update_failed",
                **report,
                "command": command,
                "applied": False,
            }
        result = {
            **report,
            "command": command,
            "exit_code": done.returncode,
            "stdout_tail": done.stdout[-OUTPUT_TAIL_CHARS:],
            "stderr_tail": done.stderr[-OUTPUT_TAIL_CHARS:],
            "applied": done.returncode == 0,
        }
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            error = f"pip exited with {done.returncode}: {last}"
            return {**result, "ok": False, "error": error, "error_code": "update_failed"}
        result["note"] = f"installed {self.distribution} {report['latest']}; restart the server to run it"
        return result
