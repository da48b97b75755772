"""The PostgreSQL keyword index: one posting per (token, row), kept by triggers, read in id order.

Why postings and not only the GIN indexes: a GIN index answers "which rows hold this
term" as a bitmap, built whole before the first row comes back, and cannot hand rows
back newest first. The keyword channels ask three questions that a bitmap answers at
the cost of every matching row: how many rows hold a term (counted up to the row
budget), the bm25 figures of the rarest terms, and the newest rows holding a common
term. A B-tree on (token, agent, row id) answers each by reading at most about a
budget of index entries, newest first, and carries what bm25 needs (occurrences,
lengths) in the entry itself: no row is read and no pattern is matched per row.

- ``cpersona_tokens`` splits text as the ``simple`` configuration does (lower-cased
  words, numbers, hosts, paths, e-mail addresses, CJK runs between punctuation) but
  without the compound types (hyphenated words, whole URLs) whose parts are tokens
  already, so no character is counted twice.
- ``cpersona_posted_tsv`` cuts every run of more than ``CHUNK_CHARS`` characters without white
  space into pieces first: PostgreSQL drops a lexeme of 2,047 bytes or more from a tsvector
  without a word, so a long identifier, a base64 blob or a long CJK run (3 bytes a character)
  would otherwise hold no posting and never be found. A query term (at most 32 characters,
  docs/input-rules.md) that crosses a cut is not found in that row on PostgreSQL; SQLite's
  FTS5 trigram index has no such limit.
- ``memory_tokens`` / ``episode_tokens``: one row per distinct token of a row, with
  its occurrences ``n``, the row's length in trigram tokens ``dl`` (characters - 2, as
  FTS5 trigram counts) and in words ``dw`` (the word channel's length: every token, as FTS5
  counts a row's words, since migration 12; its distinct tokens before), and
  the row's isolation axes, so the scope filter reads the index too.
- ``keyword_vocab``: every token seen, with its stem (the word channel's Snowball
  stemmer). The trigram channel matches substrings: a query term (letters, digits, _)
  can only occur inside one token, so the rows holding it are the postings of the
  vocabulary tokens that contain it (found through the vocabulary's trigram index),
  and its occurrences in a row are the sum over those tokens. The word channel maps
  a query word to its stem, then to every token with that stem.

Triggers keep the postings in the writer's transaction (statement-level for inserts
and deletes, so a COPY of 1,000 rows is one pass; row-level for content or axis
changes). Writers only insert rows that name their own row, and the vocabulary has no
unique constraint (two writers may add the same new token: lookups use DISTINCT), so
no writer ever waits for another on this index.
"""

from __future__ import annotations

from cpersona.storage.postgres.counts import SETTLE_AT
from cpersona.storage.postgres.lengths import LENGTH_TABLES, added_cte, lengths_tables_sql, removed_sql

#: table -> (postings table, its id column, the searched text as SQL over a row, the columns it reads).
POSTED = {
    "memories": ("memory_tokens", "memory_id", "{r}.content", "content"),
    "episodes": ("episode_tokens", "episode_id", "{r}.summary || ' ' || {r}.keywords", "summary, keywords"),
}

#: Characters after which a run without white space is cut for the postings (see ``cpersona_posted_tsv``).
CHUNK_CHARS = 250  # PostgreSQL regular expressions allow a repetition count up to 255

_VOCAB = f"""
CREATE TEXT SEARCH CONFIGURATION cpersona_tokens (COPY = simple);
CREATE FUNCTION cpersona_posted_tsv(body TEXT) RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT to_tsvector('cpersona_tokens'::regconfig, regexp_replace(body, '(\\S{{{CHUNK_CHARS}}})', '\\1 ', 'g'))
$$;
ALTER TEXT SEARCH CONFIGURATION cpersona_tokens DROP MAPPING FOR hword, asciihword, numhword, url;
CREATE TABLE keyword_vocab (token TEXT NOT NULL, stem TEXT NOT NULL);
CREATE INDEX keyword_vocab_token ON keyword_vocab(token);
CREATE INDEX keyword_vocab_stem ON keyword_vocab(stem) INCLUDE (token);
CREATE INDEX keyword_vocab_trgm ON keyword_vocab USING gin (token gin_trgm_ops)
"""

