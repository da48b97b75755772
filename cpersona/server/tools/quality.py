"""Retrieval quality: calibration and the precision knob (docs/quality-gate.md#calibration-calibrate_threshold)."""

from __future__ import annotations

from cpersona.config import Settings
from cpersona.server.calls import api
from cpersona.server.rules import READ, WRITE, Rule
from cpersona.server.tools.common import KEEPS, READS, ToolSpec


def tools(settings: Settings) -> list[ToolSpec]:
    """Retrieval-quality tools, described for ``settings``."""
    return [
        ToolSpec(
            name="calibrate_threshold",
            access=Rule(WRITE),  # calibration changes how this agent's recalls are gated
            call=api("calibrate_threshold"),
            title="Calibrate the recall gate",
            summary="measure the agent's corpus (label-free) and set the recall gate's thresholds",
            description=(
                "Set the thresholds of recall's quality gate from this agent's memories, so questions about what was never stored come back empty. Needs 10+ embedded memories."
            ),
            hints=KEEPS,
        ),
        ToolSpec(
            name="set_recall_precision",
            access=Rule(WRITE),
            call=api("set_recall_precision"),
            title="Set recall precision",
            summary="how hard the gate filters: strict / balanced / lenient or a raw β",
            description=(
                "How hard recall's quality gate filters for this agent (a level or a raw beta); '' clears it."
            ),
            hints=KEEPS,
        ),
        ToolSpec(
            name="get_recall_precision",
            access=Rule(READ),
            call=api("get_recall_precision"),
            title="Get recall precision",
            summary="the gate's precision setting in force for an agent",
            description=(
                "This agent's recall precision (level, beta, own or global) and its calibration state."
            ),
            hints=READS,
        ),
    ]
