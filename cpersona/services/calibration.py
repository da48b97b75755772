"""Calibration as a service: ``calibrate_threshold``, the precision knob and the gate policy recall uses
(docs/quality-gate.md). When calibration runs by itself is ``services.self_calibration``.

State lives in the store (``Store.calibration_states()``: the SQLite sidecar, or a PostgreSQL table);
the maths in ``cpersona.retrieval.calibration``. Every write is refused while persistence is paused;
a state that cannot be saved stays in force in this process and the response says so.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Annotated, Any, Literal

import numpy as np

from cpersona import arguments as arg
from cpersona.config import Settings
from cpersona.core.public import public
from cpersona.core.text import format_ts, utc_now
from cpersona.core.validation import bounded_int, optional_str, required_str
from cpersona.core.work import Work
from cpersona.embed.runtime.service import EmbeddingService
from cpersona.errors import CalibrationUnavailable, InvalidInput
from cpersona.result_types.quality import (
    CalibrateThresholdResult,
    CalibrationState,
    Fingerprint,
    GateCalibration,
    RecallPrecisionResult,
)
from cpersona.retrieval import calibration as cal
from cpersona.retrieval import probing
from cpersona.retrieval.gate import HEURISTIC_TOP_COSINE, GatePolicy, QualityGate
from cpersona.retrieval.pipeline import GateStage, NoGate
from cpersona.retrieval.sidecar import fingerprint
from cpersona.runtime import persistence
from cpersona.storage.interface import CalibrationStates, Store
from cpersona.storage.scope import Scope
from cpersona.storage.values import EPISODES, MEMORIES, Saved

log = logging.getLogger("cpersona.calibration")

#: How long an explicit calibration waits for one already running (another thread or process).
EXPLICIT_WAIT_SECONDS = 60.0
#: Before a calibration, the corpus shape (long records or not) is read from this many newest rows ...
SHAPE_ROWS = 200
#: ... at most once per this many seconds per agent, remembered for at most this many agents.
SHAPE_SECONDS = 60.0
SHAPE_AGENTS = 1000


def _number(value: Any, name: str, low: float, high: float) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInput(f"{name} must be a number")
    if not low <= float(value) <= high:
        raise InvalidInput(f"{name} must be between {low:g} and {high:g}, got {value}")
    return float(value)


class Calibrator:
    """Per-agent calibration for one ``Memory``."""

    def __init__(self, store: Store, settings: Settings, embeddings: EmbeddingService) -> None:
        self.store = store
        self.settings = settings
        self.embeddings = embeddings
        self.states: CalibrationStates = store.calibration_states()
        self._probes: dict[tuple[str, int], np.ndarray] = {}
        self._shapes: dict[str, tuple[float, int | None]] = {}  # agent → (monotonic time, newest rows' p75)

    # -- the gate recall uses -------------------------------------------------------------------
    def gate(self) -> GateStage:
        """The pipeline's gate stage for these settings."""
        if not self.settings.fused_gate_enabled:
            return NoGate()
        return QualityGate(self.policy_for, self.settings.autocut_min_results)

    def current_fingerprint(self) -> Fingerprint | None:
        """What a calibration made now would be valid for (None while no model is ready)."""
        if not self.embeddings.ready:
            return None
        return fingerprint(cal.SCORING_VERSION, self.embeddings.model_id, self.embeddings.dimension)

    def precision_level(self, entry: dict[str, Any] | None) -> str:
        """The precision level in force for an agent's entry (its own, else the setting)."""
        return self._precision(entry)[0]

    def _precision(self, entry: dict[str, Any] | None) -> tuple[str, float, bool]:
        """(level, β, overridden) for an agent's entry."""
        override = (entry or {}).get("precision")
        if isinstance(override, dict) and override.get("level") in cal.LEVELS:
            beta = override.get("beta")
            level = str(override["level"])
            return level, float(beta) if isinstance(beta, int | float) else cal.BETA[level], True
        level = self.settings.recall_precision
        return level, cal.BETA[level], False

    def policy_for(self, agent_id: str | None) -> GatePolicy:
        """Which gate applies to a recall by ``agent_id`` (None: a cross-agent scan, never calibrated)."""
        if not self.settings.fused_gate_enabled:
            return GatePolicy(
                "off", reason="the quality gate is disabled (CPERSONA_FUSED_GATE_ENABLED=false)"
            )
        entry = self.states.peek(agent_id) if agent_id is not None else None
        level, beta, _ = self._precision(entry)
        heuristic = GatePolicy(
            "heuristic", level, beta, HEURISTIC_TOP_COSINE, reason=self._uncalibrated(agent_id)
        )
        inputs = cal.gate_inputs((entry or {}).get("gate"))
        if inputs is None:
            return heuristic
        probe_values, lexicon, weight = inputs
        current = self.current_fingerprint()
        if current is not None and entry is not None and entry.get("fingerprint") != current:
            stale = entry.get("fingerprint") or {}
            return GatePolicy(
                "heuristic",
                level,
                beta,
                HEURISTIC_TOP_COSINE,
                stale=True,
                reason=f"calibrated for {stale.get('model_id')} ({stale.get('dimension')}-d, scoring "
                f"v{stale.get('scoring_version')}); recalibration pending in the background, heuristic floor "
                "in force",
            )
        long_rows = cal.stands_down((entry or {}).get("gate"), level)
        if long_rows is not None:
            return GatePolicy(
                "heuristic",
                level,
                beta,
                HEURISTIC_TOP_COSINE,
                reason=f"long records (a quarter of this agent's memories are over {long_rows:,} characters): "
                "a question's words scatter over them as an unrelated question's do, so the calibrated "
                "threshold would answer real questions empty; the heuristic floor is in force at "
                f"{level} precision (strict keeps the calibrated gate)",
            )
        threshold = cal.stored_gate_threshold(
            probe_values,
            str(entry.get("method", "separation")) if entry else "separation",
            beta,
            level,
            percentile=(entry or {}).get("percentile"),
            z_factor=(entry or {}).get("z_factor"),
        )
        return GatePolicy("calibrated", level, beta, threshold, lexicon=lexicon, weight=weight)

    def keyword_weight(self, agent_id: str | None) -> float:
        """The memory keyword channels' weight in fusion for ``agent_id``'s recalls: lower when its
        corpus is made of long records (docs/retrieval.md "Long records"), as a calibration measured it
        or, before one, as the newest rows show it (``_newest_rows_p75``). Keyword-only: 1 (the weight
        balances the keyword channels against the vector channel)."""
        if agent_id is None or not self.embeddings.ready:
            return 1.0
        gate = (self.states.peek(agent_id) or {}).get("gate")
        if isinstance(gate, dict) and "row_chars_p75" in gate:
            long = cal.long_records(gate) is not None
        else:
            p75 = self._newest_rows_p75(agent_id)
            long = p75 is not None and p75 >= cal.LONG_ROW_CHARS
        return cal.LONG_RECORD_KEYWORD_WEIGHT if long else 1.0

    def _newest_rows_p75(self, agent_id: str) -> int | None:
        """The 75th percentile length of the agent's newest ``SHAPE_ROWS`` memories (None below
        ``cal.MIN_ROWS``), read at most once per ``SHAPE_SECONDS`` per agent: a fresh history of long
        answers is ranked as a calibrated one would rank it from its first question on."""
        now = time.monotonic()
        cached = self._shapes.get(agent_id)
        if cached is not None and now - cached[0] < SHAPE_SECONDS:
            return cached[1]
        with self.store.read() as session:
            lengths = session.memories.recent_lengths(Scope(agent_id), SHAPE_ROWS)
        p75 = cal.row_chars_p75(lengths) if len(lengths) >= cal.MIN_ROWS else None
        if len(self._shapes) >= SHAPE_AGENTS:  # a server asked for many agents: forget, re-read on demand
            self._shapes.clear()
        self._shapes[agent_id] = (now, p75)
        return p75

    def _uncalibrated(self, agent_id: str | None) -> str:
        if agent_id is None:
            return "a recall across agents is never calibrated (calibration is per agent): heuristic floor in force"
        if self.settings.auto_calibrate:
            return (
                f"not calibrated yet: a fixed low top-cosine floor is in force; self-calibration runs in the "
                f"background once the agent has {cal.MIN_ROWS} memories with vectors (or run "
                "`cpersona calibrate` / calibrate_threshold now)"
            )
        return (
            "not calibrated (CPERSONA_AUTO_CALIBRATE=false): a fixed low top-cosine floor is in force; run "
            f"`cpersona calibrate --agent {agent_id}` or calibrate_threshold"
        )

    # -- tools ----------------------------------------------------------------------------------
    @public
    def calibrate_threshold(
        self,
        agent_id: str,
        sample_size: Annotated[
            int | None,
            arg.Field(
                ge=10,
                le=cal.MAX_SAMPLE_SIZE,
                default=cal.DEFAULT_SAMPLE_SIZE,  # what None means (the schema quotes it)
                description="Row pairs sampled.",
            ),
        ] = None,
        method: Literal["separation", "percentile", "zscore"] = "separation",
        z_factor: Annotated[float | None, arg.Field(ge=-5, le=10, description="zscore's z.")] = None,
        percentile: Annotated[float | None, arg.Field(ge=0, le=100, description="percentile's cut.")] = None,
        *,
        work: Work | None = None,
    ) -> CalibrateThresholdResult:
        """Derive the agent's thresholds from its own corpus, label-free, and persist them (docs/quality-gate.md).

        Row pairs give the vector threshold (random pairs = null; adjacent same-session pairs =
        positives, nearest neighbours as fallback); with the fused gate on, probe questions give the
        query gate's threshold. Raises ``CalibrationUnavailable`` without a ready model or with fewer
        than 10 rows with vectors. ``work`` (``cpersona.core.work``) may cancel it before the thresholds
        are saved (nothing is saved then).
        """
        persistence.check_writable("calibrate_threshold")
        agent = required_str(agent_id, "agent_id")
        if method not in cal.METHODS:
            raise InvalidInput(f"method must be one of {', '.join(cal.METHODS)}, got {method!r}")
        size = (
            cal.DEFAULT_SAMPLE_SIZE
            if sample_size is None
            else bounded_int(sample_size, "sample_size", 10, cal.MAX_SAMPLE_SIZE)
        )
        pct = _number(percentile, "percentile", 0.0, 100.0)
        z = _number(z_factor, "z_factor", -5.0, 10.0)
        return self._calibrate_now(agent, size, method, z, pct, work=work)

    def _calibrate_now(
        self,
        agent: str,
        size: int,
        method: str,
        z: float | None,
        pct: float | None,
        trigger: str = "explicit",
        work: Work | None = None,
    ) -> CalibrateThresholdResult:
        with self.states.exclusive(agent, wait=EXPLICIT_WAIT_SECONDS) as held:
            if not held:
                raise CalibrationUnavailable(
                    f"another calibration of agent {agent!r} is still running (this or another server "
                    f"process) after {EXPLICIT_WAIT_SECONDS:g} s; try again"
                )
            return self._calibrate(agent, size, method, z, pct, trigger=trigger, work=work)

    def calibrate_now(self, agent_id: str, trigger: str = "explicit") -> CalibrateThresholdResult:
        """Calibrate ``agent_id`` now with its stored method and options (``cpersona calibrate``)."""
        agent = required_str(agent_id, "agent_id")
        persistence.check_writable("calibrate")
        with self.states.exclusive(agent, wait=EXPLICIT_WAIT_SECONDS) as held:
            if not held:
                raise CalibrationUnavailable(
                    f"another calibration of agent {agent!r} is still running; try again"
                )
            return self.recalibrate(agent, trigger)

    def recalibrate(self, agent: str, trigger: str) -> CalibrateThresholdResult:
        """Calibrate ``agent`` again with its stored method and options (the caller holds ``exclusive``)."""
        previous = self.states.get(agent) or {}
        return self._calibrate(
            agent,
            int(previous.get("sample_size") or cal.DEFAULT_SAMPLE_SIZE),
            str(previous.get("method") or "separation"),
            previous.get("z_factor"),
            previous.get("percentile"),
            trigger=trigger,
        )

    @public
    def set_recall_precision(
        self,
        agent_id: str,
        precision: Annotated[
            Literal["strict", "balanced", "lenient", ""] | None,
            arg.Field(description="strict, balanced or lenient; '' clears it."),
        ] = None,
        beta: Annotated[
            float | None, arg.Field(ge=0.05, le=20, description="A raw beta; overrides precision.")
        ] = None,
    ) -> RecallPrecisionResult:
        """Set the agent's precision (strict | balanced | lenient, or a raw β) and recalibrate now.

        An empty precision with no β clears the override (the global CPERSONA_RECALL_PRECISION applies).
        """
        persistence.check_writable("set_recall_precision")
        agent = required_str(agent_id, "agent_id")
        saved = self.save_precision(agent, precision, beta)
        result = self.get_recall_precision(agent)
        try:
            with self.states.exclusive(agent, wait=EXPLICIT_WAIT_SECONDS) as held:
                if not held:
                    raise CalibrationUnavailable(f"another calibration of agent {agent!r} is still running")
                self.recalibrate(agent, trigger="precision")
            result = self.get_recall_precision(agent)
            result["recalibrated"] = True
        except CalibrationUnavailable as exc:
            result["recalibrated"] = False
            result["note"] = f"precision saved; not recalibrated: {exc}"
        if not saved.persisted:
            result["persisted"] = False
            result["storage"] = _unsaved(saved.problem)
        return result

    def save_precision(self, agent: str, precision: str | None, beta: float | None = None) -> Saved:
        """Validate and save the agent's precision override without recalibrating."""
        level = optional_str(precision, "precision") or None
        if level is not None and level not in cal.LEVELS:
            raise InvalidInput(
                f"precision must be one of {', '.join(cal.LEVELS)} (or empty to clear), got {level!r}"
            )
        raw = None if beta is None else cal.validate_beta(beta)

        # The stored entry is the calibration state's own JSON (CalibrationStates.modify), not a result shape.
        def change(entry: dict[str, Any] | None) -> dict[str, Any] | None:
            entry = entry or {}
            if level is None and raw is None:
                entry.pop("precision", None)
            else:
                entry["precision"] = {"level": level or cal.level_for_beta(raw or 1.0), "beta": raw}
            return entry or None

        return self.states.modify(agent, change)

    @public
    def get_recall_precision(self, agent_id: str) -> RecallPrecisionResult:
        """The agent's effective precision (level, β, overridden?), the global one, and its calibration state."""
        agent = required_str(agent_id, "agent_id")
        entry = self.states.get(agent)
        level, beta, overridden = self._precision(entry)
        policy = self.policy_for(agent)
        state: CalibrationState = {"calibrated": bool((entry or {}).get("fingerprint")), "gate": policy.kind}
        if policy.threshold is not None:
            state["threshold"] = round(policy.threshold, 6)
        if policy.stale:
            state["stale"] = True
        if entry and entry.get("fingerprint"):
            state["fingerprint"] = entry["fingerprint"]
            state["created_at"] = entry.get("created_at")
            state["method"] = entry.get("method")
            state["rows"] = entry.get("rows")
            if entry.get("trigger"):
                state["trigger"] = entry["trigger"]
        glob = self.settings.recall_precision
        return {
            "ok": True,
            "agent_id": agent,
            "level": level,
            "beta": beta,
            "overridden": overridden,
            "global": {"level": glob, "beta": cal.BETA[glob]},
            "calibration": state,
        }

    def discard(self, agent_id: str) -> bool:
        """Forget one agent's calibration and precision (delete_agent_data). True when there was any."""
        existed = self.states.get(agent_id) is not None
        if existed:
            self.states.modify(agent_id, lambda entry: None)
        return existed

    # -- the work -----------------------------------------------------------------------------
    def _probe_vectors(self) -> np.ndarray:
        key = (self.embeddings.model_id, self.embeddings.dimension)
        cached = self._probes.get(key)
        if cached is None:
            vectors = []
            for text in cal.probe_questions():
                vector = self.embeddings.embed_query(text)
                if vector is None:
                    raise CalibrationUnavailable(
                        "the embedding model failed while embedding the probe questions"
                    )
                vectors.append(np.asarray(vector, dtype=np.float32))
            cached = np.vstack(vectors)
            self._probes[key] = cached
        return cached

    def _calibrate(
        self,
        agent: str,
        size: int,
        method: str,
        z: float | None,
        pct: float | None,
        *,
        trigger: str = "explicit",
        work: Work | None = None,
    ) -> CalibrateThresholdResult:
        """Measure the agent's corpus and save the result; the caller holds ``states.exclusive(agent)``."""
        current = self.current_fingerprint()
        if current is None or not self.embeddings.ready:
            raise CalibrationUnavailable(
                "no embedding model is ready: calibration measures cosines (recall is "
                "keyword-only and ungated until one is)"
            )
        model_id, dimension = self.embeddings.model_id, self.embeddings.dimension
        with self.store.read() as session:  # the engine's own vectors (SQLite: its synced in-memory index)
            ids, vectors = session.vector_search.agent_vectors(MEMORIES, model_id, dimension, agent)
        if ids.size < cal.MIN_ROWS:
            raise CalibrationUnavailable(
                f"agent {agent!r} has {ids.size} memories with vectors of {current['model_id']}; calibration "
                f"needs at least {cal.MIN_ROWS}"
            )
        # Both lists are in id order; a row deleted in between gets a session of its own.
        rows = self.store.session().memories.timeline(agent)
        known = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        at = np.minimum(np.searchsorted(known, ids), max(len(rows) - 1, 0))
        sessions = cal.session_keys(
            [
                rows[p] if rows and rows[p][0] == i else (int(i), "", f"#{i}", "")
                for p, i in zip(at.tolist(), ids.tolist(), strict=True)
            ]
        )
        pairs = cal.row_pairs(vectors, sessions, size)
        level, beta, overridden = self._precision(self.states.get(agent))
        vector_threshold = pairs.threshold(method, beta, level, percentile=pct, z_factor=z)
        measured: dict[str, Any] = {
            "fingerprint": current,
            "created_at": format_ts(utc_now()),
            "method": method,
            "sample_size": size,
            "rows": int(ids.size),
            "percentile": pct,
            "z_factor": z,
            "trigger": trigger,
            "vector": {"threshold": round(vector_threshold, 6), **pairs.summary()},
        }
        gate_out: GateCalibration = {"enabled": self.settings.fused_gate_enabled}
        if self.settings.fused_gate_enabled:
            with self.store.read() as session:
                episodes = session.vector_search.agent_vectors(EPISODES, model_id, dimension, agent)[1]
            probe_vectors = self._probe_vectors()
            cosines = np.sort(cal_top_cosines(probe_vectors, vectors, episodes))
            with self.store.recall_read() as session:  # the probes' evidence, measured as recalls
                measured["gate"] = probing.measure_gate(
                    session,
                    self.settings,
                    agent,
                    ids,
                    probe_vectors,
                    cosines,
                    (model_id, dimension),
                    utc_now(),
                )
            tops = np.asarray(measured["gate"]["probe_evidence"])
            thresholds = {
                lv: round(cal.gate_threshold(tops, method, cal.BETA[lv], lv, percentile=pct, z_factor=z), 6)
                for lv in cal.LEVELS
            }
            threshold = round(cal.gate_threshold(tops, method, beta, level, percentile=pct, z_factor=z), 6)
            gate_out.update(
                {
                    "kind": cal.GATE_KIND,
                    "entities": measured["gate"]["lexicon"]["entities"],
                    "probes": int(tops.size),
                    "threshold": threshold,
                    "thresholds": thresholds,
                    "probe_evidence": {
                        f"p{q}": round(float(np.percentile(tops, q)), 6) for q in (50, 75, 90)
                    },
                    "probe_top_cosine": {
                        f"p{q}": round(float(np.percentile(cosines, q)), 6) for q in (50, 75, 90)
                    },
                    # What each level would do to questions about things this agent never stored.
                    "probes_cut": {lv: int(np.count_nonzero(tops < t)) for lv, t in thresholds.items()},
                }
            )
            if "row_chars_p75" in measured["gate"]:
                gate_out["row_chars_p75"] = measured["gate"]["row_chars_p75"]
                gate_out["long_records"] = cal.long_records(measured["gate"]) is not None
        persistence.check_writable("calibrate_threshold")

        def change(entry: dict[str, Any] | None) -> dict[str, Any]:
            entry = entry or {}  # re-read under the lock: a precision set meanwhile is kept
            entry.update(measured)
            if "gate" not in measured:
                entry.pop("gate", None)
            return entry

        if work is not None:
            work.report(1, 2, "steps", "thresholds measured")
            work.checkpoint("calibrate_threshold", "nothing was saved: the previous calibration stays")
        saved = self.states.modify(agent, change)
        result: CalibrateThresholdResult = {
            "ok": True,
            "agent_id": agent,
            "method": method,
            "sample_size": size,
            "rows": int(ids.size),
            "vector": measured["vector"],
            "gate": gate_out,
            "precision": {"level": level, "beta": beta, "overridden": overridden},
            "fingerprint": current,
            "created_at": measured["created_at"],
            "trigger": trigger,
            "sidecar": self.states.location,
            "persisted": saved.persisted,
        }
        if not saved.persisted:
            result["storage"] = _unsaved(saved.problem)
        return result


def cal_top_cosines(probes: np.ndarray, memories: np.ndarray, episodes: np.ndarray) -> np.ndarray:
    """Each probe's best cosine over the agent's memories and episodes, in blocks (bounded memory)."""
    best = np.full(probes.shape[0], -np.inf, dtype=np.float32)
    for matrix in (memories, episodes):
        for start in range(0, matrix.shape[0], _TOP_COSINE_BLOCK):
            block = matrix[start : start + _TOP_COSINE_BLOCK]
            if block.shape[0]:
                best = np.maximum(best, (probes @ block.T).max(axis=1))
    return best


#: Rows per block of the probe × corpus product (80 × 8192 float32 = 2.6 MB at a time).
_TOP_COSINE_BLOCK = 8192


def _unsaved(problem: str | None) -> str:
    return (
        f"calibration_unsaved: {problem or 'the calibration state could not be saved'}; it is in force in "
        "this server process only (check_health reports it)"
    )