#: The postings' read index (every keyword statement reads it; a bulk load may build it after, see ``bulk.py``).
_READ_INDEX = "CREATE INDEX {postings}_read ON {postings}(token, agent_id, {rid} DESC) INCLUDE (project_id, channel, n, dl, dw)"


def read_index_sql(table: str) -> tuple[str, str]:
    """(index name, the migration's CREATE INDEX statement) of ``table``'s postings read index."""
    postings, rid, _text, _columns = POSTED[table]
    return f"{postings}_read", _READ_INDEX.format(postings=postings, rid=rid)


_TABLE = """
CREATE TABLE {postings} (
    token TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    {rid} BIGINT NOT NULL,
    project_id TEXT NOT NULL,
    channel TEXT NOT NULL,
    n INTEGER NOT NULL,
    dl INTEGER NOT NULL,
    dw INTEGER NOT NULL
);
{backfill};
{read_index};
CREATE FUNCTION cpersona_{table}_posted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {post_added};
    RETURN NULL;
END $$;
CREATE FUNCTION cpersona_{table}_unposted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {unpost_removed};
    RETURN NULL;
END $$;
CREATE FUNCTION cpersona_{table}_reposted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {unpost_old};
    {post_new};
    RETURN NULL;
END $$;
CREATE FUNCTION cpersona_{table}_unposted_all() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE {postings};
    RETURN NULL;
END $$;
CREATE TRIGGER {table}_posted AFTER INSERT ON {table} REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION cpersona_{table}_posted();
CREATE TRIGGER {table}_unposted AFTER DELETE ON {table} REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION cpersona_{table}_unposted();
CREATE TRIGGER {table}_reposted AFTER UPDATE OF {columns}, agent_id, project_id, channel ON {table} FOR EACH ROW
    WHEN ({changed})
    EXECUTE FUNCTION cpersona_{table}_reposted();
CREATE TRIGGER {table}_unposted_all AFTER TRUNCATE ON {table} FOR EACH STATEMENT
    EXECUTE FUNCTION cpersona_{table}_unposted_all()
"""


# Migration 7 (docs/history/decisions-rounds.md#postgresql-bulk-load-round-7): the same tokens, cheaper to get.
# - The cut of long runs is a copy of the whole text even when there is nothing to cut (a fifth of the
#   tokenising time on LoCoMo-sized rows): it now runs only for a text that holds such a run, which a
#   match finds without copying. regexp_replace returns its input unchanged when nothing matches, so the
#   tsvector is the same for every text, and a row's postings are deleted by the tokens they were made of.
# - The postings' token in the "C" collation: only equality ever compares a posting's token (with the
#   vocabulary's tokens or a query's), and equality is byte equality under every deterministic collation,
#   so each statement finds the same rows; the read index then sorts tokens bytewise with abbreviated
#   keys, which takes ~25% off its build after a bulk load (backend CPU) against a libc locale.
_V7 = f"""
CREATE OR REPLACE FUNCTION cpersona_posted_tsv(body TEXT) RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT to_tsvector('cpersona_tokens'::regconfig, CASE WHEN body ~ '\\S{{{CHUNK_CHARS}}}'
        THEN regexp_replace(body, '(\\S{{{CHUNK_CHARS}}})', '\\1 ', 'g') ELSE body END)
$$;
ALTER TABLE memory_tokens ALTER COLUMN token TYPE TEXT COLLATE "C";
ALTER TABLE episode_tokens ALTER COLUMN token TYPE TEXT COLLATE "C"
"""


def postings_v7_sql() -> str:
    """Migration 7: the posted tsvector without a needless copy, the postings' token in the C collation."""
    return _V7.strip()


