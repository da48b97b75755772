"""Japanese Wikipedia paragraphs with questions people wrote, for benchmarks/japanese.py (JaQuAD).

    python benchmarks/_jaquad_data.py CACHE_DIR --source GIT_DIR [--set dev|train] [--paragraphs 1145]
        [--questions 300] [--seed 32] [--title] [--spaced] [--per-article N]

Text: JaQuAD (github.com/SkelterLabsInc/JaQuAD, pinned below; CC BY-SA 3.0), a SQuAD-like reading
comprehension set: paragraphs of Japanese Wikipedia articles, questions and answers written by
annotators. It is not JGLUE's JSQuAD (our held-out set) but the same kind of data: encyclopedic prose,
several paragraphs per article, natural questions. ``--source`` is a local git directory of the
repository (e.g. the one the ``fetch`` tool mirrors). Nothing is committed.

Paragraphs are drawn whole articles at a time (an article's paragraphs compete with each other, as in
the data set), up to ``--paragraphs``; questions are drawn a paragraph at a time, one to four of that
paragraph's questions in the data set's order, up to ``--questions``. ``--title`` stores each paragraph
as "TITLE [SEP] TEXT" (the form in which some Japanese QA sets ship their contexts); ``--spaced`` puts a
space wherever a run of Latin letters or digits meets a Japanese character, in paragraphs and questions
alike ("1987 年 4 月", "JR 東海": the form JGLUE's JSQuAD ships, as its documentation shows);
``--per-article N`` keeps at most N paragraphs of each article, drawn at random among those with
questions, so fewer of an article's paragraphs compete with each other. Split by article:
articles in even positions of the sorted title list are "choose", odd "confirm". The output has the shape
of benchmarks/_japanese_data.py's (same ``load``).
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path
from typing import Any

from _common import git
from _japanese_data import described, question_row, save

from cpersona.retrieval.match_query import KANA_CLASS, KANJI_CLASS

REPO = "SkelterLabsInc/JaQuAD"
COMMIT = "23f5d72cc273c49b35e2d9efe0f51757aa1770bd"

_JAPANESE = KANA_CLASS + KANJI_CLASS  # the characters the product reads as Japanese (match_query)
_LATIN_THEN_JAPANESE = re.compile(rf"([A-Za-z0-9])(?=[{_JAPANESE}])")
_JAPANESE_THEN_LATIN = re.compile(rf"([{_JAPANESE}])(?=[A-Za-z0-9])")


def spaced(text: str) -> str:
    """``text`` with a space wherever a run of Latin letters or digits meets a Japanese character."""
    return _JAPANESE_THEN_LATIN.sub(r"\1 ", _LATIN_THEN_JAPANESE.sub(r"\1 ", text))


def sampled(article: dict[str, Any], most: int, rng: random.Random) -> dict[str, Any]:
    """``article`` with at most ``most`` of its paragraphs that have questions, in the article's order."""
    asked = [i for i, para in enumerate(article["paragraphs"]) if para["qas"]]
    kept = sorted(rng.sample(asked, min(most, len(asked))))
    return {**article, "paragraphs": [article["paragraphs"][i] for i in kept]}


def articles(git_dir: Path, which: str) -> list[dict[str, Any]]:
    """Every article of JaQuAD's ``which`` set (dev or train), in file order."""
    names = git(git_dir, "ls-tree", "-r", "--name-only", COMMIT, f"data/{which}/").split()
    found: list[dict[str, Any]] = []
    for name in sorted(names):
        found.extend(json.loads(git(git_dir, "show", f"{COMMIT}:{name}"))["data"])
    return found


def build(
    cache: Path,
    source: list[dict[str, Any]],
    which: str,
    n_paragraphs: int,
    n_questions: int,
    seed: int,
    title: bool,
    space: bool = False,
    per_article: int | None = None,
) -> Path:
    """Write CACHE/japanese.json from ``source``, the articles of JaQuAD's ``which`` set."""
    rng = random.Random(seed)
    form = spaced if space else str
    shuffled = list(source)
    rng.shuffle(shuffled)
    chosen: list[dict[str, Any]] = []
    count = 0
    for article in shuffled:
        if per_article is not None:
            article = sampled(article, per_article, rng)
        if count + len(article["paragraphs"]) > n_paragraphs:
            continue
        chosen.append(article)
        count += len(article["paragraphs"])
    titles = sorted({a["title"] for a in chosen})
    split_of = {t: ("choose", "confirm")[i % 2] for i, t in enumerate(titles)}
    items: list[dict[str, Any]] = []
    asked: list[tuple[int, list[dict[str, Any]]]] = []
    for article in chosen:
        for para in article["paragraphs"]:
            text = form(para["context"].strip())
            items.append(
                {
                    "id": f"p{len(items):04d}",
                    "page": article["title"],
                    "text": f"{form(article['title'])} [SEP] {text}" if title else text,
                }
            )
            asked.append((len(items) - 1, para["qas"]))
    questions: list[dict[str, Any]] = []
    for index in rng.sample(range(len(asked)), len(asked)):
        if len(questions) >= n_questions:
            break
        _, qas = asked[index]
        wanted = min(rng.randint(1, 4), len(qas), n_questions - len(questions))
        for qa in qas[:wanted]:
            written = {"question": form(qa["question"]), "answer": form(qa["answers"][0]["text"])}
            questions.append(question_row(len(questions), items[index], split_of, written))
    data = {
        "meta": {
            "sources": {"jaquad": f"{REPO}@{COMMIT}:{which}"},
            "seed": seed,
            "title": title,
            "spaced": space,
            "per_article": per_article,
        },
        "paragraphs": items,
        "questions": questions,
    }
    return save(cache, data)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("cache", type=Path, help="cache dir: japanese.json goes here")
    parser.add_argument("--source", type=Path, required=True, help="a git directory of the JaQuAD repository")
    parser.add_argument("--set", dest="which", choices=("dev", "train"), default="dev")
    parser.add_argument("--paragraphs", type=int, default=1145)
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--seed", type=int, default=32)
    parser.add_argument("--title", action="store_true", help='store paragraphs as "TITLE [SEP] TEXT"')
    parser.add_argument(
        "--spaced",
        action="store_true",
        help="a space between Latin letters or digits and Japanese characters",
    )
    parser.add_argument(
        "--per-article", type=int, help="at most this many paragraphs of each article (default: all)"
    )
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    source = articles(args.source, args.which)
    out = build(
        args.cache,
        source,
        args.which,
        args.paragraphs,
        args.questions,
        args.seed,
        args.title,
        args.spaced,
        args.per_article,
    )
    print(described(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
