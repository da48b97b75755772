"""Long chat histories with one question of every type each (five per history): more questions per
stored history, for choosing retrieval settings (benchmarks/_longchat_data.py plants one).

    python benchmarks/_longchat_multi.py benchmarks/results/longchat-multi --histories 20 \
        [--source /path/to/alpaca_eval.git] [--seed 33] [--topical [--echo]] [--temporal N [--span-wording W]]
        [--compare N] [--remind assistant|user [--remind-form remind|chat]]
    python benchmarks/longchat.py benchmarks/results/longchat-multi --models-dir DIR --split choose ...

Same haystack, facts, phrasings, near misses and file shape as _longchat_data.py (the harness reads
either). ``--topical`` draws each evidence session's other exchanges from prompts on its fact's topic;
``--echo`` besides has the rest of the session refer back to the user's statement, so a question's best
matches crowd into one evidence session
(docs/research/recall-round-three/figures.md#the-figures-and-how-they-moved, "Questions that count over
sessions"; built with seeds 34 and 35). ``--temporal`` and ``--compare`` plant questions about the order of two events
(_longchat_temporal.py) and questions that compare amounts (_longchat_compare.py) besides. Every history plants the five plans of _longchat_facts.py in distinct sessions, so the
questions of one history compete with each other's facts as well as with the haystack. Histories
alternate between the choose and confirm halves. The seed differs from the one-question data's, so
the two data sets share no history.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _longchat_compare import QUESTION_TYPE as COMPARE  # noqa: E402
from _longchat_compare import compare_plans  # noqa: E402
from _longchat_data import (  # noqa: E402
    DATA_FILE,
    SPLITS,
    load,
    load_haystack,
    topical_sessions,
    weave_sessions,
)
from _longchat_facts import GENERATORS, TYPES  # noqa: E402
from _longchat_remind import FORMS as REMIND_FORMS  # noqa: E402
from _longchat_remind import QUESTION_TYPES as QUESTION_TYPES_REMINDED  # noqa: E402
from _longchat_remind import reword  # noqa: E402
from _longchat_temporal import QUESTION_TYPE as TEMPORAL  # noqa: E402
from _longchat_temporal import SPAN_WORDINGS, temporal_plans  # noqa: E402
from _longchat_temporal import answer as temporal_answer  # noqa: E402


def build_history(
    index: int,
    haystack: list[list[tuple[str, str]]],
    seed: int,
    topical: bool = False,
    echo: bool = False,
    temporal: int = 0,
    compare: int = 0,
    span_wording: str = "days",
) -> dict[str, Any]:
    """One history with a question of every type; deterministic in (index, seed, topical). ``topical``:
    every evidence session is about its fact's topic (as _longchat_data.py builds them), so a question's
    best matches crowd into the sessions that talk about its subject, as in a real assistant's memory.
    ``echo``: besides, the rest of an evidence session keeps coming back to the user's statement.
    ``temporal``: this many questions about the order of two events besides (_longchat_temporal.py);
    ``compare``: this many questions that compare amounts besides (_longchat_compare.py); with 0 for
    both, the history is the same as before the options existed. ``span_wording``: how the temporal
    questions that ask how far apart two events were are worded (_longchat_temporal.SPAN_WORDINGS); the
    rest of the history is the same for every wording."""
    rng = random.Random(seed * 100_003 + index)
    plans = {qtype: GENERATORS[qtype](rng) for qtype in TYPES}
    n_sessions = rng.randint(44, 60)
    sizes = [rng.randint(3, 7) for _ in range(n_sessions)]
    prompts = rng.sample(range(len(haystack)), sum(sizes))
    free = list(range(1, n_sessions - 1))
    rng.shuffle(free)
    planted: dict[int, tuple[str, str, str, bool]] = {}  # session → (who, text, qtype, evidence?)
    chosen: dict[str, list[int]] = {}
    for qtype, plan in plans.items():
        if plan.newest_only:
            early = [s for s in free if s < n_sessions // 3][0]
            late = [s for s in free if s >= 2 * n_sessions // 3][0]
            sessions = [early, late]
        else:
            sessions = sorted(free[: len(plan.statements)])
        for s in sessions:
            free.remove(s)
        chosen[qtype] = sessions
        for s, (who, text) in zip(sessions, plan.statements, strict=True):
            planted[s] = (who, text, qtype, True)
        for who, text in plan.distractors:
            s = free.pop()
            planted[s] = (who, text, qtype, False)
    orders = temporal_plans(rng, temporal, span_wording) if temporal else []
    for k, order in enumerate(orders):
        pair = sorted(free[:2])
        del free[:2]
        chosen[f"{TEMPORAL}#{k}"] = pair
        for s, text in zip(pair, order.statements, strict=True):
            planted[s] = ("user", text, f"{TEMPORAL}#{k}", True)
    comparisons = compare_plans(rng, compare) if compare else []
    for k, comparison in enumerate(comparisons):
        group = sorted(free[: len(comparison.statements)])
        del free[: len(comparison.statements)]
        chosen[f"{COMPARE}#{k}"] = group
        for s, text in zip(group, comparison.statements, strict=True):
            planted[s] = ("user", text, f"{COMPARE}#{k}", True)
    if topical:
        topical_sessions({s: (w, t, e) for s, (w, t, _, e) in planted.items()}, sizes, prompts, haystack, rng)
    sessions_out, moment, found = weave_sessions(
        f"m{index:03d}", index, haystack, rng, sizes, prompts, planted
    )
    evidence = {q: found.get((q, True), []) for q in TYPES}
    if echo:
        _echo_evidence(sessions_out, [t for key in chosen for t in found.get((key, True), [])])
    distractors = {q: found.get((q, False), []) for q in TYPES}
    question_date = moment + timedelta(days=rng.randint(1, 10))
    questions = []
    for qtype, plan in plans.items():
        turns_of = evidence[qtype]
        questions.append(
            {
                "question_id": f"m{index:03d}-{qtype}",
                "question_type": qtype,
                "question": plan.question,
                "answer": plan.answer,
                "question_date": question_date.isoformat(),
                "evidence_session_ids": [f"s{s:02d}" for s in chosen[qtype]],
                "evidence_turn_ids": turns_of,
                "answer_turn_ids": turns_of[-1:] if plan.newest_only else turns_of,
                "distractor_turn_ids": distractors[qtype],
                **plan.tags,
            }
        )
    date_of = {s["session_id"]: s["date"] for s in sessions_out}
    for k, order in enumerate(orders):
        key = f"{TEMPORAL}#{k}"
        pair = [f"s{s:02d}" for s in chosen[key]]
        turns_of = found.get((key, True), [])
        questions.append(
            {
                "question_id": f"m{index:03d}-{TEMPORAL}-{k}",
                "question_type": TEMPORAL,
                "question": order.question,
                "answer": temporal_answer(order, date_of[pair[0]], date_of[pair[1]]),
                "question_date": question_date.isoformat(),
                "evidence_session_ids": pair,
                "evidence_turn_ids": turns_of,
                "answer_turn_ids": turns_of,
                "distractor_turn_ids": [],
                "wording": order.wording,
            }
        )
    for k, comparison in enumerate(comparisons):
        key = f"{COMPARE}#{k}"
        turns_of = found.get((key, True), [])
        questions.append(
            {
                "question_id": f"m{index:03d}-{COMPARE}-{k}",
                "question_type": COMPARE,
                "question": comparison.question,
                "answer": comparison.answer,
                "question_date": question_date.isoformat(),
                "evidence_session_ids": [f"s{s:02d}" for s in chosen[key]],
                "evidence_turn_ids": turns_of,
                "answer_turn_ids": turns_of,
                "distractor_turn_ids": [],
                "wording": comparison.wording,
            }
        )
    return {
        "history_id": f"m{index:03d}",
        "split": SPLITS[index % 2],
        "sessions": sessions_out,
        "questions": questions,
    }


#: How the turns after a user's statement come back to it in an echoing evidence session.
ECHO_ASSISTANT = "You mentioned: {statement}"
ECHO_USER = "Following up on what I told you earlier ({statement})"


def _echo_evidence(sessions: list[dict[str, Any]], evidence_turns: list[str]) -> None:
    """In place: in each session holding a user's evidence statement, the assistant's next answer opens by
    restating it and every later user turn refers back to it, so the whole session is about the fact (as
    a real conversation that starts from it is) and its turns crowd a question's best matches."""
    wanted = set(evidence_turns)
    for session in sessions:
        turns = session["turns"]
        for at, turn in enumerate(turns):
            if turn["turn_id"] not in wanted or turn["role"] != "user":
                continue
            statement = turn["text"].split(". ")[0].rstrip(".")
            for later in turns[at + 1 :]:
                if later["turn_id"] in wanted:
                    break
                if later["role"] == "assistant" and later is turns[at + 1]:
                    later["text"] = f"{ECHO_ASSISTANT.format(statement=statement)}. {later['text']}"
                elif later["role"] == "user":
                    later["text"] = f"{ECHO_USER.format(statement=statement)}: {later['text']}"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "cache", type=Path, help="cache dir: longchat.json goes here (haystack read from --source)"
    )
    parser.add_argument("--source", type=Path, help="local git dir of tatsu-lab/alpaca_eval (else download)")
    parser.add_argument("--histories", type=int, default=20)
    parser.add_argument("--seed", type=int, default=33)
    parser.add_argument(
        "--topical", action="store_true", help="evidence sessions about their fact's topic (crowding)"
    )
    parser.add_argument(
        "--echo", action="store_true", help="with --topical: an evidence session keeps referring to its fact"
    )
    parser.add_argument(
        "--temporal", type=int, default=0, help="questions about the order of two events per history, besides"
    )
    parser.add_argument(
        "--compare", type=int, default=0, help="questions that compare amounts per history, besides"
    )
    parser.add_argument(
        "--span-wording",
        choices=SPAN_WORDINGS,
        default="days",
        help="with --temporal: how a question about the time between two events is worded",
    )
    parser.add_argument(
        "--remind",
        choices=sorted(QUESTION_TYPES_REMINDED),
        help="ask this side's single-session questions as requests to be reminded (_longchat_remind.py)",
    )
    parser.add_argument(
        "--remind-form",
        choices=REMIND_FORMS,
        default="remind",
        help="with --remind: 'remind me' or a look back",
    )
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    haystack = load_haystack(args.source, args.cache)
    data = {
        "meta": {
            "builder": "_longchat_multi",
            "seed": args.seed,
            "histories": args.histories,
            "topical": args.topical,
            "echo": args.echo,
            "temporal": args.temporal,
            "compare": args.compare,
            **({"span_wording": args.span_wording} if args.span_wording != "days" else {}),
            **({"remind": args.remind, "remind_form": args.remind_form} if args.remind else {}),
        },
        "histories": [
            build_history(
                i,
                haystack,
                args.seed,
                args.topical,
                args.echo,
                args.temporal,
                args.compare,
                args.span_wording,
            )
            for i in range(args.histories)
        ],
    }
    if args.remind:
        data["histories"] = [reword(h, args.remind, args.remind_form) for h in data["histories"]]
    out = args.cache / DATA_FILE
    partial = out.with_suffix(".partial")
    partial.write_text(json.dumps(data, ensure_ascii=False))
    partial.replace(out)
    histories = load(out)
    print(f"wrote {out}: {len(histories)} histories, {sum(len(h['questions']) for h in histories)} questions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
