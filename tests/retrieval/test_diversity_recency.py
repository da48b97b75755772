"""Session diversity and the newest statement (issue 32 items 3 and 5): the stages on scored rows."""

from __future__ import annotations

import math

from cpersona.retrieval import fusion
from cpersona.retrieval.candidates import Key, ScoredRow
from cpersona.retrieval.diversity import FACTOR as DIVERSITY
from cpersona.retrieval.diversity import (
    aggregates,
    arrange,
    compares,
    diversify,
    insertion_keys,
    orders,
    session_keys,
    strength,
)
from cpersona.retrieval.recency import EQUALS_FACTOR, asks_about_now, prefer_newest
from cpersona.retrieval.recency import FACTOR as RECENCY


def _row(rid: int, score: float, stamp: str, agent: str = "a", cosine: float | None = None) -> ScoredRow:
    row = {
        "type": "memory",
        "id": rid,
        "ref": f"mem:{rid}",
        "agent_id": agent,
        "project_id": "",
        "channel": "",
    }
    row["timestamp"] = stamp
    fused = fusion.Fused(Key("memory", rid), score, "rsf", rsf=score, cosine=cosine)
    return ScoredRow(row=row, fused=fused, score=score)


def _order(rows: list[ScoredRow]) -> list[int]:
    return [int(r.row["id"]) for r in rows]


def test_sessions_are_runs_of_close_timestamps_per_scope() -> None:
    rows = [
        _row(1, 1, "2023-05-01T10:00:00.000000Z").row,
        _row(2, 1, "2023-05-01T10:30:00.000000Z").row,
        _row(3, 1, "2023-05-08T10:00:00.000000Z").row,
        _row(4, 1, "2023-05-01T10:10:00.000000Z", agent="b").row,
        {"type": "episode", "id": 9},
    ]
    keys = session_keys(rows)
    assert keys[0] == keys[1] != keys[2]
    assert keys[3] not in (keys[0], keys[2])
    assert keys[4] is None


def test_rows_of_a_crowded_session_make_room_past_the_free_ones() -> None:
    crowded = [
        _row(i, 10 - i, "2023-05-01T10:00:00.000000Z") for i in range(1, 6)
    ]  # one session, scores 9..5
    other = _row(20, 4.5, "2023-06-01T10:00:00.000000Z")
    rows = diversify([*crowded, other], decay=0.5, free=2)
    assert _order(rows)[:3] == [1, 2, 20]  # the third row of the session falls behind the other session
    third = next(r for r in rows if r.row["id"] == 3)
    assert third.factors[DIVERSITY] == 0.5 and math.isclose(third.score, 7 * 0.5)
    assert DIVERSITY not in rows[0].factors


def test_diversity_off_changes_nothing() -> None:
    rows = [_row(i, 10 - i, "2023-05-01T10:00:00.000000Z") for i in range(1, 4)]
    assert _order(diversify(list(rows), decay=1.0, free=1)) == [1, 2, 3]
    assert all(not r.factors for r in rows)


def test_questions_that_count_over_occasions_are_told_from_other_questions() -> None:
    for counting in (
        "How many concerts have I been to?",
        "How much did I spend on the trip in total?",
        "How often did I bake for the office?",
        "What did I buy altogether?",
        "What is the total amount I spent on concert tickets?",
        "What was my average 5k time this spring?",
        "東京での外食は平均いくらでしたか",
        "京都には何回行きましたか",
        "本を何冊読みましたか",
    ):
        assert aggregates(counting), counting
    for single in (
        "How often does John work out with his family?",  # a habit: one statement
        "What car do I drive now?",
        "When did Melanie paint a sunrise?",
        "How much does my gym membership cost now?",
        "Vite は何をサポートしますか",  # 何 alone asks for a thing, not a count
    ):
        assert not aggregates(single), single


def test_questions_about_the_order_of_events_are_told_from_other_questions() -> None:
    for ordering in (
        "Which did I do first: adopting the kitten or renewing my passport?",
        "Which happened first, the camping trip or the job interview?",
        "Which vehicle did I take care of first, the bike or the car?",
        "Did my cousin's wedding come before or after the pottery class?",
        "What is the order of the three events I mentioned?",
        "In what order did I visit the three museums?",
        "How many days passed between the wedding and the interview?",
        "How long after the move did I start the new job?",
        "How much time went by between the fire drill and the audit?",
        "引っ越しと転職、どちらが先でしたか",
    ):
        assert orders(ordering), ordering
    for single in (
        "When did Melanie paint a sunrise?",
        "What did I do after work yesterday?",  # one occasion, no alternatives
        "Which café did you recommend first?",
        "How long is the trail up Greyhorn Ridge?",
        "What is my current 5k personal best?",
        "How much time should I set aside for the museum?",  # a duration, no second event
    ):
        assert not orders(single), single
    decay, free = strength("Which happened first, the camping trip or the job interview?", 0.7, 7, 0.2)
    assert (decay, free) == (0.2, 1)


