"""Retrieval lab for the LoCoMo benchmark: build each conversation's database once, then evaluate many configs.

A config is one set of retrieval decisions (which channels, keyword query processing, fusion method and
weights, per-arm depth, a quality gate). Every conversation is stored once through the real API
(``Memory.store``: real MiniLM embeddings, real FTS5 trigram index) into a cached database file; after that
the channels are read with the production primitives (``SqliteKeywordSearch.memories`` on that file, the same
dot-product cosine the vector index computes) plus the prototypes under study (a word-level FTS5 index,
score-aware fusion, the gate), so a config costs milliseconds, not an ingest.

With the default config (``rrf``, depth = limit, vector + trigram) the figures equal the API path's.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sqlite3
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from _proto_calibration import Calibration, calibrate
from _retrieval_metrics import score_question  # benchmarks/ (the CLI puts it on sys.path)

from cpersona.config import Settings
from cpersona.memory import Memory
from cpersona.retrieval.match_query import _CJK, _TOKEN, STOPWORDS, QueryTerms, _cjk_pieces, _stem
from cpersona.storage.scope import Scope
from cpersona.storage.sqlite.keyword import SqliteKeywordSearch

AGENT = "locomo"
MAX_DEPTH = 50
LIMIT = 10
VECTOR, TRIGRAM, WORDS = "vector", "trigram", "words"


# -- data ------------------------------------------------------------------------------------------------
def session_time(text: str) -> str:
    """'1:56 pm on 8 May, 2023' → ISO-8601 UTC."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC).isoformat()


def turns(conversation: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    """(dia_id, content, timestamp) for every turn, in order."""
    out = []
    n = 1
    while f"session_{n}" in conversation:
        when = conversation.get(f"session_{n}_date_time", "")
        stamp = session_time(when) if when else None
        for turn in conversation[f"session_{n}"]:
            out.append((turn["dia_id"], f"[{when}] {turn['speaker']}: {turn['text']}", stamp))
        n += 1
    return out


@dataclass
class Question:
    text: str
    evidence: list[str]
    category: int
    vector: np.ndarray | None = None


@dataclass
class Corpus:
    """One conversation's stored rows, vectors and indexes."""

    name: str
    conn: sqlite3.Connection  # the cached database (trigram FTS)
    words: sqlite3.Connection  # prototype word-level FTS5 indexes over the same rows
    ids: np.ndarray
    dia: dict[int, str]
    content: dict[int, str]
    vectors: np.ndarray
    sessions: np.ndarray
    questions: list[Question]
    df: Counter[str] = field(default_factory=Counter)
    calibration: Calibration | None = None
    centred: np.ndarray | None = None

    def cosine(self, qvec: np.ndarray) -> np.ndarray:
        return self.vectors @ qvec


def lex_tokens(text: str) -> list[str]:
    """Lower-cased word tokens, lightly stemmed (coverage and df use the same normalisation)."""
    return [_stem(t.lower()) for t in _TOKEN.findall(text)]


def _build_db(path: Path, conversation: dict[str, Any], models_dir: Path, model: str) -> None:
    tmp = path.with_suffix(".building")
    for suffix in ("", "-wal", "-shm"):
        Path(str(tmp) + suffix).unlink(missing_ok=True)
    settings = Settings(db_path=tmp, embedding_mode="onnx", models_dir=models_dir, embedding_model=model)
    with Memory(settings) as mem:
        if not mem.wait_until_ready(300):
            raise SystemExit(f"model did not load: {mem.embedding_status()}")
        for dia_id, content, stamp in turns(conversation):
            out = mem.store(AGENT, content, msg_id=dia_id, timestamp=stamp)
            if out["result"] != "stored":
                print(f"  note: {path.name} {dia_id} {out['result']}: {out.get('reason')}", file=sys.stderr)
    conn = sqlite3.connect(tmp)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.close()
    tmp.rename(path)


class Embedder:
    """Query embeddings through the real service, cached on disk per model."""

    def __init__(self, cache_dir: Path, models_dir: Path, model: str) -> None:
        self.path = cache_dir / f"queries-{model}.npz"
        self.cache: dict[str, np.ndarray] = dict(np.load(self.path)) if self.path.exists() else {}
        self.models_dir, self.model, self.cache_dir = models_dir, model, cache_dir
        self._mem: Memory | None = None
        self.dirty = False

    def __call__(self, text: str) -> np.ndarray:
        key = hashlib.sha1(text.encode()).hexdigest()
        if key not in self.cache:
            if self._mem is None:
                settings = Settings(
                    db_path=Path(tempfile.mkdtemp()) / "q.db",
                    embedding_mode="onnx",
                    models_dir=self.models_dir,
                    embedding_model=self.model,
                )
                self._mem = Memory(settings)
                self._mem.wait_until_ready(300)
            vec = self._mem.embeddings.embed_query(text)
            assert vec is not None
            self.cache[key] = np.asarray(vec, dtype=np.float32)
            self.dirty = True
        return self.cache[key]

    def close(self) -> None:
        if self.dirty:
            np.savez(self.path, **self.cache)
        if self._mem is not None:
            self._mem.close()


def load_corpus(path: Path, cache_dir: Path, models_dir: Path, model: str, embed: Embedder) -> Corpus:
    """The conversation's cached database (built on first use) with its vectors and prototype indexes."""
    data = json.loads(path.read_text())
    conversation = data.get("conversation", data)
    db = cache_dir / f"{path.stem}-{model}.db"
    if not db.exists():
        print(f"  building {db.name} (one-time ingest)...", file=sys.stderr)
        _build_db(db, conversation, models_dir, model)
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, check_same_thread=False)
    rows = conn.execute(
        "SELECT id, msg_id, content, embedding, embedding_dim FROM memories ORDER BY id"
    ).fetchall()
    dim = int(rows[0][4])
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    vectors = np.frombuffer(b"".join(r[3] for r in rows), dtype="<f4").reshape(len(rows), dim)
    sessions = np.array([int(r[1].split(":")[0][1:]) for r in rows])
    words = sqlite3.connect(":memory:", check_same_thread=False)
    words.execute(
        "CREATE VIRTUAL TABLE w_porter USING fts5(content, tokenize='porter unicode61 remove_diacritics 2')"
    )
    words.execute(
        "CREATE VIRTUAL TABLE w_plain USING fts5(content, tokenize='unicode61 remove_diacritics 2')"
    )
    for table in ("w_porter", "w_plain"):
        words.executemany(f"INSERT INTO {table}(rowid, content) VALUES (?, ?)", [(r[0], r[2]) for r in rows])
    df: Counter[str] = Counter()
    for r in rows:
        df.update(set(lex_tokens(r[2])))
    questions = []
    for qa in data["qa"]:
        evidence = [e for e in qa.get("evidence", []) if e]
        if evidence:
            questions.append(Question(qa["question"], evidence, int(qa["category"]), embed(qa["question"])))
    corpus = Corpus(
        name=path.stem,
        conn=conn,
        words=words,
        ids=ids,
        dia={int(r[0]): r[1] for r in rows},
        content={int(r[0]): r[2] for r in rows},
        vectors=np.ascontiguousarray(vectors),
        sessions=sessions,
        questions=questions,
        df=df,
    )
    corpus.calibration = calibrate(corpus.vectors, corpus.sessions)
    return corpus


