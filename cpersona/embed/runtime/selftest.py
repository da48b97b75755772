"""The semantic self-test of an embedding model (docs/models.md#self-test).

Each manifest carries a few query → document pairs plus distractor
documents (``[self_test]`` in ``models/<name>.toml``). Passing means every
query ranks its own document first among *all* test documents by at least
the manifest's ``min_margin`` (own cosine − best other cosine), at every
dimension tested, and every vector the backend returned is unit length.

Why this catches configuration errors that the load checks cannot: a model
with the wrong pooling, a tokenizer that does not match the graph or a
Matryoshka cut the model was not trained for still loads, has the right
inputs and returns unit vectors of the right length, but its neighbours are
no longer the meaningful ones. Ranking is computed with the plain dot
product, exactly as the vector index does, so a backend that stopped
normalising is caught by the unit-norm check even where its dot-product
ranking happens to survive.

The module has two halves: pure scoring (``score``, ``SelfTestResult``) that
takes vectors, and ``run_self_test`` which gets those vectors through the
backend's own ``embed_query`` / ``embed_documents`` — the paths recall and
store use, prompts and pooling included.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cpersona.embed.runtime.base import EmbeddingBackend, EmbeddingFault, FaultKind
from cpersona.embed.runtime.pooling import truncate_and_normalise

#: A returned vector whose length differs from 1 by more than this is not normalised.
NORM_TOLERANCE = 1e-3
#: Query and document vectors of one text closer than this mean the prompts were not applied.
SAME_VECTOR_COSINE = 0.9999
_SHOWN = 60  # characters of a text quoted in evidence

from cpersona.embed.selftest_spec import (  # noqa: E402
    DEFAULT_MIN_MARGIN,
    SelfTestPair,
    SelfTestSpec,
    SelfTestSpecError,
    parse_self_test,
)

__all__ = ["DEFAULT_MIN_MARGIN", "SelfTestPair", "SelfTestSpec", "SelfTestSpecError", "parse_self_test"]


# -- pure scoring ---------------------------------------------------------------------------------


def _short(text: str) -> str:
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


@dataclass(frozen=True)
class PairOutcome:
    """How one query ranked at one dimension."""

    index: int
    pair: SelfTestPair
    dimension: int
    own: float  # dot product with its own document
    rival: float  # best dot product with any other test document
    rival_text: str

    @property
    def margin(self) -> float:
        """own − rival: positive when the query ranks its document first."""
        return self.own - self.rival

    def describe(self) -> str:
        """One line naming the pair and its cosines."""
        lang = f" [{self.pair.lang}]" if self.pair.lang else ""
        return (
            f"pair {self.index + 1}{lang} at {self.dimension}-d: query {_short(self.pair.query)!r} -> "
            f"own document cos {self.own:.3f}, best other cos {self.rival:.3f} "
            f"({_short(self.rival_text)!r}), margin {self.margin:+.3f}"
        )


@dataclass(frozen=True)
class SelfTestResult:
    """Outcome of a self-test: every pair at every tested dimension, plus structural problems."""

    model: str
    min_margin: float
    dimensions: tuple[int, ...]
    outcomes: tuple[PairOutcome, ...]
    problems: tuple[str, ...] = ()
    seconds: float = field(default=0.0, compare=False)

    @property
    def failures(self) -> list[PairOutcome]:
        """Outcomes below the margin, worst first."""
        return sorted((o for o in self.outcomes if o.margin < self.min_margin), key=lambda o: o.margin)

    @property
    def passed(self) -> bool:
        """True when nothing is wrong."""
        return not self.problems and not self.failures

    @property
    def worst(self) -> PairOutcome | None:
        """The outcome with the smallest margin."""
        return min(self.outcomes, key=lambda o: o.margin) if self.outcomes else None

    @property
    def pair_count(self) -> int:
        """Number of distinct pairs tested."""
        return len({o.index for o in self.outcomes})

    @property
    def pairs_passed(self) -> int:
        """Pairs that passed at every tested dimension."""
        failed = {o.index for o in self.failures}
        return self.pair_count - len(failed)

    def summary(self) -> str:
        """One line for people: verdict, pairs passed, dimensions, worst margin."""
        dims = ", ".join(str(d) for d in self.dimensions)
        verdict = "passed" if self.passed else "FAILED"
        worst = self.worst
        tail = (
            f"worst margin {worst.margin:+.3f} (pair {worst.index + 1}, {worst.dimension}-d)" if worst else ""
        )
        return (
            f"self-test {verdict}: {self.pairs_passed}/{self.pair_count} pairs at {dims}-d, "
            f"{tail}, required >= {self.min_margin:.3f}"
        )

    def evidence(self, limit: int = 3) -> str:
        """What failed: structural problems, then the worst pairs with their cosines."""
        parts = list(self.problems)
        failures = self.failures
        parts += [o.describe() for o in failures[:limit]]
        if len(failures) > limit:
            parts.append(f"{len(failures) - limit} more pair/dimension failures")
        return "; ".join(parts) if parts else self.summary()


def norm_problem(vectors: np.ndarray, what: str) -> str | None:
    """A message when some row of ``vectors`` is not unit length, else None."""
    norms = np.linalg.norm(np.asarray(vectors, dtype=np.float64), axis=-1)
    if norms.size and np.all(np.abs(norms - 1.0) <= NORM_TOLERANCE):
        return None
    return (
        f"{what} vectors are not L2-normalised (norms {norms.min():.3f}..{norms.max():.3f}); "
        "the index ranks by dot product, which is the cosine only for unit vectors"
    )


def rank_pairs(
    spec: SelfTestSpec, queries: np.ndarray, documents: np.ndarray, dimension: int
) -> list[PairOutcome]:
    """Rank every test document for every query by dot product (as the index does)."""
    texts = spec.documents
    scores = np.asarray(queries, dtype=np.float64) @ np.asarray(documents, dtype=np.float64).T
    outcomes = []
    for i, pair in enumerate(spec.pairs):
        row = scores[i].copy()
        own = float(row[i])
        row[i] = -np.inf
        j = int(np.argmax(row))
        outcomes.append(PairOutcome(i, pair, dimension, own, float(row[j]), texts[j]))
    return outcomes


def score(
    spec: SelfTestSpec,
    queries: np.ndarray,
    documents: np.ndarray,
    dimensions: Sequence[int],
    model: str = "",
    problems: Sequence[str] = (),
) -> SelfTestResult:
    """Score backend vectors at each of ``dimensions`` (a smaller one is a re-normalised cut)."""
    queries, documents = np.asarray(queries), np.asarray(documents)
    if queries.shape[0] != len(spec.pairs) or documents.shape[0] != len(spec.documents):
        raise ValueError("one query vector per pair and one document vector per test document expected")
    found = list(problems)
    for vectors, what in ((queries, "query"), (documents, "document")):
        problem = norm_problem(vectors, what)
        if problem:
            found.append(problem)
    full = int(queries.shape[-1])
    outcomes: list[PairOutcome] = []
    for dim in dimensions:
        if dim < full:
            # The same cut the backend applies for CPERSONA_EMBEDDING_DIM.
            q, d = truncate_and_normalise(queries, dim), truncate_and_normalise(documents, dim)
        else:
            q, d = queries, documents
        outcomes += rank_pairs(spec, q, d, min(dim, full))
    return SelfTestResult(model, spec.min_margin, tuple(dimensions), tuple(outcomes), tuple(found))


def dimensions_to_test(current: int, matryoshka_dims: Sequence[int], all_cuts: bool) -> list[int]:
    """``current`` first, then (when ``all_cuts``) every allowed Matryoshka cut below it, largest first."""
    dims = [current]
    if all_cuts:
        dims += sorted({d for d in matryoshka_dims if d < current}, reverse=True)
    return dims


# -- running it on a backend ----------------------------------------------------------------------


def spec_of(backend: EmbeddingBackend) -> SelfTestSpec | None:
    """The self-test of the backend's model (None for backends without a manifest, e.g. http)."""
    manifest = getattr(backend, "manifest", None)
    return getattr(manifest, "self_test", None)


