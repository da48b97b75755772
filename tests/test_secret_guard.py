"""The detector (cpersona.secret_guard): one fabricated example per kind, prose it must leave alone,
placeholders, overlaps, JSON values and the three policies."""

from __future__ import annotations

import json
import re

import pytest

from cpersona.errors import SecretDetected
from cpersona.secret_guard import SecretGuard, redact, scan
from cpersona.secret_guard.patterns import KINDS

# Fabricated values in each service's published shape (random characters, nothing real), each written
# as two joined literals so that no scanner of this source file takes it for a live credential.
EXAMPLES = {
    "private-key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAxQ9+abc\nQWERTYuiop1234==\n-----END RSA PRIVATE KEY-----",
    "aws-access-key": "AKI" + "AQ7ZX4TYHGF2LMN8P",
    "aws-secret-key": "aws_secret_access_key = q7ZX4TYHGF2LMN8Pq7ZX/4TYHGF2LMN8P+abcdef",
    "github-token": "ghp" + "_q7ZX4TYHGF2LMN8Pq7ZX4TYHGF2LMN8Pabcd",
    "gitlab-token": "glp" + "at-q7ZX4TYHGF2LMN8Pq7ZX",
    "slack-webhook": "htt" + "ps://hooks.slack.com/services/T0ABCDEF1/B0ABCDEF12/q7ZX4TYHGF2LMN8Pq7ZX4TYH",
    "slack-token": "xox" + "b-12345678901-123456789012-q7ZX4TYHGF2LMN8Pq7ZX4TYH",
    "stripe-key": "sk_" + "live_q7ZX4TYHGF2LMN8Pq7ZX4TYH",
    "google-api-key": "AIz" + "aq7ZX4TYHGF2LMN8Pq7ZX4TYHGF2LMN8Pabc",
    "anthropic-key": "sk-" + "ant-api03-q7ZX4TYHGF2LMN8Pq7ZX4TYHGF2LMN8P",
    "openai-key": "sk-" + "proj-q7ZX4TYHGF2LMN8Pq7ZX4TYHGF2LMN8P",
    "huggingface-token": "hf_" + "qZXTYHGFLMNPqZXTYHGFLMNPqZXTYHGFab",
    "sendgrid-key": "SG." + "q7ZX4TYHGF2LMN8Pq7ZX4T.q7ZX4TYHGF2LMN8Pq7ZX4TYHGF2LMN8Pq7ZX4TYHGF2",
    "twilio-key": "SK0" + "123456789abcdef0123456789abcdef",
    "npm-token": "npm" + "_q7ZX4TYHGF2LMN8Pq7ZX4TYHGF2LMN8Pabcd",
    "pypi-token": "pyp" + "i-AgEIcHlwaS5vcmcq7ZX4TYHGF2LMN8Pq7ZX4TYHGF2LMN8Pq7ZX4TYHGF2LMN8P",
    "mailgun-key": "key" + "-0123456789abcdef0123456789abcdef",
    "shopify-token": "shp" + "at_0123456789abcdef0123456789abcdef",
    "digitalocean-token": "dop_v1_" + "0123456789abcdef" * 4,
    "telegram-bot-token": "123" + "456789:AAq7ZX4TYHGF2LMN8Pq7ZX4TYHGF2LMN8Pq",
    "discord-bot-token": "Mq7" + "ZX4TYHGF2LMN8Pq7ZX4TYHG.q7ZX4T.q7ZX4TYHGF2LMN8Pq7ZX4TYHGF2",
    "azure-storage-key": "AccountKey=" + "q7ZX4TYHGF2LMN8P+/" * 4 + "q7ZX4TYHGF2LMN==",
    "jwt": "eyJ" + "hbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.q7ZX4TYHGF2LMN8Pq7ZX4TYH",
    "url-password": "postgres://app:Tr0ub4dor%26@db.example.com:5432/app",
    "basic-auth": "Authorization: Basic YWRtaW46aHVudGVyMiE=",
    "bearer-token": "Authorization: Bearer q7ZX4TYHGF2LMN8Pq7ZX4TYHGF2L",
    "password-assignment": "password=Hunter22!",
    "password-phrase": "the wifi password is blue42!",
    "high-entropy-string": "the deploy key for staging is q7ZX4TYHGF2LMN8Pq7ZX4TYHGF2L",
}

PROSE = [
    "Hey Mel! Good to see you! How have you been?",
    "My secret: patience and a lot of coffee.",
    "The password is somewhere in the drawer, I think.",
    "The key to success is practice; my token of thanks is this card.",
    "I ran 10k on 2023-05-07 and booked flight BA2490 to Lisbon.",
    "Visit https://example.com/blog/2023/how-to-paint for the tutorial.",
    "Call me at +1 555 0100 or email me at sam@example.com.",
    "Use sk-learn for the model and the ghp tag for the repo.",
]


