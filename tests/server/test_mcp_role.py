"""Whose words (retrieval/role.py) through real MCP clients, stdio and streamable HTTP: a question in the
first person puts the user's own row first, and the assistant's row says why it fell."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mcp_helpers import McpSession, transport_session

pytestmark = pytest.mark.slow

FILLER = (
    ("user", "Can you help me plan a birthday party for my sister?"),
    ("assistant", "Sure! Start with a guest list and a budget."),
    ("user", "We walked by the river on Sunday."),
    ("assistant", "A walk by the river sounds lovely."),
    ("user", "My old flat had a tiny kitchen."),
    ("assistant", "Small kitchens need clever storage."),
)
SAID = "the flat in Ljubljana by the river is home"
MINE = f"{SAID}, honestly"


@pytest.fixture(scope="module", params=["stdio", "http"])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpSession]:
    with transport_session(request.param, tmp_path_factory.mktemp(f"role-{request.param}")) as session:
        for role, text in (*FILLER, ("user", MINE), ("assistant", SAID)):
            message = {"content": text, "source": {"type": role}}
            assert session.call("store", {"agent_id": "r", "message": message})["ok"]
        yield session


def test_a_first_person_question_puts_the_users_row_first(served: McpSession) -> None:
    out = served.call("recall", {"agent_id": "r", "query": "Is my home the flat in Ljubljana by the river?"})
    assert out["results"][-1]["content"] == MINE
    assistant = next(r for r in out["results"] if r["content"] == SAID)
    assert assistant["match_reason"]["factors"]["role"] == pytest.approx(0.7)


def test_a_question_about_the_assistants_words_puts_theirs_first(served: McpSession) -> None:
    query = "Did you say the flat in Ljubljana by the river is home?"
    out = served.call("recall", {"agent_id": "r", "query": query})
    assert out["results"][-1]["content"] == SAID
    mine = next(r for r in out["results"] if r["content"] == MINE)
    assert mine["match_reason"]["factors"]["role"] == pytest.approx(0.7)
