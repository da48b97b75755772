"""The synthetic secrets of benchmarks/secret_redaction.py: credentials of many kinds inside ordinary sentences.

Every value is random (a seeded ``random.Random``), so no real credential is in the repository;
the shapes follow each service's published format. ``corpus(n, seed)`` returns ``Sample``s:
the sentence, the kind it carries and the secret value itself (what must not survive).
"""

from __future__ import annotations

import base64
import random
import string
from collections.abc import Callable
from dataclasses import dataclass

ALNUM = string.ascii_letters + string.digits
UPPER_NUM = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


@dataclass(frozen=True)
class Sample:
    """One sentence with one secret: its kind, the text around it and the value that must vanish."""

    kind: str
    text: str
    value: str


def _r(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _key_block(rng: random.Random) -> tuple[str, str]:
    label = rng.choice(["RSA ", "EC ", "OPENSSH ", ""])
    body = "\n".join(_r(rng, B64, 64) for _ in range(rng.randint(3, 6)))
    block = f"-----BEGIN {label}PRIVATE KEY-----\n{body}\n-----END {label}PRIVATE KEY-----"
    return block, body


def _jwt(rng: random.Random) -> str:
    head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    claims = f'{{"sub":"{rng.randint(1000, 99999)}","name":"user{rng.randint(1, 999)}"}}'
    body = base64.urlsafe_b64encode(claims.encode()).decode().rstrip("=")
    return f"{head}.{body}.{_r(rng, URLSAFE, 43)}"


def _password(rng: random.Random) -> str:
    return _r(rng, string.ascii_letters, rng.randint(5, 9)) + _r(rng, string.digits, 2) + rng.choice("!#%&*")


# kind -> (value maker, how the value is written in the sentence: the shown text and the secret part)
Maker = Callable[[random.Random], tuple[str, str]]


def _same(make: Callable[[random.Random], str]) -> Maker:
    def both(rng: random.Random) -> tuple[str, str]:
        value = make(rng)
        return value, value

    return both


def _shown(make: Callable[[random.Random], str], template: str) -> Maker:
    def both(rng: random.Random) -> tuple[str, str]:
        value = make(rng)
        return template.format(v=value), value

    return both


MAKERS: dict[str, Maker] = {
    "private-key": _key_block,
    "aws-access-key": _same(lambda r: "AKIA" + _r(r, UPPER_NUM, 16)),
    "aws-secret-key": _shown(lambda r: _r(r, B64, 40), "aws_secret_access_key = {v}"),
    "github-token": _same(lambda r: r.choice(["ghp_", "gho_", "ghs_"]) + _r(r, ALNUM, 36)),
    "gitlab-token": _same(lambda r: "glpat-" + _r(r, URLSAFE, 20)),
    "slack-token": _same(
        lambda r: f"xoxb-{_r(r, string.digits, 11)}-{_r(r, string.digits, 12)}-{_r(r, ALNUM, 24)}"
    ),
    "slack-webhook": _same(
        lambda r: (
            f"https://hooks.slack.com/services/T{_r(r, UPPER_NUM, 8)}/B{_r(r, UPPER_NUM, 10)}/{_r(r, ALNUM, 24)}"
        )
    ),
    "stripe-key": _same(lambda r: r.choice(["sk_live_", "rk_live_"]) + _r(r, ALNUM, 24)),
    "google-api-key": _same(lambda r: "AIza" + _r(r, URLSAFE, 35)),
    "openai-key": _same(lambda r: "sk-proj-" + _r(r, URLSAFE, 48)),
    "anthropic-key": _same(lambda r: "sk-ant-api03-" + _r(r, URLSAFE, 80)),
    "huggingface-token": _same(lambda r: "hf_" + _r(r, string.ascii_letters, 34)),
    "sendgrid-key": _same(lambda r: f"SG.{_r(r, URLSAFE, 22)}.{_r(r, URLSAFE, 43)}"),
    "twilio-key": _same(lambda r: "SK" + _r(r, HEX, 32)),
    "npm-token": _same(lambda r: "npm_" + _r(r, ALNUM, 36)),
    "pypi-token": _same(lambda r: "pypi-AgEIcHlwaS5vcmc" + _r(r, URLSAFE, 60)),
    "mailgun-key": _same(lambda r: "key-" + _r(r, HEX, 32)),
    "shopify-token": _same(lambda r: "shpat_" + _r(r, HEX, 32)),
    "digitalocean-token": _same(lambda r: "dop_v1_" + _r(r, HEX, 64)),
    "telegram-bot-token": _same(lambda r: f"{r.randint(100000000, 999999999)}:AA{_r(r, URLSAFE, 33)}"),
    "discord-bot-token": _same(lambda r: f"M{_r(r, ALNUM, 25)}.{_r(r, URLSAFE, 6)}.{_r(r, URLSAFE, 27)}"),
    "azure-storage-key": _shown(lambda r: _r(r, B64, 86) + "==", "AccountName=prodstore;AccountKey={v}"),
    "jwt": _same(_jwt),
    "url-password": _shown(_password, "postgres://app_user:{v}@db.internal.example:5432/app"),
    "basic-auth": _shown(
        lambda r: base64.b64encode(f"admin:{_password(r)}".encode()).decode(), "Authorization: Basic {v}"
    ),
    "bearer-token": _shown(lambda r: _r(r, ALNUM, 40), "Authorization: Bearer {v}"),
    "password-assignment": _shown(_password, "password={v}"),
    "password-phrase": _shown(_password, "the wifi password is {v}"),
    "high-entropy-string": _shown(lambda r: _r(r, ALNUM, 32), "the deploy key for staging is {v}"),
}

SENTENCES = (
    "Note for later: {s} is what the nightly build uses.",
    "Sam pasted {s} into the chat so we could finish the migration before lunch.",
    "Remember that {s} works for the staging cluster, not production.",
    "I set up the integration yesterday with {s} and it finally passed.",
    "When the dashboard breaks again, try {s} before calling the on-call person.",
    "Priya said {s} was rotated last month but the old one still works.",
    "For the demo on Friday we will use {s} in the sandbox account.",
    "The onboarding doc mentions {s}; we should move it to the vault.",
)


def corpus(n: int = 500, seed: int = 39) -> list[Sample]:
    """``n`` sentences, the kinds taken in turn (an even spread), deterministic for a seed."""
    rng = random.Random(seed)
    kinds = sorted(MAKERS)
    samples = []
    for i in range(n):
        kind = kinds[i % len(kinds)]
        shown, value = MAKERS[kind](rng)
        samples.append(Sample(kind, rng.choice(SENTENCES).format(s=shown), value))
    return samples
