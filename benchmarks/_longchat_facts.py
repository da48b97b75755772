"""The facts benchmarks/_longchat_data.py plants into long chat histories, and the questions about them.

Five question types, each a list of *subjects*; a subject draws its values from small pools and says its
evidence in one of several phrasings, and its question in one of several phrasings: some share the
subject's words with the evidence, some only paraphrase it (``ask`` lists the close wording first, the
paraphrase after). Everything here is invented for the benchmark; nothing comes from a data set.

A generator returns a ``Plan``: the statements to plant (in order: each lands in its own session, later
statements in later sessions) and the question. ``who`` is "user" (the statement becomes part of a user
turn) or "assistant" (it is written into a long assistant answer, after ~1,500 characters).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

TYPES = ("preference", "multi-session", "knowledge-update", "single-session-user", "single-session-assistant")

FIRST = [
    "Maya",
    "Tomas",
    "Priya",
    "Elliot",
    "Noor",
    "Jonas",
    "Ines",
    "Kofi",
    "Hana",
    "Rafael",
    "Lena",
    "Oskar",
]
PETS = ["Biscuit", "Pepper", "Juniper", "Waffles", "Mochi", "Atlas", "Clementine", "Ziggy", "Pickle", "Nova"]
CITIES = [
    "Lisbon",
    "Kyoto",
    "Tallinn",
    "Valparaiso",
    "Ljubljana",
    "Hobart",
    "Cork",
    "Tbilisi",
    "Oaxaca",
    "Bergen",
]
STREETS = ["Alder Lane", "Quarry Street", "Harbour Row", "Linden Walk", "Copper Street", "Mill Road"]
CAFES = ["Ferro & Salt", "The Blue Kettle", "Casa Ondina", "Little Orchard", "Sable Room", "Nine Lanterns"]


@dataclass
class Plan:
    """Statements to plant, oldest first, and the question about them."""

    statements: list[tuple[str, str]]  # (who, text)
    question: str
    answer: str
    newest_only: bool = False  # knowledge update: the last statement holds the answer
    #: Near misses planted in other sessions: the same kind of fact about someone else, or another
    #: recommendation of the same kind. They are not evidence; a good ranking puts the evidence above them.
    distractors: list[tuple[str, str]] = field(default_factory=list)
    tags: dict[str, str] = field(default_factory=dict)


def _pick(rng: random.Random, options: list[str], k: int = 1) -> list[str]:
    return rng.sample(options, k)


def _ask(rng: random.Random, close: list[str], paraphrase: list[str]) -> tuple[str, str]:
    """A question in close wording or in paraphrase (half each), and which one it is."""
    if rng.random() < 0.5:
        return rng.choice(close), "close"
    return rng.choice(paraphrase), "paraphrase"


# -- 1. preferences: "can you suggest …" answered by a preference stated sessions earlier --------------

PREFERENCES: list[dict[str, list[str]]] = [
    {
        "like": [
            "true-crime podcasts about unsolved cold cases",
            "history podcasts about the late Roman Republic",
            "podcasts where comedians interview working scientists",
        ],
        "say": [
            "By the way, lately I've been completely hooked on {like}.",
            "I should say I mostly listen to {like} while I walk the dog.",
        ],
        "close": ["Can you suggest some podcasts I might enjoy?", "Any podcast recommendations for me?"],
        "paraphrase": [
            "What should I put on in my earbuds during my long drive this weekend?",
            "I need something new to listen to on my commute, any ideas?",
        ],
    },
    {
        "like": [
            "slow-burning Scandinavian crime novels",
            "hard science fiction with lots of orbital mechanics",
            "memoirs written by chefs about their restaurants",
        ],
        "say": [
            "For context, the books I love most are {like}.",
            "Honestly nothing beats {like} for me, I read them every night.",
        ],
        "close": ["Can you recommend a book I'd like?", "Could you suggest a novel for my next read?"],
        "paraphrase": [
            "I have a long flight next week, what should I bring to read?",
            "What could I pick up at the library this weekend?",
        ],
    },
    {
        "like": [
            "spicy Sichuan food, the more numbing pepper the better",
            "small plates and natural wine bars",
            "vegetarian South Indian dishes like dosa and sambar",
        ],
        "say": [
            "When we eat out I always end up craving {like}.",
            "Just so you know, my favourite kind of meal is {like}.",
        ],
        "close": [
            "Can you suggest a restaurant for my dinner out on Friday?",
            "Any recommendations for where to eat this weekend?",
        ],
        "paraphrase": [
            "My partner and I want to celebrate on Friday night, where should we go?",
            "What kind of place should I book for a birthday meal?",
        ],
    },
    {
        "like": [
            "quiet mountain villages where I can hike from the door",
            "big cities with lots of museums and late-night food",
            "remote beaches where there's nothing to do but snorkel",
        ],
        "say": [
            "My ideal vacation is always {like}.",
            "I realised the trips I enjoy most are to {like}.",
        ],
        "close": [
            "Can you suggest a vacation destination for me?",
            "Where should I travel on my next holiday?",
        ],
        "paraphrase": [
            "I have ten days off in autumn, any ideas where to go?",
            "Help me plan my time off next spring, what do you recommend?",
        ],
    },
    {
        "like": [
            "short high-intensity interval sessions at home",
            "long easy runs along the river",
            "bouldering at the climbing gym with friends",
        ],
        "say": [
            "The only exercise I really stick with is {like}.",
            "For fitness, I've found I genuinely enjoy {like}.",
        ],
        "close": ["Can you suggest a workout plan for me?", "Could you recommend some exercise routines?"],
        "paraphrase": [
            "I want to get in better shape before summer, how should I go about it?",
            "What should I do to stay active during the busy months ahead?",
        ],
    },
    {
        "like": [
            "cooperative board games where everyone plays against the game",
            "heavy economic strategy games that take three hours",
            "quick party games with lots of laughing",
        ],
        "say": [
            "Our game nights work best with {like}.",
            "I've noticed my friends and I always prefer {like}.",
        ],
        "close": ["Can you recommend a board game to buy?", "Any board game suggestions for our group?"],
        "paraphrase": [
            "Friends are coming over on Saturday, what could we play at the table?",
            "What should I get for our next get-together at my place?",
        ],
    },
    {
        "like": [
            "light-roast Ethiopian beans brewed as pour-over",
            "strong dark espresso with a splash of oat milk",
            "cold brew steeped overnight",
        ],
        "say": [
            "My morning ritual is {like}.",
            "I'm picky about coffee: I only really enjoy {like}.",
        ],
        "close": ["Can you suggest some coffee I should try?", "Could you recommend a new coffee for me?"],
        "paraphrase": [
            "I want to treat myself to something new for my mornings, any ideas?",
            "What should I buy at the roastery downtown?",
        ],
    },
    {
        "like": [
            "old black-and-white film noir",
            "slow Japanese family dramas",
            "heist movies with clever twists",
        ],
        "say": [
            "On movie nights I always reach for {like}.",
            "My favourite films are, without a doubt, {like}.",
        ],
        "close": ["Can you recommend a movie for tonight?", "Any film suggestions for me?"],
        "paraphrase": [
            "I'm staying in tonight with some popcorn, what should I watch?",
            "What could I put on the screen for a quiet Sunday evening?",
        ],
    },
]


OTHERS = ["brother", "sister", "roommate", "coworker", "neighbour", "cousin"]


def preference(rng: random.Random) -> Plan:
    subject = rng.choice(PREFERENCES)
    like, other = _pick(rng, subject["like"], 2)
    question, wording = _ask(rng, subject["close"], subject["paraphrase"])
    statement = rng.choice(subject["say"]).format(like=like)
    near = rng.choice(
        [
            "My {who} keeps telling me about {like}, but that's really not for me.",
            "A {who} of mine swears by {like}; I can't get into it myself.",
        ]
    ).format(who=rng.choice(OTHERS), like=other)
    return Plan(
        [("user", statement)], question, like, distractors=[("user", near)], tags={"wording": wording}
    )


# -- 2. multi-session: "how many …" aggregating 3-4 sessions ----------------------------------------------

COUNTS: list[dict[str, list[str]]] = [
    {
        "item": [
            "a snake plant",
            "a monstera",
            "a trailing pothos",
            "a peace lily",
            "a fiddle-leaf fig",
            "a ZZ plant",
        ],
        "say": [
            "I picked up {item} at the garden centre today.",
            "Just brought home {item} for the window in the living room.",
            "Treated myself to {item}, another houseplant for the collection.",
        ],
        "close": ["How many houseplants have I bought?", "How many plants did I get in total?"],
        "paraphrase": ["How much greenery have I added to my apartment lately, in number of pots?"],
    },
    {
        "item": [
            "the Velvet Owls at the Roundhouse",
            "a string quartet at St. Anne's",
            "Mara Lind's jazz trio at the Blue Door",
            "the Harbor Kites at the summer festival",
            "an organ recital at the cathedral",
        ],
        "say": [
            "I saw {item} live last night, what a show.",
            "Went to a concert yesterday: {item}.",
            "Still buzzing from the gig, {item} was incredible.",
        ],
        "close": ["How many concerts have I been to?", "How many live music shows did I attend?"],
        "paraphrase": ["How many times did I go out to hear a band or musicians play?"],
    },
    {
        "item": [
            "'The Salt Road' by Ilse Varga",
            "'Nine Winters' by Tobias Crane",
            "'A Field of Glass' by Ren Okafor",
            "'The Cartographer's Daughter' by Lucia Ferro",
            "'Small Hours' by Amal Idris",
        ],
        "say": [
            "I just finished reading {item}.",
            "Finally got to the last page of {item} this morning.",
            "Wrapped up {item} over the weekend, loved it.",
        ],
        "close": ["How many books have I finished reading?", "How many books did I read to the end?"],
        "paraphrase": ["How many titles have I got through since we started talking?"],
    },
    {
        "item": [
            "the Riverside 5k",
            "the Harvest Half Marathon",
            "the Night Owl 10k",
            "the Lakeshore 8k",
            "a trail race in the hills",
        ],
        "say": [
            "I ran {item} on Sunday and finished strong.",
            "Crossed the finish line at {item} this weekend!",
            "Signed up last minute and ran {item}, legs are sore.",
        ],
        "close": ["How many races have I run?", "How many running races did I take part in?"],
        "paraphrase": ["How many times have I pinned on a bib and crossed a finish line?"],
    },
    {
        "item": [
            "the Museum of Maritime History",
            "the glass museum",
            "the modern art gallery downtown",
            "the natural history museum",
            "the clock museum",
        ],
        "say": [
            "Spent the afternoon at {item}.",
            "I finally visited {item} on Saturday.",
            "Wandered around {item} with my cousin today.",
        ],
        "close": ["How many museums have I visited?", "How many museum visits have I made?"],
        "paraphrase": ["How many exhibitions and collections did I go and see in person?"],
    },
    {
        "item": [
            "a lemon drizzle cake",
            "a sourdough loaf",
            "cinnamon rolls",
            "a cherry pie",
            "oatmeal cookies",
        ],
        "say": [
            "I baked {item} for my neighbours.",
            "Made {item} from scratch for the office.",
            "My kitchen smells amazing, I baked {item} to share with friends.",
        ],
        "close": [
            "How many times have I baked something to share?",
            "How many things did I bake for other people?",
        ],
        "paraphrase": ["How often did I make treats in the oven for others?"],
    },
]


def multi_session(rng: random.Random) -> Plan:
    subject = rng.choice(COUNTS)
    n = rng.choice([3, 4])
    items = _pick(rng, subject["item"], n + 1)
    statements = [("user", rng.choice(subject["say"]).format(item=item)) for item in items[:n]]
    near = f"My {rng.choice(OTHERS)} was raving about {items[n]} the other day."
    question, wording = _ask(rng, subject["close"], subject["paraphrase"])
    return Plan(statements, question, str(n), distractors=[("user", near)], tags={"wording": wording})


# -- 3. knowledge updates: a value changed; the newest statement answers -----------------------------------


def _update_subjects(
    rng: random.Random,
) -> list[tuple[list[str], list[str], list[str], list[str], list[str]]]:
    """(values, old phrasings, new phrasings, close questions, paraphrased questions) per subject."""
    a, b = _pick(rng, FIRST, 2)
    c1, c2 = _pick(rng, CITIES, 2)
    return [
        (
            [f"${rng.randint(25, 45)}", f"${rng.randint(50, 80)}"],
            ["My gym membership costs {v} a month.", "I pay {v} every month for the gym."],
            [
                "The gym raised the monthly fee, it's now {v}.",
                "Ugh, my gym membership went up to {v} a month.",
            ],
            ["How much does my gym membership cost now?"],
            ["What am I paying these days to work out at my club?"],
        ),
        (
            ["the number 12 bus", "my bike"],
            ["I get to work by taking {v} every morning.", "My commute is {v}, about forty minutes."],
            ["I've switched, now I commute by {v}.", "New routine: I go to the office by {v} now."],
            ["How do I commute to work now?"],
            ["How am I getting to the office these days?"],
        ),
        (
            [f"{rng.randint(24, 27)}:{rng.randint(10, 59)}", f"{rng.randint(21, 23)}:{rng.randint(10, 59)}"],
            ["My best 5k time so far is {v}.", "My personal record for the 5k is {v}."],
            ["New personal record on the 5k: {v}!", "I beat my best 5k time, it's {v} now."],
            ["What is my current 5k personal best?"],
            ["How fast is my quickest run over five kilometres at the moment?"],
        ),
        (
            [a, b],
            ["My manager at work is {v}.", "I report to {v} on the design team."],
            ["My old manager left, I now report to {v}.", "Reorg news: {v} is my new manager."],
            ["Who is my manager now?"],
            ["Who do I report to at work these days?"],
        ),
        (
            [c1, c2],
            ["I live in {v} at the moment.", "Life in {v} is pretty good, I've lived here four years."],
            ["We finally moved, I live in {v} now.", "The move is done, our new home is in {v}."],
            ["Where do I live now?"],
            ["Which city is home for me these days?"],
        ),
        (
            ["a silver Honda Civic", "a blue Subaru Outback"],
            ["I drive {v}, it's been reliable.", "My car is {v}."],
            ["I traded in my old car, I drive {v} now.", "Picked up my new car today: {v}."],
            ["What car do I drive now?"],
            ["What am I behind the wheel of these days?"],
        ),
    ]


def knowledge_update(rng: random.Random) -> Plan:
    values, old, new, close, paraphrase = rng.choice(_update_subjects(rng))
    statements = [
        ("user", rng.choice(old).format(v=values[0])),
        ("user", rng.choice(new).format(v=values[1])),
    ]
    question, wording = _ask(rng, close, paraphrase)
    return Plan(statements, question, values[1], newest_only=True, tags={"wording": wording})


# -- 4. single-session facts the user stated --------------------------------------------------------------


def _user_facts(rng: random.Random) -> list[tuple[str, str, list[str], list[str], str]]:
    """(statement, answer, close questions, paraphrased questions, the same kind of fact about another)."""
    pet, pet2 = _pick(rng, PETS, 2)
    sister, friend = _pick(rng, FIRST, 2)
    breed, breed2 = _pick(rng, ["beagle", "border collie", "greyhound", "corgi"], 2)
    venue, venue2 = _pick(
        rng, ["a vineyard outside Napa", "an old lighthouse on the coast", "her university chapel"], 2
    )
    allergy, allergy2 = _pick(rng, ["cashews", "shellfish", "penicillin", "kiwi fruit"], 2)
    instrument, instrument2 = _pick(rng, ["cello", "banjo", "clarinet", "ukulele"], 2)
    degree, degree2 = _pick(
        rng, ["marine biology", "medieval history", "civil engineering", "linguistics"], 2
    )
    order, order2 = _pick(rng, ["an oat flat white", "a cortado with cinnamon", "an iced chai latte"], 2)
    other = rng.choice(OTHERS)
    return [
        (
            f"We adopted a {breed} puppy last week and named her {pet}.",
            pet,
            ["What is my dog's name?", "What did I name my puppy?"],
            ["What do we call the new four-legged member of our family?"],
            f"My {other}'s {breed2} is called {pet2}, such a sweet dog.",
        ),
        (
            f"My sister {sister} is getting married at {venue} next June.",
            venue,
            ["Where is my sister's wedding?", "Where is my sister getting married?"],
            ["Where will the ceremony for my sibling take place?"],
            f"My {other} got married at {venue2.replace('her ', 'their ')} last year.",
        ),
        (
            f"Heads up, I'm allergic to {allergy}, so keep that in mind.",
            allergy,
            ["What am I allergic to?", "What allergy do I have?"],
            ["Is there anything I should avoid eating or taking for health reasons?"],
            f"My {other} is allergic to {allergy2}, so we never have it at home.",
        ),
        (
            f"I've been taking {instrument} lessons with my friend {friend} every Tuesday.",
            instrument,
            ["Which instrument am I learning?", "What instrument lessons am I taking?"],
            ["What have I been practising on Tuesday evenings?"],
            f"My {other} plays the {instrument2} in a small band.",
        ),
        (
            f"I graduated with a degree in {degree} before switching careers.",
            degree,
            ["What did I get my degree in?", "What was my degree?"],
            ["What did I study back in college?"],
            f"My {other} has a degree in {degree2}.",
        ),
        (
            f"My usual order at the café is {order}.",
            order,
            ["What is my usual café order?", "What do I usually order at the café?"],
            ["What drink do I normally get when I grab a coffee?"],
            f"My {other} always orders {order2} at the café.",
        ),
    ]


def single_session_user(rng: random.Random) -> Plan:
    statement, answer, close, paraphrase, near = rng.choice(_user_facts(rng))
    question, wording = _ask(rng, close, paraphrase)
    return Plan(
        [("user", statement)], question, answer, distractors=[("user", near)], tags={"wording": wording}
    )


# -- 5. facts the assistant stated deep inside a long answer ----------------------------------------------


def _assistant_facts(rng: random.Random) -> list[tuple[str, str, list[str], list[str], str]]:
    """(statement, answer, close questions, paraphrased questions, a recommendation of the same kind)."""
    city, city2 = _pick(rng, CITIES, 2)
    street, cafe, cafe2 = rng.choice(STREETS), *_pick(rng, CAFES, 2)
    dish = rng.choice(["grilled octopus", "mushroom ramen", "plum dumplings", "smoked trout toast"])
    minutes, degrees = rng.choice([35, 40, 45, 50]), rng.choice([24, 26, 27, 28])
    km, km2 = _pick(rng, ["7.5", "9", "11.2", "13.4"], 2)
    peak, peak2 = _pick(rng, ["Mount Ardel", "Greyhorn Ridge", "Pico Sereno", "the Kestrel Col"], 2)
    day, day2 = _pick(rng, ["first Sunday", "last Thursday", "second Wednesday"], 2)
    museum, museum2 = _pick(
        rng, ["Museum of Everyday Things", "Harbour Glass Museum", "Clockmakers' Hall"], 2
    )
    return [
        (
            f"If you are ever in {city}, try {cafe}, a small place on {street} known for its {dish}.",
            cafe,
            [f"What was the name of the place you recommended in {city}?"],
            [f"Remind me, where did you say I should eat when I visit {city}?"],
            f"In {city2}, many visitors like {cafe2} for a quick lunch near the station.",
        ),
        (
            f"As a rule of thumb, let the dough proof at about {degrees} °C for {minutes} minutes.",
            f"{degrees} °C, {minutes} minutes",
            ["How long did you say to let the dough proof?"],
            ["What timing did you give me for letting bread rise before baking?"],
            f"Pizza dough, by contrast, can rest in the fridge for {rng.choice([24, 48, 72])} hours.",
        ),
        (
            f"The trail up {peak} is about {km} kilometres long from the car park.",
            km,
            [f"How long did you say the trail up {peak} is?"],
            [f"What distance did you mention for the hike to the top of {peak}?"],
            f"The loop around {peak2} is shorter, roughly {km2} kilometres.",
        ),
        (
            f"The {museum} in {city} is free to enter on the {day} of each month.",
            day,
            [f"When did you say the {museum} is free?"],
            [f"Which day can I get into that museum in {city} without paying, according to you?"],
            f"The {museum2} in {city2} offers free entry on the {day2} of the month.",
        ),
    ]


def single_session_assistant(rng: random.Random) -> Plan:
    statement, answer, close, paraphrase, near = rng.choice(_assistant_facts(rng))
    question, wording = _ask(rng, close, paraphrase)
    return Plan(
        [("assistant", statement)],
        question,
        answer,
        distractors=[("assistant", near)],
        tags={"wording": wording},
    )


GENERATORS: dict[str, Callable[[random.Random], Plan]] = {
    "preference": preference,
    "multi-session": multi_session,
    "knowledge-update": knowledge_update,
    "single-session-user": single_session_user,
    "single-session-assistant": single_session_assistant,
}
