"""What the write, admin and maintenance services are built on, named once.

Each of them needs the store, the settings, the embedding model and the health flags; ``Memory``
builds one ``Core`` and hands it to each (their other collaborators stay their own arguments).
"""

from __future__ import annotations

from dataclasses import dataclass

from cpersona.config import Settings
from cpersona.embed.runtime.service import EmbeddingService
from cpersona.runtime.health_state import HealthState
from cpersona.secret_guard import SecretGuard
from cpersona.storage.interface import Store


@dataclass(frozen=True)
class Core:
    """The store, the settings, the embedding model and the health flags of one ``Memory``."""

    store: Store
    settings: Settings
    embeddings: EmbeddingService
    health: HealthState


class CoreService:
    """A service over a ``Core``: ``storage``, ``settings``, ``embeddings``, ``health`` and ``secrets`` as attributes."""

    def __init__(self, core: Core) -> None:
        self.storage = core.store
        self.settings = core.settings
        self.embeddings = core.embeddings
        self.health = core.health
        # CPERSONA_SECRETS, applied to every text a write stores (docs/secrets-and-forgetting.md).
        self.secrets = SecretGuard(core.settings.secrets)
