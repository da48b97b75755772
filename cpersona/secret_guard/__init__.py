"""The secret guard: find credentials in text and replace them before anything is written.

``scan`` finds them (kind and span, from the table in ``patterns.py``), ``redact`` replaces each
with ``[redacted: <kind>]``, and ``SecretGuard`` applies the CPERSONA_SECRETS policy (redact,
refuse, allow) on the write paths. Values never leave this module: findings carry kinds and
spans, answers carry kinds and counts.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

from cpersona.config import SecretsPolicy
from cpersona.errors import SecretDetected
from cpersona.result_types.common import RedactedKind
from cpersona.secret_guard.patterns import KEY_NAME, KINDS, PATTERNS, PREFILTER, not_a_word

PLACEHOLDER = "[redacted: {kind}]"
PLACEHOLDER_START = "[redacted"


@dataclass(frozen=True)
class Finding:
    """One secret in a text: its kind and where it sits (the value itself is never kept)."""

    kind: str
    start: int
    end: int


def scan(text: str) -> list[Finding]:
    """Every secret in ``text``, in order, without overlaps (earlier table rows win)."""
    if PREFILTER.search(text) is None:  # no kind's hint: nothing any pattern could match
        return []
    found: list[Finding] = []
    for pattern in PATTERNS:
        for match in pattern.regex.finditer(text):
            value = match.group(pattern.group)
            if not value or value.startswith(PLACEHOLDER_START):  # ours, from an earlier pass
                continue
            if pattern.accept is not None and not pattern.accept(value):
                continue
            start, end = match.span(pattern.group)
            if any(start < f.end and f.start < end for f in found):
                continue
            found.append(Finding(pattern.kind, start, end))
    return sorted(found, key=lambda f: f.start)


@dataclass(frozen=True)
class Redaction:
    """A text with its secrets replaced, and how many of each kind were replaced."""

    text: str
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        """How many secrets were replaced."""
        return sum(self.counts.values())

    def summary(self) -> list[RedactedKind]:
        """The answer's ``redacted`` list: ``{kind, count}`` per kind, in table order."""
        return [{"kind": k, "count": self.counts[k]} for k in KINDS if k in self.counts]


def redact(text: str) -> Redaction:
    """``text`` with every secret replaced by ``[redacted: <kind>]``."""
    findings = scan(text)
    if not findings:
        return Redaction(text)
    parts: list[str] = []
    cursor = 0
    for f in findings:
        parts.append(text[cursor : f.start])
        parts.append(PLACEHOLDER.format(kind=f.kind))
        cursor = f.end
    parts.append(text[cursor:])
    return Redaction("".join(parts), dict(Counter(f.kind for f in findings)))


def merge_counts(*redactions: Redaction) -> Redaction:
    """The counts of several redactions of one write (content plus metadata), text of the first."""
    total: Counter[str] = Counter()
    for r in redactions:
        total.update(r.counts)
    return Redaction(redactions[0].text if redactions else "", dict(total))


@dataclass(frozen=True)
class SecretGuard:
    """The CPERSONA_SECRETS policy applied to one field of a write."""

    policy: SecretsPolicy = "redact"

    def check(self, text: str, what: str) -> Redaction:
        """``text`` as it may be stored: redacted, refused (``SecretDetected``) or as given (allow)."""
        if self.policy == "allow":
            return Redaction(text)
        result = redact(text)
        if result.total and self.policy == "refuse":
            raise SecretDetected(what, result.summary())
        return result

    def check_json(self, text: str | None, what: str) -> Redaction:
        """A JSON object's text (source, metadata) with secrets in its string values replaced.

        A value under a key-like name (``password``, ``api_key``, ``token`` ...) counts as a secret
        when it is not a plain word, as ``password: value`` does in text.
        """
        if text is None or self.policy == "allow":
            return Redaction(text or "")
        found: Counter[str] = Counter()

        def walk(value: object, key: str | None) -> object:
            if isinstance(value, dict):
                return {k: walk(v, k) for k, v in value.items()}
            if isinstance(value, list):
                return [walk(v, key) for v in value]
            if not isinstance(value, str):
                return value
            keyed = key is not None and KEY_NAME.fullmatch(key) is not None
            if keyed and len(value) >= 4 and not_a_word(value) and not value.startswith(PLACEHOLDER_START):
                found["password-assignment"] += 1
                return PLACEHOLDER.format(kind="password-assignment")
            r = redact(value)
            found.update(r.counts)
            return r.text

        cleaned = walk(json.loads(text), None)
        result = Redaction(json.dumps(cleaned, ensure_ascii=False, sort_keys=True), dict(found))
        if result.total and self.policy == "refuse":
            raise SecretDetected(what, result.summary())
        return result if result.total else Redaction(text)
