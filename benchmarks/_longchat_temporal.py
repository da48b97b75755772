"""Questions about the order of two events the user mentioned in two sessions ("Which did I do first, …
or …?", "How many days passed between … and …?"): the evidence of both sessions is needed, as for a
counting question. Planted by ``benchmarks/_longchat_multi.py --temporal N``; invented for the
benchmark, nothing comes from a data set.

Each event has statements (one is said in a user turn), a close name (the statement's own words) and a
paraphrased name (other words for the same thing), so a question is asked in close wording or in
paraphrase as the other types are.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime

QUESTION_TYPE = "temporal-reasoning"


@dataclass(frozen=True)
class Event:
    statements: tuple[str, ...]
    close: str
    paraphrase: str


EVENTS: tuple[Event, ...] = (
    Event(
        (
            "I finally took my bike in for a full service at the repair shop.",
            "Dropped my bike off at the shop today for its yearly service.",
        ),
        "getting my bike serviced",
        "the tune-up of my two-wheeler",
    ),
    Event(
        (
            "We were at my cousin's wedding on Saturday, such a lovely day.",
            "Just back from my cousin's wedding, I danced all night.",
        ),
        "my cousin's wedding",
        "the marriage ceremony in my family",
    ),
    Event(
        (
            "I started a pottery class at the community centre this week.",
            "First pottery class tonight, my bowl came out lopsided.",
        ),
        "starting the pottery class",
        "when I began making ceramics",
    ),
    Event(
        (
            "Had my wisdom tooth pulled at the dentist yesterday, still sore.",
            "The dentist took out my wisdom tooth this morning.",
        ),
        "having my wisdom tooth pulled",
        "my dental surgery",
    ),
    Event(
        (
            "We adopted a grey kitten from the shelter.",
            "Brought home a tiny kitten from the animal shelter today.",
        ),
        "adopting the kitten",
        "when our new cat came home",
    ),
    Event(
        (
            "I bought a new laptop for work, a light 14-inch one.",
            "Finally ordered a new laptop, my old one kept overheating.",
        ),
        "buying the new laptop",
        "getting my new computer",
    ),
    Event(
        (
            "Just got back from a camping trip in the national park.",
            "We went camping by the river for two nights, no phone signal at all.",
        ),
        "the camping trip",
        "the nights we slept in a tent",
    ),
    Event(
        (
            "We painted the kitchen a pale green over the weekend.",
            "Spent Sunday painting the kitchen walls, it looks brand new.",
        ),
        "painting the kitchen",
        "redecorating the room where we cook",
    ),
    Event(
        (
            "I had my job interview at the architecture firm this morning.",
            "The job interview at the architecture firm went better than I expected.",
        ),
        "the job interview at the architecture firm",
        "meeting the building design company about a position",
    ),
    Event(
        (
            "I renewed my passport at the post office today.",
            "Sent off the forms to renew my passport this afternoon.",
        ),
        "renewing my passport",
        "sorting out my travel document",
    ),
    Event(
        (
            "I've been stuck in bed with the flu for three days.",
            "Caught the flu, fever and aching all over.",
        ),
        "having the flu",
        "the week I was sick with a fever",
    ),
    Event(
        (
            "My niece played her first piano recital at school and I went along.",
            "Went to my niece's piano recital, she was so nervous but nailed it.",
        ),
        "my niece's piano recital",
        "watching my brother's daughter perform on the keys",
    ),
)


@dataclass(frozen=True)
class TemporalPlan:
    """Two user statements, oldest first, and a question about their order or distance in time."""

    statements: tuple[str, str]
    names: tuple[str, str]
    question: str
    wording: str
    asks_days: bool


#: How a question about the distance in time between two events is worded (``--span-wording``): "days"
#: counts ("How many days passed between A and B?"); "time" and "long" ask the same without counting,
#: the words a counting frame does not catch ("How much time passed …", "How long was it between …" and
#: "How long after A was B?", by turns). Every wording draws the same numbers, so the histories are the same.
SPAN_WORDINGS = ("days", "time", "long")


def span_question(a: str, b: str, wording: str, k: int) -> str:
    """The question how far apart ``a`` and ``b`` were, in ``wording``; ``k`` (the plan's index) takes
    turns between the two forms of "long"."""
    if wording == "time":
        return f"How much time passed between {a} and {b}?"
    if wording == "long":
        return f"How long was it between {a} and {b}?" if k % 2 == 0 else f"How long after {a} was {b}?"
    return f"How many days passed between {a} and {b}?"


def temporal_plans(rng: random.Random, n: int, span_wording: str = "days") -> list[TemporalPlan]:
    """``n`` questions over distinct events (two each); ``span_wording`` words those that ask how far
    apart two events were (``SPAN_WORDINGS``)."""
    events = rng.sample(EVENTS, 2 * n)
    plans = []
    for k in range(n):
        first, second = events[2 * k], events[2 * k + 1]
        wording = "close" if rng.random() < 0.5 else "paraphrase"
        names = (first.close, second.close) if wording == "close" else (first.paraphrase, second.paraphrase)
        a, b = (names[0], names[1]) if rng.random() < 0.5 else (names[1], names[0])
        asks_days = rng.random() < 1 / 3
        if asks_days:
            question = span_question(a, b, span_wording, k)
        else:
            question = rng.choice(
                [
                    f"Which happened first, {a} or {b}?",
                    f"Which did I do first: {a} or {b}?",
                    f"Did {a} come before or after {b}?",
                ]
            )
        plans.append(
            TemporalPlan(
                (rng.choice(first.statements), rng.choice(second.statements)),
                names,
                question,
                wording,
                asks_days,
            )
        )
    return plans


def answer(plan: TemporalPlan, first_date: str, second_date: str) -> str:
    """The answer, from the dates of the two sessions the statements landed in."""
    if plan.asks_days:
        days = (datetime.fromisoformat(second_date) - datetime.fromisoformat(first_date)).days
        return f"{days} days"
    return plan.names[0]
