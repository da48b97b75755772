"""A stored turn that asks gives way to its reply, and one that only speaks to the other person to the
news it reacts to (retrieval/replies.py); a question naming one speaker prefers that speaker's turns
(retrieval/role.py). Through real MCP clients over stdio and streamable HTTP; the turn that fell says
why."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mcp_helpers import McpSession, transport_session

pytestmark = pytest.mark.slow

WHEN = "2023-05-08T13:56:00Z"
TURNS = (
    "[8 May 2023] Melanie: Hey Caroline, a lot has happened to me. I ran a charity race for mental health "
    "last Saturday; it made me think about taking care of myself.",
    "[8 May 2023] Caroline: That charity race for mental health sounds great, Mel! So proud of you!",
    "[8 May 2023] Caroline: I went to a support group yesterday and it was powerful.",
    "[8 May 2023] Melanie: My kids loved the pottery workshop we did together.",
    "[8 May 2023] Caroline: I'm thinking of working in counseling next year.",
    "[8 May 2023] Melanie: That's a lovely necklace, Caroline! What does the necklace symbolize for you?",
    "[8 May 2023] Caroline: It symbolizes love and faith; my grandma gave me the necklace in Sweden.",
)
TOLD, REACTED = TURNS[0], TURNS[1]
ASKS, REPLY = TURNS[-2], TURNS[-1]


@pytest.fixture(scope="module", params=["stdio", "http"])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpSession]:
    with transport_session(request.param, tmp_path_factory.mktemp(f"replies-{request.param}")) as session:
        for text in TURNS:
            message = {"content": text, "timestamp": WHEN}
            assert session.call("store", {"agent_id": "talk", "message": message})["ok"]
        yield session


def test_the_reply_comes_first_and_the_asking_turn_says_why(served: McpSession) -> None:
    out = served.call("recall", {"agent_id": "talk", "query": "What does Caroline's necklace symbolize?"})
    assert out["results"][-1]["content"] == REPLY
    asked = next(r for r in out["results"] if r["content"] == ASKS)
    assert asked["match_reason"]["factors"]["asks"] == pytest.approx(0.5)


def test_a_first_person_question_leaves_the_order_to_the_words(served: McpSession) -> None:
    out = served.call("recall", {"agent_id": "talk", "query": "What does my necklace symbolize?"})
    assert out["results"][-1]["content"] == ASKS
    assert all("asks" not in r["match_reason"]["factors"] for r in out["results"])


def test_the_news_comes_before_the_reaction_to_it(served: McpSession) -> None:
    out = served.call("recall", {"agent_id": "talk", "query": "When did Melanie run a charity race?"})
    assert out["results"][-1]["content"] == TOLD
    reacted = next(r for r in out["results"] if r["content"] == REACTED)
    assert reacted["match_reason"]["factors"]["addresses"] == pytest.approx(0.5)


def test_a_question_naming_one_speaker_scales_the_others_turns(served: McpSession) -> None:
    out = served.call("recall", {"agent_id": "talk", "query": "What did Melanie's kids love doing?"})
    said = {r["content"]: r["match_reason"]["factors"].get("speaker") for r in out["results"]}
    assert any(text.startswith("[8 May 2023] Caroline:") for text in said)  # the rule had rows to act on
    for text, factor in said.items():
        expected = pytest.approx(0.8) if text.startswith("[8 May 2023] Caroline:") else None
        assert factor == expected, text
    mine = served.call("recall", {"agent_id": "talk", "query": "What did I tell Melanie about my kids?"})
    assert all("speaker" not in r["match_reason"]["factors"] for r in mine["results"])