def test_questions_that_compare_amounts_over_occasions_are_told_from_other_questions() -> None:
    for comparing in (
        "Which was pricier, the hotel in Rome or the one in Vienna?",
        "Did the drive to Boston take longer than the drive to Albany?",
        "Were the concert tickets cheaper than the theatre ones?",
        "How much more did the sofa cost than the armchair?",
        "What is the heaviest fish I have caught?",
        "Which of my hikes had the highest climb?",
        "Where did I pay the least for a haircut?",
        "What was the most expensive gift I gave this year?",
        "東京と大阪、どちらが高かったですか",
    ):
        assert compares(comparing), comparing
    for single in (
        "What was one of the biggest challenges John faced?",  # an example, not the extreme
        "What did I enjoy the most about the Lisbon trip?",
        "Can you suggest a longer route for my Sunday ride?",
        "What is my latest job title?",
        "How much does my gym membership cost now?",
        "何が一番好きですか",  # a superlative in Japanese is left out: it asks about one passage as often
        "When did Melanie paint a sunrise?",
    ):
        assert not compares(single), single
    assert strength("Which was pricier, the hotel in Rome or the one in Vienna?", 0.7, 7, 0.2) == (0.2, 1)


def test_a_counting_question_gets_every_sessions_best_row_before_any_second() -> None:
    assert strength("How many races have I run?", 0.7, 7, 0.2) == (0.2, 1)
    assert strength("What is my dog's name?", 0.7, 7, 0.2) == (0.7, 7)
    assert strength("How many races have I run?", 0.7, 7, 1.0) == (0.7, 7)  # 1: the ordinary rule
    crowded = [_row(i, 10 - i, "2023-05-01T10:00:00.000000Z") for i in range(1, 5)]  # scores 9..6
    others = [_row(20, 4.0, "2023-06-01T10:00:00.000000Z"), _row(30, 3.0, "2023-07-01T10:00:00.000000Z")]
    decay, free = strength("How many races have I run?", 0.7, 7, 0.2)
    assert _order(diversify([*crowded, *others], decay, free))[:3] == [1, 20, 30]
    mild = diversify([_row(i, 10 - i, "2023-05-01T10:00:00.000000Z") for i in range(1, 5)] + others, 0.7, 7)
    assert _order(mild)[:3] == [1, 2, 3]  # another question keeps the crowded session's rows


def test_untimed_rows_are_grouped_by_where_they_were_stored() -> None:
    # A whole history stored at once: every time within one hour, so the times make one session.
    stamp = "2023-05-01T10:00:00.000000Z"
    rows = [_row(rid, 10.0 - n, stamp) for n, rid in enumerate((40, 41, 42, 90, 91, 200))]
    keys = insertion_keys([r.row for r in rows], session_keys([r.row for r in rows]))
    assert keys[0] == keys[1] == keys[2] != keys[3] == keys[4] != keys[5]
    timed = [_row(1, 5.0, stamp), _row(2, 4.0, "2023-06-01T10:00:00.000000Z")]
    plain = session_keys([r.row for r in timed])
    assert insertion_keys([r.row for r in timed], plain) == plain  # times that tell sessions apart win


def test_a_counting_question_over_untimed_rows_spreads_over_where_they_were_stored() -> None:
    stamp = "2023-05-01T10:00:00.000000Z"
    rows = [_row(rid, 10.0 - n, stamp) for n, rid in enumerate((40, 41, 42, 90, 200))]
    assert _order(arrange(rows, "How many races have I run?", 0.7, 7, 0.2))[:3] == [40, 90, 200]
    rows = [_row(rid, 10.0 - n, stamp) for n, rid in enumerate((40, 41, 42, 90, 200))]
    assert _order(arrange(rows, "Which race did I enjoy?", 0.7, 7, 0.2)) == [40, 41, 42, 90, 200]
    rows = [_row(rid, 10.0 - n, stamp) for n, rid in enumerate((40, 41, 42, 90, 200))]
    assert _order(arrange(rows, "How many races have I run?", 0.7, 7, 1.0)) == [40, 41, 42, 90, 200]


