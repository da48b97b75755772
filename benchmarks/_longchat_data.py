"""Long user–assistant chat histories for benchmarks/longchat.py: real chat turns as haystack, planted facts.

    python benchmarks/_longchat_data.py CACHE_DIR [--source GIT_DIR] [--histories 60] [--seed 32]

Haystack: the instructions and answers of AlpacaEval's 805 prompts as answered by several chat models
(github.com/tatsu-lab/alpaca_eval, ``results/<model>/model_outputs.json``, pinned below; answers run to
several thousand characters, median ~2,000). ``--source`` reads them from a local git directory of that
repository (e.g. the one the ``fetch`` tool mirrors); without it they are downloaded from GitHub at the
pinned commit. The files are cached in CACHE_DIR and never committed.

Each history: 40–60 sessions of 3–7 user/assistant exchanges (~500 turns), sessions days apart, turns a
minute or two apart. One question per history, its type cycling through ``_longchat_facts.TYPES``; its
statements are planted into user turns (prefixed to a real instruction) or, for assistant facts, into a
real answer after its first paragraph break past 1,500 characters. A user's fact is said in passing before a
real request half the time, on its own with a short remark otherwise. Near misses (the same kind of fact
about someone else, another recommendation of the same kind) are planted in other sessions. An evidence
session's other exchanges are real prompts on its fact's topic (``TOPICS``) where the haystack has them,
so the session is about its fact as a real one is. Statements of one question land in
distinct sessions in increasing order, the question is dated after the last session. Histories with an
even number form the "choose" half, odd ones "confirm". Everything is drawn from one seeded generator, so
the same arguments give the same file.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import git  # noqa: E402
from _longchat_facts import GENERATORS, TYPES, Plan  # noqa: E402

REPO = "tatsu-lab/alpaca_eval"
COMMIT = "cd543a149df89434d8a54582c0151c0b945c3d20"
#: Models whose answers make the haystack: long, varied in style.
MODELS = (
    "gpt4_1106_preview",
    "claude-3-opus-20240229",
    "Meta-Llama-3-70B-Instruct",
    "Qwen2-72B-Instruct",
    "mistral-large-2402",
    "gpt-4o-2024-05-13",
    "yi-large-preview",
    "claude-3-5-sonnet-20240620",
)
DATA_FILE = "longchat.json"
SPLITS = ("choose", "confirm")
#: What joins a fact said in passing to the request that follows it in the same user turn.
ASIDES = (
    "Anyway, unrelated question:",
    "But that's not why I'm here.",
    "Anyway.",
    "Moving on,",
    "Quick question though:",
)
#: What follows a fact said on its own.
REMARKS = (
    "Just wanted to share that.",
    "Can you help me plan the rest of my week around that?",
    "What do you think?",
    "Any advice?",
    "I'm pretty happy about it.",
)
DEEP_CHARS = 1500
#: An evidence session is about its fact's topic, as a real one is: a statement matching the pattern draws
#: the session's other exchanges from prompts holding one of the words (when the haystack has enough).
TOPICS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"podcast", ("podcast", "listen", "audio", "radio", "music")),
    (r"novel|books|reading|read ", ("book", "novel", "read", "author", "story")),
    (
        r"meal|eat out|food|Sichuan|dosa|wine|restaurant|place on",
        ("restaurant", "food", "dinner", "cuisine", "dish", "recipe"),
    ),
    (r"vacation|trips", ("travel", "trip", "vacation", "visit", "destination")),
    (r"exercise|fitness|runs|bouldering|gym", ("exercise", "workout", "fitness", "gym", "health")),
    (r"game", ("game", "play", "party")),
    (r"coffee|espresso|brew|café", ("coffee", "drink", "tea", "cafe")),
    (r"film|movie", ("movie", "film", "watch", "show")),
    (r"plant", ("plant", "garden", "flower", "grow")),
    (r"concert|gig|live last night|quartet|recital", ("music", "song", "concert", "band")),
    (r"\bran\b|race|finish line|5k|10k|marathon", ("run", "race", "marathon", "exercise")),
    (r"museum|gallery", ("museum", "art", "history", "paint")),
    (r"baked|bake|dough|proof", ("bake", "cake", "cookie", "bread", "recipe")),
    (r"commute|bus|bike", ("commute", "bus", "bike", "travel", "city")),
    (r"manager|report to", ("work", "job", "manager", "boss", "career", "team")),
    (r"live in|moved|home is", ("city", "move", "apartment", "live", "neighborhood")),
    (r"\bcar\b|drive", ("car", "drive", "vehicle")),
    (r"puppy|dog", ("dog", "pet", "puppy", "animal")),
    (r"married|wedding", ("wedding", "marri", "family", "gift")),
    (r"allergic", ("allerg", "food", "health", "diet")),
    (r"lessons|cello|banjo|clarinet|ukulele", ("music", "instrument", "guitar", "piano", "learn")),
    (r"degree|graduated", ("study", "college", "university", "career", "school")),
    (r"trail|hike", ("hike", "trail", "mountain", "outdoor", "walk")),
    # The events of _longchat_temporal.py (none of these patterns matches an older statement).
    (r"repair shop|service", ("bike", "bicycle", "repair", "cycling")),
    (r"pottery", ("pottery", "clay", "craft", "art")),
    (r"dentist|tooth", ("dentist", "tooth", "teeth", "pain")),
    (r"kitten", ("cat", "kitten", "pet")),
    (r"laptop", ("laptop", "computer", "keyboard")),
    (r"camping", ("camping", "tent", "outdoor", "hike")),
    (r"painting the kitchen|painted the kitchen", ("paint", "kitchen", "color", "home")),
    (r"job interview", ("interview", "job", "resume", "career")),
    (r"passport", ("passport", "travel", "visa")),
    (r"\bflu\b", ("flu", "fever", "sick", "cold")),
    (r"piano recital", ("piano", "music", "recital", "practice")),
)  # an assistant fact sits after this many characters of its answer


def _source_text(model: str, source: Path | None, cache: Path) -> str:
    """One model's outputs file: cached, else from the local git dir, else downloaded at COMMIT."""
    cached = cache / "alpaca_eval" / f"{model}.json"
    if cached.exists():
        return cached.read_text()
    path = f"results/{model}/model_outputs.json"
    if source is not None:
        text = git(source, "show", f"{COMMIT}:{path}")
    else:
        url = f"https://raw.githubusercontent.com/{REPO}/{COMMIT}/{path}"
        with urllib.request.urlopen(url, timeout=120) as response:  # noqa: S310 - a fixed https URL
            text = response.read().decode()
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(text)
    return text


