"""The default backend: an ONNX Runtime session and a ``tokenizers`` tokenizer, in process.

``load()`` checks, in order: configuration (Matryoshka dimension), the
runtime imports, the model files, their integrity against install.json, the
tokenizer, the ONNX session, the graph's inputs and outputs, and finally
embeds a probe sentence to learn the real output dimension. Each failure is an
``EmbeddingFault`` with evidence and the command that fixes it.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from cpersona.config import DEFAULT_QUERY_CACHE_SIZE
from cpersona.embed.integrity import read_record, verify_against_record, write_record
from cpersona.embed.model_hint import fetch_command, model_hint
from cpersona.embed.registry import SUPPORTED_INPUTS, ModelManifest
from cpersona.embed.runtime import int8_copies, int8_outliers
from cpersona.embed.runtime import query_kernel as kernels
from cpersona.embed.runtime.base import EmbeddingBackend, EmbeddingFault, FaultKind
from cpersona.embed.runtime.batching import BatchPlan, plan_batches
from cpersona.embed.runtime.heap import release_free_memory
from cpersona.embed.runtime.pooling import pool, truncate_and_normalise
from cpersona.embed.runtime.query_cache import QueryCache
from cpersona.embed.runtime.query_kernel import KernelChoice

if TYPE_CHECKING:
    from cpersona.config import Settings

log = logging.getLogger(__name__)

VERIFY_MODES = ("quick", "full", "off")
_PIP_RUNBOOK = "pip install 'onnxruntime>=1.18' 'tokenizers>=0.19' (or reinstall cpersona-embedded)"
_PROBE_TEXT = "cpersona dimension probe"
# ONNX element types the backend can produce for integer inputs.
_INT_TYPES = {"tensor(int64)": np.int64, "tensor(int32)": np.int32}


#: How long after the first query the query-kernel check starts (query_kernel.py).
KERNEL_CHECK_DELAY_SECONDS = 2.0
#: How often the check's wait looks whether the program is ending (``OnnxBackend._check_stopped``).
_EXIT_POLL_SECONDS = 0.1


def default_threads() -> int:
    """Default intra-op thread count: min(4, cores), because more threads rarely pay off for small batches."""
    return max(1, min(4, os.cpu_count() or 1))


def fetch_runbook(name: str, models_dir: Path) -> str:
    """Runbook text for a damaged model: reinstall it (a missing one gets ``model_hint`` instead)."""
    return (
        f"run `{fetch_command(name, models_dir)}`; offline, add `--from PATH` "
        "(a directory or .tar.gz/.zip holding the model files)"
    )


class OnnxBackend(EmbeddingBackend):
    """Embeds with an ONNX model described by a manifest, installed in ``model_dir``."""

    mode = "onnx"

    def __init__(
        self,
        manifest: ModelManifest,
        model_dir: str | Path,
        *,
        max_tokens: int | None = None,
        embedding_dim: int | None = None,
        threads: int | None = None,
        batch_size: int = 16,
        verify: str = "quick",
        query_kernel: str = "auto",
        query_cache_size: int = DEFAULT_QUERY_CACHE_SIZE,
    ) -> None:
        """Record the configuration only; all I/O happens in ``load()``.

        ``verify``: "quick" (sizes always, sha256 when mtime changed), "full"
        (always re-hash) or "off" (used by fetch-model on a staging copy).
        ``query_kernel``: "auto" (check the int8 copy for queries after each load: query_kernel.py),
        "exact", or "int8" (the int8 copy whenever it agrees, untimed: tests exercise it on any machine).
        ``query_cache_size``: recent query texts whose vectors are kept (query_cache.py; 0: none).
        """
        if verify not in VERIFY_MODES:
            raise ValueError(f"verify must be one of {VERIFY_MODES}")
        self.manifest = manifest
        self.model_path = Path(model_dir)
        self.max_tokens = max_tokens or manifest.max_tokens
        self.embedding_dim = embedding_dim
        self.threads = threads or default_threads()
        self.batch_size = max(1, int(batch_size))
        self.batch_plan: BatchPlan = plan_batches  # benchmarks/embed_batching.py compares another
        self.verify = verify
        self._load_lock = threading.Lock()
        # The Rust tokenizer is shared; a lock keeps concurrent callers from racing on it.
        self._tok_lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._input_plan: list[tuple[str, Any]] = []
        self._pad_id = 0
        self._model_dim = manifest.dimension
        self.query_kernel_mode = query_kernel
        self._kernel_lock = threading.Lock()
        self._query_session: Any = None  # the int8 copy, once its check passed
        self._kernel: KernelChoice = kernels.exact(
            "CPERSONA_EMBED_QUERY_KERNEL=exact" if query_kernel == "exact" else kernels.NOT_CHECKED
        )
        self._kernel_for: Any = None  # the session the choice was made against
        self._kernel_pending = False
        self._closing = threading.Event()
        # Cleared whenever the session or the query kernel changes: a hit is what a query computes now.
        self.query_cache = QueryCache(query_cache_size)

    @classmethod
    def from_settings(cls, manifest: ModelManifest, settings: Settings, verify: str = "quick") -> OnnxBackend:
        """Build from Settings: models_dir/<name>, max tokens, Matryoshka dim, threads, batch size."""
        return cls(
            manifest,
            Path(settings.models_dir).expanduser() / manifest.name,
            max_tokens=settings.embed_max_tokens,
            embedding_dim=settings.embedding_dim,
            threads=settings.embed_threads,
            batch_size=settings.embed_batch_size,
            verify=verify,
            query_kernel=settings.embed_query_kernel,
            query_cache_size=settings.embedding_cache_size,
        )

    # -- identity ---------------------------------------------------------------------------

    @property
    def truncated(self) -> bool:
        """True when vectors are cut to a Matryoshka dimension below the model's."""
        return self.embedding_dim is not None and self.embedding_dim < self._model_dim

    @property
    def window_tokens(self) -> int | None:
        """The token cap per text (``CPERSONA_EMBED_MAX_TOKENS`` or the manifest's)."""
        return int(self.max_tokens)

    @property
    def model_id(self) -> str:
        """The manifest name, with ``@<dim>`` when truncated so different cuts never mix."""
        if self.truncated:
            return f"{self.manifest.name}@{self.embedding_dim}"
        return self.manifest.name

    @property
    def dimension(self) -> int:
        """Length of returned vectors."""
        return self.embedding_dim if self.truncated else self._model_dim  # type: ignore[return-value]

    @property
    def input_names(self) -> list[str]:
        """Names of the inputs the loaded ONNX graph declares (empty before ``load()``)."""
        return [name for name, _ in self._input_plan]

    @property
    def loaded(self) -> bool:
        """Whether ``load()`` has succeeded."""
        return self._session is not None

    def _fault(self, kind: str, reason: str, evidence: str, runbook: str | None = None) -> EmbeddingFault:
        return EmbeddingFault(
            kind, reason, evidence, runbook or fetch_runbook(self.manifest.name, self.model_path.parent)
        )

    # -- load ------------------------------------------------------------------------------

    def load(self) -> None:
        """Open and verify the model; raise EmbeddingFault describing the first problem found."""
        with self._load_lock:
            if self._session is not None:
                return
            self._check_config()
            ort, tokenizers = self._import_runtime()
            self._check_files()
            if self.verify != "off":
                self._check_integrity()
            tokenizer = self._open_tokenizer(tokenizers)
            session = self._open_session(ort)
            self._tokenizer, self._input_plan = tokenizer, self._plan_io(session)
            self._session = session
            self.query_cache.clear()
            try:
                # A real embed proves the graph runs and yields the manifest's dimension.
                self._run([_PROBE_TEXT], "")
            except EmbeddingFault:
                self._session = None
                raise
        self._closing.clear()
        # The check starts with the first query after this load (a process that never recalls never
        # pays for it): _start_kernel_check.
        self._kernel_pending = self.query_kernel_mode != "exact"

    # -- the query kernel (query_kernel.py) -------------------------------------------------

    def _start_kernel_check(self) -> None:
        """Run ``choose_query_kernel`` in the background, once per load. Meanwhile queries use the
        float32 graph. Not a daemon thread: one stopped inside ONNX Runtime at interpreter exit aborts
        the process, so exit waits for it; close(), or the end of the main thread, makes it end at its
        next step (``_check_stopped``)."""
        with self._kernel_lock:
            if not self._kernel_pending:
                return
            self._kernel_pending = False
        # daemon=False explicitly: a thread started from a daemon thread (a back-fill) would inherit daemon.
        threading.Thread(target=self._check_later, name="cpersona-query-kernel", daemon=False).start()

    def _check_later(self) -> None:
        # A one-shot command (`cpersona recall`) closes the model within this wait: it never pays for
        # a check whose answer it would not use, and its exit does not wait for one.
        for _ in range(round(KERNEL_CHECK_DELAY_SECONDS / _EXIT_POLL_SECONDS)):
            if self._closing.wait(_EXIT_POLL_SECONDS) or self._check_stopped():
                return
        self.choose_query_kernel()

    def _check_stopped(self) -> bool:
        """Whether a running kernel check should end with the float32 graph: the model is closing, or the
        program is ending. Python joins non-daemon threads such as the check before it runs ``atexit``
        (where an unclosed model would be closed), but marks the main thread stopped first: without
        this, a program that ends without ``close()`` waited for the whole check (up to ~4 s)."""
        return self._closing.is_set() or not threading.main_thread().is_alive()

    @property
    def query_kernel(self) -> KernelChoice:
        """The kernel recall queries use now, and why."""
        return self._kernel

    def query_kernel_status(self) -> dict[str, Any]:
        """``stats.embedding.query_kernel``."""
        return dict(self._kernel.as_dict())

    def choose_query_kernel(self) -> KernelChoice:
        """Check the int8 copy of the loaded graph against it, once per load, and use it for queries
        if it passes (``query_kernel.check``). Safe to call from any thread; returns the choice."""
        with self._kernel_lock:
            session = self._session
            if self.query_kernel_mode == "exact" or session is None or self._kernel_for is session:
                return self._kernel
            choice, candidate = self._check_int8_copy(session)
            if self._session is session:  # not closed or reloaded meanwhile
                self._query_session = candidate if choice.int8 else None
                self.query_cache.clear()
                self._kernel, self._kernel_for = choice, session
                log.info("recall queries: %s kernel (%s)", choice.kernel, choice.reason)
            return choice

    def _check_int8_copy(self, session: Any) -> tuple[KernelChoice, Any]:
        """``int8_copies.choose`` on this model: the first int8 copy that passes the check, and the choice."""
        return int8_copies.choose(self.int8_copy_maker(), session)

    def int8_copy_maker(self) -> int8_copies.CopyMaker:
        """What ``int8_copies`` needs to build and check this loaded model's int8 query copies."""
        tokenizer, prompt = self._tokenizer, self._prompt("query")

        def calibration_feeds() -> list[dict[str, np.ndarray]]:
            texts = int8_outliers.CALIBRATION_TEXTS if tokenizer is not None else ()
            return [self._feeds(self._encode(tokenizer, [text], prompt))[0] for text in texts]

        return int8_copies.CopyMaker(
            path=str(self.model_path / self.manifest.onnx_file),
            session_of=lambda model: self._query_copy(self._import_runtime()[0], model),
            embedder=lambda copy: self._embedder(prompt, copy),
            calibration_feeds=calibration_feeds,
            stop=self._check_stopped,
            timed=self.query_kernel_mode == "auto",
            kinds=int8_outliers.kinds_for(int8_outliers.cpu_flags()),
        )

    def _embedder(self, prompt: str, session: Any) -> Callable[[str], np.ndarray]:
        def embed(text: str) -> np.ndarray:
            return self._run([text], prompt, session)[0]

        return embed

    def _query_copy(self, ort: Any, model: bytes) -> Any:
        # One thread: a query is one short text, and handing its small int8 products to a second
        # thread costs more than it saves (docs/decisions.md, "The query kernel").
        return ort.InferenceSession(
            model, sess_options=self._session_options(ort, 1), providers=["CPUExecutionProvider"]
        )

    def _check_config(self) -> None:
        dim = self.embedding_dim
        if dim is None:
            return
        full = self.manifest.dimension
        runbook = "unset CPERSONA_EMBEDDING_DIM or set it to one of: " + (
            ", ".join(str(d) for d in self.manifest.matryoshka_dims) or str(full)
        )
        if dim > full:
            raise self._fault(
                FaultKind.MISCONFIGURED,
                "embedding dimension larger than the model's",
                f"CPERSONA_EMBEDDING_DIM={dim} > {self.manifest.name} dimension {full}",
                runbook,
            )
        # A model not trained for Matryoshka loses quality when cut, so only listed cuts are allowed.
        if dim != full and dim not in self.manifest.matryoshka_dims:
            raise self._fault(
                FaultKind.MISCONFIGURED,
                "embedding dimension not supported by the model",
                f"CPERSONA_EMBEDDING_DIM={dim}; {self.manifest.name} supports "
                f"{list(self.manifest.matryoshka_dims) or [full]}",
                runbook,
            )

    def _import_runtime(self) -> tuple[Any, Any]:
        try:
            import onnxruntime  # ships no type information
            import tokenizers
        except (ImportError, OSError) as exc:  # OSError: a native library that fails to load
            raise EmbeddingFault(
                FaultKind.IMPORT_ERROR,
                "ONNX runtime or tokenizers cannot be imported",
                repr(exc),
                _PIP_RUNBOOK,
            ) from exc
        return onnxruntime, tokenizers

    def _missing(self, reason: str, evidence: str) -> EmbeddingFault:
        # Not installed: name both routes and any other installed model (cpersona/embed/model_hint.py).
        hint = model_hint(self.manifest.name, self.model_path.parent)
        return EmbeddingFault(FaultKind.MODEL_MISSING, reason, f"{evidence}; {hint.inventory}", hint.runbook)

    def _check_files(self) -> None:
        if not self.model_path.is_dir():
            raise self._missing(
                f"model {self.manifest.name} is not installed", f"{self.model_path} does not exist"
            )
        missing = [f.path for f in self.manifest.required_files if not (self.model_path / f.path).is_file()]
        if missing:
            raise self._missing(
                f"model {self.manifest.name} is incomplete",
                f"missing in {self.model_path}: {', '.join(missing)}",
            )
        for entry in self.manifest.required_files:
            if entry.size is not None:
                actual = (self.model_path / entry.path).stat().st_size
                if actual != entry.size:
                    raise self._fault(
                        FaultKind.HASH_MISMATCH,
                        f"model {self.manifest.name} file has the wrong size",
                        f"{entry.path}: {actual} bytes, manifest says {entry.size}",
                    )

    def _check_integrity(self) -> None:
        record = read_record(self.model_path)
        if record is None:
            # Files placed by hand: nothing to compare with. fetch-model --from would record them.
            log.warning("%s has no install.json; integrity not verified", self.model_path)
            return
        if record.manifest and record.manifest != self.manifest.name:
            raise self._missing(
                f"{self.model_path} holds a different model",
                f"install.json names {record.manifest!r}, expected {self.manifest.name!r}",
            )
        mismatches, refreshed = verify_against_record(self.model_path, record, full=self.verify == "full")
        if mismatches:
            raise self._fault(
                FaultKind.HASH_MISMATCH,
                f"model {self.manifest.name} files changed since install (corrupt or tampered)",
                "; ".join(m.describe() for m in mismatches),
            )
        if refreshed:
            # Hashes still match after an mtime change (copy, restore): remember the new mtimes.
            try:
                write_record(self.model_path, record)
            except OSError as exc:
                log.info("could not refresh %s/install.json: %s", self.model_path, exc)

    def _open_tokenizer(self, tokenizers: Any) -> Any:
        path = self.model_path / self.manifest.tokenizer_file
        try:
            tokenizer = tokenizers.Tokenizer.from_file(str(path))
        except Exception as exc:
            raise self._fault(FaultKind.CORRUPT_MODEL, "tokenizer cannot be read", f"{path}: {exc}") from exc
        padding = tokenizer.padding
        if padding and padding.get("pad_id") is not None:
            self._pad_id = int(padding["pad_id"])
        # Padding is done per batch here (only to the batch's longest text), so switch the file's off.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=int(self.max_tokens))
        return tokenizer

    def _session_options(self, ort: Any, threads: int | None = None) -> Any:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = int(threads or self.threads)
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Spinning threads burn a core for ~50 ms after every run (docs/decisions.md, "The query kernel").
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        opts.add_session_config_entry("session.inter_op.allow_spinning", "0")
        # The arena keeps the peak of the largest batch forever; without it memory follows the batch.
        opts.enable_cpu_mem_arena = False
        opts.log_severity_level = 3
        return opts

    def _open_session(self, ort: Any) -> Any:
        path = self.model_path / self.manifest.onnx_file
        try:
            return ort.InferenceSession(
                str(path), sess_options=self._session_options(ort), providers=["CPUExecutionProvider"]
            )
        except Exception as exc:
            name = type(exc).__name__
            # Unparseable or invalid graphs mean damaged files; anything else is a runtime problem.
            corrupt = name in {"InvalidProtobuf", "InvalidGraph", "NoSuchFile", "Fail"} or "protobuf" in str(
                exc
            )
            kind = FaultKind.CORRUPT_MODEL if corrupt else FaultKind.SESSION_ERROR
            raise self._fault(
                kind, "ONNX Runtime cannot create a session for the model", f"{path}: {name}: {exc}"[:600]
            ) from exc

    def _plan_io(self, session: Any) -> list[tuple[str, Any]]:
        plan: list[tuple[str, Any]] = []
        for inp in session.get_inputs():
            if inp.name not in SUPPORTED_INPUTS or inp.type not in _INT_TYPES:
                raise self._fault(
                    FaultKind.CORRUPT_MODEL,
                    "the ONNX graph is not the expected export",
                    f"input {inp.name} ({inp.type}) cannot be supplied; supported: {', '.join(SUPPORTED_INPUTS)}",
                )
            plan.append((inp.name, _INT_TYPES[inp.type]))
        outputs = {o.name: o for o in session.get_outputs()}
        out = outputs.get(self.manifest.output_name)
        if out is None:
            raise self._fault(
                FaultKind.CORRUPT_MODEL,
                "the ONNX graph is not the expected export",
                f"no output {self.manifest.output_name!r}; outputs: {', '.join(outputs)}",
            )
        last = out.shape[-1] if out.shape else None
        if isinstance(last, int) and last != self.manifest.dimension:
            raise self._fault(
                FaultKind.DIMENSION_MISMATCH,
                "model output dimension differs from its manifest",
                f"{out.name} has dimension {last}, manifest {self.manifest.name} says {self.manifest.dimension}",
            )
        return plan

    # -- inference --------------------------------------------------------------------------

    def _ensure_loaded(self) -> None:
        if self._session is None:
            self.load()

    def _prompt(self, role: str) -> str:
        if role == "query":
            return self.manifest.query_prompt
        if role == "document":
            return self.manifest.document_prompt
        raise ValueError(f"role must be 'query' or 'document', not {role!r}")

    def _encode(self, tokenizer: Any, texts: Sequence[str], prompt: str) -> list[Any]:
        inputs = [prompt + t for t in texts] if prompt else list(texts)
        with self._tok_lock:
            return tokenizer.encode_batch(inputs)

    def token_ids(self, texts: Sequence[str], role: str = "document") -> list[list[int]]:
        """The token ids fed to the model for ``texts`` in ``role`` (prompt applied, truncated)."""
        self._ensure_loaded()
        return [list(e.ids) for e in self._encode(self._tokenizer, list(texts), self._prompt(role))]

    def _feeds(self, batch: list[Any]) -> tuple[dict[str, np.ndarray], np.ndarray]:
        rows, width = len(batch), max(len(e.ids) for e in batch)
        ids = np.full((rows, width), self._pad_id, dtype=np.int64)
        mask = np.zeros((rows, width), dtype=np.int64)
        types = np.zeros((rows, width), dtype=np.int64)
        for r, enc in enumerate(batch):
            n = len(enc.ids)
            ids[r, :n] = enc.ids
            mask[r, :n] = 1
            types[r, :n] = enc.type_ids
        arrays = {
            "input_ids": ids,
            "attention_mask": mask,
            "token_type_ids": types,
            "position_ids": np.clip(np.cumsum(mask, axis=1) - 1, 0, None),
        }
        return {name: arrays[name].astype(dtype, copy=False) for name, dtype in self._input_plan}, mask

    def _run(self, texts: Sequence[str], prompt: str, session: Any = None) -> np.ndarray:
        count = len(texts)
        out = np.empty((count, self.dimension), dtype=np.float32)
        if count == 0:
            return out
        # Local references: a concurrent close() must not pull the session from under this call.
        session, tokenizer = session or self._session, self._tokenizer
        try:
            if session is None or tokenizer is None:
                raise RuntimeError("the model was closed")
            encodings = self._encode(tokenizer, texts, prompt)
            # Texts of neighbouring lengths share a batch, cut where padding would cost more than a call.
            for idx in self.batch_plan([len(e.ids) for e in encodings], self.batch_size):
                feeds, mask = self._feeds([encodings[i] for i in idx])
                (hidden,) = session.run([self.manifest.output_name], feeds)
                pooled = hidden if hidden.ndim == 2 else pool(self.manifest.pooling, hidden, mask)
                if pooled.shape[-1] != self._model_dim:
                    raise self._fault(
                        FaultKind.DIMENSION_MISMATCH,
                        "model output dimension differs from its manifest",
                        f"got {pooled.shape[-1]}, manifest {self.manifest.name} says {self._model_dim}",
                    )
                out[idx] = truncate_and_normalise(pooled, self.embedding_dim)
            if count > 1:  # bulk embedding (back-fill, import, re-embed): give the batches' tensors back
                del hidden, pooled, feeds, mask
                release_free_memory()
        except EmbeddingFault:
            raise
        except Exception as exc:
            raise EmbeddingFault(
                FaultKind.INFERENCE_ERROR,
                "embedding inference failed",
                f"{type(exc).__name__}: {exc}"[:600],
                "check the model files (`cpersona models`) and memory; the error repeats if the model is broken",
            ) from exc
        return out

    def embed(self, texts: Sequence[str], role: str = "document") -> np.ndarray:
        """Embed ``texts`` with the prompt of ``role`` ("document" or "query"); float32, unit rows."""
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise TypeError("texts must be a sequence of str")
        prompt = self._prompt(role)
        self._ensure_loaded()
        # Stored texts always use the float32 graph; queries the int8 copy once it has passed its check.
        if role != "query":
            return self._run(list(texts), prompt)
        if self._kernel_pending:
            self._start_kernel_check()
        return self._run(list(texts), prompt, self._query_session)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed stored content (document prompt applied when the model has one)."""
        return self.embed(texts, "document")

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_query_as(text, "")

    def embed_query_as(self, text: str, asker: str) -> np.ndarray:
        """Embed a recall query (query prompt applied when the model has one); shape (dimension,). A
        text ``asker`` asked recently is answered from ``query_cache``: the same vector, not computed
        again."""
        return self.query_cache.through(f"{asker}\x00{text}", lambda: self.embed([text], "query")[0])

    def close(self) -> None:
        """Drop the session and tokenizer (memory is freed when no call still uses them)."""
        self._closing.set()  # a running query-kernel check ends at its next step (not waited for)
        with self._load_lock:
            self._session = None
            self._tokenizer = None
            self._query_session = None
            self.query_cache.clear()