def test_one_session_keeps_its_order_under_the_strong_rule() -> None:
    rows = [_row(i, 10 - i * 0.01, "2023-05-01T10:00:00.000000Z") for i in range(1, 6)]
    assert _order(diversify(rows, 0.2, 1)) == [1, 2, 3, 4, 5]


def test_questions_about_the_present_are_told_from_questions_about_the_past() -> None:
    assert asks_about_now("What car do I drive now?")
    assert asks_about_now("Which city is home for me these days?")
    assert asks_about_now("今住んでいる街はどこ？")
    assert not asks_about_now("What car did I drive before the Subaru?")
    assert not asks_about_now("When did I first move to Lisbon?")
    assert not asks_about_now("How many books have I read?")


def test_the_newest_of_rows_that_match_about_equally_comes_first() -> None:
    old = _row(1, 1.00, "2023-03-01T10:00:00.000000Z")
    new = _row(2, 0.95, "2023-09-01T10:00:00.000000Z")
    rows = prefer_newest([old, new], "What car do I drive now?", weight=0.2)
    assert _order(rows) == [2, 1]
    assert old.factors[RECENCY] == 0.8 and RECENCY not in new.factors
    # A question about the past keeps the plain order.
    old2, new2 = _row(1, 1.0, "2023-03-01T10:00:00.000000Z"), _row(2, 0.95, "2023-09-01T10:00:00.000000Z")
    assert _order(prefer_newest([old2, new2], "What car did I drive at first?", weight=0.2)) == [1, 2]


def test_a_weak_new_row_does_not_overtake_a_strong_old_one() -> None:
    strong_old = _row(1, 2.0, "2023-03-01T10:00:00.000000Z")
    weak_new = _row(2, 0.5, "2023-09-01T10:00:00.000000Z")
    assert _order(prefer_newest([strong_old, weak_new], "what is my rent now", weight=0.2)) == [1, 2]


def test_rows_of_one_moment_share_their_rank() -> None:
    a = _row(1, 1.0, "2023-03-01T10:00:00.000000Z")
    b = _row(2, 1.0, "2023-03-01T10:00:00.000000Z")
    c = _row(3, 1.0, "2023-09-01T10:00:00.000000Z")
    prefer_newest([a, b, c], "what now", weight=0.3)
    assert a.factors[RECENCY] == b.factors[RECENCY] == 0.7


MARCH, JUNE, SEPTEMBER = (
    "2023-03-01T10:00:00.000000Z",
    "2023-06-01T10:00:00.000000Z",
    "2023-09-01T10:00:00.000000Z",
)


def test_rows_equal_by_meaning_trade_places_newest_first() -> None:
    # "Where do I live now?": the old row shares the question's words, the update does not.
    old = _row(1, 2.0, MARCH, cosine=0.30)
    other = _row(2, 1.2, JUNE, cosine=0.10)
    new = _row(3, 0.9, SEPTEMBER, cosine=0.28)
    rows = prefer_newest([old, other, new], "Where do I live now?", weight=0.45, margin=0.04)
    assert _order(rows) == [3, 2, 1]
    # The new row took the old one's place and score; the factors still multiply to the score.
    assert math.isclose(new.score, 2.0 * 0.55) and math.isclose(old.score, 0.9)
    for item in rows:
        assert math.isclose(math.prod([item.fused.score, *item.factors.values()]), item.score)
    assert EQUALS_FACTOR in new.factors and EQUALS_FACTOR not in other.factors


def test_only_close_cosines_and_fair_scores_make_equals() -> None:
    # Further than the margin by meaning: the keyword-strong old row keeps the top.
    old, new = _row(1, 2.0, MARCH, cosine=0.40), _row(2, 0.9, SEPTEMBER, cosine=0.30)
    assert _order(prefer_newest([old, new], "Where do I live now?", weight=0.45, margin=0.04)) == [1, 2]
    # Close by meaning but with little else for it (under the floor): it stays put.
    old, weak = _row(1, 2.0, MARCH, cosine=0.30), _row(2, 0.3, SEPTEMBER, cosine=0.29)
    assert _order(prefer_newest([old, weak], "Where do I live now?", weight=0.45, margin=0.04)) == [1, 2]
    assert EQUALS_FACTOR not in weak.factors


def test_equals_are_left_alone_without_a_margin_or_a_present_word() -> None:
    for query, margin in (("Where do I live now?", 0.0), ("Where did I live before?", 0.04)):
        old, new = _row(1, 2.0, MARCH, cosine=0.30), _row(2, 0.9, SEPTEMBER, cosine=0.29)
        assert _order(prefer_newest([old, new], query, weight=0.45, margin=margin)) == [1, 2]
