"""Japanese paragraphs and questions for benchmarks/japanese.py, built from public Japanese documentation.

    python benchmarks/_japanese_data.py CACHE_DIR [--source NAME=GIT_DIR ...] [--paragraphs 1100]
        [--questions 300] [--seed 32] [--clause-only]

Text: the Japanese translations of the Vue.js and Vite documentation (github.com/vuejs-translations/docs-ja,
github.com/vitejs/docs-ja, pinned below; MIT / CC BY 4.0 text). Prose paragraphs only: no code blocks,
headings, tables or lists; markdown links and emphasis are reduced to their text. ``--source`` reads a
repository from a local git directory (e.g. the one the ``fetch`` tool mirrors); without it, the files are
downloaded from GitHub at the pinned commit (slow: one request per file). Nothing is committed.

Questions, JSQuAD-like, written from one sentence of a paragraph by a deterministic transformation: a
span of the sentence is the answer (a code name, a number, a katakana word or a kanji compound) and is
replaced by 何 / いくつ; a leading connective (また、これにより、…) goes; most of the time only the clause
holding the question word and the predicate's clause are kept; half the time the predicate takes the plain
form (…されるか instead of …されますか); some words are swapped for near synonyms (使用 → 利用, 作成 → 生成,
…) and -er endings lose their long mark (ブラウザー → ブラウザ) now and then. A question therefore shares
much but not all of its wording with its paragraph, and the other paragraphs of the same page (same topic)
compete with it. A paragraph gets one to four questions (from different sentences), listed one after
another as a data set lists them. Paragraphs are stored together (one corpus); questions are split by
document: pages in even positions of the sorted page list are "choose", odd "confirm".
"""

from __future__ import annotations

import argparse
import json
import random
import re
import urllib.request
from pathlib import Path
from typing import Any

from _common import git

SOURCES = {
    "vue": ("vuejs-translations/docs-ja", "c627102bfabf8bc5ecaa6eb763b965a0a5d43a5b", "src/"),
    "vite": ("vitejs/docs-ja", "3237ae23aba865919bc6b2f7e68a784ea64c51ac", ""),
}
DATA_FILE = "japanese.json"
_JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")
_CONNECTIVES = (
    "また、",
    "これにより、",
    "ただし、",
    "例えば、",
    "たとえば、",
    "さらに、",
    "なお、",
    "つまり、",
    "一方、",
    "そのため、",
)
_CODE = re.compile(r"`([^`]{2,30})`")
_KATAKANA = re.compile(r"[\u30a1-\u30ffー]{3,}")
_NUMBER = re.compile(r"[0-9０-９]+(?:\.[0-9]+)?\s?(?:つ|個|回|倍|秒|ミリ秒|%|％|バイト|KB|MB|行|文字)?")
_KANJI = re.compile(r"[\u4e00-\u9fff]{2,6}")


def _git_files(git_dir: Path, commit: str, prefix: str) -> dict[str, str]:
    names = git(git_dir, "ls-tree", "-r", "--name-only", commit).split()
    return {
        name: git(git_dir, "show", f"{commit}:{name}")
        for name in names
        if name.endswith(".md") and name.startswith(prefix)
    }


def _download_files(repo: str, commit: str, prefix: str) -> dict[str, str]:
    api = f"https://api.github.com/repos/{repo}/git/trees/{commit}?recursive=1"
    with urllib.request.urlopen(api, timeout=60) as response:  # noqa: S310 - a fixed https URL
        tree = json.loads(response.read())["tree"]
    out = {}
    for entry in tree:
        name = entry["path"]
        if name.endswith(".md") and name.startswith(prefix):
            url = f"https://raw.githubusercontent.com/{repo}/{commit}/{name}"
            with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310
                out[name] = response.read().decode()
    return out