# -- configs ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Config:
    """One set of retrieval decisions (each is a locomo.py flag)."""

    channels: tuple[str, ...] = (VECTOR, TRIGRAM)
    fusion: str = "rrf"  # rrf | rsf | zsf | anchored
    rrf_k: int = 60
    weights: tuple[tuple[str, float], ...] = ()  # per-channel weight (default 1.0)
    depth: int = 0  # per-channel depth; 0 = limit (today's behaviour)
    stopwords: bool = True  # trigram/words query: drop STOPWORDS
    stem: bool = True  # trigram query: light suffix stem
    words_tokenizer: str = "porter"  # porter | plain
    words_replace_trigram: bool = False  # words channel replaces trigram for queries with ≥3-char words
    gate: str = "off"  # off | topcos | rowcos | evidence
    precision: str = "balanced"
    calibration_method: str = "percentile"  # separation | percentile | zscore
    kappa: float | None = None  # lexical-coverage rescue level; None = gate.KAPPA[precision]; > 1 disables

    def weight(self, channel: str) -> float:
        return dict(self.weights).get(channel, 1.0)

    def label(self) -> str:
        parts = ["+".join(self.channels), self.fusion]
        if self.fusion == "rrf" and self.rrf_k != 60:
            parts.append(f"k{self.rrf_k}")
        if self.weights:
            parts.append("w:" + ",".join(f"{c[0]}{w:g}" for c, w in self.weights))
        if self.depth:
            parts.append(f"d{self.depth}")
        if not self.stopwords:
            parts.append("nostop")
        if not self.stem:
            parts.append("nostem")
        if WORDS in self.channels:
            parts.append(self.words_tokenizer)
        if self.words_replace_trigram:
            parts.append("replace")
        if self.gate != "off":
            parts.append(f"gate={self.gate}/{self.precision}/{self.calibration_method}")
            if self.kappa is not None:
                parts.append(f"kappa={self.kappa:g}")
        return " ".join(parts)


