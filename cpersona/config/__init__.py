"""Every setting the server reads, in one typed place (``from cpersona.config import Settings``).

``settings`` holds the ``Settings`` fields (the settings table) and reading the environment;
``fields`` how a field is declared (``setting(...)``, its ``Var`` and table ``Row``); ``settings_file``
the user settings file; ``original_env`` the original CPersona's variable names.
"""

from cpersona.config.fields import (
    APP_NAME,
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_QUERY_CACHE_SIZE,
    DEFAULT_QUERY_CACHE_TTL,
    ConfigError,
    EmbeddingMode,
    ModelSharing,
    OutputSchemaDetail,
    PgVectorIndex,
    QueryKernel,
    RecallMode,
    RecallPrecision,
    Row,
    SecretsPolicy,
    Transport,
    VectorFloat32,
    default_data_dir,
    default_runtime_dir,
)
from cpersona.config.settings import Settings, settings_table

__all__ = [
    "APP_NAME",
    "DEFAULT_EMBEDDING_MODEL",
    "DEFAULT_QUERY_CACHE_SIZE",
    "DEFAULT_QUERY_CACHE_TTL",
    "ConfigError",
    "EmbeddingMode",
    "ModelSharing",
    "OutputSchemaDetail",
    "PgVectorIndex",
    "QueryKernel",
    "RecallMode",
    "RecallPrecision",
    "Row",
    "SecretsPolicy",
    "Settings",
    "Transport",
    "VectorFloat32",
    "default_data_dir",
    "default_runtime_dir",
    "settings_table",
]
