"""The SQLite engine behind the storage protocols (the default: one file, WAL).

``store.SqliteStore`` hands out sessions whose repositories are the modules here; nothing
outside this package imports ``sqlite3`` (docs/architecture.md).
"""