def test_every_kind_has_an_example() -> None:
    assert set(EXAMPLES) == set(KINDS)
    assert len(KINDS) >= 20


@pytest.mark.parametrize("kind", sorted(EXAMPLES))
def test_each_kind_is_found_and_replaced_inside_a_sentence(kind: str) -> None:
    text = f"Note for later: {EXAMPLES[kind]} is what the build uses."
    result = redact(text)
    assert result.counts == {kind: 1}, (kind, result)
    assert f"[redacted: {kind}]" in result.text
    assert result.text.startswith("Note for later: ") and result.text.endswith(" is what the build uses.")


def test_context_is_kept_around_the_value() -> None:
    assert redact("db at postgres://bob:s3cret!@db.example.com/app").text == (
        "db at postgres://bob:[redacted: url-password]@db.example.com/app"
    )
    assert redact("export API_KEY=Zx81kLm0qq").text == "export API_KEY=[redacted: password-assignment]"


@pytest.mark.parametrize("text", PROSE)
def test_prose_is_left_alone(text: str) -> None:
    assert scan(text) == [] and redact(text).text == text


def test_redacting_twice_changes_nothing_more() -> None:
    once = redact("keys: AKIAQ7ZX4TYHGF2LMN8P and password=Hunter22!")
    assert once.total == 2
    again = redact(once.text)
    assert again.text == once.text and again.total == 0


def test_an_unterminated_private_key_block_is_cut_to_the_end() -> None:
    result = redact("here: -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nQWERTY")
    assert result.text == "here: [redacted: private-key]"


def test_summary_lists_kinds_and_counts_never_values() -> None:
    result = redact("AKIAQ7ZX4TYHGF2LMN8P then AKIAQ7ZX4TYHGF2LMN9Q and password=Hunter22!")
    assert result.summary() == [
        {"kind": "aws-access-key", "count": 2},
        {"kind": "password-assignment", "count": 1},
    ]
    assert "AKIA" not in json.dumps(result.summary())


def test_policies() -> None:
    text = "token=Zx81kLm0qq9"
    assert SecretGuard("allow").check(text, "content").text == text
    assert SecretGuard("redact").check(text, "content").text == "token=[redacted: password-assignment]"
    with pytest.raises(SecretDetected) as refused:
        SecretGuard("refuse").check(text, "content")
    assert refused.value.code == "secret_detected"
    assert "Zx81" not in str(refused.value) and "Zx81" not in json.dumps(refused.value.details())
    assert refused.value.details()["secrets"] == [{"kind": "password-assignment", "count": 1}]


def test_json_values_under_key_like_names_count_as_secrets() -> None:
    guard = SecretGuard("redact")
    text = json.dumps(
        {"api_key": "zz81kLm0", "note": "uses AKIAQ7ZX4TYHGF2LMN8P", "colour": "blue", "pwd": "word"}
    )
    result = guard.check_json(text, "metadata")
    stored = json.loads(result.text)
    assert stored == {
        "api_key": "[redacted: password-assignment]",
        "note": "uses [redacted: aws-access-key]",
        "colour": "blue",
        "pwd": "word",  # a plain word is not taken for a secret
    }
    assert result.total == 2
    clean = json.dumps({"a": 1})
    assert guard.check_json(clean, "metadata").text == clean


def test_json_redaction_is_idempotent() -> None:
    guard = SecretGuard("redact")
    once = guard.check_json(json.dumps({"api_key": "zz81kLm0"}), "metadata")
    assert once.total == 1
    again = guard.check_json(once.text, "metadata")
    assert again.total == 0 and again.text == once.text


def test_log_records_are_redacted_message_arguments_and_traceback() -> None:
    import io
    import logging

    from cpersona.secret_guard import logs

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logs.install([handler])
    log = logging.getLogger("cpersona.test-secret-logs")
    log.addHandler(handler)
    log.propagate = False
    try:
        log.warning("recall failed for query %r", "my key AKIAQ7ZX4TYHGF2LMN8P")
        try:
            raise ValueError("bad query: password=Hunter22!")
        except ValueError:
            log.exception("tool failed")
    finally:
        log.removeHandler(handler)
    text = stream.getvalue()
    assert "AKIAQ7ZX4TYHGF2LMN8P" not in text and "Hunter22" not in text
    assert "[redacted: aws-access-key]" in text and "[redacted: password-assignment]" in text
    assert "ValueError" in text  # the traceback is kept, only the secret goes


def test_every_kind_has_a_prefilter_hint_that_its_examples_pass() -> None:
    from cpersona.secret_guard.patterns import HINTS

    assert set(HINTS) == set(KINDS)
    for kind, example in EXAMPLES.items():
        assert re.search(HINTS[kind], example), kind  # the hint never rules out a text its pattern matches
