"""Retrieval quality: calibration and the precision knob (docs/retrieval.md#calibration-calibrate_threshold)."""

from __future__ import annotations

from cpersona import result_types
from cpersona.config import Settings
from cpersona.server.calls import api
from cpersona.server.rules import READ, WRITE, Rule
from cpersona.server.tools.common import AGENT_ID, KEEPS, READS, ToolSpec, object_schema, string_schema

PRECISION = string_schema(
    "strict, balanced or lenient; '' clears it.",
    enum=["strict", "balanced", "lenient", ""],
)


def tools(settings: Settings) -> list[ToolSpec]:
    """Retrieval-quality tools, described for ``settings``."""
    return [
        ToolSpec(
            name="calibrate_threshold",
            results=(result_types.CalibrateThresholdResult,),
            access=Rule(WRITE),  # calibration changes how this agent's recalls are gated
            call=api("calibrate_threshold"),
            title="Calibrate the recall gate",
            summary="measure the agent's corpus (label-free) and set the recall gate's thresholds",
            description=(
                "Measure this agent's memories and set the thresholds of recall's quality gate, so a question about something never stored comes back empty. Needs a model and 10 or more embedded memories; run again after large imports."
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
                        "description": "zscore's z.",
                    },
                    "percentile": {
                        "type": "number",
                        "minimum": 0,
                        "maximum": 100,
                        "description": "percentile's cut.",
                    },
                },
                required=["agent_id"],
            ),
            hints=KEEPS,
        ),
        ToolSpec(
            name="set_recall_precision",
            results=(result_types.RecallPrecisionResult,),
            access=Rule(WRITE),
            call=api("set_recall_precision"),
            title="Set recall precision",
            summary="how hard the gate filters: strict / balanced / lenient or a raw β",
            description=(
                "How hard recall's quality gate filters for this agent: strict, balanced or lenient, or a raw beta; an empty precision clears it."
            ),
            input_schema=object_schema(
                {
                    "agent_id": AGENT_ID,
                    "precision": PRECISION,
                    "beta": {
                        "type": "number",
                        "minimum": 0.05,
                        "maximum": 20,
                        "description": "A raw beta; overrides precision.",
                    },
                },
                required=["agent_id"],
            ),
            hints=KEEPS,
        ),
        ToolSpec(
            name="get_recall_precision",
            results=(result_types.RecallPrecisionResult,),
            access=Rule(READ),
            call=api("get_recall_precision"),
            title="Get recall precision",
            summary="the gate's precision setting in force for an agent",
            description=(
                "This agent's recall precision (level, beta, whether set for this agent) and its calibration state."
            ),
            input_schema=object_schema({"agent_id": AGENT_ID}, required=["agent_id"]),
            hints=READS,
        ),
    ]