def _query_tokens(query: str, stopwords: bool) -> list[str]:
    tokens = [t.lower() for t in _TOKEN.findall(query)]
    if stopwords:
        tokens = [t for t in tokens if t not in STOPWORDS] or tokens
    return list(dict.fromkeys(tokens))


def trigram_terms(query: str, cfg: Config) -> QueryTerms:
    """``match_query.query_terms`` with the stop-word and stemming decisions switchable."""
    match: list[str] = []
    like: list[str] = []
    for token in _query_tokens(query, cfg.stopwords):
        pieces = _cjk_pieces(token) if _CJK.search(token) else [_stem(token) if cfg.stem else token]
        for piece in pieces:
            if len(piece) >= 3 and piece not in match:
                match.append(piece)
        like.append(token)
    return QueryTerms(tuple(match[:48]), tuple(like[:48]))


class Retriever:
    """Per (corpus, query): each channel's best-first (row id, raw score) list at MAX_DEPTH, memoised."""

    def __init__(self) -> None:
        self._memo: dict[tuple[Any, ...], list[tuple[int, float]]] = {}

    def vector(self, corpus: Corpus, q: Question) -> list[tuple[int, float]]:
        key = (corpus.name, q.text, VECTOR)
        if key not in self._memo:
            assert q.vector is not None
            scores = corpus.cosine(q.vector)
            order = np.lexsort((-corpus.ids, -scores))[:MAX_DEPTH]
            self._memo[key] = [(int(corpus.ids[i]), float(scores[i])) for i in order]
        return self._memo[key]

    def trigram(self, corpus: Corpus, q: Question, cfg: Config) -> list[tuple[int, float]]:
        key = (corpus.name, q.text, TRIGRAM, cfg.stopwords, cfg.stem)
        if key not in self._memo:
            hits = SqliteKeywordSearch(corpus.conn).memories(
                trigram_terms(q.text, cfg), Scope(AGENT), MAX_DEPTH
            )
            self._memo[key] = hits.hits
        return self._memo[key]

    def words(self, corpus: Corpus, q: Question, cfg: Config) -> list[tuple[int, float]]:
        key = (corpus.name, q.text, WORDS, cfg.stopwords, cfg.words_tokenizer)
        if key not in self._memo:
            tokens = _query_tokens(q.text, cfg.stopwords)
            hits: list[tuple[int, float]] = []
            if tokens:
                table = "w_porter" if cfg.words_tokenizer == "porter" else "w_plain"
                expression = " OR ".join('"' + t.replace('"', '""') + '"' for t in tokens)
                rows = corpus.words.execute(
                    f"SELECT rowid, bm25({table}) AS r FROM {table} WHERE {table} MATCH ? ORDER BY r, rowid DESC LIMIT ?",
                    (expression, MAX_DEPTH),
                ).fetchall()
                hits = [(int(r[0]), -float(r[1])) for r in rows]
            self._memo[key] = hits
        return self._memo[key]

    def channels(self, corpus: Corpus, q: Question, cfg: Config) -> dict[str, list[tuple[int, float]]]:
        depth = cfg.depth or LIMIT
        out: dict[str, list[tuple[int, float]]] = {}
        has_word = any(len(t) >= 3 for t in _query_tokens(q.text, cfg.stopwords))
        for name in cfg.channels:
            if name == VECTOR:
                out[name] = self.vector(corpus, q)[:depth]
            elif name == TRIGRAM:
                if cfg.words_replace_trigram and has_word and WORDS in cfg.channels:
                    continue
                out[name] = self.trigram(corpus, q, cfg)[:depth]
            elif name == WORDS:
                out[name] = self.words(corpus, q, cfg)[:depth]
        return out


# -- fusion ----------------------------------------------------------------------------------------------
def fuse(
    cfg: Config, channels: dict[str, list[tuple[int, float]]], cal: Calibration | None
) -> list[tuple[int, float]]:
    """Best-first (row id, fused score). Ties: higher score, then newer id (as the pipeline)."""
    scores: dict[int, float] = {}
    for name, hits in channels.items():
        if not hits:
            continue
        w = cfg.weight(name)
        values = np.array([s for _, s in hits], dtype=np.float64)
        if cfg.fusion == "rrf":
            contrib = [w / (cfg.rrf_k + rank) for rank in range(1, len(hits) + 1)]
        elif cfg.fusion == "rsf":
            low, high = values.min(), values.max()
            contrib = list(w * ((values - low) / (high - low) if high > low else np.ones_like(values)))
        elif cfg.fusion == "zsf":
            sd = values.std()
            contrib = list(w * ((values - values.mean()) / sd if sd > 0 else np.zeros_like(values)))
        elif cfg.fusion == "anchored":
            # Min-max with a fixed floor: cosine's floor is the corpus null mean (calibration, adapts per model),
            # bm25's floor is 0 (no match). A weak top stays weak instead of being stretched to 1.
            floor = (cal.null_mean if cal else 0.0) if name == VECTOR else 0.0
            top = values.max()
            contrib = list(
                w * np.clip((values - floor) / (top - floor), 0, None) if top > floor else 0 * values
            )
        else:
            raise ValueError(cfg.fusion)
        for (rid, _), c in zip(hits, contrib, strict=True):
            scores[rid] = scores.get(rid, 0.0) + float(c)
    return sorted(scores.items(), key=lambda kv: (-kv[1], -kv[0]))


