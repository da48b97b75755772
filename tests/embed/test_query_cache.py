"""Recent query vectors kept (embed/runtime/query_cache.py): a query asked again is answered with the
vector the model computes now, bit for bit, and never with one from before a model or kernel change."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from cpersona.config import Settings
from cpersona.embed.registry import load_manifest
from cpersona.embed.runtime.onnx_backend import OnnxBackend
from cpersona.embed.runtime.query_cache import QueryCache

MINILM = "all-minilm-l6-v2"
QUESTION = "What did Caroline research last week?"


def test_the_least_recently_used_text_leaves_first_and_vectors_are_copies() -> None:
    cache = QueryCache(2)
    for text in ("a", "b"):
        cache.put(text, np.full(3, ord(text), dtype=np.float32), cache.get(text)[1])
    got, _ = cache.get("a")  # "a" is now the most recent
    assert got is not None
    got[:] = 0  # the caller's copy
    cache.put("c", np.ones(3, dtype=np.float32), cache.get("c")[1])
    assert cache.get("b")[0] is None  # "b" was the least recent
    again = cache.get("a")[0]
    assert again is not None and list(again) == [97.0, 97.0, 97.0]
    assert len(cache) == 2


def test_a_vector_computed_before_a_clear_is_not_kept_after_it() -> None:
    cache = QueryCache(4)
    _, generation = cache.get("q")
    cache.clear()  # the model or its kernel changed while "q" was being embedded
    cache.put("q", np.ones(3, dtype=np.float32), generation)
    assert cache.get("q")[0] is None


@given(st.lists(st.text(max_size=8), max_size=40), st.integers(0, 5))
def test_the_cache_never_holds_more_than_its_size(texts: list[str], size: int) -> None:
    cache = QueryCache(size)
    for text in texts:
        vector, generation = cache.get(text)
        if vector is None:
            cache.put(text, np.zeros(2, dtype=np.float32), generation)
    assert len(cache) <= size
    if size == 0:
        assert cache.hits == 0


def test_a_repeated_query_is_the_vector_the_model_computes_now(minilm_models_dir: Path) -> None:
    backend = OnnxBackend(load_manifest(MINILM), minilm_models_dir / MINILM, query_kernel="int8")
    backend.load()
    first = backend.embed_query(QUESTION)  # before the kernel's check: the float32 graph
    assert len(backend.query_cache) == 1
    choice = backend.choose_query_kernel()  # the int8 copy agrees: queries switch to it
    assert choice.int8
    after = backend.embed_query(QUESTION)
    computed = backend.embed([QUESTION], "query")[0]  # past the cache
    np.testing.assert_array_equal(after, computed)  # the cached answer is today's vector, bit for bit
    assert not np.array_equal(after, first)  # not the float32 vector cached before the switch
    hits = backend.query_cache.hits
    np.testing.assert_array_equal(backend.embed_query(QUESTION), computed)
    assert backend.query_cache.hits == hits + 1
    backend.close()
    assert len(backend.query_cache) == 0


def test_the_setting_sizes_the_cache_and_zero_turns_it_off(tmp_path: Path, minilm_models_dir: Path) -> None:
    settings = Settings(db_path=tmp_path / "m.db", models_dir=minilm_models_dir, embedding_model=MINILM)
    manifest = load_manifest(MINILM)
    assert OnnxBackend.from_settings(manifest, settings).query_cache.size == 256
    off = OnnxBackend.from_settings(manifest, settings.with_overrides(embedding_cache_size=0))
    off.load()
    off.embed_query(QUESTION)
    off.embed_query(QUESTION)
    assert off.query_cache.hits == 0 and len(off.query_cache) == 0
    off.close()


def test_a_vector_with_a_lifetime_is_computed_again_once_it_has_expired() -> None:
    now = [100.0]
    cache = QueryCache(4, ttl=300.0, clock=lambda: now[0])
    cache.put("q", np.ones(3, dtype=np.float32), cache.get("q")[1])
    now[0] += 299.0
    assert cache.get("q")[0] is not None
    now[0] += 1.0  # 300 s after it was computed, however often it was asked in between
    assert cache.get("q")[0] is None
    assert len(cache) == 0  # the expired vector is gone, not merely skipped
    cache.put("q", np.zeros(3, dtype=np.float32), cache.get("q")[1])
    again = cache.get("q")[0]
    assert again is not None and not again.any()  # the new one is answered