def _role_problem(backend: EmbeddingBackend, text: str) -> str | None:
    # Different prompts must give different vectors for one text; identical ones mean a path drops them.
    manifest = getattr(backend, "manifest", None)
    query_prompt = getattr(manifest, "query_prompt", "")
    document_prompt = getattr(manifest, "document_prompt", "")
    if query_prompt == document_prompt:
        return None
    as_query = np.asarray(backend.embed_query(text), dtype=np.float64)
    as_document = np.asarray(backend.embed_documents([text])[0], dtype=np.float64)
    cosine = float(as_query @ as_document / (np.linalg.norm(as_query) * np.linalg.norm(as_document) or 1.0))
    if cosine < SAME_VECTOR_COSINE:
        return None
    return (
        f"query and document vectors of {_short(text)!r} are identical (cos {cosine:.5f}) although the "
        f"manifest declares different prompts ({query_prompt!r} / {document_prompt!r}): prompts are not applied"
    )


def run_self_test(backend: EmbeddingBackend, *, all_cuts: bool = True) -> SelfTestResult | None:
    """Run the model's self-test through the backend's own embedding paths (None without a spec).

    ``all_cuts``: also test every Matryoshka dimension the manifest allows
    below the backend's (fetch-model, ``models --check``); at load only the
    dimension in use is tested, since that is what gets stored.
    Embedding errors propagate (EmbeddingFault) as from any other call.
    """
    spec = spec_of(backend)
    if spec is None:
        return None
    started = time.perf_counter()
    queries = np.stack([np.asarray(backend.embed_query(p.query)) for p in spec.pairs])
    documents = np.asarray(backend.embed_documents(spec.documents))
    role = _role_problem(backend, spec.pairs[0].query)
    manifest = getattr(backend, "manifest", None)
    dims = dimensions_to_test(backend.dimension, getattr(manifest, "matryoshka_dims", ()), all_cuts)
    result = score(spec, queries, documents, dims, backend.model_id, [role] if role else [])
    return SelfTestResult(
        result.model,
        result.min_margin,
        result.dimensions,
        result.outcomes,
        result.problems,
        time.perf_counter() - started,
    )


