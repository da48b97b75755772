"""Self-calibration: when an agent is (re)calibrated by itself, in the background (docs/quality-gate.md#self-calibration-the-schedule).

The schedule, per agent (counting its memories holding a vector of the active model):

- **first**: when it reaches ``MIN_ROWS`` (the gate's minimum size);
- **growth**: again when it has grown by ``GROWTH_FACTOR`` since its last calibration
  (``LONG_RECORD_GROWTH_FACTOR`` where the calibrated threshold stands down for long records);
- **fingerprint**: when its stored calibration is for another model, dimension or scoring version;
- checked at start-up (when the model is ready), after stores, and every ``SCAN_SECONDS`` (rows written by
  other processes or imports).

The trigger costs ``store`` one dictionary increment and an ``Event.set``: the worker compares
"rows at the last look + stores since" with the next size due, and only then counts rows in the store.
Never on the request path; one calibration per agent at a time, also across processes
(``CalibrationStates.exclusive``: an flock on SQLite, an advisory lock on PostgreSQL; the state is
re-read before each write). ``CPERSONA_AUTO_CALIBRATE=false`` keeps only the fingerprint pass at
start-up (redoing calibrations someone asked for when the model changed).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import defaultdict
from typing import Any

from cpersona.config import Settings
from cpersona.core.public import public
from cpersona.core.work import Work
from cpersona.embed.runtime.service import EmbeddingService
from cpersona.errors import CalibrationUnavailable, InvalidInput, PersistencePaused
from cpersona.result_types.quality import CalibrateResult, CalibrateThresholdResult, Fingerprint
from cpersona.retrieval.calibration import LEVELS, MIN_ROWS, stands_down
from cpersona.runtime import persistence
from cpersona.services.calibration import Calibrator
from cpersona.storage.interface import Store
from cpersona.storage.values import MEMORIES

log = logging.getLogger("cpersona.calibration")

#: Recalibrate when the agent has this many times the rows of its last calibration. The evidence gate's
#: threshold rises as the corpus grows, so a calibration made at N / factor rows lets through questions
#: the corpus as it stands would empty: 1.05 lands a conversation stored turn by turn and then asked
#: where an explicit calibration at the end does, also on a slow machine (docs/quality-gate.md "Why 1.05").
GROWTH_FACTOR = 1.05
#: The factor for an agent whose last calibration found long records, at a precision other than strict:
#: its calibrated threshold is not in force there (the heuristic floor is: docs/quality-gate.md "Long
#: records and the gate"), so a recalibration only refreshes the row-length measure, which moves slowly;
#: 1.05's calibrations cost such a history's stores about 15% more on two cores.
LONG_RECORD_GROWTH_FACTOR = 1.25
#: Full scan of every agent this often (other processes' writes, imports, back-filled vectors).
SCAN_SECONDS = 60.0
#: After a pass, wait at least this long before the next (a burst of stores makes one pass, not many).
MIN_PASS_INTERVAL_SECONDS = 1.0


def growth_factor(entry: dict[str, Any] | None, level: str | None) -> float:
    """``LONG_RECORD_GROWTH_FACTOR`` when the agent's last calibration found long records and its
    precision ``level`` is not strict (None: unknown, so the calibrated threshold may be in force);
    ``GROWTH_FACTOR`` otherwise."""
    if level is not None and stands_down((entry or {}).get("gate"), level) is not None:
        return LONG_RECORD_GROWTH_FACTOR
    return GROWTH_FACTOR


def next_size(
    entry: dict[str, Any] | None,
    current: Fingerprint | None,
    *,
    needs_gate: bool = True,
    level: str | None = None,
) -> int:
    """Rows (with vectors) at which the agent is due next: the minimum size, or its last size × its
    ``growth_factor`` (``level``: the agent's precision)."""
    if _uncalibrated(entry, current, needs_gate):
        return MIN_ROWS
    rows = int((entry or {}).get("rows") or 0)
    # Rounded first: a product such as 100 × 1.1 is 110.00000000000001 in binary floating point, and
    # 110 is due.
    return max(MIN_ROWS, rows + 1, math.ceil(round(rows * growth_factor(entry, level), 6)))


def _uncalibrated(entry: dict[str, Any] | None, current: Fingerprint | None, needs_gate: bool) -> bool:
    fingerprint = (entry or {}).get("fingerprint")
    if not fingerprint or (current is not None and fingerprint != current):
        return True
    return needs_gate and not isinstance((entry or {}).get("gate"), dict)


def trigger_for(
    entry: dict[str, Any] | None,
    count: int,
    current: Fingerprint | None,
    *,
    growth: bool,
    needs_gate: bool = True,
    level: str | None = None,
) -> str | None:
    """Why an agent with ``count`` rows is due now ("first" | "growth" | "fingerprint"), or None.

    ``growth`` False (CPERSONA_AUTO_CALIBRATE=false) keeps only the fingerprint trigger; ``needs_gate``
    (the fused gate is on) makes a calibration without probe cosines count as none; ``level`` is the
    agent's precision (``next_size``).
    """
    if count < MIN_ROWS or current is None:
        return None
    fingerprint = (entry or {}).get("fingerprint")
    if fingerprint and fingerprint != current:
        return "fingerprint"
    if not growth:
        return None
    if _uncalibrated(entry, current, needs_gate):
        return "first"
    return "growth" if count >= next_size(entry, current, needs_gate=needs_gate, level=level) else None


class SelfCalibration:
    """The background worker of one ``Memory``; ``notice_store`` is the only call on the request path."""

    def __init__(
        self,
        calibrator: Calibrator,
        store: Store,
        settings: Settings,
        embeddings: EmbeddingService,
        *,
        enabled: bool = True,
    ) -> None:
        self.calibrator = calibrator
        self.store = store
        self.settings = settings
        self.embeddings = embeddings
        self.enabled = (
            enabled  # False: short-lived processes (CLI commands) never calibrate in the background
        )
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._thread: threading.Thread | None = None
        self._guard = threading.Lock()
        self._since: dict[str, int] = defaultdict(int)  # stores noticed since the last count
        self._counted: dict[str, int] = {}  # rows with vectors at the last count (plus stores since)
        self._failed_at: dict[str, int] = {}  # rows when a calibration last failed (no retry before growth)
        self._full_scan = True
        self.runs = 0  # agents (re)calibrated in the background (tests, stats)
        self.passes = 0
        self.counts_taken = 0  # how often a pass counted rows in the store (tests: the trigger is cheap)
        self.last_error: str | None = None

    # -- triggers (cheap; called from the request path) -----------------------------------------
    def notice_store(self, agent_id: str) -> None:
        """A memory was stored for ``agent_id``: one increment and a wake-up, nothing else."""
        if self.settings.auto_calibrate and self.enabled:
            self._since[agent_id] += 1
            self._wake.set()

    def notice_rows(self) -> None:
        """Rows arrived by another path (import, merge): re-count every agent on the next pass."""
        self._full_scan = True
        self._wake.set()

    # -- lifecycle -----------------------------------------------------------------------------
    def on_model_ready(self) -> None:
        """Start the worker (or wake it for a full pass: the fingerprint may have changed)."""
        if not self.enabled:
            return
        self._full_scan = True
        with self._guard:
            if self._thread is None or not self._thread.is_alive():
                self._idle.clear()
                self._thread = threading.Thread(target=self._run, name="cpersona-calibrate", daemon=True)
                self._thread.start()
        self._wake.set()

    def wait_idle(self, timeout: float = 60.0) -> bool:
        """Block until no pass is running or due; True when idle (tests, benchmarks)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            thread = self._thread
            if thread is None or not thread.is_alive():
                return True
            if self._idle.wait(max(0.0, deadline - time.monotonic())) and not self._wake.is_set():
                return True
            time.sleep(0.02)
        return False

    def stop(self) -> None:
        """Stop after the current agent and wait briefly."""
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None:
            thread.join(10.0)

    # -- the worker ------------------------------------------------------------------------------
    def _run(self) -> None:
        while not self._stop.is_set():
            if not self._wake.wait(SCAN_SECONDS):
                self._full_scan = True  # the periodic look at every agent
            if self._stop.is_set():
                break
            self._idle.clear()  # before clearing the wake-up: wait_idle never sees "idle" with work due
            self._wake.clear()
            try:
                self._pass()
            except Exception as exc:  # never let a background pass take the server down
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.exception("self-calibration pass failed")
            finally:
                self.passes += 1
                if not self._wake.is_set():
                    self._idle.set()
            self._stop.wait(MIN_PASS_INTERVAL_SECONDS)
        self._idle.set()

    def pending(self, *, growth: bool | None = None) -> dict[str, str]:
        """Agents due now and why (counting rows in the store); ``growth`` None follows the setting."""
        current = self.calibrator.current_fingerprint()
        if current is None:
            return {}
        states = self.calibrator.states.agents()
        due = {a: self._trigger(states.get(a), n, current, growth) for a, n in self._counts().items()}
        return {a: why for a, why in sorted(due.items()) if why is not None}

    @public
    def calibrate(
        self, agent_id: str | None = None, precision: str | None = None, *, work: Work | None = None
    ) -> CalibrateResult:
        """Calibrate one agent now, or (``agent_id`` None) every agent the schedule finds due, whatever
        CPERSONA_AUTO_CALIBRATE says (``cpersona calibrate``). ``precision`` (strict | balanced | lenient)
        is saved as the agent's level first. Returns ``{ok, calibrated: [results], skipped: {agent: why}}``.
        ``work`` gets progress in agents and may cancel between agents (those done stay calibrated).
        """
        if precision is not None and precision not in LEVELS:
            raise InvalidInput(f"precision must be one of {', '.join(LEVELS)}, got {precision!r}")
        agents = {agent_id: "explicit"} if agent_id is not None else self.pending(growth=True)
        calibrated: list[CalibrateThresholdResult] = []
        skipped: dict[str, str] = {}
        work = work or Work()
        for done, (agent, trigger) in enumerate(agents.items()):
            work.report(done, len(agents), "agents")
            work.checkpoint(
                "calibrate",
                "the agents calibrated before it stay calibrated",
                lambda: {"calibrated": [c["agent_id"] for c in calibrated]},
            )
            try:
                if precision is not None:
                    persistence.check_writable("calibrate")
                    self.calibrator.save_precision(agent, precision)
                result = self.calibrator.calibrate_now(agent, trigger=trigger)
                calibrated.append(result)
            except CalibrationUnavailable as exc:
                if agent_id is not None:
                    raise
                skipped[agent] = str(exc)
        work.report(len(agents), len(agents), "agents")
        return {"ok": True, "calibrated": calibrated, "skipped": skipped}

    def _trigger(
        self,
        entry: dict[str, Any] | None,
        count: int,
        current: Fingerprint | None,
        growth: bool | None = None,
    ) -> str | None:
        return trigger_for(
            entry,
            count,
            current,
            growth=self.settings.auto_calibrate if growth is None else growth,
            needs_gate=self.settings.fused_gate_enabled,
            level=self.calibrator.precision_level(entry),
        )

    def _counts(self) -> dict[str, int]:
        self.counts_taken += 1
        model_id, dimension = self.embeddings.model_id, self.embeddings.dimension
        with self.store.read() as session:
            return session.vector_search.agent_counts(MEMORIES, model_id, dimension)

    def _worth_a_look(self, current: Fingerprint | None) -> list[str] | None:
        """Agents whose estimated size reached their next calibration (None: every agent)."""
        since = dict(self._since)
        for agent, n in since.items():  # consume what this pass accounts for
            self._since[agent] -= n
            if self._since[agent] <= 0:
                del self._since[agent]
        if self._full_scan:
            self._full_scan = False
            return None
        worth = []
        for agent, stored in since.items():
            known = self._counted.get(agent)
            estimate = (known or 0) + stored
            entry = self.calibrator.states.get(agent)
            due = next_size(
                entry,
                current,
                needs_gate=self.settings.fused_gate_enabled,
                level=self.calibrator.precision_level(entry),
            )
            if known is None or estimate >= max(due, self._failed_at.get(agent, -1) + 1):
                worth.append(agent)
            else:
                self._counted[agent] = estimate  # the counter; the store is counted only when it is due
        return worth

    def _pass(self) -> None:
        current = self.calibrator.current_fingerprint()
        if current is None:
            return
        worth = self._worth_a_look(current)
        if worth is not None and not worth:
            return
        counts = self._counts()
        self._counted.update(counts)
        for agent in sorted(counts if worth is None else worth):
            if self._stop.is_set():
                return
            count = counts.get(agent, 0)
            if count <= self._failed_at.get(agent, -1):
                continue
            if self._trigger(self.calibrator.states.get(agent), count, current) is not None:
                self._calibrate(agent, count, current)

    def _calibrate(self, agent: str, count: int, current: Fingerprint | None) -> None:
        with self.calibrator.states.exclusive(agent, wait=0.0) as held:
            if not held:  # another thread or process is calibrating: look again after a pause
                self._full_scan = True
                self._wake.set()
                return
            # Re-read under the lock: another process may have calibrated it meanwhile.
            trigger = self._trigger(self.calibrator.states.get(agent), count, current)
            if trigger is None:
                return
            try:
                persistence.check_writable("self-calibration")
                self.calibrator.recalibrate(agent, trigger=trigger)
                self.runs += 1
                self._failed_at.pop(agent, None)
            except PersistencePaused:
                log.info(
                    "self-calibration of %r waits: persistence is paused", agent
                )  # the periodic scan retries
            except CalibrationUnavailable as exc:
                log.info("self-calibration of %r skipped: %s", agent, exc)
                self._failed_at[agent] = count
            except Exception as exc:
                self.last_error = f"{agent!r}: {type(exc).__name__}: {exc}"
                self._failed_at[agent] = count
                log.exception("self-calibration of %r failed", agent)
