"""Calibration as a service: ``calibrate_threshold``, the precision knob, the gate policy recall uses,
background recalibration at startup (docs/retrieval.md "Quality gate").

State lives in the sidecar ``<db>.calibration.json`` (``cpersona.retrieval.sidecar``); the maths in
``cpersona.retrieval.calibration``. Every write is refused while persistence is paused.
"""

from __future__ import annotations

import logging
import math
import threading
from pathlib import Path
from typing import Any

import numpy as np

from cpersona.config import Settings
from cpersona.embed.runtime.service import EmbeddingService
from cpersona.errors import CalibrationUnavailable, InvalidInput, PersistencePaused
from cpersona.health import persistence
from cpersona.retrieval import calibration as cal
from cpersona.retrieval.gate import HEURISTIC_TOP_COSINE, GatePolicy, QualityGate
from cpersona.retrieval.pipeline import GateStage, NoGate
from cpersona.retrieval.sidecar import Sidecar, fingerprint, sidecar_path
from cpersona.storage.interface import EPISODES, MEMORIES, Store
from cpersona.text import format_ts, utc_now
from cpersona.validation import bounded_int, optional_str, required_str
from cpersona.work import Work

log = logging.getLogger("cpersona.calibration")


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
        self.sidecar = Sidecar(sidecar_path(Path(settings.db_path)))
        self._probes: dict[tuple[str, int], np.ndarray] = {}
        self._lock = threading.Lock()  # one calibration at a time per process
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.background_runs = 0  # agents (re)calibrated in the background (tests, stats)

    # -- the gate recall uses -------------------------------------------------------------------
    def gate(self) -> GateStage:
        """The pipeline's gate stage for these settings."""
        if not self.settings.fused_gate_enabled:
            return NoGate()
        return QualityGate(self.policy_for, self.settings.autocut_min_results)

    def _current_fingerprint(self) -> dict[str, Any] | None:
        if not self.embeddings.ready:
            return None
        return fingerprint(cal.SCORING_VERSION, self.embeddings.model_id, self.embeddings.dimension)

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
        entry = self.sidecar.get(agent_id) if agent_id is not None else None
        level, beta, _ = self._precision(entry)
        heuristic = GatePolicy(
            "heuristic",
            level,
            beta,
            HEURISTIC_TOP_COSINE,
            reason="not calibrated: a fixed low top-cosine floor is in force (run calibrate_threshold)",
        )
        gate = (entry or {}).get("gate")
        if not isinstance(gate, dict) or not gate.get("probe_top_cosines"):
            return heuristic
        current = self._current_fingerprint()
        if current is not None and entry is not None and entry.get("fingerprint") != current:
            stale = entry.get("fingerprint") or {}
            return GatePolicy(
                "heuristic",
                level,
                beta,
                HEURISTIC_TOP_COSINE,
                stale=True,
                reason=f"calibrated for {stale.get('model_id')} ({stale.get('dimension')}-d, scoring "
                f"v{stale.get('scoring_version')}); recalibration pending, heuristic floor in force",
            )
        threshold = cal.gate_threshold(
            gate["probe_top_cosines"],
            str(entry.get("method", "separation")) if entry else "separation",
            beta,
            level,
            percentile=(entry or {}).get("percentile"),
            z_factor=(entry or {}).get("z_factor"),
        )
        return GatePolicy("calibrated", level, beta, threshold)

    # -- tools ----------------------------------------------------------------------------------
    def calibrate_threshold(
        self,
        agent_id: str,
        sample_size: int | None = None,
        method: str = "separation",
        z_factor: float | None = None,
        percentile: float | None = None,
        *,
        work: Work | None = None,
    ) -> dict[str, Any]:
        """Derive the agent's thresholds from its own corpus, label-free, and persist them (docs/retrieval.md).

        Row pairs give the vector threshold (random pairs = null; adjacent same-session pairs =
        positives, nearest neighbours as fallback); with the fused gate on, probe questions give the
        query gate's threshold. Raises ``CalibrationUnavailable`` without a ready model or with fewer
        than 10 rows with vectors. ``work`` (``cpersona.work``) may cancel it before the thresholds
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
        return self._calibrate(agent, size, method, z, pct, work)

    def set_recall_precision(
        self, agent_id: str, precision: str | None = None, beta: float | None = None
    ) -> dict[str, Any]:
        """Set the agent's precision (strict | balanced | lenient, or a raw β) and recalibrate now.

        An empty precision with no β clears the override (the global CPERSONA_RECALL_PRECISION applies).
        """
        persistence.check_writable("set_recall_precision")
        agent = required_str(agent_id, "agent_id")
        level = optional_str(precision, "precision") or None
        if level is not None and level not in cal.LEVELS:
            raise InvalidInput(
                f"precision must be one of {', '.join(cal.LEVELS)} (or empty to clear), got {level!r}"
            )
        raw = None if beta is None else cal.validate_beta(beta)
        with self._lock:
            entry = self.sidecar.get(agent) or {}
            if level is None and raw is None:
                entry.pop("precision", None)
            else:
                entry["precision"] = {"level": level or cal.level_for_beta(raw or 1.0), "beta": raw}
            self.sidecar.update(agent, entry or None)
        result = self.get_recall_precision(agent)
        try:
            previous = self.sidecar.get(agent) or {}
            self._calibrate(
                agent,
                int(previous.get("sample_size") or cal.DEFAULT_SAMPLE_SIZE),
                str(previous.get("method") or "separation"),
                previous.get("z_factor"),
                previous.get("percentile"),
            )
            result = self.get_recall_precision(agent)
            result["recalibrated"] = True
        except CalibrationUnavailable as exc:
            result["recalibrated"] = False
            result["note"] = f"precision saved; not recalibrated: {exc}"
        return result

    def get_recall_precision(self, agent_id: str) -> dict[str, Any]:
        """The agent's effective precision (level, β, overridden?), the global one, and its calibration state."""
        agent = required_str(agent_id, "agent_id")
        entry = self.sidecar.get(agent)
        level, beta, overridden = self._precision(entry)
        policy = self.policy_for(agent)
        state: dict[str, Any] = {"calibrated": bool((entry or {}).get("fingerprint")), "gate": policy.kind}
        if policy.threshold is not None:
            state["threshold"] = round(policy.threshold, 6)
        if policy.stale:
            state["stale"] = True
        if entry and entry.get("fingerprint"):
            state.update(
                fingerprint=entry["fingerprint"],
                created_at=entry.get("created_at"),
                method=entry.get("method"),
                rows=entry.get("rows"),
            )
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
        with self._lock:
            existed = self.sidecar.get(agent_id) is not None
            self.sidecar.update(agent_id, None)
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
        self, agent: str, size: int, method: str, z: float | None, pct: float | None, work: Work | None = None
    ) -> dict[str, Any]:
        current = self._current_fingerprint()
        if current is None or not self.embeddings.ready:
            raise CalibrationUnavailable(
                "no embedding model is ready: calibration measures cosines (recall is "
                "keyword-only and ungated until one is)"
            )
        with self._lock:
            model_id, dimension = self.embeddings.model_id, self.embeddings.dimension
            with (
                self.store.read() as session
            ):  # the engine's own vectors (SQLite: its synced in-memory index)
                ids, vectors = session.vector_search.agent_vectors(MEMORIES, model_id, dimension, agent)
            if ids.size < cal.MIN_ROWS:
                raise CalibrationUnavailable(
                    f"agent {agent!r} has {ids.size} memories with vectors of {current['model_id']}; calibration "
                    f"needs at least {cal.MIN_ROWS}"
                )
            # Both lists are in id order; a row deleted in between gets a session of its own.
            timeline = {row[0]: row for row in self.store.session().memories.timeline(agent)}
            sessions = cal.session_keys([timeline.get(int(i), (int(i), "", f"#{i}", "")) for i in ids])
            pairs = cal.row_pairs(vectors, sessions, size)
            level, beta, overridden = self._precision(self.sidecar.get(agent))
            vector_threshold = pairs.threshold(method, beta, level, percentile=pct, z_factor=z)
            entry: dict[str, Any] = self.sidecar.get(agent) or {}
            entry.update(
                fingerprint=current,
                created_at=format_ts(utc_now()),
                method=method,
                sample_size=size,
                rows=int(ids.size),
                percentile=pct,
                z_factor=z,
                vector={"threshold": round(vector_threshold, 6), **pairs.summary()},
            )
            gate_out: dict[str, Any] = {"enabled": self.settings.fused_gate_enabled}
            if self.settings.fused_gate_enabled:
                corpus = vectors
                with self.store.read() as session:
                    episodes = session.vector_search.agent_vectors(EPISODES, model_id, dimension, agent)[1]
                corpus = np.vstack([corpus, episodes])
                tops = np.sort((self._probe_vectors() @ corpus.T).max(axis=1))
                entry["gate"] = {
                    "kind": "query_top_cosine",
                    "probes": int(tops.size),
                    "probe_top_cosines": [round(float(t), 6) for t in tops],
                }
                gate_out.update(
                    kind="query_top_cosine",
                    probes=int(tops.size),
                    threshold=round(
                        cal.gate_threshold(tops, method, beta, level, percentile=pct, z_factor=z), 6
                    ),
                    thresholds={
                        lv: round(
                            cal.gate_threshold(tops, method, cal.BETA[lv], lv, percentile=pct, z_factor=z), 6
                        )
                        for lv in cal.LEVELS
                    },
                    probe_top_cosine={f"p{q}": round(float(np.percentile(tops, q)), 6) for q in (50, 75, 90)},
                )
            else:
                entry.pop("gate", None)
            persistence.check_writable("calibrate_threshold")
            if work is not None:
                work.report(1, 2, "steps", "thresholds measured")
                work.checkpoint("calibrate_threshold", "nothing was saved: the previous calibration stays")
            self.sidecar.update(agent, entry)
        return {
            "ok": True,
            "agent_id": agent,
            "method": method,
            "sample_size": size,
            "rows": int(ids.size),
            "vector": entry["vector"],
            "gate": gate_out,
            "precision": {"level": level, "beta": beta, "overridden": overridden},
            "fingerprint": current,
            "created_at": entry["created_at"],
            "sidecar": str(self.sidecar.path),
        }

    # -- background ------------------------------------------------------------------------------
    def on_model_ready(self) -> None:
        """Recalibrate agents whose fingerprint changed (and, with CPERSONA_AUTO_CALIBRATE, calibrate the
        rest) in a background thread: startup never waits for it."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._thread = threading.Thread(target=self._background, name="cpersona-calibrate", daemon=True)
        self._thread.start()

    def pending(self) -> list[str]:
        """Agents the background pass would (re)calibrate now."""
        current = self._current_fingerprint()
        if current is None:
            return []
        stored = self.sidecar.agents()
        todo = [a for a, e in stored.items() if e.get("fingerprint") and e.get("fingerprint") != current]
        if self.settings.auto_calibrate:
            todo += [
                a
                for a in self.store.session().admin.agent_ids()
                if not (stored.get(a) or {}).get("fingerprint")
            ]
        return sorted(set(todo))

    def _background(self) -> None:
        for agent in self.pending():
            if self._stop.is_set():
                return
            previous = self.sidecar.get(agent) or {}
            try:
                self._calibrate(
                    agent,
                    int(previous.get("sample_size") or cal.DEFAULT_SAMPLE_SIZE),
                    str(previous.get("method") or "separation"),
                    previous.get("z_factor"),
                    previous.get("percentile"),
                )
                self.background_runs += 1
            except (CalibrationUnavailable, PersistencePaused) as exc:
                log.info("background calibration of %r skipped: %s", agent, exc)
            except Exception:  # never let a background pass take the server down
                log.exception("background calibration of %r failed", agent)

    def wait_idle(self, timeout: float = 60.0) -> bool:
        """Block until the background pass (if any) finished; True when idle."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
            return not thread.is_alive()
        return True

    def stop(self) -> None:
        """Ask the background pass to stop after the current agent and wait briefly."""
        self._stop.set()
        self.wait_idle(10.0)
