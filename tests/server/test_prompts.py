"""MCP prompts in plain Python: declared arguments validated, texts that lead to a working tool call."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cpersona.core.limits import MAX_IDENTIFIER_CHARS, PROMPT_TEXT_ARGUMENT_CHARS
from cpersona.errors import CPersonaError, InvalidInput
from cpersona.memory import Memory
from cpersona.server import prompts
from cpersona.server.access import TOOL_ACCESS


def json_block(text: str) -> dict[str, Any]:
    """The one JSON object a prompt text spells out (the arguments of the tool it leads to)."""
    match = re.search(r"^\{\n.*?^\}", text, flags=re.S | re.M)
    assert match is not None, text
    return json.loads(match.group(0))


def only_text(name: str, arguments: dict[str, str]) -> str:
    rendered = prompts.get_prompt(name, arguments)
    assert [m["role"] for m in rendered["messages"]] == ["user"]
    return rendered["messages"][0]["text"]


def test_every_prompt_declares_its_arguments_and_a_classified_tool() -> None:
    listed = prompts.list_prompts()["prompts"]
    assert [p["name"] for p in listed] == ["archive_session", "recall_before_answering"]
    for spec in prompts.PROMPTS:
        assert spec.leads_to in TOOL_ACCESS
        assert spec.description and spec.title
        assert spec.arguments[0].name == "agent_id" and spec.arguments[0].required


def test_recall_prompt_spells_a_recall_call_that_works(memory: Memory) -> None:
    memory.store("ana", "The staging deploy key lives in the vault", project_id="p1")
    question = 'Where is the "staging" deploy key?\nAsk twice.'
    text = only_text("recall_before_answering", {"agent_id": "ana", "question": question, "project_id": "p1"})
    call = json_block(text)
    assert call == {"agent_id": "ana", "query": question, "project_id": "p1"}
    found = memory.recall(**call)
    assert "vault" in found["results"][-1]["content"]
    assert "LAST" in text and question in text


def test_archive_prompt_skeleton_is_accepted_by_archive_episode(memory: Memory) -> None:
    text = only_text(
        "archive_session", {"agent_id": "ana", "project_id": "p1", "focus": "the open migration"}
    )
    skeleton = json_block(text)
    assert skeleton["agent_id"] == "ana" and skeleton["project_id"] == "p1"
    assert "the open migration" in text
    filled = {**skeleton, "summary": "Moved the key; the migration is still open.", "keywords": ["vault"]}
    assert memory.archive_episode(**filled)["ok"] is True
    assert "project_id" not in json_block(only_text("archive_session", {"agent_id": "ana"}))


@pytest.mark.parametrize(
    ("name", "arguments", "says"),
    [
        ("nope", {}, "unknown prompt"),
        (None, {}, "unknown prompt"),
        ("recall_before_answering", {"agent_id": "a"}, "needs the argument 'question'"),
        ("recall_before_answering", {"question": "q"}, "needs the argument 'agent_id'"),
        ("recall_before_answering", {"agent_id": "", "question": "q"}, "needs the argument 'agent_id'"),
        ("recall_before_answering", {"agent_id": "a", "question": "q", "limit": "3"}, "no argument 'limit'"),
        ("archive_session", {"agent_id": "a" * (MAX_IDENTIFIER_CHARS + 1)}, "longer than"),
        (
            "archive_session",
            {"agent_id": "a", "focus": "f" * (PROMPT_TEXT_ARGUMENT_CHARS + 1)},
            "longer than",
        ),
        ("archive_session", {"agent_id": "a\x00b"}, "NUL"),
        ("archive_session", {"agent_id": 7}, "must be a string"),
    ],
)
def test_bad_arguments_are_invalid_input_saying_which(
    name: Any, arguments: dict[str, Any], says: str
) -> None:
    with pytest.raises(InvalidInput, match=re.escape(says)):
        prompts.get_prompt(name, arguments)


@given(
    name=st.one_of(st.sampled_from([p.name for p in prompts.PROMPTS]), st.text(max_size=30)),
    arguments=st.dictionaries(
        st.one_of(st.sampled_from(["agent_id", "question", "project_id", "focus"]), st.text(max_size=10)),
        st.one_of(st.text(max_size=200), st.integers(), st.none()),
        max_size=5,
    ),
)
def test_any_arguments_render_or_refuse_with_invalid_input(name: str, arguments: dict[str, Any]) -> None:
    try:
        rendered = prompts.get_prompt(name, arguments)
    except CPersonaError as exc:
        assert isinstance(exc, InvalidInput)
        return
    assert rendered["messages"][0]["text"]
    assert json_block(rendered["messages"][0]["text"])["agent_id"] == arguments["agent_id"]
