"""Which scripts a model reads, and the share of a query it can read (retrieval/language.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cpersona.embed.registry import ManifestError, load_manifest, parse_manifest
from cpersona.retrieval import fusion
from cpersona.retrieval.language import readable_share, script_of, scripts_read, unread_scripts

ENGLISH = scripts_read(["en"])


def test_the_registry_says_which_languages_each_model_reads() -> None:
    assert load_manifest("all-minilm-l6-v2").languages == ("en",)
    assert load_manifest("jina-v5-nano").languages == ("*",)
    assert scripts_read(load_manifest("jina-v5-nano").languages) is None  # every script


def test_a_manifest_with_bad_languages_is_refused() -> None:
    base = load_manifest("all-minilm-l6-v2")
    data = {
        "name": "x",
        "hub_repo": "a/b",
        "dimension": 4,
        "pooling": "mean",
        "max_tokens": 8,
        "onnx_file": base.onnx_file,
        "files": [{"path": base.onnx_file}, {"path": "tokenizer.json"}],
    }
    assert parse_manifest(dict(data)).languages == ("*",)  # unknown: read as multilingual
    for bad in ([], "en", [1], [""]):
        with pytest.raises(ManifestError, match="languages"):
            parse_manifest({**data, "languages": bad})


@pytest.mark.parametrize(
    ("query", "share"),
    [
        ("What did Caroline paint last May?", 1.0),
        ("東京タワーの高さは何メートルですか", 0.0),
        ("Привет, как дела?", 0.0),
        ("Python のインストール方法", 0.4),  # 6 Latin letters of 15
        ("2023-05-07 !!", 1.0),  # no letters: nothing to judge, full weight
        ("ＡＢＣ", 1.0),  # full-width Latin is Latin
    ],
)
def test_the_readable_share_of_a_query(query: str, share: float) -> None:
    assert readable_share(query, ENGLISH) == share


def test_a_multilingual_model_reads_everything() -> None:
    assert readable_share("東京タワーの高さ", None) == 1.0
    assert unread_scripts("東京タワーの高さ", None) == []


def test_unread_scripts_are_named_most_letters_first() -> None:
    assert unread_scripts("東京タワーの高さ", ENGLISH) == ["han", "katakana", "hiragana"]
    assert script_of("3") is None and script_of("ー") == "katakana"


@given(st.text(max_size=200))
def test_the_share_is_a_fraction_for_any_text(text: str) -> None:
    share = readable_share(text, ENGLISH)
    assert 0.0 <= share <= 1.0


def test_fusion_weighs_the_vector_channel() -> None:
    channels = {
        fusion.VECTOR: [("mem:1", 0.9), ("mem:2", 0.1)],
        fusion.FTS_MEMORIES: [("mem:2", -1.0), ("mem:1", -5.0)],
    }
    full = fusion.fuse("rsf", channels)
    assert full["mem:1"].score == full["mem:2"].score == 1.0
    half = fusion.fuse("rsf", channels, weights={fusion.VECTOR: 0.5})
    assert half["mem:1"].score == 0.5 and half["mem:2"].score == 1.0
    rrf = fusion.fuse("rrf", channels, rrf_k=60, weights={fusion.VECTOR: 0.0})
    assert rrf["mem:1"].score == pytest.approx(1 / 62) and rrf["mem:2"].score == pytest.approx(1 / 61)