def _tokenised(rows: str) -> str:
    """The body of CTE ``t`` from migration 12 on: every row of ``rows`` with its trigram length ``dl``, its
    posted tsvector ``tv`` and its word length ``dw``, every token counted (as FTS5 counts a row's words)."""
    return f"""SELECT b.*, (SELECT COALESCE(sum(cardinality(x.positions)), 0) FROM unnest(b.tv) x)::int AS dw
            FROM (SELECT r.id, r.agent_id, r.project_id, r.channel, GREATEST(char_length(r.body) - 2, 1) AS dl,
                         cpersona_posted_tsv(r.body) AS tv
                  FROM ({rows}) r) b"""


def _post(postings: str, rid: str, rows: str, lengths: str | None = None) -> str:
    """SQL posting every row of ``rows`` (id, agent_id, project_id, channel, body) and adding new tokens.

    With ``lengths`` (the posted table's name: migration 12 on) it also adds their lengths per scope, and
    a posting's ``dw`` is the row's every token; before, it was the row's distinct tokens."""
    if lengths:
        tokenised = f"""WITH t AS MATERIALIZED (
            {_tokenised(rows)}),
        {added_cte(lengths, "t")},"""
        dw = "t.dw"
    else:
        tokenised = f"""WITH t AS MATERIALIZED (
            SELECT r.id, r.agent_id, r.project_id, r.channel, GREATEST(char_length(r.body) - 2, 1) AS dl,
                   cpersona_posted_tsv(r.body) AS tv
            FROM ({rows}) r),"""
        dw = "length(t.tv)"
    return f"""{tokenised}
        u AS MATERIALIZED (
            SELECT t.id, t.agent_id, t.project_id, t.channel, t.dl, {dw} AS dw, x.lexeme AS token,
                   cardinality(x.positions) AS n
            FROM t, unnest(t.tv) x),
        v AS (
            INSERT INTO keyword_vocab(token, stem)
            SELECT w.token, COALESCE((ts_lexize('cpersona_stem', w.token))[1], w.token)
            FROM (SELECT DISTINCT token FROM u) w
            WHERE NOT EXISTS (SELECT 1 FROM keyword_vocab k WHERE k.token = w.token))
        INSERT INTO {postings}(token, agent_id, {rid}, project_id, channel, n, dl, dw)
        SELECT token, agent_id, id, project_id, channel, n, dl, dw FROM u"""


def _unpost(postings: str, rid: str, rows: str, lengths: str | None = None) -> str:
    """SQL deleting the postings of every row of ``rows`` (id, agent_id, body as it was posted); with
    ``lengths`` (the posted table's name, migration 12 on), subtracting the lengths of the rows whose
    postings it deleted (a row never posted, such as one still queued by an import, subtracts nothing)."""
    delete = f"""DELETE FROM {postings} p USING (
            SELECT r.id, r.agent_id, x.lexeme AS token
            FROM ({rows}) r, unnest(cpersona_posted_tsv(r.body)) x) d
        WHERE p.token = d.token AND p.agent_id = d.agent_id AND p.{rid} = d.id"""
    if not lengths:
        return delete
    returning = f"RETURNING p.{rid}, p.agent_id, p.project_id, p.channel, p.dl, p.dw"
    return f"WITH gone AS ({delete} {returning})\n        {removed_sql(lengths, rid, 'gone')}"


