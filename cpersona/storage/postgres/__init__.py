"""The PostgreSQL engine behind the storage protocols (``CPERSONA_DB_URL=postgresql://...``).

psycopg 3 with a connection pool; vectors in a pgvector column searched through HNSW
expression indexes (one per model and dimension); keyword search with pg_trgm (the
counterpart of SQLite's FTS5 trigram) and a ``tsvector`` column; the task queue
claimed with ``FOR UPDATE SKIP LOCKED``. See docs/architecture.md and docs/decisions.md.
"""
