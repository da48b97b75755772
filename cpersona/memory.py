"""The plain Python API: one ``Memory`` object per database file.

The MCP tools, the CLI, the tests and the benchmarks all call this. It returns
full rows (no preview trimming); shaping for MCP responses lives in
``cpersona.server``. Return shapes are documented in docs/api-shapes.md.

``Memory`` is a facade: it wires the store, the embedding service and the
services (``Writer``, ``Reader``, ``Recaller``, ``Admin``, the back-fill worker)
together and exposes their public methods under one name. Each method below is
the service's own function (signature and docstring included), called on the
service this ``Memory`` owns: a service method marked ``@public`` (cpersona/core/public.py) is a
``Memory`` method, and ``scripts/gen_memory_api.py`` writes the binding lines.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

from cpersona.config import Settings
from cpersona.core.public import annotated_results, public_methods
from cpersona.embed.runtime.base import EmbeddingBackend
from cpersona.embed.runtime.service import EmbeddingService
from cpersona.portability.move_in import move_in_if_original
from cpersona.portability.service import Portability
from cpersona.retrieval.pipeline import RecallPipeline
from cpersona.runtime.health_state import HealthState
from cpersona.services.admin import Admin
from cpersona.services.backfill import BackfillWorker
from cpersona.services.browser import Browser
from cpersona.services.calibration import Calibrator
from cpersona.services.context_pack import ContextPack
from cpersona.services.core import Core
from cpersona.services.links import Links
from cpersona.services.maintenance import Maintenance
from cpersona.services.reader import Reader
from cpersona.services.recaller import Recaller
from cpersona.services.resources import Resources
from cpersona.services.self_calibration import SelfCalibration
from cpersona.services.writer import Writer
from cpersona.storage import open_store

log = logging.getLogger("cpersona.memory")

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")


def _via(service: str, method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[Any, P], R]:
    """``method`` as a ``Memory`` method, run on the service held in attribute ``service``."""

    @functools.wraps(method)
    def call(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return method(getattr(self, service), *args, **kwargs)

    return call


#: The services a ``Memory`` owns, by attribute: their ``@public`` methods are its methods
#: (scripts/gen_memory_api.py writes the binding lines at the end of the class).
SERVICES: dict[str, type] = {
    "writer": Writer,
    "recaller": Recaller,
    "reader": Reader,
    "links": Links,
    "context_pack": ContextPack,
    "browser": Browser,
    "resources": Resources,
    "admin": Admin,
    "maintenance": Maintenance,
    "calibration": Calibrator,
    "self_calibration": SelfCalibration,
    "portability": Portability,
    "worker": BackfillWorker,
}


@functools.cache  # the services' methods are fixed once imported; reading annotations is not free
def method_results() -> dict[str, tuple[type, ...]]:
    """Every ``Memory`` method that returns a result dict, with the shapes it may return.

    Read from each ``@public`` method's return annotation, else from ``result_types.DECLARED_RESULTS``
    (methods still annotated ``dict[str, Any]``); methods returning no result dict are left out.
    """
    from cpersona import result_types

    found: dict[str, tuple[type, ...]] = {}
    for service in SERVICES.values():
        for name, method in public_methods(service):
            annotated = annotated_results(getattr(service, method))
            results = annotated or result_types.DECLARED_RESULTS.get(name, ())
            if results:
                found[name] = results
    return found


def _default_backend(settings: Settings) -> EmbeddingBackend:
    from cpersona.embed.runtime.factory import create_backend

    return create_backend(settings)


class Memory:
    """Persistent memory over one database file with hybrid recall.

    ``Memory(settings)`` opens (and migrates) the database and starts loading
    the embedding model in the background, so construction is fast. Pass
    ``backend=`` to choose the embedding backend explicitly (tests,
    benchmarks). ``prepare_model`` runs once in the background before the
    first load (the server passes the automatic model fetch).
    ``self_calibration=False`` never calibrates in the background (short-lived
    CLI commands; long-running servers keep the default, which follows
    ``CPERSONA_AUTO_CALIBRATE``). Use as a context manager or call ``close()``.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        backend: EmbeddingBackend | None = None,
        start_background: bool = True,
        model_retry_seconds: float = 30.0,
        prepare_model: Callable[[], str | None] | None = None,
        self_calibration: bool = True,
    ) -> None:
        self.settings = settings or Settings.from_env()
        #: The report of moving the original CPersona's database in, when this start did (else None).
        self.moved_in = (
            None if self.settings.db_url else move_in_if_original(self.settings.db_path, self.settings)
        )
        self.storage = open_store(
            self.settings.db_url or self.settings.db_path,
            pg_vector_index=self.settings.pg_vector_index,
            vector_float32=self.settings.vector_float32,
        )
        if self.storage.read_only():
            log.warning(
                "the database %s is read-only for this process: recall and reads work (recall statistics "
                "are skipped); every write answers error_code read_only",
                self.storage.location,
            )
        self.health = HealthState(self.settings.degraded_advisory)
        self.embeddings = EmbeddingService(
            backend or _default_backend(self.settings),
            self.health,
            retry_seconds=model_retry_seconds,
            corpus_check=lambda b: self.admin.corpus_dimension_check(b),
            prepare=prepare_model,
        )
        self.worker = BackfillWorker(
            self.storage,
            self.embeddings,
            retry_delay=self.settings.task_retry_delay,
            expiry_grace=self.settings.expiry_grace,
        )
        self.calibration = Calibrator(self.storage, self.settings, self.embeddings)
        self.self_calibration = SelfCalibration(
            self.calibration, self.storage, self.settings, self.embeddings, enabled=self_calibration
        )
        core = Core(self.storage, self.settings, self.embeddings, self.health)
        self.writer = Writer(core, self.worker.wake, on_stored=self.self_calibration.notice_store)
        self.reader = Reader(self.storage)
        self.links = Links(self.storage)
        self.browser = Browser(self.storage)
        self.resources = Resources(self.reader, self.browser)
        self.recaller = Recaller(
            self.storage,
            self.embeddings,
            self.health,
            RecallPipeline(self.settings, gate=self.calibration.gate()),
            keyword_weight=self.calibration.keyword_weight,
        )
        self.context_pack = ContextPack(self.storage, self.recaller)
        self.admin = Admin(core, self.worker, discard_calibration=self.calibration.discard)
        self.maintenance = Maintenance(core, self.worker.wake)
        self.portability = Portability(
            self.storage,
            self.settings,
            queue_backfill=lambda: self.embeddings.backend.mode != "none",
            active_model=self._active_model,
            wake=self._rows_arrived,
        )
        self.embeddings.on_ready(self.admin.on_model_ready)
        self.embeddings.on_ready(self.self_calibration.on_model_ready)
        if start_background:
            self.worker.start()
            self.embeddings.start()

    # -- lifecycle -----------------------------------------------------------------
    def close(self) -> None:
        """Stop background work and close connections."""
        self.worker.stop()
        self.self_calibration.stop()
        self.recaller.close()
        self.embeddings.stop()
        self.storage.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _rows_arrived(self) -> None:
        # Rows written by import/merge: the back-fill worker embeds them, self-calibration re-counts.
        self.worker.wake()
        self.self_calibration.notice_rows()

    def _active_model(self) -> tuple[str, int] | None:
        ready = self.embeddings.ready and self.embeddings.model_id and self.embeddings.dimension
        return (self.embeddings.model_id, self.embeddings.dimension) if ready else None

    def wait_until_ready(self, timeout: float = 60.0) -> bool:
        """Block until the first model load attempt settles; True when embeddings work."""
        return self.embeddings.wait_settled(timeout)

    # -- BEGIN GENERATED by scripts/gen_memory_api.py from the @public service methods; do not edit --
    # Writer (self.writer)
    store = _via("writer", Writer.store)
    archive_episode = _via("writer", Writer.archive_episode)
    update_memory = _via("writer", Writer.update_memory)
    update_profile = _via("writer", Writer.update_profile)
    lock_memory = _via("writer", Writer.lock_memory)
    unlock_memory = _via("writer", Writer.unlock_memory)
    retire_memory = _via("writer", Writer.retire_memory)
    unretire_memory = _via("writer", Writer.unretire_memory)
    delete_memory = _via("writer", Writer.delete_memory)
    delete_episode = _via("writer", Writer.delete_episode)
    # Recaller (self.recaller)
    recall = _via("recaller", Recaller.recall)
    recall_with_context = _via("recaller", Recaller.recall_with_context)
    # Reader (self.reader)
    get_contents = _via("reader", Reader.get_contents)
    get_history = _via("reader", Reader.get_history)
    get_profile = _via("reader", Reader.get_profile)
    list_memories = _via("reader", Reader.list_memories)
    list_episodes = _via("reader", Reader.list_episodes)
    # Links (self.links)
    declare_associations = _via("links", Links.declare_associations)
    traverse = _via("links", Links.traverse)
    # ContextPack (self.context_pack)
    reconstruct = _via("context_pack", ContextPack.reconstruct)
    # Browser (self.browser)
    agent_notice = _via("browser", Browser.agent_notice)
    list_agents = _via("browser", Browser.list_agents)
    browse_memories = _via("browser", Browser.browse_memories)
    browse_episodes = _via("browser", Browser.browse_episodes)
    list_profiles = _via("browser", Browser.list_profiles)
    memory_timeline = _via("browser", Browser.memory_timeline)
    # Resources (self.resources)
    resource_templates = _via("resources", Resources.resource_templates)
    list_resources = _via("resources", Resources.list_resources)
    read_resource = _via("resources", Resources.read_resource)
    complete_agent_id = _via("resources", Resources.complete_agent_id)
    complete_project_id = _via("resources", Resources.complete_project_id)
    # Admin (self.admin)
    reembed = _via("admin", Admin.reembed)
    get_queue_status = _via("admin", Admin.get_queue_status)
    delete_agent_data = _via("admin", Admin.delete_agent_data)
    embedding_status = _via("admin", Admin.embedding_status)
    stats = _via("admin", Admin.stats)
    # Maintenance (self.maintenance)
    check_health = _via("maintenance", Maintenance.check_health)
    deep_check = _via("maintenance", Maintenance.deep_check)
    # Calibrator (self.calibration)
    calibrate_threshold = _via("calibration", Calibrator.calibrate_threshold)
    set_recall_precision = _via("calibration", Calibrator.set_recall_precision)
    get_recall_precision = _via("calibration", Calibrator.get_recall_precision)
    # SelfCalibration (self.self_calibration)
    calibrate = _via("self_calibration", SelfCalibration.calibrate)
    # Portability (self.portability)
    export_memories = _via("portability", Portability.export_memories)
    import_memories = _via("portability", Portability.import_memories)
    merge_memories = _via("portability", Portability.merge_memories)
    migrate_channel_axis = _via("portability", Portability.migrate_channel_axis)
    # BackfillWorker (self.worker)
    drain_queue = _via("worker", BackfillWorker.drain)
    # -- END GENERATED --
