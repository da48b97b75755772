"""Questions that compare amounts the user mentioned in several sessions ("Which cost more, … or …?",
"Which of my trips was the longest?"): as for a question that counts, every item's session holds part
of the answer. Planted by ``benchmarks/_longchat_multi.py --compare N``; invented for the benchmark,
nothing comes from a data set.

Items come in kinds (trips, purchases, races, repairs, flights, meals), each item with two statements
(one is said in a user turn, amount included), a close name (the statement's own words) and a
paraphrased name. A plan picks two items of one kind (a comparison, named in close or paraphrased
wording) or three (a superlative, naming only the kind).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

QUESTION_TYPE = "comparison"


@dataclass(frozen=True)
class Item:
    statements: tuple[str, str]
    close: str
    paraphrase: str
    amount: float


@dataclass(frozen=True)
class Kind:
    items: tuple[Item, ...]
    #: Comparisons of two items; {a} and {b} are the items' names.
    pairs: tuple[str, ...]
    #: Superlatives over every planted item of the kind.
    superlatives: tuple[str, ...]


KINDS: tuple[Kind, ...] = (
    Kind(
        (
            Item(
                (
                    "Just got back from four days in Lisbon, the custard tarts alone were worth it.",
                    "Spent four days in Lisbon, walked up every hill in the city.",
                ),
                "the Lisbon trip",
                "my Portuguese city break",
                4,
            ),
            Item(
                (
                    "We rented a cabin by Lake Tahoe for two nights, so quiet up there.",
                    "Two nights in a lakeside cabin at Tahoe, no wifi, loved it.",
                ),
                "the Lake Tahoe cabin",
                "the lakeside getaway in the mountains",
                2,
            ),
            Item(
                (
                    "I'm back from a whole week visiting my sister in Denver.",
                    "Spent seven days at my sister's place in Denver.",
                ),
                "the week in Denver",
                "staying with my sibling in Colorado",
                7,
            ),
            Item(
                (
                    "Did a three-day hiking trip through the Scottish Highlands.",
                    "Three days of hiking in the Highlands of Scotland, my legs are done.",
                ),
                "the Highlands hike",
                "trekking in the north of the UK",
                3,
            ),
        ),
        ("Which trip was longer, {a} or {b}?", "Was {a} longer or shorter than {b}?"),
        ("Which of my trips was the longest?", "Which getaway kept me away from home for the most days?"),
    ),
    Kind(
        (
            Item(
                (
                    "I bought a new road bike, it came to $1,200 with the pedals.",
                    "Picked up my new road bike today, $1,200 all in.",
                ),
                "the road bike",
                "my new racing cycle",
                1200,
            ),
            Item(
                (
                    "Treated myself to noise-cancelling headphones for $350.",
                    "Got the noise-cancelling headphones I wanted, paid $350.",
                ),
                "the noise-cancelling headphones",
                "the cans that block out sound",
                350,
            ),
            Item(
                (
                    "Ordered a standing desk for the home office, it was $480.",
                    "The standing desk for my home office arrived, $480 well spent.",
                ),
                "the standing desk",
                "the adjustable workstation",
                480,
            ),
            Item(
                (
                    "Bought an espresso machine for the kitchen, $650.",
                    "Our new espresso machine cost $650, and the coffee is great.",
                ),
                "the espresso machine",
                "the coffee maker for the kitchen",
                650,
            ),
        ),
        ("Which cost more: {a} or {b}?", "Did I pay more for {a} or for {b}?"),
        ("What was the most expensive thing I bought?", "Which of my purchases cost me the most?"),
    ),
    Kind(
        (
            Item(
                (
                    "Ran my first 10k race this morning in 58 minutes.",
                    "Finished the 10k race in 58 minutes, so happy.",
                ),
                "the 10k race",
                "the ten-kilometre run",
                10,
            ),
            Item(
                (
                    "I finished the half marathon in two hours and five minutes!",
                    "Half marathon done, 21 kilometres in just over two hours.",
                ),
                "the half marathon",
                "the 21-kilometre event",
                21,
            ),
            Item(
                (
                    "Did the 5k charity fun run with my coworkers today.",
                    "Our office team ran the 5k charity fun run this morning.",
                ),
                "the charity 5k",
                "the fundraising jog with colleagues",
                5,
            ),
            Item(
                (
                    "Completed a 15-kilometre trail race in the hills, very muddy.",
                    "The 15k trail race through the hills was brutal but fun.",
                ),
                "the trail race",
                "the off-road run in the hills",
                15,
            ),
        ),
        ("Which race was longer, {a} or {b}?", "Was {a} a longer distance than {b}?"),
        ("What was the longest race I ran?", "Which of my races covered the greatest distance?"),
    ),
    Kind(
        (
            Item(
                (
                    "The plumber fixed the leaking pipe under the sink, $220.",
                    "Had a plumber in for the leaky sink pipe, it cost $220.",
                ),
                "the plumbing repair",
                "fixing the leak in the bathroom",
                220,
            ),
            Item(
                (
                    "Had the roof gutters cleared out for $150.",
                    "Paid $150 to get the gutters on the roof cleaned.",
                ),
                "the gutter cleaning",
                "clearing the rain channels on the house",
                150,
            ),
            Item(
                (
                    "The electrician rewired the garage, that was $900.",
                    "Got the garage rewired by an electrician for $900.",
                ),
                "rewiring the garage",
                "the electrical work",
                900,
            ),
            Item(
                (
                    "We had the old boiler serviced, $310.",
                    "Boiler service done today, $310.",
                ),
                "the boiler service",
                "the heating check-up",
                310,
            ),
        ),
        ("Which repair cost more, {a} or {b}?", "Was {a} more expensive than {b}?"),
        ("Which home repair cost the most?", "What was the priciest job done on the house?"),
    ),
    Kind(
        (
            Item(
                (
                    "My flight to Tokyo was 13 hours, I'm wrecked.",
                    "Landed in Tokyo after 13 hours in the air.",
                ),
                "the Tokyo flight",
                "flying to Japan",
                13,
            ),
            Item(
                (
                    "The flight to Chicago took just under three hours.",
                    "Flew to Chicago this morning, about three hours.",
                ),
                "the Chicago flight",
                "the plane ride to the Windy City",
                3,
            ),
            Item(
                (
                    "Flew to Reykjavik yesterday, a five-hour flight.",
                    "Five hours on the plane to Reykjavik, but we're here.",
                ),
                "the Reykjavik flight",
                "getting to Iceland by air",
                5,
            ),
        ),
        ("Which flight was longer, {a} or {b}?", "Which took more hours: {a} or {b}?"),
        ("What was my longest flight?", "Which time I flew was I in the air the longest?"),
    ),
    Kind(
        (
            Item(
                (
                    "Dinner at the sushi place downtown came to $140 for the two of us.",
                    "We had sushi downtown tonight, $140 for two.",
                ),
                "the sushi dinner",
                "the Japanese meal in the city centre",
                140,
            ),
            Item(
                (
                    "Lunch from the new taco truck was only $18.",
                    "Grabbed lunch at the taco truck, $18.",
                ),
                "the taco truck lunch",
                "the Mexican street food",
                18,
            ),
            Item(
                (
                    "Brunch at the French bakery cost us $62.",
                    "The French bakery brunch was $62, worth it for the croissants.",
                ),
                "the bakery brunch",
                "the late breakfast with croissants",
                62,
            ),
        ),
        ("Which meal cost more, {a} or {b}?", "Did I spend more on {a} or on {b}?"),
        ("Which meal out cost me the most?", "Where did I spend the most on food?"),
    ),
)


@dataclass(frozen=True)
class ComparePlan:
    """Two or three user statements and a question that compares their amounts."""

    statements: tuple[str, ...]
    question: str
    wording: str
    answer: str


def compare_plans(rng: random.Random, n: int) -> list[ComparePlan]:
    """``n`` questions over distinct kinds: each a comparison of two items or a superlative over three."""
    plans = []
    for kind in rng.sample(KINDS, n):
        if rng.random() < 0.5:
            items = rng.sample(kind.items, 2)
            wording = "close" if rng.random() < 0.5 else "paraphrase"
            a, b = (item.close if wording == "close" else item.paraphrase for item in items)
            question = rng.choice(kind.pairs).format(a=a, b=b)
        else:
            items = rng.sample(kind.items, 3)
            wording = "close" if rng.random() < 0.5 else "paraphrase"
            question = kind.superlatives[0 if wording == "close" else 1]
        best = max(items, key=lambda item: item.amount)
        plans.append(
            ComparePlan(tuple(rng.choice(item.statements) for item in items), question, wording, best.close)
        )
    return plans