def postings_migration_sql() -> str:
    """The DDL of the vocabulary, the postings tables, their backfill and triggers (one migration)."""
    parts = [_VOCAB.strip()]
    for table, (postings, rid, text, columns) in POSTED.items():

        def rows(alias: str, source: str, text: str = text) -> str:
            body = text.format(r=alias)
            return f"SELECT {alias}.id, {alias}.agent_id, {alias}.project_id, {alias}.channel, {body} AS body FROM {source}"

        def row(record: str, text: str = text) -> str:
            body = text.format(r=record)
            return f"SELECT {record}.id, {record}.agent_id, {record}.project_id, {record}.channel, {body} AS body"

        changed = " OR ".join(
            f"OLD.{c} IS DISTINCT FROM NEW.{c}"
            for c in [*(c.strip() for c in columns.split(",")), "agent_id", "project_id", "channel"]
        )
        parts.append(
            _TABLE.format(
                table=table,
                postings=postings,
                rid=rid,
                columns=columns,
                changed=changed,
                read_index=read_index_sql(table)[1],
                backfill=_post(postings, rid, rows("s", f"{table} s")),
                post_added=_post(postings, rid, rows("a", "added a")),
                unpost_removed=_unpost(postings, rid, rows("d", "removed d")),
                unpost_old=_unpost(postings, rid, row("OLD")),
                post_new=_post(postings, rid, row("NEW")),
            ).strip()
        )
    return ";\n".join(parts)


#: The transaction-local setting under which inserted memories are queued in ``memory_unposted`` instead
#: of posted (migration 8): set by an import batch into an empty keyword index (``bulk.py``).
DEFER_SETTING = "cpersona.defer_postings"

# Migration 8 (docs/history/decisions-rounds.md#postgresql-bulk-load-round-8): an import into an empty keyword index
# posts its memories once at the end, set-based, instead of per batch. The insert trigger, in a
# transaction that set DEFER_SETTING, only records the new ids in ``memory_unposted`` (in that same
# transaction: a batch that commits has its rows queued, so a crash loses no posting, it only delays
# them until the next drain). A content or scope change of a queued row posts the new text and
# dequeues it (its old text was never posted); a delete needs nothing (a queued id whose row is gone
# posts nothing).
# The memories' posting functions of migration 8, defined again by migration 12 with their lengths.
_MEMORY_POSTING_FUNCTIONS = """CREATE OR REPLACE FUNCTION cpersona_memories_posted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('{setting}', true) = 'on' THEN
        INSERT INTO memory_unposted(memory_id) SELECT id FROM added;
        RETURN NULL;
    END IF;
    {post_added};
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION cpersona_memories_reposted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM memory_unposted WHERE memory_id = OLD.id;
    IF NOT FOUND THEN
        {unpost_old};
    END IF;
    {post_new};
    RETURN NULL;
END $$
"""
_V8 = "\nCREATE TABLE memory_unposted (memory_id BIGINT PRIMARY KEY);\n" + _MEMORY_POSTING_FUNCTIONS


def _memory_rows(source: str) -> str:
    return f"SELECT {source}.id, {source}.agent_id, {source}.project_id, {source}.channel, {source}.content AS body"


def postings_v8_sql() -> str:
    """Migration 8: the memories' insert trigger queues instead of posting under ``DEFER_SETTING``."""
    postings, rid, _text, _columns = POSTED["memories"]
    return _V8.format(
        setting=DEFER_SETTING,
        post_added=_post(postings, rid, f"{_memory_rows('a')} FROM added a"),
        unpost_old=_unpost(postings, rid, _memory_rows("OLD")),
        post_new=_post(postings, rid, _memory_rows("NEW")),
    ).strip()


def drain_sql() -> tuple[str, str]:
    """(posting statement, vocabulary statement) for the queued memories whose ids are in ``%s``.

    The first posts the rows (as the insert trigger would, without the vocabulary) and puts their
    distinct tokens in the temporary table ``cpersona_drained_tokens``; the second adds the new ones to
    the vocabulary. Two drainers run the second one after the other (``bulk.py``), so no token is
    added twice, as sequential stores would leave it.
    """
    postings, rid, _text, _columns = POSTED["memories"]
    rows = f"{_memory_rows('m')} FROM memories m WHERE m.id = ANY(%s)"
    # Unlike the trigger's statement, the postings stream from the tokenised rows straight into the table
    # (no tuple store of every posting of the chunk) and the distinct tokens come from a second unnest.
    post = f"""WITH t AS MATERIALIZED (
            {_tokenised(rows)}),
        {added_cte("memories", "t")},
        p AS (
            INSERT INTO {postings}(token, agent_id, {rid}, project_id, channel, n, dl, dw)
            SELECT x.lexeme, t.agent_id, t.id, t.project_id, t.channel, cardinality(x.positions), t.dl, t.dw
            FROM t, unnest(t.tv) x)
        INSERT INTO cpersona_drained_tokens(token) SELECT DISTINCT x.lexeme FROM t, unnest(t.tv) x"""
    vocab = """INSERT INTO keyword_vocab(token, stem)
        SELECT w.token, COALESCE((ts_lexize('cpersona_stem', w.token))[1], w.token)
        FROM cpersona_drained_tokens w
        WHERE NOT EXISTS (SELECT 1 FROM keyword_vocab k WHERE k.token = w.token)"""
    return post, vocab


