"""LoCoMo conversations for the benchmarks: turns as memories, questions, negatives, renamed negatives.

A conversation file holds ``speaker_a`` / ``speaker_b``, ``session_<n>`` lists of turns with their
``session_<n>_date_time``, and ``qa`` (question, evidence dia_ids, category 1-5). Every turn becomes
one memory "[<session date>] <speaker>: <text>" (msg_id = dia_id, timestamp = the session date).

Negatives are questions of *another* conversation asked against this one's memories: nothing here
answers them. Renamed negatives are the same questions with that conversation's speakers renamed to
this one's (speaker_a → speaker_a, speaker_b → speaker_b): the names now match half the rows, so a
gate keyed on names alone lets them through (issue 19, point 7).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

CATEGORY_NAMES = {
    1: "1 multi-hop",
    2: "2 temporal",
    3: "3 open-domain",
    4: "4 single-hop",
    5: "5 adversarial",
}


def session_time(text: str) -> str:
    """'1:56 pm on 8 May, 2023' → ISO-8601 UTC."""
    moment = datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    return moment.isoformat()


@dataclass(frozen=True)
class Conversation:
    """One LoCoMo conversation file."""

    name: str
    data: dict[str, Any]

    @classmethod
    def load(cls, path: Path) -> Conversation:
        """Read ``path`` (a LoCoMo conversation JSON)."""
        return cls(path.stem, json.loads(path.read_text()))

    @property
    def body(self) -> dict[str, Any]:
        return self.data.get("conversation", self.data)

    @property
    def speakers(self) -> tuple[str, str]:
        return (str(self.body.get("speaker_a", "")), str(self.body.get("speaker_b", "")))

    def turns(self) -> list[tuple[str, str, str | None]]:
        """(dia_id, content, timestamp) for every turn, in order."""
        out = []
        n = 1
        body = self.body
        while f"session_{n}" in body:
            when = body.get(f"session_{n}_date_time", "")
            stamp = session_time(when) if when else None
            for turn in body[f"session_{n}"]:
                out.append((turn["dia_id"], f"[{when}] {turn['speaker']}: {turn['text']}", stamp))
            n += 1
        return out

    def session_dates(self) -> dict[int, str]:
        """Session number → its date-time as stored (ISO-8601 UTC), for sessions that carry one."""
        out = {}
        n = 1
        while f"session_{n}" in self.body:
            when = self.body.get(f"session_{n}_date_time", "")
            if when:
                out[n] = session_time(when)
            n += 1
        return out

    def questions(self) -> list[dict[str, Any]]:
        """Every question (all categories)."""
        return list(self.data.get("qa", []))

    def real(self) -> list[dict[str, Any]]:
        """Categories 1-4 with evidence: the questions recall is scored on."""
        return [q for q in self.questions() if int(q["category"]) != 5 and any(q.get("evidence", []))]

    def negatives_for(self, target: Conversation) -> list[str]:
        """This conversation's category 1-4 questions, to be asked against ``target``'s memories."""
        return [q["question"] for q in self.questions() if int(q["category"]) != 5]

    def renamed_negatives_for(self, target: Conversation) -> list[str]:
        """The same questions with this conversation's speakers renamed to ``target``'s."""
        mapping = dict(zip(self.speakers, target.speakers, strict=True))
        return [rename(q, mapping) for q in self.negatives_for(target)]


def rename(text: str, mapping: dict[str, str]) -> str:
    """Replace whole-word names (also before "'s") in one pass, so a swap A↔B stays a swap."""
    names = [n for n in mapping if n]
    if not names:
        return text
    pattern = re.compile(
        r"\b(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + r")\b"
    )
    return pattern.sub(lambda m: mapping[m.group(1)], text)


def conversation_files(data_dir: Path, names: list[str] | None) -> list[Path]:
    """The conversation files to run: all ``*.json`` in ``data_dir``, or those named (stem or file name)."""
    files = sorted(data_dir.glob("*.json"))
    if names:
        wanted = {Path(n).stem for n in names}
        files = [f for f in files if f.stem in wanted]
        missing = wanted - {f.stem for f in files}
        if missing:
            raise SystemExit(f"no such conversation(s) in {data_dir}: {', '.join(sorted(missing))}")
    if not files:
        raise SystemExit(f"no conversation files (*.json) in {data_dir}")
    return files


def paired_conversations(data_dir: Path, names: list[str] | None) -> list[tuple[Conversation, Conversation]]:
    """Each conversation to run with the one whose questions are its negatives (the next, the last
    wrapping to the first); at least two are needed."""
    datasets = [Conversation.load(p) for p in conversation_files(data_dir, names)]
    if len(datasets) < 2:
        raise SystemExit("needs two conversations or more: negatives are the next one's questions")
    return [(data, datasets[(i + 1) % len(datasets)]) for i, data in enumerate(datasets)]
