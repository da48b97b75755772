"""What a hook injects, built from the ``Memory`` API (the same answer in the server and in a fallback).

- **session start**: the bound agent_id (so the agent never guesses it), the agent's profile,
  its newest episode summary, the operator's context and a three-line memory policy, within
  ``SESSION_BUDGET`` characters (each part cut to its share, the agent_id line never cut).
- **prompt**: recall against the prompt; only when the gate passes (a calibrated gate by
  ``INJECT_MARGIN``), the rows that passed (no lexical fallbacks), refs included, best last, within
  ``PROMPT_BUDGET``; otherwise nothing at all.
- after a **compaction** (marked by the PreCompact hook): one reminder to ``archive_episode``
  the agent's own summary and ``store`` decisions, since the server never summarises.

With ``capture`` on, the prompt is stored verbatim after the answer was computed, with a
``msg_id`` made from the host's session and the prompt, so a repeated prompt is stored once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cpersona.runtime import operating_context

if TYPE_CHECKING:
    from cpersona.config import Settings
    from cpersona.memory import Memory

SESSION_BUDGET = 3000
PROMPT_BUDGET = 1500
PROMPT_ROWS = 5
#: How far above the agent's calibrated gate (on its evidence scale) a prompt must be before the hook
#: injects unasked. A recall the agent asks for answers at the gate; an injection the agent did not ask
#: for costs attention on every prompt, so it waits for a clearer match. Measured with
#: benchmarks/hooks.py on the three LoCoMo conversations (docs/hosts-claude-code.md, "Figures"):
#: evidence injected 70% -> 68% of questions, another conversation's questions left empty 71% -> 92%.
INJECT_MARGIN = 0.15
_PROFILE_SHARE = 900
_EPISODE_SHARE = 900
_CONTEXT_SHARE = 700

POLICY = (
    "Memory policy: recall (or reconstruct) before acting on earlier work; store each decision, fact or "
    "preference as one self-contained memory (supersedes= when it replaces one); an empty recall means "
    "nothing relevant is stored, not an error."
)
COMPACTED = (
    "The conversation was just compacted. Call archive_episode now with your own summary of the work "
    "so far and what is still open, and store any decision not stored yet (the memory server never "
    "summarises for you)."
)


def _cut(text: str, budget: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= budget else text[: max(0, budget - 1)].rstrip() + "…"


def prompt_msg_id(session_id: str, prompt: str) -> str:
    """The stable message id of a captured prompt: same session and prompt, same id."""
    digest = hashlib.sha256(f"{session_id}\0{prompt}".encode()).hexdigest()[:24]
    return f"hook:{digest}"


def session_context(memory: Memory, settings: Settings, agent_id: str, *, compacted: bool) -> str:
    """The session-start injection (never empty: it always names the agent_id)."""
    parts = [
        f'CPersona memory: your agent_id is "{agent_id}" (bound by `cpersona register --hooks`). Pass '
        f'agent_id="{agent_id}" to every cpersona tool; another id reads other memories.'
    ]
    if compacted:
        parts.append(COMPACTED)
    profile = memory.get_profile(agent_id).get("profile")
    if profile:
        parts.append("Profile: " + _cut(profile, _PROFILE_SHARE))
    episodes = memory.list_episodes(agent_id, limit=1).get("items") or []
    if episodes:
        newest = episodes[0]
        when = newest.get("end_time") or newest.get("created_at") or ""
        parts.append(f"Newest episode ({newest['ref']}, {when}): " + _cut(newest["summary"], _EPISODE_SHARE))
    found = operating_context.load(settings)
    if found.status == operating_context.LOADED and (found.text or "").strip():
        parts.append("Operating context: " + _cut(found.text or "", _CONTEXT_SHARE))
    parts.append(POLICY)
    return _cut_lines(parts, SESSION_BUDGET)


def _cut_lines(parts: list[str], budget: int) -> str:
    # The agent_id line is first and always kept; later parts are cut to what is left.
    out: list[str] = []
    left = budget
    for part in parts:
        if left <= 40:
            break
        piece = part if len(part) <= left else _cut(part, left)
        out.append(piece)
        left -= len(piece) + 1
    return "\n".join(out)


def _row_line(row: dict[str, Any], budget: int) -> str:
    when = str(row.get("timestamp") or "")[:10]
    head = f"[{row['ref']}{' · ' + when if when else ''}] "
    return head + _cut(str(row.get("content") or row.get("summary") or ""), max(20, budget - len(head)))


def _clear_of_gate(gate: dict[str, Any]) -> bool:
    # Only a calibrated gate keyed on evidence has a scale the margin means something on.
    evidence, threshold = gate.get("evidence"), gate.get("threshold")
    if gate.get("keyed_on") != "evidence" or evidence is None or threshold is None:
        return True
    return float(evidence) >= float(threshold) + INJECT_MARGIN


def prompt_context(memory: Memory, agent_id: str, prompt: str, *, compacted: bool = False) -> str | None:
    """The prompt injection, or None when the gate says nothing stored is relevant."""
    lead = [COMPACTED] if compacted else []
    if not prompt.strip():
        return "\n".join(lead) or None
    answer = memory.recall(agent_id, prompt, limit=PROMPT_ROWS, record=False)
    gate = answer.get("gate") or {}
    rows = [r for r in answer.get("results", []) if not r.get("gate_fallback")]
    if not gate.get("passed") or not rows or not _clear_of_gate(dict(gate)):
        return "\n".join(lead) or None
    header = f'Memories that may bear on this prompt (cpersona, agent_id "{agent_id}", best last):'
    left = PROMPT_BUDGET - len(header) - sum(len(x) + 1 for x in lead) - 1
    kept: list[str] = []
    for row in reversed(rows):  # best first, so a tight budget drops the weakest rows
        line = _row_line(dict(row), min(left, PROMPT_BUDGET // 2) if kept else left)
        if len(line) + 1 > left:
            break
        kept.append(line)
        left -= len(line) + 1
    if not kept:
        return "\n".join(lead) or None
    return "\n".join([*lead, header, *reversed(kept)])


def respond(
    memory: Memory, settings: Settings, request: dict[str, Any]
) -> tuple[dict[str, Any], Callable[[], None] | None]:
    """Answer one hook request: ``{"context": str | None}`` and the capture to run after sending it."""
    event = str(request.get("event") or "")
    agent_id = str(request.get("agent_id") or "").strip()
    if not agent_id:
        return {"context": None, "note": "no agent_id bound"}, None
    compacted = bool(request.get("compacted"))
    if event == "session-start":
        compacted = compacted or request.get("source") == "compact"
        return {"context": session_context(memory, settings, agent_id, compacted=compacted)}, None
    if event != "prompt":
        return {"context": None}, None
    prompt = str(request.get("prompt") or "")
    context = prompt_context(memory, agent_id, prompt, compacted=compacted)
    after = None
    if request.get("capture") and prompt.strip():
        session_id = str(request.get("session_id") or "")

        def after() -> None:
            memory.store(
                agent_id,
                prompt,
                msg_id=prompt_msg_id(session_id, prompt),
                source={"type": "user", "name": "prompt hook"},
                metadata={"captured_by": "hook", "session_id": session_id},
            )

    return {"context": context}, after