# Migration 12: bm25's inputs as FTS5's. avgdl is the mean over every posted row in scope, as FTS5 takes it
# over its table, from lengths kept per scope (``lengths.py``); a posting's word length ``dw`` is every token
# of its row, as FTS5 counts a row's words (it was the distinct tokens). The posting functions are the same
# statements with both; the postings' ``dw`` is rewritten and the new tables are backfilled while writers
# wait (the LOCK), so no row is posted by the old functions after the backfill has read the postings.
_V12_EPISODES = """
CREATE OR REPLACE FUNCTION cpersona_episodes_posted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {post_added};
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION cpersona_episodes_reposted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {unpost_old};
    {post_new};
    RETURN NULL;
END $$
"""
_V12_BOTH = """
CREATE OR REPLACE FUNCTION cpersona_{table}_unposted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {unpost_removed};
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION cpersona_{table}_unposted_all() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE {postings};
    TRUNCATE {lengths};
    RETURN NULL;
END $$
"""


def postings_v12_sql() -> str:
    """Migration 12: the length tables (``lengths.py``) and the posting functions that keep them."""
    parts = ["LOCK TABLE memories, episodes IN SHARE MODE"]
    # A row's every token is the sum of its postings' occurrences: no text is tokenised again.
    parts += [
        f"UPDATE {p} x SET dw = s.words FROM (SELECT {rid}, sum(n)::int AS words FROM {p} GROUP BY {rid}) s "
        f"WHERE x.{rid} = s.{rid} AND x.dw <> s.words"
        for p, rid, _text, _columns in POSTED.values()
    ]
    parts.append(lengths_tables_sql({table: (p, rid) for table, (p, rid, _text, _columns) in POSTED.items()}))
    for table, (postings, rid, text, _columns) in POSTED.items():

        def row(record: str, text: str = text) -> str:
            body = text.format(r=record)
            return f"SELECT {record}.id, {record}.agent_id, {record}.project_id, {record}.channel, {body} AS body"

        def rows(alias: str, source: str, text: str = text) -> str:
            return f"{row(alias, text)} FROM {source}"

        # An edit adds two deltas and no row: it folds its key as often as an insert does (a move's old
        # key is folded by the row counts' trigger, which settles both tables).
        settle_new = (
            f"IF random() < 1.0 / {SETTLE_AT} THEN PERFORM cpersona_settle_{LENGTH_TABLES[table]}"
            "(NEW.agent_id, NEW.project_id, NEW.channel); END IF"
        )
        template = _MEMORY_POSTING_FUNCTIONS if table == "memories" else _V12_EPISODES
        parts.append(
            template.format(
                setting=DEFER_SETTING,
                post_added=_post(postings, rid, rows("a", "added a"), table),
                unpost_old=_unpost(postings, rid, row("OLD"), table),
                post_new=f"{_post(postings, rid, row('NEW'), table)};\n    {settle_new}",
            ).strip()
        )
        parts.append(
            _V12_BOTH.format(
                table=table,
                postings=postings,
                lengths=LENGTH_TABLES[table],
                unpost_removed=_unpost(postings, rid, rows("d", "removed d"), table),
            ).strip()
        )
    return ";\n".join(parts)
