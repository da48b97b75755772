"""A query in a script the active model does not read is ranked by keywords (issue 32, item 7)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from pg_cluster import BOTH_ENGINES

from cpersona.config import Settings
from cpersona.memory import Memory

pytestmark = [pytest.mark.slow, BOTH_ENGINES]

PARAGRAPHS = [
    "東京タワーは東京都港区芝公園にある総合電波塔で、高さは333メートルである。",
    "東京スカイツリーは墨田区にある電波塔で、高さは634メートルである。",
    "大阪城は大阪市中央区にある城で、豊臣秀吉が築いた。",
    "The Eiffel Tower in Paris is 330 metres tall and was finished in 1889.",
    "富士山は静岡県と山梨県にまたがる活火山で、標高は3776メートルである。",
]


def _settings(tmp_path: Path, models_dir: Path, db_url: str | None, mode: str) -> Settings:
    return Settings(
        db_path=tmp_path / f"{mode}.db",
        db_url=db_url,
        embedding_mode=mode,  # type: ignore[arg-type]
        models_dir=models_dir,
        embedding_model="all-minilm-l6-v2",
        recent_recall_penalty=1.0,
        auto_calibrate=False,
    )


def _ranking(out: dict) -> list[str]:
    return [r["content"] for r in out["results"]]


def _keyword_only(tmp_path: Path, models_dir: Path, db_url: str | None, texts: list[str], query: str) -> dict:
    """The keyword-only answer to ``query`` over ``texts`` (agent "ja"): what MiniLM must not fall below."""
    with Memory(_settings(tmp_path, models_dir, db_url, "none")) as plain:
        for text in texts:
            plain.store("ja", text)
        return plain.recall("ja", query)


def test_a_japanese_query_to_an_english_model_gets_the_keyword_only_ranking(
    tmp_path: Path, minilm_models_dir: Path, new_db_url: Callable[[], str | None]
) -> None:
    query = "東京タワーの高さは何メートルか"
    keyword_only = _keyword_only(tmp_path, minilm_models_dir, new_db_url(), PARAGRAPHS, query)
    with Memory(_settings(tmp_path, minilm_models_dir, new_db_url(), "onnx")) as mem:
        assert mem.wait_until_ready(60)
        for text in PARAGRAPHS:
            assert mem.store("ja", text)["embedded"] is True
        out = mem.recall("ja", query)
        assert out["search"]["vector"] is False
        assert out["search"]["vector_weight"] == 0.0
        assert (
            "does not read" in out["search"]["language"] and "all-minilm-l6-v2" in out["search"]["language"]
        )
        assert _ranking(out) == _ranking(keyword_only)
        assert out["results"][-1]["content"] == PARAGRAPHS[0]
        assert all(r["match_reason"]["vector_weight"] == 0.0 for r in out["results"])
        assert all("cosine" not in r["match_reason"] for r in out["results"])
        # An English question keeps the vector channel at full weight and says nothing about language.
        english = mem.recall("ja", "How tall is the tower in Paris?")
        assert english["search"]["vector"] is True
        assert "vector_weight" not in english["search"] and "language" not in english["search"]
        assert english["results"][-1]["content"] == PARAGRAPHS[3]
        # A mixed query weighs the vector channel by its readable share.
        mixed = mem.recall("ja", "Eiffel Tower の高さ")
        assert mixed["search"]["vector"] is True
        assert 0.0 < mixed["search"]["vector_weight"] < 1.0


VUE_PARAGRAPHS = [
    "v-for の key 属性は、可能な場合は必ず指定することが推奨されます。",
    "v-for のスコープ内では、テンプレート内の式から親スコープのすべてのプロパティにアクセスできます。",
    "ネストされた v-for でも、スコープの挙動はネストされた関数と同様です。",
    "v-if と v-for を同じ要素に使うことは推奨されません。",
]
ENGLISH_ROWS = [
    "The key attribute of v-for should be given whenever possible.",
    "Inside a v-for scope, template expressions can reach every property of the parent scope.",
    "Using v-if and v-for on the same element is not recommended.",
]


def test_a_mixed_query_over_rows_the_model_does_not_read_gets_the_keyword_only_ranking(
    tmp_path: Path, minilm_models_dir: Path, new_db_url: Callable[[], str | None]
) -> None:
    query = "v-for の 何 属性はか"  # 4 Latin letters, 6 Japanese: the query alone would weigh 0.4
    keyword_only = _keyword_only(tmp_path, minilm_models_dir, new_db_url(), VUE_PARAGRAPHS, query)
    with Memory(_settings(tmp_path, minilm_models_dir, new_db_url(), "onnx")) as mem:
        assert mem.wait_until_ready(60)
        for text in VUE_PARAGRAPHS:
            mem.store("ja", text)
        for text in ENGLISH_ROWS:
            mem.store("en", text)
        out = mem.recall("ja", query)
        assert out["search"]["vector"] is True
        weight = out["search"]["vector_weight"]
        assert 0.0 <= weight < 0.4 * 0.5  # the candidates are read less still
        assert (
            "best candidates" in out["search"]["language"]
            and f"weighs {weight:g}" in out["search"]["language"]
        )
        assert all(r["match_reason"]["vector_weight"] == weight for r in out["results"])
        assert _ranking(out) == _ranking(keyword_only)
        assert out["results"][-1]["content"] == VUE_PARAGRAPHS[0]
        # Over rows the model reads, the same query keeps its own share: the Latin part means something.
        english = mem.recall("en", query)
        assert english["search"]["vector_weight"] == 0.4
        assert "best candidates" not in english["search"]["language"]


CAVENDISH = [
    "ヘンリー・キャヴェンディッシュの父親は多くの財産を所有していたが、ヘンリーに与える生活費は年間500ポンドに過ぎなかった。",
    "ヘンリー・キャヴェンディッシュはイギリスの化学者である。貴族の家に生まれ、ケンブリッジ大学で学んだ。",
    "ヘンリー・キャヴェンディッシュは1766年の論文で水素の発生を発表した。",
    "東京スカイツリーは墨田区にある電波塔で、高さは634メートルである。",
]


def test_a_japanese_question_finds_the_row_that_shares_its_two_character_word(
    tmp_path: Path, minilm_models_dir: Path, new_db_url: Callable[[], str | None]
) -> None:
    # "大学" is followed by "は" in the question and by "で" in the answer: no trigram of the word is
    # shared, and by trigrams alone the 1766 paper ranks first (retrieval/pair_rescore.py).
    out = _keyword_only(
        tmp_path, minilm_models_dir, new_db_url(), CAVENDISH, "キャヴェンディッシュが通った大学はどこか"
    )
    assert out["search"]["keyword_channels"]["fts_memories"] == "fts"
    assert out["results"][-1]["content"] == CAVENDISH[1]
    assert CAVENDISH[3] not in _ranking(out)


def test_a_superseded_row_stays_out_of_a_japanese_questions_ranking(
    tmp_path: Path, minilm_models_dir: Path, new_db_url: Callable[[], str | None]
) -> None:
    # The pair ranking reads the trigram list's visible rows only: a memory replaced since is not in it.
    with Memory(_settings(tmp_path, minilm_models_dir, new_db_url(), "none")) as mem:
        ids = [mem.store("ja", text)["id"] for text in CAVENDISH]
        newer = (
            "ヘンリー・キャヴェンディッシュはイギリスの化学者で、ケンブリッジ大学のピーターハウスで学んだ。"
        )
        mem.store("ja", newer, supersedes=[f"mem:{ids[1]}"])
        out = mem.recall("ja", "キャヴェンディッシュが通った大学はどこか")
        assert out["results"][-1]["content"] == newer
        assert CAVENDISH[1] not in _ranking(out)
