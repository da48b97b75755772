"""Shapes of the retrieval-quality calls: calibration and recall precision."""

# No ``from __future__ import annotations`` here: with string annotations Python 3.11 cannot see
# NotRequired at runtime, and the doc generator reads __optional_keys__.
from typing import Annotated, Literal, NotRequired, TypedDict

from cpersona.result_types.common import Success

# -- retrieval quality ------------------------------------------------------------------------------------


class VectorCalibration(TypedDict):
    """The row-pair calibration: random pairs (null) against adjacent same-session pairs (positives)."""

    threshold: Annotated[float, "The vector threshold the method chose (reported; the gate uses the probes)."]
    null_mean: Annotated[float, "Mean cosine of random row pairs."]
    null_sd: Annotated[float, "Their standard deviation."]
    positive_mean: Annotated[float, "Mean cosine of the positive pairs."]
    positive_sd: Annotated[float, "Their standard deviation."]
    null_pairs: Annotated[int, "Random pairs sampled."]
    positive_pairs: Annotated[int, "Positive pairs used."]
    positive_source: Annotated[str, "'adjacent' (same session) or 'nearest' (nearest-neighbour fallback)."]


class GateCalibration(TypedDict):
    """The query gate's calibration from the probe questions."""

    enabled: Annotated[bool, "CPERSONA_FUSED_GATE_ENABLED."]
    kind: NotRequired[Annotated[str, "'query_evidence': the gate keys on the query's evidence."]]
    probes: NotRequired[Annotated[int, "Probe questions measured."]]
    entities: NotRequired[
        Annotated[list[str], "The names the corpus is full of, left out of a query's words (at most 32)."]
    ]
    threshold: NotRequired[Annotated[float, "The gate's evidence cut at the agent's effective precision."]]
    thresholds: NotRequired[Annotated[dict[str, float], "The cut at strict, balanced and lenient."]]
    probe_evidence: NotRequired[Annotated[dict[str, float], "p50 / p75 / p90 of the probes' evidence."]]
    probe_top_cosine: NotRequired[Annotated[dict[str, float], "p50 / p75 / p90 of the probes' top cosines."]]
    probes_cut: NotRequired[
        Annotated[
            dict[str, int],
            "Per level, how many probe questions (about things this agent never stored) it would answer empty.",
        ]
    ]
    row_chars_p75: NotRequired[
        Annotated[int, "The 75th percentile of the agent's memory lengths (characters)."]
    ]
    long_records: NotRequired[
        Annotated[
            bool,
            "True when that is at least 600: the gate then keeps the heuristic floor at balanced and lenient "
            "precision (docs/quality-gate.md).",
        ]
    ]


class Fingerprint(TypedDict):
    """What a calibration is valid for; a change triggers background recalibration."""

    scoring_version: Annotated[int, "Version of the gate's scoring."]
    model_id: Annotated[str, "Embedding model id."]
    dimension: Annotated[int, "Vector dimension."]


class PrecisionSetting(TypedDict):
    """An agent's effective precision."""

    level: Annotated[str, "strict, balanced or lenient."]
    beta: Annotated[float, "Effective β."]
    overridden: Annotated[bool, "Set for this agent (else the global CPERSONA_RECALL_PRECISION)."]


class CalibrateThresholdResult(TypedDict):
    """calibrate_threshold: the agent's thresholds, saved in the store's calibration state."""

    ok: Success
    agent_id: Annotated[str, "The agent calibrated."]
    method: Annotated[str, "separation, percentile or zscore."]
    sample_size: Annotated[int, "Random pairs sampled."]
    rows: Annotated[int, "The agent's memories with vectors of the active model."]
    vector: Annotated[VectorCalibration, "Row-pair calibration."]
    gate: Annotated[GateCalibration, "Query-gate calibration (probes)."]
    precision: Annotated[PrecisionSetting, "The precision the thresholds were computed for."]
    fingerprint: Annotated[Fingerprint, "Scoring version, model id, dimension."]
    created_at: Annotated[str, "When (UTC ISO-8601)."]
    trigger: Annotated[
        str, "What started it: explicit, precision, first, growth or fingerprint (self-calibration)."
    ]
    sidecar: Annotated[
        str, "Where the state is kept: <db>.calibration.json (SQLite) or the calibration_state table."
    ]
    persisted: Annotated[bool, "The state was saved (false: in force in this server process only)."]
    storage: NotRequired[Annotated[str, "Why it was not saved ('calibration_unsaved: ...')."]]


class GlobalPrecision(TypedDict):
    """CPERSONA_RECALL_PRECISION."""

    level: Annotated[str, "strict, balanced or lenient."]
    beta: Annotated[float, "Its β."]


class CalibrationState(TypedDict):
    """What recall would use for the agent now."""

    calibrated: Annotated[bool, "A calibration is stored."]
    gate: Annotated[str, "calibrated, heuristic or off."]
    threshold: NotRequired[Annotated[float, "The gate's cut now (absent when off)."]]
    stale: NotRequired[
        Annotated[bool, "The stored calibration is for another fingerprint (recalibration pending)."]
    ]
    fingerprint: NotRequired[Annotated[Fingerprint, "Of the stored calibration."]]
    created_at: NotRequired[Annotated[str | None, "When it was made."]]
    method: NotRequired[Annotated[str | None, "Its method."]]
    rows: NotRequired[Annotated[int | None, "Rows it saw."]]
    trigger: NotRequired[Annotated[str, "What started it (explicit, precision, first, growth, fingerprint)."]]


# Functional form: the key "global" is a Python keyword.
RecallPrecisionResult = TypedDict(
    "RecallPrecisionResult",
    {
        "ok": Success,
        "agent_id": Annotated[str, "The agent."],
        "level": Annotated[str, "Effective level."],
        "beta": Annotated[float, "Effective β (a raw β when one was set)."],
        "overridden": Annotated[bool, "Set for this agent (else the global one applies)."],
        "global": Annotated[GlobalPrecision, "CPERSONA_RECALL_PRECISION and its β."],
        "calibration": Annotated[CalibrationState, "The agent's calibration state."],
        "recalibrated": NotRequired[
            Annotated[bool, "set_recall_precision: the thresholds were recomputed now."]
        ],
        "note": NotRequired[
            Annotated[str, "set_recall_precision: why it was not recalibrated (no model, too few rows)."]
        ],
        "persisted": NotRequired[
            Annotated[Literal[False], "set_recall_precision: the setting was not saved."]
        ],
        "storage": NotRequired[Annotated[str, "Why it was not saved ('calibration_unsaved: ...')."]],
    },
)
RecallPrecisionResult.__doc__ = (
    "get_recall_precision / set_recall_precision: the agent's effective precision."
)


class CalibrateResult(TypedDict):
    """calibrate (``cpersona calibrate``): one agent, or every agent the self-calibration schedule finds due."""

    ok: Success
    calibrated: Annotated[
        list[CalibrateThresholdResult], "One calibrate_threshold result per agent calibrated."
    ]
    skipped: Annotated[dict[str, str], "Agents due but not calibrated, and why."]