def load_haystack(source: Path | None, cache: Path) -> list[list[tuple[str, str]]]:
    """Per prompt (805), the (instruction, answer) pairs of every model that answered it non-trivially."""
    by_prompt: dict[str, list[tuple[str, str]]] = {}
    for model in MODELS:
        for row in json.loads(_source_text(model, source, cache)):
            answer = str(row.get("output") or "").strip()
            if len(answer) >= 40:
                instruction = str(row["instruction"]).strip()
                by_prompt.setdefault(instruction, []).append((instruction, answer))
    return [pairs for _, pairs in sorted(by_prompt.items())]


def _deep_insert(answer: str, statement: str) -> str:
    """``statement`` as its own paragraph after the first paragraph break past DEEP_CHARS (else at the end)."""
    cut = answer.find("\n\n", DEEP_CHARS)
    if cut < 0:
        return f"{answer}\n\n{statement}"
    return f"{answer[:cut]}\n\n{statement}{answer[cut:]}"


def build_history(index: int, haystack: list[list[tuple[str, str]]], seed: int) -> dict[str, Any]:
    """One history with its question; deterministic in (index, seed)."""
    rng = random.Random(seed * 100_003 + index)
    qtype = TYPES[index % len(TYPES)]
    plan: Plan = GENERATORS[qtype](rng)
    n_sessions = rng.randint(40, 60)
    sizes = [rng.randint(3, 7) for _ in range(n_sessions)]
    prompts = rng.sample(range(len(haystack)), sum(sizes))
    # Evidence sessions: distinct, increasing; an update's old value early, its new value late.
    if plan.newest_only:
        chosen = [rng.randrange(2, n_sessions // 3), rng.randrange(2 * n_sessions // 3, n_sessions - 1)]
    else:
        chosen = sorted(rng.sample(range(1, n_sessions - 1), len(plan.statements)))
    planted = {s: (*fact, True) for s, fact in zip(chosen, plan.statements, strict=True)}
    others = [s for s in range(1, n_sessions - 1) if s not in planted]
    for s, near in zip(rng.sample(others, len(plan.distractors)), plan.distractors, strict=True):
        planted[s] = (*near, False)
    topical_sessions(planted, sizes, prompts, haystack, rng)
    sessions, moment, found = weave_sessions(
        f"h{index:03d}",
        index,
        haystack,
        rng,
        sizes,
        prompts,
        {s: (w, t, "q", e) for s, (w, t, e) in planted.items()},
    )
    evidence_turns, distractor_turns = found.get(("q", True), []), found.get(("q", False), [])
    question_date = moment + timedelta(days=rng.randint(1, 10))
    question = {
        "question_id": f"h{index:03d}-q",
        "question_type": qtype,
        "question": plan.question,
        "answer": plan.answer,
        "question_date": question_date.isoformat(),
        "evidence_session_ids": [f"s{s:02d}" for s in chosen],
        "evidence_turn_ids": evidence_turns,
        # A knowledge update's answer is its newest statement: the last evidence turn.
        "answer_turn_ids": evidence_turns[-1:] if plan.newest_only else evidence_turns,
        "distractor_turn_ids": distractor_turns,
        **plan.tags,
    }
    return {
        "history_id": f"h{index:03d}",
        "split": SPLITS[index % 2],
        "sessions": sessions,
        "questions": [question],
    }


def weave_sessions(
    prefix: str,
    index: int,
    haystack: list[list[tuple[str, str]]],
    rng: random.Random,
    sizes: list[int],
    prompts: list[int],
    planted: dict[int, tuple[str, str, str, bool]],
) -> tuple[list[dict[str, Any]], datetime, dict[tuple[str, bool], list[str]]]:
    """The sessions of one history: real exchanges, with each planted statement (session →
    (who, text, question key, evidence?)) said in one of them; also the last session's time and the
    turn ids of each (question key, evidence?) pair. Consumes ``rng`` in a fixed order."""
    moment = datetime(2023, 1, 2, tzinfo=UTC) + timedelta(days=rng.randrange(0, 300))
    sessions: list[dict[str, Any]] = []
    found: dict[tuple[str, bool], list[str]] = {}
    cursor = 0
    for s, size in enumerate(sizes):
        moment = moment + timedelta(days=rng.randint(1, 9), hours=rng.randint(-3, 3))
        session_id = f"s{s:02d}"
        turns: list[dict[str, Any]] = []
        fact = planted.get(s)
        fact_pair = rng.randrange(size) if fact else -1
        if fact and fact[0] == "assistant":
            # The fact needs a long answer to hide in: the session's longest one carries it.
            fact_pair = max(range(size), key=lambda p: len(rng_pair(haystack, prompts[cursor + p], index)[1]))
        at = moment
        for p in range(size):
            instruction, answer = rng_pair(haystack, prompts[cursor + p], index)
            user, assistant = instruction, answer
            if p == fact_pair and fact:
                who, statement = fact[0], fact[1]
                if who == "assistant":
                    assistant = _deep_insert(answer, statement)
                elif rng.random() < 0.5:  # said in passing, before a request about something else
                    user = f"{statement} {rng.choice(ASIDES)} {instruction}"
                else:  # said on its own, with a short remark after it
                    user = f"{statement} {rng.choice(REMARKS)}"
            for role, text in (("user", user), ("assistant", assistant)):
                turn_id = f"{prefix}-{session_id}-t{len(turns):02d}"
                turns.append({"turn_id": turn_id, "role": role, "text": text, "time": at.isoformat()})
                if p == fact_pair and fact and role == fact[0]:
                    found.setdefault((fact[2], fact[3]), []).append(turn_id)
                at = at + timedelta(seconds=rng.randint(40, 200))
        cursor += size
        sessions.append({"session_id": session_id, "date": moment.isoformat(), "turns": turns})
    return sessions, moment, found


def topical_sessions(
    planted: dict[int, tuple[str, str, bool]],
    sizes: list[int],
    prompts: list[int],
    haystack: list[list[tuple[str, str]]],
    rng: random.Random,
) -> None:
    """Give each evidence session (in place, in ``prompts``) exchanges on its fact's topic where the
    haystack has them: prompts holding one of the topic's words, not used elsewhere in the history."""
    used = set(prompts)
    for session, (_, statement, evidence) in sorted(planted.items()):
        if not evidence:
            continue
        words = {w for pattern, topic in TOPICS if re.search(pattern, statement, re.I) for w in topic}
        if not words:
            continue
        pool = [
            i
            for i, pairs in enumerate(haystack)
            if i not in used and any(w in pairs[0][0].lower() for w in words)
        ]
        first = sum(sizes[:session])
        picked = rng.sample(pool, min(len(pool), sizes[session]))
        for offset, prompt in enumerate(picked):
            used.discard(prompts[first + offset])
            prompts[first + offset] = prompt
            used.add(prompt)


def rng_pair(haystack: list[list[tuple[str, str]]], prompt: int, index: int) -> tuple[str, str]:
    """The answer of one model to ``prompt``; the model rotates with the history so answers vary."""
    answers = haystack[prompt]
    return answers[(prompt + index) % len(answers)]


def build(cache: Path, source: Path | None, histories: int, seed: int) -> Path:
    """Write CACHE/longchat.json and return its path."""
    haystack = load_haystack(source, cache)
    data = {
        "meta": {"source": f"{REPO}@{COMMIT}", "models": MODELS, "seed": seed, "histories": histories},
        "histories": [build_history(i, haystack, seed) for i in range(histories)],
    }
    out = cache / DATA_FILE
    partial = out.with_suffix(".partial")  # written aside, then renamed: a reader never sees half a file
    partial.write_text(json.dumps(data, ensure_ascii=False))
    partial.replace(out)
    return out


def load(path: Path, split: str = "all") -> list[dict[str, Any]]:
    """The histories of ``split`` (choose | confirm | all) from a data file or a cache dir holding one."""
    if path.is_dir():
        path = path / DATA_FILE
    if not path.exists():
        raise SystemExit(
            f"no data at {path}: build it first with `python benchmarks/_longchat_data.py CACHE_DIR [--source GIT_DIR]`"
        )
    histories: list[dict[str, Any]] = json.loads(path.read_text())["histories"]
    return [h for h in histories if split == "all" or h["split"] == split]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("cache", type=Path, help="cache dir: source files and longchat.json go here")
    parser.add_argument("--source", type=Path, help="local git dir of tatsu-lab/alpaca_eval (else download)")
    parser.add_argument("--histories", type=int, default=60)
    parser.add_argument("--seed", type=int, default=32)
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    out = build(args.cache, args.source, args.histories, args.seed)
    histories = load(out)
    turns = [sum(len(s["turns"]) for s in h["sessions"]) for h in histories]
    types: dict[str, int] = {}
    for h in histories:
        for q in h["questions"]:
            types[q["question_type"]] = types.get(q["question_type"], 0) + 1
    print(f"wrote {out}: {len(histories)} histories, turns {min(turns)}–{max(turns)}, questions {types}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
