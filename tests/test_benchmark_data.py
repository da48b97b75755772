"""The data builders and metrics of the issue 32 benchmarks (benchmarks/longchat.py, benchmarks/japanese.py).

The builders run here on a small invented haystack and invented paragraphs (the real sources are
downloaded by the benchmarks themselves, never committed); what they promise the harnesses is checked:
the same seed gives the same data, evidence sits where the question says, assistant facts sit deep in a
long answer, questions keep part of their sentence and not the answer. The metrics are checked on rankings
whose right values are known.
"""

from __future__ import annotations

import itertools
import random
import sys
from datetime import datetime
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import _common  # noqa: E402
import _japanese_data  # noqa: E402
import _jaquad_data  # noqa: E402
import _locomo_data  # noqa: E402
import _locomo_gate  # noqa: E402
import _longchat_compare  # noqa: E402
import _longchat_data  # noqa: E402
import _longchat_multi  # noqa: E402
import _longchat_remind  # noqa: E402
import _longchat_temporal  # noqa: E402
import japanese  # noqa: E402
import longchat  # noqa: E402
from _longchat_facts import TYPES  # noqa: E402


def haystack(n: int = 400) -> list[list[tuple[str, str]]]:
    """Invented prompts, each answered by two 'models' at lengths from short to past DEEP_CHARS."""
    rng = random.Random(7)
    return [
        [
            (
                f"Question number {i} about topic {i % 17}?",
                "\n\n".join(f"Paragraph {p} of answer {i}/{m}." * 8 for p in range(rng.randint(2, 20))),
            )
            for m in range(2)
        ]
        for i in range(n)
    ]


@pytest.fixture(scope="module")
def histories() -> list[dict]:
    hay = haystack()
    return [_longchat_data.build_history(i, hay, seed=5) for i in range(10)]


def test_a_history_is_the_same_for_the_same_seed_and_differs_for_another() -> None:
    hay = haystack()
    assert _longchat_data.build_history(3, hay, seed=5) == _longchat_data.build_history(3, hay, seed=5)
    assert _longchat_data.build_history(3, hay, seed=5) != _longchat_data.build_history(3, hay, seed=6)


