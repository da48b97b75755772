"""Retrieval quality: calibration and the precision knob (docs/retrieval.md#calibration-calibrate_threshold)."""

from __future__ import annotations

from cpersona import shapes
from cpersona.config import Settings
from cpersona.server.calls import api
from cpersona.server.rules import READ, WRITE, Rule
from cpersona.server.schemas.common import AGENT_ID, KEEPS, READS, ToolSpec, object_schema, string_schema

PRECISION = string_schema(
    "strict (cuts more unanswerable queries), balanced or lenient (keeps more recall); '' clears the "
    "agent's setting so the server default applies.",
    enum=["strict", "balanced", "lenient", ""],
)


def tools(settings: Settings) -> list[ToolSpec]:
    """Retrieval-quality tools, described for ``settings``."""
    return [
        ToolSpec(
            name="calibrate_threshold",
            results=(shapes.CalibrateThresholdResult,),
            access=Rule(WRITE),  # calibration changes how this agent's recalls are gated
            call=api("calibrate_threshold"),
            title="Calibrate the recall gate",
            summary="measure the agent's corpus (label-free) and set the recall gate's thresholds",
            description=(
                "Measure this agent's own memories (no labels needed) and set the thresholds recall's quality gate "
                "uses, so a question about something never stored comes back empty instead of with loosely related "
                "rows. Row pairs give the vector threshold (random pairs = unrelated, adjacent same-session pairs = "
                "related; method separation maximises sensitivity + beta*specificity, percentile / zscore cut the "
                "unrelated distribution); with the gate on, shipped probe questions about unrelated topics give the "
                "query gate's cut on the top-cosine scale. Needs an embedding model and at least 10 memories with "
                "vectors. Saved beside the database; recall uses it at once. Returns vector, gate (threshold per "
                "precision level), precision and fingerprint. Recalibrate after large imports."
            ),
            input_schema=object_schema(
                {
                    "agent_id": AGENT_ID,
                    "sample_size": {
                        "type": "integer",
                        "minimum": 10,
                        "maximum": 100000,
                        "default": 2000,
                        "description": "Random row pairs to sample (default 2000).",
                    },
                    "method": string_schema(
                        "separation (default), percentile or zscore.",
                        enum=["separation", "percentile", "zscore"],
                        default="separation",
                    ),
                    "z_factor": {
                        "type": "number",
                        "minimum": -5,
                        "maximum": 10,
                        "description": "zscore: cut at mean + z_factor * sd (default per precision level).",
                    },
                    "percentile": {
                        "type": "number",
                        "minimum": 0,
                        "maximum": 100,
                        "description": "percentile: cut at this percentile (default per precision level).",
                    },
                },
                required=["agent_id"],
            ),
            hints=KEEPS,
        ),
        ToolSpec(
            name="set_recall_precision",
            results=(shapes.RecallPrecisionResult,),
            access=Rule(WRITE),
            call=api("set_recall_precision"),
            title="Set recall precision",
            summary="how hard the gate filters: strict / balanced / lenient or a raw β",
            description=(
                "Choose how hard recall's quality gate filters for this agent: strict (beta 2.0: more unanswerable "
                "questions come back empty, a few real ones too), balanced (beta 1.0) or lenient (beta 0.5: keeps "
                "recall, lets more noise through); or a raw beta (0.05 to 20), which overrides the level. An empty "
                "precision without beta clears the setting (the server's CPERSONA_RECALL_PRECISION applies). "
                "Recalibrates at once when a model is ready (recalibrated: true; otherwise note says why). Returns "
                "the effective level, beta, overridden and the global default."
            ),
            input_schema=object_schema(
                {
                    "agent_id": AGENT_ID,
                    "precision": PRECISION,
                    "beta": {
                        "type": "number",
                        "minimum": 0.05,
                        "maximum": 20,
                        "description": "A raw beta (sensitivity + beta*specificity); overrides the level.",
                    },
                },
                required=["agent_id"],
            ),
            hints=KEEPS,
        ),
        ToolSpec(
            name="get_recall_precision",
            results=(shapes.RecallPrecisionResult,),
            access=Rule(READ),
            call=api("get_recall_precision"),
            title="Get recall precision",
            summary="the gate's precision setting in force for an agent",
            description=(
                "This agent's effective recall precision: level, beta, overridden (set for this agent or the "
                "global default), global {level, beta}, and calibration {calibrated, gate: calibrated | heuristic "
                "| off, threshold, stale, fingerprint, created_at}."
            ),
            input_schema=object_schema({"agent_id": AGENT_ID}, required=["agent_id"]),
            hints=READS,
        ),
    ]