def self_test_fault(result: SelfTestResult, runbook: str) -> EmbeddingFault:
    """The degradation-surface fault for a failed self-test."""
    return EmbeddingFault(
        FaultKind.SELF_TEST_FAILED,
        f"embedding model {result.model} failed its self-test: its vectors do not rank known pairs correctly, "
        "so no vectors from it are used (recall is keyword-only, stores are queued for back-fill)",
        f"{result.summary()}; {result.evidence()}",
        runbook,
    )


def load_check(backend: EmbeddingBackend) -> EmbeddingFault | None:
    """Self-test a freshly loaded backend at the dimension in use; a fault when it fails."""
    result = run_self_test(backend, all_cuts=False)
    if result is None or result.passed:
        return None
    manifest = getattr(backend, "manifest", None)
    name = getattr(manifest, "name", result.model)
    runbook = (
        f"reinstall the model (`cpersona fetch-model {name}`, which refuses a model that fails); if the files "
        f"are right, the manifest's pooling, prompts or dimension do not fit the model (models/{name}.toml); "
        "a Matryoshka cut that fails: unset CPERSONA_EMBEDDING_DIM. `cpersona models --check` re-runs the "
        "test; restart the server (or check_health fix) after the fix"
    )
    return self_test_fault(result, runbook)


@dataclass(frozen=True)
class ModelCheck:
    """One row of ``cpersona models --check``."""

    name: str
    passed: bool
    summary: str
    evidence: str = ""

    def to_json(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {"name": self.name, "passed": self.passed, "summary": self.summary, "evidence": self.evidence}


def check_installed_model(manifest: Any, path: Any, threads: int | None = None) -> ModelCheck:
    """Load the model installed at ``path`` (integrity verified) and self-test it at every allowed cut."""
    from cpersona.embed.runtime.onnx_backend import OnnxBackend

    backend = OnnxBackend(manifest, path, threads=threads, verify="quick")
    try:
        backend.load()
        result = run_self_test(backend, all_cuts=True)
    except EmbeddingFault as fault:
        return ModelCheck(manifest.name, False, f"does not load: {fault.reason}", fault.evidence)
    finally:
        backend.close()
    if result is None:
        return ModelCheck(manifest.name, False, "no self-test pairs in its manifest", "add [self_test] pairs")
    evidence = "" if result.passed else result.evidence()
    return ModelCheck(manifest.name, result.passed, f"{result.summary()} ({result.seconds:.2f} s)", evidence)