# -- metrics ---------------------------------------------------------------------------------------------
def mean(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {}
    return {k: sum(r[k] for r in rows) / len(rows) for k in rows[0]}


@dataclass
class Lab:
    corpora: dict[str, Corpus]
    retriever: Retriever = field(default_factory=Retriever)

    def ranked(self, corpus: Corpus, q: Question, cfg: Config) -> tuple[list[int], dict[str, Any]]:
        """Top-``LIMIT`` row ids after fusion and gate, and the gate's evidence."""
        from _proto_gate import GateInput, apply_gate

        channels = self.retriever.channels(corpus, q, cfg)
        fused = fuse(cfg, channels, corpus.calibration)[:LIMIT]
        info: dict[str, Any] = {"top_fused": fused[0][1] if fused else None}
        if cfg.gate == "off":
            return [rid for rid, _ in fused], info
        assert q.vector is not None and corpus.calibration is not None
        cal = corpus.calibration
        if corpus.centred is None:
            corpus.centred = cal.centred(corpus.vectors)
        cos_all = corpus.centred @ cal.centred(q.vector)
        pos = {int(i): n for n, i in enumerate(corpus.ids)}
        rows = [
            GateInput(
                row_id=rid,
                cosine=float(cos_all[pos[rid]]),
                content=corpus.content[rid],
            )
            for rid, _ in fused
        ]
        kept, info2 = apply_gate(
            cfg.gate,
            rows,
            q.text,
            cal,
            cfg.precision,
            cfg.calibration_method,
            corpus.df,
            len(corpus.ids),
            query_cosines=cos_all,
            kappa=cfg.kappa,
        )
        info.update(info2)
        return kept, info

    def evaluate(
        self, cfg: Config, names: Sequence[str], categories: frozenset[int] = frozenset({1, 2, 3, 4})
    ) -> dict[str, float]:
        rows = []
        for name in names:
            corpus = self.corpora[name]
            for q in corpus.questions:
                if q.category not in categories:
                    continue
                ranked, _ = self.ranked(corpus, q, cfg)
                rows.append(score_question([corpus.dia[r] for r in ranked], q.evidence))
        return {**mean(rows), "n": len(rows)}

    def negatives(self, cfg: Config, names: Sequence[str]) -> dict[str, Any]:
        """Every question of conversation X (categories 1-4) asked against every other conversation Y in ``names``."""
        empty, top_cos, top_fused, n = 0, [], [], 0
        for x in names:
            for y in names:
                if x == y:
                    continue
                corpus = self.corpora[y]
                for q in self.corpora[x].questions:
                    if q.category == 5:
                        continue
                    ranked, info = self.ranked(corpus, q, cfg)
                    n += 1
                    empty += not ranked
                    assert q.vector is not None
                    top_cos.append(float(corpus.cosine(q.vector).max()))
                    if info.get("top_fused") is not None:
                        top_fused.append(info["top_fused"])
        return {
            "n": n,
            "empty": empty / n if n else float("nan"),
            "top_cosine": top_cos,
            "top_fused": top_fused,
        }


def with_(cfg: Config, **kw: Any) -> Config:
    return replace(cfg, **kw)


def ensure_models(tmp: Path, models_dir: Path | None) -> Path:
    if models_dir is not None:
        return models_dir
    from cpersona.embed.install.assemble import assemble_minilm
    from cpersona.embed.install.fetch import install_from

    stable = Path(tempfile.gettempdir()) / "locomo-lab" / "models"
    if (stable / "all-minilm-l6-v2").exists():
        return stable
    source = assemble_minilm(tmp / "minilm-src")
    install_from(source, "all-minilm-l6-v2", tmp / "models", stream=sys.stderr)
    stable.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(tmp / "models", stable, dirs_exist_ok=True)
    return stable


def quantiles(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {}
    arr = np.asarray(values)
    return {f"p{p}": round(float(np.percentile(arr, p)), 4) for p in (5, 25, 50, 75, 95)}


def re_identifier(token: str) -> bool:
    return bool(re.search(r"[0-9_./:-]", token)) or (token != token.lower() and token != token.capitalize())