def clean(paragraph: str, ticks: bool = False) -> str:
    """Markdown reduced to its text: links and emphasis (and, unless ``ticks``, code ticks) go; whitespace
    is one space."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", paragraph)
    text = re.sub(r"\*\*|__", "", text if ticks else text.replace("`", ""))
    return " ".join(text.split())


def paragraphs(files: dict[str, str]) -> list[tuple[str, str]]:
    """(page, paragraph) for every prose paragraph that is mostly Japanese and 80–700 characters long."""
    out = []
    for page, text in sorted(files.items()):
        text = re.sub(r"```.*?```", "", text, flags=re.S)
        text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)
        for block in re.split(r"\n\s*\n", text):
            block = block.strip()
            if not block or block[0] in "#|<-*>{!:[0123456789+" or block.startswith("::"):
                continue
            para = " ".join(block.split())
            if 80 <= len(para) <= 700 and "。" in para and len(_JAPANESE.findall(para)) / len(para) > 0.5:
                out.append((page, para))
    return out


def _answer_span(sentence: str, rng: random.Random) -> tuple[str, str] | None:
    """(span, question word) to take out of ``sentence``: a code name, katakana word, number or kanji."""
    for pattern, word in ((_CODE, "何"), (_NUMBER, "いくつ"), (_KATAKANA, "何"), (_KANJI, "何")):
        found = [m.group(0) for m in pattern.finditer(sentence)]
        # The span must leave a question behind: not the whole sentence, not its last word.
        found = [f for f in found if len(f) < len(sentence) / 2 and not sentence.rstrip("。").endswith(f)]
        if found:
            return rng.choice(found), word
    return None


#: Polite endings → plain form (only the regular ones), as a question is usually written.
_PLAIN = (
    ("されます", "される"),
    ("できます", "できる"),
    ("あります", "ある"),
    ("なります", "なる"),
    ("います", "いる"),
    ("します", "する"),
    ("ません", "ない"),
    ("でした", "だった"),
)
#: Words a question writer swaps for a near synonym (each swap taken with probability one half).
_SYNONYMS = (
    ("使用", "利用"),
    ("利用", "使用"),
    ("作成", "生成"),
    ("場合", "とき"),
    ("機能", "仕組み"),
    ("方法", "やり方"),
    ("指定", "設定"),
    ("できます", "可能である"),
    ("提供", "用意"),
    ("実行", "処理"),
    ("変更", "更新"),
    ("表示", "描画"),
    ("含まれ", "入っ"),
)
#: The -er / -or / -ary endings written with or without the long mark (サーバー / サーバ), as people do.
_LONG_VOWEL = re.compile(r"([\u30a1-\u30fa]{2,}[ザタダラリバパナャカサ])ー(?![\u30a1-\u30ff])")


def _as_question(text: str, plain: bool) -> str:
    text = text.rstrip("。 ")
    if text.endswith("か"):  # …かどうか: already a question
        return text
    endings = _PLAIN if plain else ()
    for ending, replacement in (*endings, ("です", "です"), ("ます", "ます")):
        if text.endswith(ending):
            return text[: -len(ending)] + replacement + "か"
    return text + "か"


def _reword(text: str, rng: random.Random) -> str:
    """Near-synonym swaps and the short katakana spelling (ブラウザー → ブラウザ), each now and then."""
    for word, other in _SYNONYMS:
        if word in text and rng.random() < 0.5:
            text = text.replace(word, other)
    if rng.random() < 0.5:
        text = _LONG_VOWEL.sub(r"\1", text)
    return text


def question_from(sentence: str, rng: random.Random) -> dict[str, str] | None:
    """A JSQuAD-like question from one sentence, with its answer span; None when none can be made.

    The span becomes 何 / いくつ; a leading connective goes; the clauses before the one holding the
    question word and those between it and the predicate are dropped (most of the time); the predicate takes the plain form (half the time);
    some words are swapped for near synonyms."""
    chosen = _answer_span(sentence, rng)
    if chosen is None:
        return None
    span, word = chosen
    text = sentence.replace(span, word, 1)
    for connective in _CONNECTIVES:
        if text.startswith(connective):
            text = text[len(connective) :]
    clauses = text.split("、")
    holder = next(i for i, c in enumerate(clauses) if word in c)
    # Keep the clause with the question word and the predicate's clause; the ones between go most of
    # the time, so the question is short like a person's and shares only part of the wording.
    kept = [clauses[holder]] if holder == len(clauses) - 1 else [clauses[holder], clauses[-1]]
    if len("、".join(kept)) > 12 and rng.random() < 0.8:
        text = "、".join(kept)
    question = _reword(_as_question(text, plain=rng.random() < 0.5), rng)
    return {"question": question.replace("`", ""), "answer": span.strip("`")}


def clause_only(question: str) -> str:
    """The terse form (``--clause-only``): only the first clause that holds the question word, when it
    has 8 characters or more ("v-for の 何 属性はか" from "v-for の 何 属性は、可能な場合は…か"). Such a
    question shares a few words with several paragraphs of its page, as a person's short question does."""
    clauses = question.rstrip("か").split("、")
    holder = next((c for c in clauses if "何" in c or "いくつ" in c), None)
    return holder + "か" if holder is not None and len(holder) >= 8 else question


