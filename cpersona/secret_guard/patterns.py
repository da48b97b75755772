"""What counts as a secret: one row per kind, checked in table order (docs/secrets-and-forgetting.md).

Each row is data: a kind (the name the placeholder and the answers carry), a regular expression,
the group that holds the secret itself (0: the whole match; a URL keeps its scheme, user and host,
an assignment keeps its key name) and an optional test of the value. Earlier rows win where two
matches overlap, so the specific service formats come before the generic assignment and entropy rows.

Why our own table and not a detector library: detect-secrets 1.5.0 (the best-kept Python one) was
measured on the shared LoCoMo turns with its default plugins: 10 ms per turn and 1450 of 1451 turns
flagged (its entropy plugins judge every word of prose as a candidate string; they are built for
quoted strings in source files), and its values come out per plugin, not as spans to replace.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class SecretPattern:
    """One kind of secret: its name, its expression, the group to replace and an optional value test."""

    kind: str
    regex: re.Pattern[str]
    group: int | str = 0
    accept: Callable[[str], bool] | None = None


def entropy_bits(value: str) -> float:
    """Shannon entropy per character: random keys score ~4-6, words and identifiers ~2.5-3.5."""
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _looks_random(value: str) -> bool:
    # A key-like context plus a long run with high entropy: letters and digits mixed, or (letters
    # only) both cases and still higher entropy. Words, numbers, dates and CamelCase names fail.
    has_digit = any(ch.isdigit() for ch in value)
    has_alpha = any(ch.isalpha() for ch in value)
    bits = entropy_bits(value)
    if has_digit and has_alpha:
        return bits >= 3.5
    uppers = sum(ch.isupper() for ch in value)
    lowers = sum(ch.islower() for ch in value)
    return uppers >= 4 and lowers >= 4 and bits >= 4.0


def not_a_word(value: str) -> bool:
    # `password: hunter2` is a secret, `my secret: patience` is prose: a value of lower-case letters
    # only, or a placeholder we wrote, is left alone.
    return not value.isalpha() or not value.islower()


def _p(expression: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(expression, flags)


_KEY_WORDS = (
    r"(?:password|passwd|passphrase|pwd|secret|client[_-]?secret|api[_-]?key|apikey|access[_-]?key"
    r"|secret[_-]?key|private[_-]?key|auth[_-]?token|access[_-]?token|refresh[_-]?token|token)"
)

PATTERNS: tuple[SecretPattern, ...] = (
    SecretPattern(
        "private-key",
        _p(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|[\s\S]*\Z)"
        ),
    ),
    SecretPattern("aws-access-key", _p(r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA)[A-Z0-9]{16}\b")),
    SecretPattern(
        "aws-secret-key",
        _p(
            r"(?i)\baws_?secret_?(?:access_?)?key\b[\"']?\s*[:=]\s*[\"']?(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
        ),
        "v",
    ),
    SecretPattern(
        "github-token", _p(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{60,255})\b")
    ),
    SecretPattern("gitlab-token", _p(r"\bglpat-[A-Za-z0-9_-]{20,}")),
    SecretPattern(
        "slack-webhook", _p(r"https://hooks\.slack\.com/services/T[A-Za-z0-9]+/B[A-Za-z0-9]+/[A-Za-z0-9]+")
    ),
    SecretPattern("slack-token", _p(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    SecretPattern("stripe-key", _p(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b")),
    SecretPattern("google-api-key", _p(r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])")),
    SecretPattern("anthropic-key", _p(r"\bsk-ant-[A-Za-z0-9_-]{20,}")),
    SecretPattern("openai-key", _p(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}")),
    SecretPattern("huggingface-token", _p(r"\bhf_[A-Za-z0-9]{30,}\b")),
    SecretPattern("sendgrid-key", _p(r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])")),
    SecretPattern("twilio-key", _p(r"\bSK[0-9a-fA-F]{32}\b")),
    SecretPattern("npm-token", _p(r"\bnpm_[A-Za-z0-9]{36}\b")),
    SecretPattern("pypi-token", _p(r"\bpypi-AgE[A-Za-z0-9_-]{50,}")),
    SecretPattern("mailgun-key", _p(r"\bkey-[0-9a-f]{32}\b")),
    SecretPattern("shopify-token", _p(r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b")),
    SecretPattern("digitalocean-token", _p(r"\bdo[por]_v1_[a-f0-9]{64}\b")),
    SecretPattern("telegram-bot-token", _p(r"\b\d{8,10}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])")),
    SecretPattern(
        "discord-bot-token",
        _p(r"\b[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}(?![A-Za-z0-9_-])"),
    ),
    SecretPattern("azure-storage-key", _p(r"(?i)AccountKey=(?P<v>[A-Za-z0-9+/]{80,90}={0,2})"), "v"),
    SecretPattern("jwt", _p(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    SecretPattern("url-password", _p(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]+:(?P<v>[^\s@/]+)@[^\s]"), "v"),
    SecretPattern("basic-auth", _p(r"(?i)\bauthorization:\s*basic\s+(?P<v>[A-Za-z0-9+/]{8,}={0,2})"), "v"),
    SecretPattern("bearer-token", _p(r"(?i)\bbearer\s+(?P<v>[A-Za-z0-9._~+/-]{20,}=*)"), "v"),
    SecretPattern(
        "password-assignment",
        _p(rf"(?i)\b{_KEY_WORDS}\b[\"']?\s*(?:[:=]|=>)\s*(?P<q>[\"']?)(?P<v>[^\s\"',;]{{4,}})"),
        "v",
        not_a_word,
    ),
    SecretPattern(
        "password-phrase",
        _p(
            r"(?i)\b(?:password|passcode|passphrase)\s+(?:is|was)\s+[\"']?(?P<v>[^\s\"',;]{4,}?)[\"'.,;!?]*(?=\s|$)"
        ),
        "v",
        lambda v: not v.isalpha(),
    ),
    SecretPattern(
        "high-entropy-string",
        _p(
            rf"(?i)\b(?:{_KEY_WORDS}|key|keys|credentials?|passcode)\b[^\n]{{0,24}}?(?<![A-Za-z0-9+/_=-])(?P<v>[A-Za-z0-9+/_=-]{{20,}})"
        ),
        "v",
        _looks_random,
    ),
)

#: A JSON key whose string value is a secret whatever it looks like (unless a plain word).
KEY_NAME = _p(rf"(?i)(?:\w*[_-])?{_KEY_WORDS}")

KINDS: tuple[str, ...] = tuple(p.kind for p in PATTERNS)

#: What every text holding that kind must contain: one cheap search of all of them joined rules a
#: text out before the 29 expressions run (most memories are prose with none of these). A hint must
#: match wherever its pattern does; tests/test_secret_guard.py holds each kind's examples to it.
HINTS: dict[str, str] = {
    "private-key": "PRIVATE KEY",
    "aws-access-key": "A(?:KIA|SIA|BIA|CCA|GPA|IDA|ROA)",
    "aws-secret-key": "(?i:aws_?secret)",
    "github-token": "gh[pousr]_|github_pat_",
    "gitlab-token": "glpat-",
    "slack-webhook": "hooks\\.slack\\.com",
    "slack-token": "xox[abposr]-",
    "stripe-key": "_(?:live|test)_",
    "google-api-key": "AIza",
    "anthropic-key": "sk-ant-",
    "openai-key": "sk-",
    "huggingface-token": "hf_",
    "sendgrid-key": "SG\\.",
    "twilio-key": "SK[0-9a-fA-F]",
    "npm-token": "npm_",
    "pypi-token": "pypi-",
    "mailgun-key": "key-",
    "shopify-token": "shp(?:at|ca|pa|ss)_",
    "digitalocean-token": "do[por]_v1_",
    "telegram-bot-token": ":AA",
    "discord-bot-token": "[A-Za-z0-9_-]{23}\\.[A-Za-z0-9_-]{6}\\.",
    "azure-storage-key": "(?i:accountkey=)",
    "jwt": "eyJ",
    "url-password": "://",
    "basic-auth": "(?i:basic)",
    "bearer-token": "(?i:bearer)",
    "password-assignment": "(?i:pass|pwd|secret|key|token)",
    "password-phrase": "(?i:pass)",
    "high-entropy-string": "(?i:pass|pwd|secret|key|token|credential)",
}
PREFILTER = re.compile("|".join(f"(?:{HINTS[k]})" for k in KINDS))
