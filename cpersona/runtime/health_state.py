"""The embedding health state machine and the recall advisory (docs/models.md#embedding-health-and-the-recall-advisory).

States: ``unknown`` (starting, model loading) → ``healthy`` | ``hint``
(embeddings deliberately off) | ``fault`` (configured but broken). Each
non-healthy spell is an *outage*: the first degraded recall in it gets the
full advisory (reason, evidence, runbook), later ones a short reminder, and a
return to ``healthy`` re-arms the full text for the next outage.

One instance lives in each ``Memory`` (so one per server process).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from cpersona.result_types.everyday import Advisory

UNKNOWN = "unknown"
HEALTHY = "healthy"
HINT = "hint"
FAULT = "fault"

_SEVERITY = {UNKNOWN: "info", HINT: "info", FAULT: "critical"}


@dataclass(frozen=True)
class Condition:
    """A state with its explanation."""

    state: str
    kind: str = ""
    reason: str = ""
    evidence: str = ""
    runbook: str = ""

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"state": self.state}
        if self.state != HEALTHY:
            data.update(kind=self.kind, reason=self.reason, evidence=self.evidence, runbook=self.runbook)
        return data


class HealthState:
    """Thread-safe holder of the current Condition plus the advisory bookkeeping."""

    def __init__(self, advisory_enabled: bool = True) -> None:
        self._lock = threading.Lock()
        self._condition = Condition(
            UNKNOWN,
            kind="loading",
            reason="the embedding model is still loading; recall is keyword-only until it is ready",
            evidence="startup in progress",
            runbook="wait a few seconds; stores made meanwhile are back-filled automatically",
        )
        self._outage = 0  # bumped whenever a new non-healthy condition begins
        self._advised_outage = -1
        self.advisory_enabled = advisory_enabled

    @property
    def condition(self) -> Condition:
        """The current condition."""
        return self._condition

    @property
    def state(self) -> str:
        """The current state name."""
        return self._condition.state

    def set(self, condition: Condition) -> None:
        """Move to ``condition``; a changed degraded condition starts a new outage."""
        with self._lock:
            previous = self._condition
            self._condition = condition
            if condition.state != HEALTHY and (
                previous.state != condition.state or previous.kind != condition.kind
            ):
                self._outage += 1

    def advisory(self) -> Advisory | None:
        """What the next recall response should carry (None when healthy or opted out)."""
        if not self.advisory_enabled:
            return None
        with self._lock:
            c = self._condition
            if c.state == HEALTHY:
                return None
            first = self._advised_outage != self._outage
            advisory: Advisory = {
                "degraded": True,
                "severity": _SEVERITY.get(c.state, "warn"),
                "state": c.state,
                "kind": c.kind,
                "reason": c.reason,
                "full": first,
            }
            if first:
                self._advised_outage = self._outage
                advisory["evidence"] = c.evidence
                advisory["runbook"] = c.runbook
            else:
                advisory["reminder"] = "still degraded; `cpersona stats` shows the evidence and the fix"
            return advisory