def build(
    cache: Path,
    sources: dict[str, Path | None],
    n_paragraphs: int,
    n_questions: int,
    seed: int,
    per_paragraph: tuple[int, int] = (1, 4),
    terse: bool = False,
) -> Path:
    """Write CACHE/japanese.json: paragraphs (id, page, text) and questions (id, split, gold paragraph)."""
    rng = random.Random(seed)
    found: list[tuple[str, str]] = []
    seen: set[str] = set()
    for name, (repo, commit, prefix) in SOURCES.items():
        raw = cache / f"{name}.json"
        if raw.exists():
            files = json.loads(raw.read_text())
        else:
            git_dir = sources.get(name)
            files = _git_files(git_dir, commit, prefix) if git_dir else _download_files(repo, commit, prefix)
            raw.write_text(json.dumps(files, ensure_ascii=False))
        for page, para in paragraphs(files):
            if clean(para) not in seen:  # a paragraph repeated on two pages is kept once
                seen.add(clean(para))
                found.append((f"{name}:{page}", para))
    if len(found) > n_paragraphs:
        keep = sorted(rng.sample(range(len(found)), n_paragraphs))
        found = [found[i] for i in keep]
    pages = sorted({page for page, _ in found})
    split_of = {page: ("choose", "confirm")[i % 2] for i, page in enumerate(pages)}
    items = [{"id": f"p{i:04d}", "page": page, "text": clean(para)} for i, (page, para) in enumerate(found)]
    questions: list[dict[str, Any]] = []
    for index in rng.sample(range(len(found)), len(found)):
        if len(questions) >= n_questions:
            break
        sentences = [
            s + "。"
            for s in clean(found[index][1], ticks=True).split("。")
            # Requests to the reader (…してください) and lead-ins to a list make no question.
            if 15 <= len(s) <= 150 and not s.rstrip().endswith(("ください", ":", "：", "？"))
        ]
        rng.shuffle(sentences)
        wanted = rng.randint(*per_paragraph)
        for sentence in sentences:
            if wanted == 0 or len(questions) >= n_questions:
                break
            made = question_from(sentence, rng)
            if made and len(made["question"]) >= 10:
                wanted -= 1
                if terse:
                    made["question"] = clause_only(made["question"])
                questions.append(question_row(len(questions), items[index], split_of, made))
    data = {
        "meta": {
            "sources": {k: f"{v[0]}@{v[1]}" for k, v in SOURCES.items()},
            "seed": seed,
            "clause_only": terse,
        },
        "paragraphs": items,
        "questions": questions,
    }
    return save(cache, data)


def question_row(
    number: int, paragraph: dict[str, Any], split_of: dict[str, str], asked: dict[str, str]
) -> dict[str, Any]:
    """One question of the data file: its id, its half (its page's), its gold paragraph, ``asked``
    (question and answer)."""
    page = paragraph["page"]
    return {"id": f"q{number:03d}", "split": split_of[page], "gold": paragraph["id"], "page": page, **asked}


def save(cache: Path, data: dict[str, Any]) -> Path:
    """Write ``data`` as CACHE/japanese.json, aside then renamed: a reader never sees half a file."""
    out = cache / DATA_FILE
    partial = out.with_suffix(".partial")
    partial.write_text(json.dumps(data, ensure_ascii=False, indent=1))
    partial.replace(out)
    return out


def described(out: Path) -> str:
    """What a builder wrote: the file, its paragraphs and its questions per half."""
    data = load(out)
    splits = {s: sum(q["split"] == s for q in data["questions"]) for s in ("choose", "confirm")}
    return f"wrote {out}: {len(data['paragraphs'])} paragraphs, questions {splits}"


def load(path: Path) -> dict[str, Any]:
    """The data file (or the cache dir holding it)."""
    if path.is_dir():
        path = path / DATA_FILE
    if not path.exists():
        raise SystemExit(
            f"no data at {path}: build it first with `python benchmarks/_japanese_data.py CACHE_DIR [--source NAME=GIT_DIR]`"
        )
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("cache", type=Path, help="cache dir: source files and japanese.json go here")
    parser.add_argument(
        "--source", action="append", default=[], help=f"NAME=GIT_DIR, NAME in {', '.join(SOURCES)}"
    )
    parser.add_argument("--paragraphs", type=int, default=1100)
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--seed", type=int, default=32)
    parser.add_argument(
        "--per-paragraph",
        default="1-4",
        help="questions per gold paragraph, drawn from LOW-HIGH (adjacent in the file, as a data set lists them)",
    )
    parser.add_argument(
        "--clause-only",
        action="store_true",
        help="terse questions: only the clause holding the question word (clause_only); use its own cache dir",
    )
    args = parser.parse_args()
    low, _, high = args.per_paragraph.partition("-")
    per_paragraph = (int(low), int(high or low))
    sources: dict[str, Path | None] = {}
    for item in args.source:
        name, _, path = item.partition("=")
        if name not in SOURCES:
            parser.error(f"unknown source {name!r}")
        sources[name] = Path(path)
    args.cache.mkdir(parents=True, exist_ok=True)
    out = build(
        args.cache, sources, args.paragraphs, args.questions, args.seed, per_paragraph, args.clause_only
    )
    print(described(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