def test_histories_have_the_promised_shape(histories: list[dict]) -> None:
    assert [h["questions"][0]["question_type"] for h in histories] == [*TYPES, *TYPES]
    assert [h["split"] for h in histories[:4]] == ["choose", "confirm", "choose", "confirm"]
    for history in histories:
        sessions = history["sessions"]
        assert 40 <= len(sessions) <= 60
        times = [datetime.fromisoformat(t["time"]) for s in sessions for t in s["turns"]]
        assert times == sorted(times)
        roles = [t["role"] for s in sessions for t in s["turns"]]
        assert roles == ["user", "assistant"] * (len(roles) // 2)
        question = history["questions"][0]
        assert datetime.fromisoformat(question["question_date"]) > times[-1]


def test_evidence_and_near_misses_sit_where_the_question_says(histories: list[dict]) -> None:
    for history in histories:
        question = history["questions"][0]
        turns = {t["turn_id"]: (s["session_id"], t) for s in history["sessions"] for t in s["turns"]}
        evidence_sessions = [turns[t][0] for t in question["evidence_turn_ids"]]
        assert evidence_sessions == question["evidence_session_ids"]
        assert len(set(evidence_sessions)) == len(evidence_sessions)  # one statement per session
        for turn_id in question["distractor_turn_ids"]:
            assert turns[turn_id][0] not in evidence_sessions
        if question["question_type"] == "single-session-assistant":
            (turn_id,) = question["evidence_turn_ids"]
            text = turns[turn_id][1]["text"]
            assert turns[turn_id][1]["role"] == "assistant"
            # The fact is a paragraph of its own, after DEEP_CHARS characters of the answer.
            inserted = [p for p in text.split("\n\n") if not p.startswith("Paragraph")]
            assert len(inserted) == 1 and text.index(inserted[0]) > _longchat_data.DEEP_CHARS
        if question["question_type"] == "knowledge-update":
            assert question["answer_turn_ids"] == question["evidence_turn_ids"][-1:]


def test_longchat_metrics_rank_sessions_once_each() -> None:
    session_of = {"a1": "s1", "a2": "s1", "b1": "s2", "c1": "s3", "d1": "s4"}
    question = {
        "question_type": "multi-session",
        "evidence_session_ids": ["s2", "s3"],
        "evidence_turn_ids": ["b1", "c1"],
        "answer_turn_ids": ["b1", "c1"],
    }
    # Sessions in rank order: s1 (twice, counted once), s2, s4; s3 missing.
    scored = longchat.score(["a1", "a2", "b1", "d1"], question, session_of)
    assert scored["session@5"] == 1.0 and scored["all@10"] == 0.0 and scored["turns@10"] == 0.5
    ideal = 1 + 1 / 1.5849625007211563
    assert scored["ndcg@10"] == pytest.approx((1 / 1.5849625007211563) / ideal)
    assert longchat.score([], question, session_of)["empty"] == 1.0


def test_newest_counts_only_above_the_older_statement() -> None:
    session_of = {"old": "s1", "new": "s9", "x": "s2"}
    question = {
        "question_type": "knowledge-update",
        "evidence_session_ids": ["s1", "s9"],
        "evidence_turn_ids": ["old", "new"],
        "answer_turn_ids": ["new"],
    }
    assert longchat.score(["new", "x", "old"], question, session_of)["newest@5"] == 1.0
    assert longchat.score(["old", "new"], question, session_of)["newest@5"] == 0.0
    assert "newest@5" not in longchat.score(["x"], {**question, "question_type": "preference"}, session_of)


def test_arm_settings_are_read_like_the_environment() -> None:
    assert longchat.parse_overrides("CPERSONA_RECALL_MODE=rrf,CPERSONA_FUSED_GATE_ENABLED=false") == {
        "recall_mode": "rrf",
        "fused_gate_enabled": False,
    }
    with pytest.raises(SystemExit, match="CPERSONA_NAME=value"):
        longchat.parse_overrides("CPERSONA_NO_SUCH_SETTING=1")


PAGE = """---
title: 例
---

# 見出し

また、Vue のテンプレートは、仮想 DOM レンダー関数にコンパイルされます。これにより、コンパイラーは多くの最適化を行うことができ、実行時の負担が小さくなります。

```js
const a = 1
```

`defineProps` は、コンポーネントが受け取る props を宣言するために使用されます。宣言された props はテンプレートから直接利用できます。

- 箇条書きは段落ではありません。これは除かれます。長さが足りていても除かれるべきです。これは除かれます。
"""


def test_japanese_paragraphs_are_prose_only_and_cleaned() -> None:
    found = _japanese_data.paragraphs({"guide/a.md": PAGE})
    assert [p[1][:8] for p in found] == ["また、Vue の", "`defineP"]
    assert _japanese_data.clean("[リンク](/x) と **強調** と `code`") == "リンク と 強調 と code"


def test_a_japanese_question_keeps_part_of_its_sentence_and_hides_the_answer() -> None:
    sentence = "`defineProps` は、コンポーネントが受け取る props を宣言するために使用されます。"
    made = [_japanese_data.question_from(sentence, random.Random(seed)) for seed in range(20)]
    assert made[3] == _japanese_data.question_from(sentence, random.Random(3))  # deterministic
    for item in made:
        assert item is not None
        question, answer = item["question"], item["answer"]
        assert question.endswith("か") and ("何" in question or "いくつ" in question)
        assert answer not in question
    assert {item["answer"] for item in made if item} <= {
        "defineProps",
        "props",
        "コンポーネント",
        "宣言",
        "使用",
    }


def _article(title: str, paragraphs: int) -> dict:
    """An invented JaQuAD article: each paragraph with three questions."""
    return {
        "title": title,
        "paragraphs": [
            {
                "context": f"{title}の第{p}段落。",
                "qas": [
                    {"question": f"{title}の{p}-{q}は何?", "answers": [{"text": f"答{p}{q}"}]}
                    for q in range(3)
                ],
            }
            for p in range(paragraphs)
        ],
    }


def test_jaquad_keeps_articles_whole_splits_by_article_and_asks_in_the_sets_order(tmp_path: Path) -> None:
    source = [_article(f"記事{a}", 3 + a % 4) for a in range(12)]
    out = _jaquad_data.build(tmp_path, source, "dev", n_paragraphs=20, n_questions=15, seed=1, title=True)
    data = _japanese_data.load(out)
    assert out == tmp_path / "japanese.json"
    assert len(data["paragraphs"]) <= 20
    by_title: dict[str, list[dict]] = {}
    for para in data["paragraphs"]:
        by_title.setdefault(para["page"], []).append(para)
        assert para["text"].startswith(para["page"] + " [SEP] ")
    sizes = {a["title"]: len(a["paragraphs"]) for a in source}
    assert all(len(paras) == sizes[title] for title, paras in by_title.items())  # whole articles only
    assert len(data["questions"]) == 15
    text_of = {p["id"]: p["text"] for p in data["paragraphs"]}
    splits = {}
    for q in data["questions"]:
        assert q["question"].startswith(q["page"]) and q["page"] in text_of[q["gold"]]
        assert splits.setdefault(q["page"], q["split"]) == q["split"]  # one half per article
    assert set(splits.values()) == {"choose", "confirm"}
    # A paragraph's questions come one after another, from its first, in the set's order.
    first = data["questions"][0]["question"]
    assert first.endswith("-0は何?")
    again = _jaquad_data.build(tmp_path, source, "dev", n_paragraphs=20, n_questions=15, seed=1, title=True)
    assert _japanese_data.load(again) == data


def test_jaquad_in_jsquads_form_spaces_latin_and_digits_from_japanese(tmp_path: Path) -> None:
    assert (
        _jaquad_data.spaced("1987年(昭和62年)4月1日にJR東海が") == "1987 年(昭和 62 年)4 月 1 日に JR 東海が"
    )
    assert (
        _jaquad_data.spaced("ケンブリッジ大学で、 ABC と") == "ケンブリッジ大学で、 ABC と"
    )  # nothing to add
    source = [_article(f"記事{a}", 2) for a in range(6)]
    plain = _japanese_data.load(_jaquad_data.build(tmp_path, source, "dev", 8, 6, seed=3, title=True))
    (tmp_path / "spaced").mkdir()
    out = _jaquad_data.build(tmp_path / "spaced", source, "dev", 8, 6, seed=3, title=True, space=True)
    data = _japanese_data.load(out)
    assert data["meta"]["spaced"] is True and plain["meta"]["spaced"] is False
    assert [p["id"] for p in data["paragraphs"]] == [p["id"] for p in plain["paragraphs"]]  # the same draw
    for para, before in zip(data["paragraphs"], plain["paragraphs"], strict=True):
        assert para["text"] == _jaquad_data.spaced(before["text"]) and " [SEP] " in para["text"]
    assert [q["question"] for q in data["questions"]] == [
        _jaquad_data.spaced(q["question"]) for q in plain["questions"]
    ]
    assert any(" 0 " in q["question"] or " 1 " in q["question"] for q in data["questions"])


def test_jaquad_keeps_at_most_n_paragraphs_an_article_and_only_paragraphs_with_questions(
    tmp_path: Path,
) -> None:
    source = [_article(f"記事{a}", 5) for a in range(8)]
    for article in source:
        article["paragraphs"][0]["qas"] = []  # no question: never drawn
    out = _jaquad_data.build(tmp_path, source, "train", 100, 12, seed=4, title=False, per_article=2)
    data = _japanese_data.load(out)
    assert data["meta"]["per_article"] == 2
    pages: dict[str, list[str]] = {}
    for para in data["paragraphs"]:
        pages.setdefault(para["page"], []).append(para["text"])
    assert len(pages) == 8 and all(len(texts) == 2 for texts in pages.values())
    assert not any(text.endswith("の第0段落。") for texts in pages.values() for text in texts)
    assert all(texts == sorted(texts) for texts in pages.values())  # in the article's order


def test_japanese_metrics() -> None:
    assert japanese.score(["p1", "p2"], "p1") == {"hit@1": 1.0, "top5": 1.0, "mrr": 1.0, "empty": 0.0}
    assert japanese.score(["p3", "p4", "p1"], "p1")["mrr"] == pytest.approx(1 / 3)
    assert japanese.score(["p3"] * 5 + ["p1"], "p1")["top5"] == 0.0
    assert japanese.score([], "p1")["empty"] == 1.0


def test_an_evidence_session_draws_prompts_on_its_topic() -> None:
    hay = haystack(60)
    topical = set(range(40, 50))
    for i in topical:
        hay[i] = [(f"Which podcast episode {i} should I try?", "An answer.")]
    sizes = [4] * 10
    prompts = list(range(40))  # one prompt per exchange, none of them topical yet
    planted = {
        3: ("user", "I mostly listen to history podcasts.", True),
        6: ("user", "My brother likes podcasts.", False),
    }
    _longchat_data.topical_sessions(planted, sizes, prompts, hay, random.Random(1))
    assert set(prompts[12:16]) <= topical  # the evidence session (3) is on its topic
    assert not set(prompts[24:28]) & topical  # a near miss's session is left alone
    assert len(set(prompts)) == len(prompts)  # no prompt twice in a history


def test_an_echoing_evidence_session_keeps_coming_back_to_its_statement() -> None:
    hay = haystack()
    plain = _longchat_multi.build_history(2, hay, seed=5, topical=True)
    echo = _longchat_multi.build_history(2, hay, seed=5, topical=True, echo=True)
    assert _longchat_multi.build_history(2, hay, seed=5, topical=True, echo=True) == echo
    assert [q["evidence_turn_ids"] for q in echo["questions"]] == [
        q["evidence_turn_ids"] for q in plain["questions"]
    ]
    turns = {t["turn_id"]: t for s in echo["sessions"] for t in s["turns"]}
    before = {t["turn_id"]: t for s in plain["sessions"] for t in s["turns"]}
    echoed = 0
    for question in echo["questions"]:
        for turn_id in question["evidence_turn_ids"]:
            if turns[turn_id]["role"] != "user":
                continue
            assert turns[turn_id] == before[turn_id]  # the statement itself is untouched
            statement = turns[turn_id]["text"].split(". ")[0].rstrip(".")
            session, index = turn_id.rsplit("-t", 1)
            later = [
                t for tid, t in turns.items() if tid.startswith(session + "-t") and int(tid[-2:]) > int(index)
            ]
            assert all(statement in t["text"] for t in later[:1])  # the next answer restates it
            echoed += len(later)
    assert echoed > 0


def test_order_questions_plant_two_events_in_order_and_leave_the_rest_alone() -> None:
    hay = haystack()
    plain = _longchat_multi.build_history(3, hay, seed=5, topical=True)
    timed = _longchat_multi.build_history(3, hay, seed=5, topical=True, temporal=3)
    assert _longchat_multi.build_history(3, hay, seed=5, topical=True, temporal=0) == plain
    orders = [q for q in timed["questions"] if q["question_type"] == _longchat_temporal.QUESTION_TYPE]
    assert len(orders) == 3
    five = [(q["question"], q["evidence_session_ids"]) for q in timed["questions"] if q not in orders]
    assert five == [(q["question"], q["evidence_session_ids"]) for q in plain["questions"]]
    date_of = {s["session_id"]: s["date"] for s in timed["sessions"]}
    turns = {t["turn_id"]: t for s in timed["sessions"] for t in s["turns"]}
    used: set[str] = set()
    for q in orders:
        first, second = q["evidence_session_ids"]
        assert date_of[first] < date_of[second]
        assert [t.split("-")[1] for t in q["evidence_turn_ids"]] == [first, second]
        assert all(turns[t]["role"] == "user" for t in q["evidence_turn_ids"])
        assert not used & {first, second}  # every question has sessions of its own
        used |= {first, second}
        if q["question"].startswith("How many days"):
            days = (
                _longchat_temporal.datetime.fromisoformat(date_of[second])
                - _longchat_temporal.datetime.fromisoformat(date_of[first])
            ).days
            assert q["answer"] == f"{days} days"
        else:
            assert q["answer"] in q["question"]


def test_a_span_wording_rewords_only_the_questions_about_the_time_between_two_events() -> None:
    hay = haystack()
    days = _longchat_multi.build_history(6, hay, seed=36, topical=True, temporal=3)
    assert (
        _longchat_multi.build_history(6, hay, seed=36, topical=True, temporal=3, span_wording="days") == days
    )
    for wording, opening in (("time", "How much time passed between "), ("long", "How long ")):
        other = _longchat_multi.build_history(6, hay, seed=36, topical=True, temporal=3, span_wording=wording)
        assert other["sessions"] == days["sessions"]  # the same turns: a stored history serves every wording
        changed = 0
        for before, after in zip(days["questions"], other["questions"], strict=True):
            if before["question"].startswith("How many days passed between "):
                assert after["question"].startswith(opening)
                assert {k: v for k, v in after.items() if k != "question"} == {
                    k: v for k, v in before.items() if k != "question"
                }
                changed += 1
            else:
                assert after == before
        assert changed > 0  # seed 36, history 6 asks at least one


def test_reminders_reword_one_sides_questions_and_drop_whose_words_they_want() -> None:
    hay = haystack()
    plain = [_longchat_multi.build_history(i, hay, seed=41, topical=True) for i in range(6)]
    for (side, qtype), form in itertools.product(
        _longchat_remind.QUESTION_TYPES.items(), _longchat_remind.FORMS
    ):
        asked = [
            _longchat_remind.reword(_longchat_multi.build_history(i, hay, seed=41, topical=True), side, form)
            for i in range(6)
        ]
        for before, after in zip(plain, asked, strict=True):
            assert after["sessions"] == before["sessions"]
            for q, r in zip(before["questions"], after["questions"], strict=True):
                if q["question_type"] != qtype:
                    assert r == q
                    continue
                assert (
                    r["question"].startswith(("Remind me", "I'm going back"))
                    and r["question"] != q["question"]
                )
                assert {k: v for k, v in r.items() if k != "question"} == {
                    k: v for k, v in q.items() if k != "question"
                }
                if side == "assistant":  # no cue of whose words is left
                    assert not any(
                        cue in r["question"]
                        for cue in ("you say", "you mention", "you give", "you recommend", "according to you")
                    )
    with pytest.raises(ValueError):
        _longchat_remind.remind("What did you cook?", "assistant")


def test_comparison_questions_plant_each_amount_in_a_session_of_its_own() -> None:
    hay = haystack()
    plain = _longchat_multi.build_history(4, hay, seed=5, topical=True, temporal=2)
    compared = _longchat_multi.build_history(4, hay, seed=5, topical=True, temporal=2, compare=3)
    assert _longchat_multi.build_history(4, hay, seed=5, topical=True, temporal=2, compare=0) == plain
    asks = [q for q in compared["questions"] if q["question_type"] == _longchat_compare.QUESTION_TYPE]
    assert len(asks) == 3
    before = [(q["question"], q["evidence_session_ids"]) for q in compared["questions"] if q not in asks]
    assert before == [(q["question"], q["evidence_session_ids"]) for q in plain["questions"]]
    turns = {t["turn_id"]: t for s in compared["sessions"] for t in s["turns"]}
    statements = {
        statement: item
        for kind in _longchat_compare.KINDS
        for item in kind.items
        for statement in item.statements
    }
    used: set[str] = set()
    for q in asks:
        sessions = q["evidence_session_ids"]
        assert len(sessions) in (2, 3) and len(set(sessions)) == len(sessions)
        assert [t.split("-")[1] for t in q["evidence_turn_ids"]] == sessions
        assert not used & set(sessions)  # every question has sessions of its own
        used |= set(sessions)
        items = []
        for turn_id in q["evidence_turn_ids"]:
            assert turns[turn_id]["role"] == "user"
            items += [item for statement, item in statements.items() if statement in turns[turn_id]["text"]]
        assert len(items) == len(sessions)
        assert q["answer"] == max(items, key=lambda item: item.amount).close


def test_locomo_conversations_pool_question_by_question() -> None:
    """ "overall" weighs every question once, whichever conversation it came from."""
    big = {
        "by_cat": {1: [{"recall@10": 1.0}], 4: [{"recall@10": 1.0}] * 2},
        "real": [{"recall@10": 1.0, "ndcg@10": 1.0, "empty": 0.0}] * 3,
        "negative_empty": [1.0, 1.0, 0.0],
        "renamed_empty": [0.0],
    }
    small = {
        "by_cat": {4: [{"recall@10": 0.0}]},
        "real": [{"recall@10": 0.0, "ndcg@10": 0.0, "empty": 1.0}],
        "negative_empty": [0.0],
        "renamed_empty": [1.0, 1.0, 1.0],
    }
    pooled = _locomo_gate.pool([big, small])
    assert {cat: len(rows) for cat, rows in pooled["by_cat"].items()} == {1: 1, 4: 3}
    overall = _locomo_gate.stats(pooled)
    assert overall["recall@10"] == overall["ndcg@10"] == pytest.approx(0.75)
    assert overall["real_empty"] == pytest.approx(0.25)
    assert (overall["negative_empty"], overall["renamed_empty"]) == (pytest.approx(0.5), pytest.approx(0.75))
    assert (overall["n_real"], overall["n_negative"], overall["n_renamed"]) == (4, 4, 4)
    # The entries pooled are left as they were.
    assert len(big["real"]) == 3 and len(small["by_cat"][4]) == 1


def test_each_locomo_conversation_is_paired_with_the_next_for_its_negatives(tmp_path: Path) -> None:
    for name in ("41", "26", "30"):
        (tmp_path / f"{name}.json").write_text('{"speaker_a": "A", "speaker_b": "B", "qa": []}')
    pairs = _locomo_data.paired_conversations(tmp_path, None)
    assert [(a.name, b.name) for a, b in pairs] == [("26", "30"), ("30", "41"), ("41", "26")]
    assert [(a.name, b.name) for a, b in _locomo_data.paired_conversations(tmp_path, ["41", "26.json"])] == [
        ("26", "41"),
        ("41", "26"),
    ]
    with pytest.raises(SystemExit, match="needs two conversations"):
        _locomo_data.paired_conversations(tmp_path, ["30"])


def test_the_locomo_scripts_arguments_require_the_models_dir_unless_told_not_to() -> None:
    required = _common.data_models_parser("doc", model=False)
    with pytest.raises(SystemExit):
        required.parse_args(["data"])
    assert required.parse_args(["data", "--models-dir", "m"]).models_dir == Path("m")
    optional = _common.data_models_parser("doc", models_required=False)
    args = optional.parse_args(["data"])
    assert (args.data_dir, args.models_dir, args.model) == (Path("data"), None, "all-minilm-l6-v2")
