"""The one bearer parser and token comparison (cpersona.http.tokens), used by both front doors."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cpersona.core.limits import MIN_TOKEN_CHARS
from cpersona.http.tokens import bearer_token, token_bytes, tokens_match, weak_token


def scope(*headers: tuple[bytes, bytes]) -> dict[str, object]:
    return {"type": "http", "headers": list(headers)}


def test_the_scheme_is_case_insensitive_and_spaces_around_are_ignored() -> None:
    for scheme in (b"Bearer", b"bearer", b"BEARER", b"bEaReR"):
        assert bearer_token(scope((b"authorization", scheme + b"  tok-123  "))) == "tok-123"
    assert bearer_token(scope((b"Authorization", b"  Bearer abc"))) == "abc"


def test_no_header_another_scheme_or_no_token_read_as_none() -> None:
    assert bearer_token(scope()) is None
    assert bearer_token({"type": "http"}) is None
    assert bearer_token(scope((b"authorization", b"Basic dXNlcjpwYXNz"))) is None
    assert bearer_token(scope((b"authorization", b"Bearer"))) is None
    assert bearer_token(scope((b"authorization", b"Bearer    "))) is None
    assert bearer_token(scope((b"authorization", b"Bearertoken"))) is None


def test_the_first_authorization_header_decides() -> None:
    two = scope((b"authorization", b"Basic x"), (b"authorization", b"Bearer later"))
    assert bearer_token(two) is None
    assert bearer_token(scope((b"x-other", b"Bearer no"), (b"authorization", b"Bearer yes"))) == "yes"


@given(st.binary(min_size=1, max_size=64).filter(lambda b: b.strip() == b and b" " not in b))
def test_what_was_sent_comes_back_byte_for_byte(raw: bytes) -> None:
    token = bearer_token(scope((b"authorization", b"Bearer " + raw)))
    assert token is not None and token_bytes(token) == raw


def test_utf8_tokens_read_as_text_so_acl_hashes_and_the_single_token_agree() -> None:
    owl = "ünïcødé-🦉-token"
    assert bearer_token(scope((b"authorization", b"Bearer " + owl.encode()))) == owl
    assert tokens_match(owl, owl)


@given(st.text(max_size=40), st.text(max_size=40))
def test_tokens_match_is_equality_and_never_raises(a: str, b: str) -> None:
    assert tokens_match(a, b) is (a == b)
    assert tokens_match(None, b) is False


def test_the_minimum_length_comes_from_one_constant() -> None:
    assert weak_token(None) is None and weak_token("x" * MIN_TOKEN_CHARS) is None
    reason = weak_token("x" * (MIN_TOKEN_CHARS - 1))
    assert reason is not None and f"at least {MIN_TOKEN_CHARS}" in reason and "CPERSONA_AUTH_TOKEN" in reason
