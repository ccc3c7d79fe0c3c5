"""Numbered schema migrations for the PostgreSQL store, and the checks run before them.

``schema_migrations`` records each applied step. Opening a store behind this version takes
a transaction-level advisory lock, so two processes opening a fresh database do not both
create it, and applies every missing step in that one transaction with its version row
(and the schema's version lock: a process opened before refuses to write after it,
migrated.py). A database at a version
this code does not know was written by a newer memstrata and is refused before anything is
written; so is a server without the pgvector extension.

Text columns use the ``"C"`` collation so that ids and ISO-8601 times sort bytewise, as
they do in SQLite (the reference store), whatever the database's locale.
"""

from __future__ import annotations

import asyncio  # async-only
import json
import re
from collections.abc import Awaitable, Callable
from typing import Final, cast

import psycopg
from psycopg import sql

from memstrata._async.store.postgres import backfill, bounded
from memstrata._async.store.postgres.migrated import schema_key
from memstrata.errors import SchemaVersionError, StoreError
from memstrata.store.one_model import PG_TRIGGERS
from memstrata.store.postgres.where import nul_read_as
from memstrata.store.sqlite.codec import COLUMNS

# sync: import time

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "migrate"]

_T = 'TEXT COLLATE "C"'

_RECORD_COLUMNS = f"""
    id {_T} NOT NULL, tenant {_T} NOT NULL, "user" {_T} NOT NULL, agent {_T},
    session {_T}, visibility {_T} NOT NULL, type {_T} NOT NULL, role {_T}, raw TEXT NOT NULL,
    summary TEXT, structured TEXT NOT NULL, embedding_model {_T}, embedding_dims INTEGER,
    importance DOUBLE PRECISION NOT NULL, confidence DOUBLE PRECISION NOT NULL,
    tags TEXT NOT NULL, source {_T} NOT NULL, version INTEGER NOT NULL,
    created_at {_T} NOT NULL, updated_at {_T} NOT NULL, observed_at {_T} NOT NULL,
    last_accessed_at {_T}, access_count INTEGER NOT NULL,
    decay_score DOUBLE PRECISION NOT NULL, valid_from {_T}, valid_to {_T},
    superseded_by {_T}, relations TEXT NOT NULL, access TEXT NOT NULL,
    source_ids TEXT NOT NULL, metadata TEXT NOT NULL, content_hash {_T} NOT NULL,
    status {_T} NOT NULL, deleted_at {_T}
"""

_V1 = f"""
CREATE TABLE meta (key {_T} PRIMARY KEY, value TEXT NOT NULL);

-- A record is identified by (tenant, user, id): ids are never globally unique. seq is the
-- insertion order (ties of observed_at and of lexical scores); lex_tokens is what the
-- lexical index holds for the record (FTS5's tokens of its terms), lex_len its length.
CREATE TABLE records (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, {_RECORD_COLUMNS},
    lex_tokens TEXT[] COLLATE "C" NOT NULL DEFAULT '{{}}', lex_len INTEGER NOT NULL DEFAULT 1
);
CREATE UNIQUE INDEX records_key ON records (tenant, "user", id);
CREATE INDEX records_scope_observed ON records (tenant, "user", observed_at, seq);
CREATE INDEX records_session ON records (tenant, "user", session, observed_at, seq);
CREATE INDEX records_hash ON records (content_hash);  -- v14: (tenant, "user", content_hash, seq)

CREATE TABLE record_versions ({_RECORD_COLUMNS}, PRIMARY KEY (tenant, "user", id, version));
CREATE INDEX record_versions_hash ON record_versions (content_hash);

-- vseq grows with every new vector: the vector cache appends what is newer.
CREATE TABLE vectors (
    seq BIGINT PRIMARY KEY REFERENCES records (seq) ON DELETE CASCADE,
    vseq BIGINT GENERATED ALWAYS AS IDENTITY, tenant {_T} NOT NULL, "user" {_T} NOT NULL,
    model {_T}, dims INTEGER NOT NULL, embedding vector NOT NULL
);
CREATE INDEX vectors_scope ON vectors (tenant, "user", dims, vseq);

-- Named counters (cluster hits ...): never versions of the record.
CREATE TABLE counters (
    seq BIGINT NOT NULL REFERENCES records (seq) ON DELETE CASCADE,
    name {_T} NOT NULL, value BIGINT NOT NULL, PRIMARY KEY (seq, name)
);

-- Bumped on every change other than an append; the vector cache checks it per query.
CREATE TABLE scope_generation (scope_tok {_T} PRIMARY KEY, generation BIGINT NOT NULL);

-- The inverted index: one row per (user, token, record). Statistics are table-wide, as in
-- FTS5, and kept in slots (one per backend, by pid) so concurrent writers rarely contend
-- (v9 keys them by tenant).
CREATE TABLE lex_postings (
    scope_tok {_T} NOT NULL, token {_T} NOT NULL, seq BIGINT NOT NULL, tf INTEGER NOT NULL,
    PRIMARY KEY (scope_tok, token, seq)
);
CREATE TABLE lex_df (
    token {_T} NOT NULL, slot SMALLINT NOT NULL, df BIGINT NOT NULL,
    PRIMARY KEY (token, slot)
);
CREATE TABLE lex_stats (slot SMALLINT PRIMARY KEY, docs BIGINT NOT NULL, tokens BIGINT NOT NULL);

-- Keyed by user (scope token) too, so a user's purge reaches it, query embeddings included.
CREATE TABLE embedding_cache (
    scope_tok {_T} NOT NULL, model_id {_T} NOT NULL, key {_T} NOT NULL, dims INTEGER NOT NULL,
    vector BYTEA NOT NULL, PRIMARY KEY (scope_tok, model_id, key)
);

CREATE TABLE jobs (
    id {_T} PRIMARY KEY, kind {_T} NOT NULL, tenant {_T} NOT NULL, "user" {_T} NOT NULL,
    agent {_T}, session {_T}, payload TEXT NOT NULL, created_at {_T} NOT NULL,
    run_after {_T} NOT NULL, status {_T} NOT NULL, attempts INTEGER NOT NULL,
    last_error TEXT, lease_until {_T}, dedup_key {_T}
);
CREATE INDEX jobs_pending ON jobs (run_after, created_at, id) WHERE status = 'pending';
CREATE INDEX jobs_running ON jobs (lease_until) WHERE status = 'running';
CREATE INDEX jobs_scope ON jobs (tenant, "user", status);
"""

# v2: the audit log (memstrata/audit.py): append-only, never purged; a trigger refuses
# updates and deletes, as SQLite's triggers do.
_V2_AUDIT = f"""
CREATE TABLE audit_log (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, id {_T} NOT NULL UNIQUE,
    tenant {_T} NOT NULL, "user" {_T}, actor TEXT NOT NULL, action {_T} NOT NULL,
    at {_T} NOT NULL, record_ids TEXT[] COLLATE "C" NOT NULL, reason TEXT, policy TEXT,
    score DOUBLE PRECISION, details TEXT NOT NULL
);
CREATE INDEX audit_log_tenant_at ON audit_log (tenant, at, seq);
CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'audit_log is append-only'; END $$;
CREATE TRIGGER audit_log_no_change BEFORE UPDATE OR DELETE ON audit_log
FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
"""

# v3: the one update the audit log allows: a user's purge redacts who and which ids from
# their events (memstrata/audit.py; the same rule as SQLite's trigger).
_V3_AUDIT_REDACT = """
CREATE OR REPLACE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND NEW."user" IS NULL AND NEW.record_ids = '{}'
     AND NEW.reason = '[purged]' AND NEW.details = '{}'
     AND NEW.actor IN (OLD.actor, '[purged]') AND NEW.seq = OLD.seq AND NEW.id = OLD.id
     AND NEW.tenant = OLD.tenant AND NEW.action = OLD.action AND NEW.at = OLD.at
     AND NEW.policy IS NOT DISTINCT FROM OLD.policy
     AND NEW.score IS NOT DISTINCT FROM OLD.score THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'audit_log is append-only';
END $$;
"""

# v4: job leases carry a token per claim (fencing; renewals find a claim's jobs by it).
_V4_JOB_LEASE_TOKEN = f"""
ALTER TABLE jobs ADD COLUMN lease_token {_T};
CREATE INDEX jobs_lease_token ON jobs (lease_token) WHERE lease_token IS NOT NULL;
CREATE INDEX jobs_user_running ON jobs (tenant, "user", lease_until) WHERE status = 'running';
"""

# v5: API keys of the HTTP/MCP server (memstrata/server/keys.py), shared by every server
# process on this database. Only a key's SHA-256 is stored.
_V5_API_KEYS = f"""
CREATE TABLE api_keys (
    id {_T} PRIMARY KEY, key_hash {_T} NOT NULL UNIQUE, tenant {_T} NOT NULL,
    role {_T} NOT NULL, name TEXT NOT NULL DEFAULT '', created_at {_T} NOT NULL,
    revoked_at {_T}, "user" {_T}, roles TEXT NOT NULL DEFAULT ''
);
CREATE INDEX api_keys_tenant ON api_keys (tenant, created_at, id);
"""

# v6: lists by type (key memory, the newest summaries, a session's turns) read only their
# rows instead of a sequential scan of the table (10 ms per list at 10k records).
_V6_TYPE_INDEXES = """
CREATE INDEX records_type ON records (tenant, "user", type, observed_at, seq);
CREATE INDEX records_session_type ON records (tenant, "user", session, type, observed_at, seq);
"""

# v7 (issue 7 item 7): history keeps reverse deltas (sqlite/history.py, over the SQLite row
# form), as SQLite does, instead of a full copy of the record per version.
_V7_HISTORY_DDL = """
CREATE TABLE record_history (
    seq BIGINT NOT NULL REFERENCES records (seq) ON DELETE CASCADE,
    version INTEGER NOT NULL, delta BYTEA NOT NULL, PRIMARY KEY (seq, version)
)
"""


async def _v7_history_deltas(cur: psycopg.AsyncCursor[tuple[object, ...]]) -> None:
    """Turn every record's full copies into reverse deltas, newest first, then drop them."""
    from memstrata.store.sqlite.history import encode_delta, reverse_delta

    await cur.execute(_V7_HISTORY_DDL.encode())
    cols = ", ".join(f'"{c}"' if c == "user" else c for c in COLUMNS)
    await cur.execute(b'SELECT DISTINCT tenant, "user", id FROM record_versions ORDER BY 1, 2, 3')
    for tenant, user, record_id in await cur.fetchall():
        await cur.execute(
            f'SELECT seq, {cols} FROM records WHERE tenant = %s AND "user" = %s '
            "AND id = %s".encode(),
            (tenant, user, record_id),
        )
        current = await cur.fetchone()
        if current is None:  # an orphan version (cannot happen through the API): drop it
            continue
        seq, newer = current[0], dict(zip(COLUMNS, current[1:], strict=True))
        await cur.execute(
            f'SELECT {cols} FROM record_versions WHERE tenant = %s AND "user" = %s '
            "AND id = %s ORDER BY version DESC".encode(),
            (tenant, user, record_id),
        )
        for row in await cur.fetchall():
            old = dict(zip(COLUMNS, row, strict=True))
            await cur.execute(
                b"INSERT INTO record_history (seq, version, delta) VALUES (%s, %s, %s)",
                (seq, old["version"], encode_delta(reverse_delta(old, newer))),
            )
            newer = old
    await cur.execute(b"DROP TABLE record_versions")


# v8: a posting carries its record's length, so a search ranks the postings alone and reads
# only the best ones' records (lexical.py; reading every match's record was 77% of a search
# with 2,000+ matches), and the primary key covers what the ranking reads (tf, len): an
# index-only scan instead of one heap page per posting (postings scan 12 ms -> 0.9 ms for
# 2,789 postings, EXPLAIN ANALYZE at 10k records).
_V8_POSTING_LENGTH = """
ALTER TABLE lex_postings ADD COLUMN len INTEGER NOT NULL DEFAULT 1;
UPDATE lex_postings p SET len = r.lex_len FROM records r WHERE r.seq = p.seq;
ALTER TABLE lex_postings ALTER COLUMN len DROP DEFAULT;
ALTER TABLE lex_postings DROP CONSTRAINT lex_postings_pkey,
    ADD CONSTRAINT lex_postings_pkey PRIMARY KEY (scope_tok, token, seq) INCLUDE (tf, len);
"""


# v9 (tenant isolation): the lexical statistics are each tenant's own, as each tenant has
# its own FTS5 table on SQLite (lexical.py): a tenant's BM25 scores never move with what
# other tenants store. Recounted from the postings and the records they index.
_V9_TENANT_STATISTICS = f"""
DROP TABLE lex_df;
DROP TABLE lex_stats;
CREATE TABLE lex_df (
    tenant {_T} NOT NULL, token {_T} NOT NULL, slot SMALLINT NOT NULL, df BIGINT NOT NULL,
    PRIMARY KEY (tenant, token, slot)
);
CREATE TABLE lex_stats (
    tenant {_T} NOT NULL, slot SMALLINT NOT NULL, docs BIGINT NOT NULL, tokens BIGINT NOT NULL,
    PRIMARY KEY (tenant, slot)
);
INSERT INTO lex_stats (tenant, slot, docs, tokens)
    SELECT tenant, 0, count(*), sum(lex_len) FROM records GROUP BY tenant;
INSERT INTO lex_df (tenant, token, slot, df)
    SELECT r.tenant, p.token, 0, count(*) FROM lex_postings p JOIN records r ON r.seq = p.seq
    GROUP BY r.tenant, p.token;
"""


# v10: a search reads the postings by an index-only scan, which visits the heap for every
# posting on a page the visibility map does not mark all-visible: the pages written since
# the table was last vacuumed. Autovacuum's default waits for inserts of 20% of the table
# (25k postings at 10k records), and until then each search read them from the heap: with
# 201 of a 10k-record user's 1,129 postings pages not all-visible, a search's statement made
# 1,852 heap fetches for its 4,608 postings and ran 7.7 ms (EXPLAIN ANALYZE), against 2.3 ms
# for 3,000 postings with none. Vacuuming after 1% (an insert-only table: only the new
# pages are visited) keeps them index-only.
_V10_POSTINGS_VACUUM = """
ALTER TABLE lex_postings SET (autovacuum_vacuum_insert_threshold = 1000,
    autovacuum_vacuum_insert_scale_factor = 0.01);
"""


async def _v11_reterm(cur: psycopg.AsyncCursor[tuple[object, ...]]) -> None:
    """v11 (terms in every language, :mod:`memstrata.search.scripts`): the records whose
    ``lex_tokens`` hold Hangul, kana, a space-less script or a letter that may carry marks
    get the tokens of the terms :func:`memstrata.search.reterm.reterm` makes; their
    postings and their tenants' statistics are replaced (``lexical.index`` with ``old``),
    in this migration's one transaction. Other records are only read."""
    from memstrata.search.scripts import may_change
    from memstrata.search.tokenize import tokenize_v10, tokenize_v14

    await _reterm(
        cur,
        b"SELECT seq, lex_tokens FROM records WHERE seq > %s ORDER BY seq LIMIT 5000",
        lambda row: may_change(" ".join(cast(list[str], row[1]))),
        old=tokenize_v10,
        new=tokenize_v14,
    )


async def _v17_fold(cur: psycopg.AsyncCursor[tuple[object, ...]]) -> None:
    """v17 (accent-insensitive terms, :func:`memstrata.search.scripts.fold`): the records
    whose ``lex_tokens`` or text hold a Latin or Greek letter with diacritics (or a mark
    after one) get the tokens of the terms :func:`memstrata.search.tokenize.tokenize`
    makes now, as v11 did for its scripts. Rows whose text and tokens are both ASCII (all
    of an English store) are passed over by the server, never sent."""
    from memstrata.search.scripts import may_fold
    from memstrata.search.tokenize import tokenize, tokenize_v14

    tokens = b"array_to_string(lex_tokens, ' ')"
    await _reterm(
        cur,
        b"SELECT seq, lex_tokens, raw FROM records WHERE seq > %s AND (octet_length(raw) "
        b"<> char_length(raw) OR octet_length("
        + tokens
        + b") <> char_length("
        + tokens
        + b")) ORDER BY seq LIMIT 5000",
        lambda row: may_fold(" ".join(cast(list[str], row[1]))) or may_fold(str(row[2])),
        old=tokenize_v14,
        new=tokenize,
        fold_strays=True,
    )


async def _reterm(
    cur: psycopg.AsyncCursor[tuple[object, ...]],
    batches: bytes,
    pick: Callable[[tuple[object, ...]], bool],
    *,
    old: Callable[[str], list[str]],
    new: Callable[[str], list[str]],
    fold_strays: bool = False,
) -> None:
    """Re-term the records ``pick`` chooses among the rows of ``batches`` (``seq`` first,
    read 5,000 at a time after the last one): :func:`memstrata.search.reterm.reterm_steps`
    (SQLite's loop too) from the ``old`` tokenizer's terms to the ``new`` one's, replies'
    question terms included; their postings and their tenants' statistics are replaced."""
    from memstrata._async.store.postgres import lexical
    from memstrata.search import reterm as rt
    from memstrata.store import fts5
    from memstrata.store.sqlite.codec import scope_token

    steps = rt.reterm_steps(pick, old=old, new=new, fold_strays=fold_strays)
    answer: object = None
    while (step := rt.next_step(steps, answer)) is not None:
        answer = None
        if isinstance(step, rt.Batch):
            await cur.execute(batches, (step.last,))
            answer = await cur.fetchall()
        elif isinstance(step, rt.Rows):
            await cur.execute(
                b'SELECT seq, tenant, "user", session, type, observed_at, raw, lex_tokens '
                b"FROM records WHERE seq = ANY(%s) ORDER BY seq",
                (step.seqs,),
            )
            answer = [
                rt.Row(
                    cast(int, row[0]),
                    str(row[1]),
                    str(row[2]),
                    row[4] == "message",
                    str(row[6]),
                    list(cast(list[str], row[7])),
                    row,
                )
                for row in await cur.fetchall()
            ]
        elif isinstance(step, rt.Befores):
            answer = await _turns_before(cur, [r.seq for r in step.rows])
        else:
            olds: list[lexical.Doc] = []
            news: list[lexical.Doc] = []
            rows: list[tuple[list[str], int, int]] = []
            for r, made in step.made:
                doc = fts5.document_tokens(made)
                if doc == r.tokens:
                    continue
                rows.append((doc, len(doc) + 1, r.seq))
                tok = scope_token(r.tenant, r.user)
                olds.append((r.seq, r.tenant, tok, r.tokens))
                news.append((r.seq, r.tenant, tok, doc))
            if news:
                await cur.executemany(  # one pipelined round trip, not one per record
                    b"UPDATE records SET lex_tokens = %s, lex_len = %s WHERE seq = %s", rows
                )
                await lexical.index(cur.connection, news, old=olds, keep_public=False)


async def _turns_before(
    cur: psycopg.AsyncCursor[tuple[object, ...]], seqs: list[int]
) -> dict[object, list[str]]:
    """For each record of ``seqs``, the texts of the messages that may be the turn it
    answers, likeliest first: the session's message before it by time (what a write
    reads), then by insertion. One query for the batch."""
    same = (
        b'p.tenant = r.tenant AND p."user" = r."user" '
        b"AND p.session IS NOT DISTINCT FROM r.session AND p.type = 'message'"
    )
    await cur.execute(
        b"SELECT r.seq, (SELECT p.raw FROM records p WHERE "
        + same
        + b" AND (p.observed_at, p.seq) < (r.observed_at, r.seq)"
        b" ORDER BY p.observed_at DESC, p.seq DESC LIMIT 1),"
        b" (SELECT p.raw FROM records p WHERE "
        + same
        + b" AND p.seq < r.seq ORDER BY p.seq DESC LIMIT 1)"
        b" FROM records r WHERE r.seq = ANY(%s)",
        (seqs,),
    )
    return {
        seq: [str(t) for t in (by_time, by_seq) if t is not None]
        for seq, by_time, by_seq in await cur.fetchall()
    }


# v12 (IF NOT EXISTS: tests turn new files into older ones without dropping them): a
# fact's key and a document's qa_id, read by index (store.key_versions: the first
# version of a key made after deletes read every version of it). ``metadata::json`` cannot
# read a ``\u0000`` escape (a NUL in any value), and an index expression that fails would
# refuse the insert: an unescaped one is read as ``\u0001`` first (the query checks the
# exact text too, where.key_sql, which repeats these expressions word for word). With
# ``seq`` in the index, the last record of a name is one step of a backward scan.
_NAME_JSON = f"{nul_read_as('metadata', 'u0001')}::json"
_V12_NAME_INDEXES = "".join(
    f"""
CREATE INDEX IF NOT EXISTS records_{short}_key ON records
(tenant, "user", ({_NAME_JSON} ->> '{field}'), seq)
WHERE type = '{kind}' AND json_typeof({_NAME_JSON} -> '{field}') = 'string';
CREATE INDEX IF NOT EXISTS records_{short}_live ON records
(tenant, "user", ({_NAME_JSON} ->> '{field}'))
WHERE type = '{kind}' AND json_typeof({_NAME_JSON} -> '{field}') = 'string'
AND status = 'active' AND superseded_by IS NULL;
"""
    for short, kind, field in (("fact", "fact", "key"), ("doc", "knowledge", "qa_id"))
)

# v13: search queries' vectors are no longer cached in the store (embedder/cache.py: a read
# writes nothing, and the table does not grow with every new question); the entries that
# earlier versions wrote are dropped. Passages' keys are content hashes, never "q:...".
_V13_NO_QUERY_VECTORS = "DELETE FROM embedding_cache WHERE starts_with(key, 'q:');"

# v14: a user's records by text (an add's exact-duplicate check, a purge's cache cleanup)
# read by (tenant, user, content_hash, seq): the first one by one index step (SQLite reads
# (tenant, user, content_hash) since its v3). The index on the hash
# alone read every user's row of a common text: with 100,000 other users holding "ok
# thanks", one user's check took 31 ms instead of 0.2. Building it holds writes to the
# table for as long as it takes (a few seconds per million records).
_V14_USER_HASH_INDEX = """
DROP INDEX IF EXISTS records_hash;
CREATE INDEX records_hash ON records (tenant, "user", content_hash, seq);
"""

# v15: a passage's vector is kept once. The cache entry an add's text was embedded into
# moves into the record's vector row when they hold the same vector (``own``, as SQLite's
# ``vectors.own``), and the cache finds it through the record: the table held every
# message's vector twice (2,239 of 12,190 bytes per message at 384 dims).
_V15_OWN_VECTORS = (
    "ALTER TABLE vectors ADD COLUMN IF NOT EXISTS own BOOLEAN NOT NULL DEFAULT false;"
)


# v18: the counts that data or use drive past 2**31 - 1 (an imported record's version or
# access count, a job's attempts) are BIGINT, as SQLite's INTEGER is: at INTEGER, a record
# imported at version 2**31 - 1 could not be deleted nor its access counted ("integer out of
# range"). Each ALTER rewrites its table and rebuilds its indexes (record_history's primary
# key holds version), holding every read and write of it until done: 2.6 s at 100,000
# records of ~400 characters, 169 MB (docs/measurements.md, session 27); the other
# processes on the database wait that long. It runs in the migration's one transaction, so
# a process killed in the middle leaves the INTEGER columns and version 17 as they were, and
# the next open does it all again. USING is not needed (int4 to int8 is an implicit cast).
_V18_BIGINT_COUNTS = """
ALTER TABLE records ALTER COLUMN version TYPE BIGINT, ALTER COLUMN access_count TYPE BIGINT;
ALTER TABLE record_history ALTER COLUMN version TYPE BIGINT;
ALTER TABLE jobs ALTER COLUMN attempts TYPE BIGINT;
"""

# v19: a whole-user purge also takes the user out of the readers other users' set_access
# events list (audit.redact_reader). The log stays append-only but for two updates: v3's
# redaction of the purged user's own events, and this one, allowed only while the purge's
# transaction has set memstrata.redact_reader (SET LOCAL) to the reader: the row's other
# columns unchanged, ``details`` the same but for ``allowed_users``, which is the old list
# without exactly that reader.
_V19_AUDIT_REDACT_READER = """
CREATE OR REPLACE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  reader TEXT := current_setting('memstrata.redact_reader', true);
BEGIN
  IF TG_OP = 'UPDATE' AND NEW.seq = OLD.seq AND NEW.id = OLD.id
     AND NEW.tenant = OLD.tenant AND NEW.action = OLD.action AND NEW.at = OLD.at
     AND NEW.policy IS NOT DISTINCT FROM OLD.policy
     AND NEW.score IS NOT DISTINCT FROM OLD.score THEN
    IF NEW."user" IS NULL AND NEW.record_ids = '{}' AND NEW.reason = '[purged]'
       AND NEW.details = '{}' AND NEW.actor IN (OLD.actor, '[purged]') THEN
      RETURN NEW;
    END IF;
    IF coalesce(reader, '') <> '' AND NEW.action = 'set_access'
       AND NEW."user" IS NOT DISTINCT FROM OLD."user" AND NEW.actor = OLD.actor
       AND NEW.record_ids = OLD.record_ids
       AND NEW.reason IS NOT DISTINCT FROM OLD.reason
       AND (NEW.details::jsonb - 'allowed_users') = (OLD.details::jsonb - 'allowed_users')
       AND OLD.details::jsonb -> 'allowed_users' @> jsonb_build_array(reader)
       AND NEW.details::jsonb -> 'allowed_users' = (
         SELECT coalesce(jsonb_agg(v ORDER BY o), '[]'::jsonb)
         FROM jsonb_array_elements(OLD.details::jsonb -> 'allowed_users')
              WITH ORDINALITY AS a(v, o)
         WHERE v <> to_jsonb(reader)) THEN
      RETURN NEW;
    END IF;
  END IF;
  RAISE EXCEPTION 'audit_log is append-only';
END $$;
"""


# v20: the index of readers (store/purged_reader.py; SQLite's v16): a whole-user purge reads
# what was shared with the user, not every record and history delta of the tenant.
# record_readers holds (tenant, reader, user, id) for every record of which a version, or a
# set_access event of its owner, names the reader. The trigger adds the rows of every
# current row written (an INSERT, a COPY, an UPDATE of access), in the statement that
# writes it, unless its allowed_users is empty (the WHEN clause: no function call); versions
# written as deltas and loaded events add theirs (dump.add_readers). Filled here from the
# current rows, the set_access events and every earlier version (_v20_readers). The partial
# index finds the owner's set_access events of one record; audit_log_user the purged user's
# own events (the redaction read the tenant's whole log by audit_log_tenant_at). A reader id
# holding NUL (stored before session 20 refused it: ``\u0000`` in the JSON text, which
# jsonb refuses) is not indexed: no user can have that id, nor be purged by it. IF NOT
# EXISTS: tests turn a new schema into an older one without dropping what later steps made.
_V20_READERS = f"""
CREATE TABLE IF NOT EXISTS record_readers (
    tenant {_T} NOT NULL, reader {_T} NOT NULL, "user" {_T} NOT NULL, id {_T} NOT NULL,
    PRIMARY KEY (tenant, reader, "user", id)
);
CREATE INDEX IF NOT EXISTS record_readers_owner ON record_readers (tenant, "user");
CREATE INDEX IF NOT EXISTS audit_log_set_access ON audit_log (tenant, "user", record_ids)
WHERE action = 'set_access';
CREATE INDEX IF NOT EXISTS audit_log_user ON audit_log (tenant, "user");
CREATE OR REPLACE FUNCTION record_readers_add() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO record_readers (tenant, reader, "user", id)
  SELECT NEW.tenant, r, NEW."user", NEW.id
  FROM jsonb_array_elements_text(NEW.access::jsonb -> 'allowed_users') AS r
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS record_readers_insert ON records;
CREATE TRIGGER record_readers_insert AFTER INSERT ON records FOR EACH ROW
WHEN (strpos(NEW.access, '"allowed_users":[]') = 0 AND strpos(NEW.access, '\\u0000') = 0)
EXECUTE FUNCTION record_readers_add();
DROP TRIGGER IF EXISTS record_readers_update ON records;
CREATE TRIGGER record_readers_update AFTER UPDATE OF access ON records FOR EACH ROW
WHEN (strpos(NEW.access, '"allowed_users":[]') = 0 AND strpos(NEW.access, '\\u0000') = 0)
EXECUTE FUNCTION record_readers_add();
INSERT INTO record_readers (tenant, reader, "user", id)
SELECT r.tenant, u, r."user", r.id FROM records r,
LATERAL jsonb_array_elements_text(r.access::jsonb -> 'allowed_users') AS u
WHERE strpos(r.access, '"allowed_users":[]') = 0 AND strpos(r.access, '\\u0000') = 0
ON CONFLICT DO NOTHING;
INSERT INTO record_readers (tenant, reader, "user", id)
SELECT a.tenant, u, a."user", i FROM audit_log a,
LATERAL jsonb_array_elements_text(a.details::jsonb -> 'allowed_users') AS u,
LATERAL unnest(a.record_ids) AS i
WHERE a.action = 'set_access' AND a."user" IS NOT NULL AND strpos(a.details, '\\u0000') = 0
AND jsonb_typeof(a.details::jsonb -> 'allowed_users') = 'array' ON CONFLICT DO NOTHING;
"""


async def _v20_readers(cur: psycopg.AsyncCursor[tuple[object, ...]]) -> None:
    """v20: :data:`_V20_READERS`, then the readers of every earlier version (the deltas
    decoded, 500 records at a time)."""
    from memstrata.store.sqlite.history import apply_delta, decode_delta

    await cur.execute(_V20_READERS.encode())
    cols = ", ".join(f'"{c}"' if c == "user" else c for c in COLUMNS)
    last = 0
    while True:
        await cur.execute(
            b"SELECT DISTINCT seq FROM record_history WHERE seq > %s ORDER BY seq LIMIT 500",
            (last,),
        )
        seqs = [cast(int, r[0]) for r in await cur.fetchall()]
        if not seqs:
            break
        last = seqs[-1]
        await cur.execute(f"SELECT seq, {cols} FROM records WHERE seq = ANY(%s)".encode(), (seqs,))
        rows = {
            cast(int, r[0]): dict(zip(COLUMNS, r[1:], strict=True)) for r in await cur.fetchall()
        }
        await cur.execute(
            b"SELECT seq, delta FROM record_history WHERE seq = ANY(%s) ORDER BY seq, version DESC",
            (seqs,),
        )
        named: dict[tuple[str, str, str, str], None] = {}
        for seq, blob in await cur.fetchall():
            if seq not in rows:  # cannot happen: FK cascade
                continue
            row = rows[seq] = apply_delta(rows[seq], decode_delta(bytes(cast(bytes, blob))))
            for u in json.loads(str(row["access"])).get("allowed_users", ()):
                if "\x00" not in str(u):  # a legacy id (before session 20): no user's
                    named[(str(row["tenant"]), str(u), str(row["user"]), str(row["id"]))] = None
        if named:
            await cur.executemany(
                b'INSERT INTO record_readers (tenant, reader, "user", id) '
                b"VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                list(named),
            )


# v21 (session 28): what a whole-user purge still left.
# - Other users' audit events whose actor is the purged user (exactly: audit.redact_actor)
#   get '[purged]' as actor: a third update the log allows, while the purge's transaction
#   has set memstrata.redact_reader to that user, every other column unchanged; found by
#   audit_log_actor.
# - A record whose readers include a legacy id holding NUL (stored before session 20:
#   "\u0000" in the JSON text, which jsonb refuses) had none of its readers indexed (v20
#   skipped the whole row): record_readers_of() reads the others, exactly (each real
#   "\u0000" escape, one not itself escaped, is read once as U+FFFF and once as U+FFFE: an
#   id read alike both times holds no NUL), and this step indexes those rows and events.
# - A purge and a write naming its user race: the purge reads the index, a write adding a
#   row for that user commits after, and the record names the purged user. The trigger
#   takes a shared advisory lock of (schema, tenant, reader bucket) for each row it adds,
#   without waiting (pg_try_): a purge holding it (exclusive, its first statement, held to
#   its commit) refuses the write (40001: ConflictError, retry), and a purge waits for
#   the writes under way that added rows for its user, then reads them. Never waiting in
#   the trigger keeps the two from a deadlock (a writer holding a row the purge rewrites).
#   Readers fall in 1024 buckets per tenant: a transaction adding rows for many readers
#   (an import) takes at most 1024 locks; a write sharing with a reader of the purged
#   user's bucket, during the purge, is refused too.
_READERS_OF = r"""
CREATE OR REPLACE FUNCTION record_readers_of(doc TEXT) RETURNS SETOF TEXT
LANGUAGE sql IMMUTABLE AS $f$
  SELECT a.v FROM
  (SELECT regexp_replace(doc, '(?<!\\)((?:\\\\)*)\\u0000', '\1\\uffff', 'g')::jsonb
     -> 'allowed_users' AS x) AS m,
  (SELECT regexp_replace(doc, '(?<!\\)((?:\\\\)*)\\u0000', '\1\\ufffe', 'g')::jsonb
     -> 'allowed_users' AS x) AS n,
  jsonb_array_elements_text(CASE WHEN jsonb_typeof(m.x) = 'array' THEN m.x ELSE '[]' END)
    WITH ORDINALITY AS a(v, o)
  JOIN jsonb_array_elements_text(CASE WHEN jsonb_typeof(n.x) = 'array' THEN n.x ELSE '[]' END)
    WITH ORDINALITY AS b(v, o) USING (o)
  WHERE a.v = b.v
$f$;
CREATE OR REPLACE FUNCTION nul_safe_jsonb(doc TEXT, mark TEXT) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $f$
  SELECT CASE WHEN strpos(doc, '\u0000') = 0 THEN doc::jsonb
  ELSE regexp_replace(doc, '(?<!\\)((?:\\\\)*)\\u0000', '\1\\' || mark, 'g')::jsonb END
$f$;
CREATE OR REPLACE FUNCTION record_readers_key(t TEXT, r TEXT) RETURNS BIGINT
LANGUAGE sql STABLE AS $f$
  SELECT (hashtext(current_schema() || E'\n' || t)::bigint << 10) | (hashtext(r) & 1023)
$f$;
"""
_V21_PURGE_LEFTOVERS = (
    _READERS_OF
    + r"""
CREATE INDEX IF NOT EXISTS audit_log_actor ON audit_log (tenant, actor);
CREATE OR REPLACE FUNCTION record_readers_add() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
DECLARE
  r TEXT;
  readers TEXT[];
BEGIN
  IF strpos(NEW.access, '\u0000') = 0 THEN
    readers := ARRAY(SELECT jsonb_array_elements_text(NEW.access::jsonb -> 'allowed_users'));
  ELSE
    readers := ARRAY(SELECT record_readers_of(NEW.access));
  END IF;
  FOR r IN
    INSERT INTO record_readers (tenant, reader, "user", id)
    SELECT NEW.tenant, u, NEW."user", NEW.id FROM unnest(readers) AS u
    ON CONFLICT DO NOTHING RETURNING reader
  LOOP
    IF r <> NEW."user"
       AND NOT pg_try_advisory_xact_lock_shared(record_readers_key(NEW.tenant, r)) THEN
      RAISE EXCEPTION USING ERRCODE = '40001', MESSAGE = format(
        'a purge of a user of tenant %s is under way; record %s shares with a reader it '
        'may purge', NEW.tenant, NEW.id);
    END IF;
  END LOOP;
  RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS record_readers_insert ON records;
CREATE TRIGGER record_readers_insert AFTER INSERT ON records FOR EACH ROW
WHEN (strpos(NEW.access, '"allowed_users":[]') = 0)
EXECUTE FUNCTION record_readers_add();
DROP TRIGGER IF EXISTS record_readers_update ON records;
CREATE TRIGGER record_readers_update AFTER UPDATE OF access ON records FOR EACH ROW
WHEN (strpos(NEW.access, '"allowed_users":[]') = 0)
EXECUTE FUNCTION record_readers_add();
INSERT INTO record_readers (tenant, reader, "user", id)
SELECT r.tenant, u, r."user", r.id FROM records r, LATERAL record_readers_of(r.access) AS u
WHERE strpos(r.access, '\u0000') > 0 ON CONFLICT DO NOTHING;
INSERT INTO record_readers (tenant, reader, "user", id)
SELECT a.tenant, u, a."user", i FROM audit_log a,
LATERAL record_readers_of(a.details) AS u, LATERAL unnest(a.record_ids) AS i
WHERE a.action = 'set_access' AND a."user" IS NOT NULL AND strpos(a.details, '\u0000') > 0
ON CONFLICT DO NOTHING;
CREATE OR REPLACE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  reader TEXT := current_setting('memstrata.redact_reader', true);
  ok BOOLEAN;
  mark TEXT;
  o jsonb;
  n jsonb;
BEGIN
  IF TG_OP = 'UPDATE' AND NEW.seq = OLD.seq AND NEW.id = OLD.id
     AND NEW.tenant = OLD.tenant AND NEW.action = OLD.action AND NEW.at = OLD.at
     AND NEW.policy IS NOT DISTINCT FROM OLD.policy
     AND NEW.score IS NOT DISTINCT FROM OLD.score THEN
    IF NEW."user" IS NULL AND NEW.record_ids = '{}' AND NEW.reason = '[purged]'
       AND NEW.details = '{}' AND NEW.actor IN (OLD.actor, '[purged]') THEN
      RETURN NEW;
    END IF;
    IF coalesce(reader, '') <> '' AND NEW.actor = '[purged]' AND OLD.actor = reader
       AND NEW."user" IS NOT DISTINCT FROM OLD."user" AND NEW.record_ids = OLD.record_ids
       AND NEW.reason IS NOT DISTINCT FROM OLD.reason AND NEW.details = OLD.details THEN
      RETURN NEW;
    END IF;
    IF coalesce(reader, '') <> '' AND NEW.action = 'set_access'
       AND NEW."user" IS NOT DISTINCT FROM OLD."user" AND NEW.actor = OLD.actor
       AND NEW.record_ids = OLD.record_ids
       AND NEW.reason IS NOT DISTINCT FROM OLD.reason THEN
      -- details compared as JSON, a legacy NUL read once as U+FFFF, once as U+FFFE
      ok := true;
      FOREACH mark IN ARRAY ARRAY['uffff', 'ufffe'] LOOP
        o := nul_safe_jsonb(OLD.details, mark);
        n := nul_safe_jsonb(NEW.details, mark);
        IF ((n - 'allowed_users') = (o - 'allowed_users')
            AND o -> 'allowed_users' @> jsonb_build_array(reader)
            AND n -> 'allowed_users' = (
              SELECT coalesce(jsonb_agg(v ORDER BY i), '[]'::jsonb)
              FROM jsonb_array_elements(o -> 'allowed_users') WITH ORDINALITY AS a(v, i)
              WHERE v <> to_jsonb(reader))) IS NOT TRUE THEN
          ok := false;
        END IF;
      END LOOP;
      IF ok THEN
        RETURN NEW;
      END IF;
    END IF;
  END IF;
  RAISE EXCEPTION 'audit_log is append-only';
END $$;
"""
)


Step = str | Callable[[psycopg.AsyncCursor[tuple[object, ...]]], Awaitable[None]]  # async-only
# sync: Step = str | Callable[[psycopg.Cursor[tuple[object, ...]]], None]

# v22 (caller28): a caller's lexical statistics count the owner's public records and, for a
# caller with roles, those whose access lists roles (store/caller_bm25.py); this partial
# index finds them without reading every row of the owner (a seq scan of 10k records took
# ~5.6 ms per caller search). Only such records are in it: the owner's private and
# shared-by-name records, nearly all, cost nothing more to write.
_V22_SHARED_WIDE = """
CREATE INDEX IF NOT EXISTS records_shared_wide ON records (tenant, "user", seq)
WHERE visibility = 'public' OR strpos(access, '"allowed_roles":[]') = 0;
"""

# v23 (session 29): the purge's lock (v21) no longer refuses a write sharing with another
# user of the purged user's bucket, and a transaction sharing with many readers takes at most
# 64 advisory locks per tenant (v21: 1,024, past max_locks_per_transaction's default of 64).
# - A purge locks, exclusively and in this order, its user's own key (64 bits of a hash of
#   schema, tenant and user: record_readers_user_key) and their bucket (record_readers_bucket:
#   64 per tenant), then reads the index (record_readers_purge_lock).
# - The trigger takes, for each row it adds, the reader's bucket shared without waiting, as
#   before; when a purge holds it, the reader's own key shared without waiting: refused
#   (40001) only when that is held too, by a purge of that very reader (or one whose key
#   collides with theirs, 1 in 2**64). A write under way for the purged user holds one of
#   the two, and the purge waits for it; a later one holds neither and is refused. Neither
#   side waits for the other while holding rows; writers never wait at all.
# - record_readers_key(t, r), which a purge of a process opened before this step calls as
#   pg_advisory_xact_lock(record_readers_key(t, u)), takes the user's own key and returns
#   the bucket: that purge takes both locks, and a write during it is refused as above. A
#   purge already past that statement when this step commits holds only v21's bucket: a
#   write for its user after the commit is not refused (restart such processes first).
_V23_PURGE_LOCK = r"""
CREATE OR REPLACE FUNCTION record_readers_bucket(t TEXT, r TEXT) RETURNS BIGINT
LANGUAGE sql STABLE AS $f$
  SELECT (hashtext(current_schema() || E'\n' || t)::bigint << 10) | (hashtext(r) & 63)
$f$;
CREATE OR REPLACE FUNCTION record_readers_user_key(t TEXT, r TEXT) RETURNS BIGINT
LANGUAGE sql STABLE AS $f$
  SELECT hashtextextended(current_schema() || E'\n' || t || E'\n' || r, 29)
$f$;
CREATE OR REPLACE FUNCTION record_readers_purge_lock(t TEXT, u TEXT) RETURNS void
LANGUAGE plpgsql VOLATILE AS $f$
BEGIN
  PERFORM pg_advisory_xact_lock(record_readers_user_key(t, u));
  PERFORM pg_advisory_xact_lock(record_readers_bucket(t, u));
END $f$;
CREATE OR REPLACE FUNCTION record_readers_key(t TEXT, r TEXT) RETURNS BIGINT
LANGUAGE plpgsql VOLATILE AS $f$
BEGIN
  PERFORM pg_advisory_xact_lock(record_readers_user_key(t, r));
  RETURN record_readers_bucket(t, r);
END $f$;
CREATE OR REPLACE FUNCTION record_readers_add() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
DECLARE
  r TEXT;
  readers TEXT[];
BEGIN
  IF strpos(NEW.access, '\u0000') = 0 THEN
    readers := ARRAY(SELECT jsonb_array_elements_text(NEW.access::jsonb -> 'allowed_users'));
  ELSE
    readers := ARRAY(SELECT record_readers_of(NEW.access));
  END IF;
  FOR r IN
    INSERT INTO record_readers (tenant, reader, "user", id)
    SELECT NEW.tenant, u, NEW."user", NEW.id FROM unnest(readers) AS u
    ON CONFLICT DO NOTHING RETURNING reader
  LOOP
    IF r <> NEW."user"
       AND NOT pg_try_advisory_xact_lock_shared(record_readers_bucket(NEW.tenant, r))
       AND NOT pg_try_advisory_xact_lock_shared(record_readers_user_key(NEW.tenant, r)) THEN
      RAISE EXCEPTION USING ERRCODE = '40001', MESSAGE = format(
        'a purge of a user of tenant %s is under way; record %s shares with the user it '
        'purges', NEW.tenant, NEW.id);
    END IF;
  END LOOP;
  RETURN NULL;
END $$;
"""

# v24 (caller29): the public part of each user's memory indexed on its own, for a caller's
# statistics (store/postgres/lexical.py, "the public part"): its docs, rows per token and
# rows and length, kept by every write; built here for the records already stored.
_V24_PUBLIC = """
CREATE TABLE IF NOT EXISTS lex_public (
    seq BIGINT PRIMARY KEY, owner_tok TEXT NOT NULL, tokens TEXT[] NOT NULL
);
CREATE INDEX IF NOT EXISTS lex_public_owner ON lex_public (owner_tok);
CREATE TABLE IF NOT EXISTS lex_public_df (
    owner_tok TEXT NOT NULL, token TEXT NOT NULL, slot INTEGER NOT NULL, df BIGINT NOT NULL,
    PRIMARY KEY (owner_tok, token, slot)
);
CREATE TABLE IF NOT EXISTS lex_public_stats (
    owner_tok TEXT NOT NULL, slot INTEGER NOT NULL, docs BIGINT NOT NULL,
    tokens BIGINT NOT NULL, PRIMARY KEY (owner_tok, slot)
);
"""


async def _v24_public(cur: psycopg.AsyncCursor[tuple[object, ...]]) -> None:
    """v24: :data:`_V24_PUBLIC`, then every active public record's doc."""
    from memstrata._async.store.postgres import lexical

    await cur.execute(_V24_PUBLIC.encode())
    await lexical.rebuild_public(cur.connection)
    # statistics for the planner now: until autovacuum's first ANALYZE of the new tables a
    # caller's first searches took 70-90 ms at 10k public records instead of 2
    await cur.execute(b"ANALYZE lex_public, lex_public_df, lex_public_stats, lex_postings")


# v25 (role29): a caller with roles reads the owner's records whose access lists roles and
# that are not public; step 22's index holds the public ones too, so that caller's search
# read every public record of the owner (heap included, to drop it): 7-15 ms at 10k public
# records against 1.2-1.7 at 10k private ones. This one holds the role-shared records only
# (its condition is the caller's, written out in lexical.py for the planner to prove).
_V25_SHARED_ROLES = """
CREATE INDEX IF NOT EXISTS records_shared_roles ON records (tenant, "user", seq)
WHERE visibility != 'public' AND strpos(access, '"allowed_roles":[]') = 0;
"""


# v26 (caller30): a caller's ``list`` walks the owner's public records in the listing's
# order through this index, not the owner's rows (store/postgres/where.py, records_from;
# before, it walked the owner's rows until its page was full: 24 ms for 100 of 10k notes
# mostly private); only public records are in it. Step 22's index is no longer read by any
# statement (step 24's public part and step 25's role index took its two readers'
# places): it is dropped, so a record shared with roles costs its owner one index less to
# write. (purgeidx27's test of an older store drops it IF EXISTS, then runs step 22 again.)
_V26_PUBLIC_OBSERVED = """
CREATE INDEX IF NOT EXISTS records_public_observed ON records (tenant, "user", observed_at, seq)
WHERE visibility = 'public';
DROP INDEX IF EXISTS records_shared_wide;
"""


# v27 (reterm30): every turn's reply terms by today's rule. A turn's "turn before" is the
# message listed just before it (time, then seq) in its session, or without a session among
# the user's messages: one indexed step back a turn (records_session_type, records_type;
# each lateral's condition on the turn's session is a one-time filter, so only one runs).
_V27_BEFORE = (
    "SELECT p.session, p.created_at, p.raw, p.status FROM records p WHERE p.tenant = r.tenant "
    'AND p."user" = r."user" AND {same} AND p.type = \'message\' '
    "AND (p.observed_at, p.seq) < (r.observed_at, r.seq) "
    "ORDER BY p.observed_at DESC, p.seq DESC LIMIT 1"
)
_V27_TURNS = (
    'SELECT r.seq, r.tenant, r."user", r.session, r.created_at, r.raw, r.status, '
    "r.lex_tokens, coalesce(s.session, u.session), coalesce(s.created_at, u.created_at), "
    "coalesce(s.raw, u.raw), coalesce(s.status, u.status) FROM (SELECT * FROM records "
    "WHERE seq > %s AND type = 'message' ORDER BY seq LIMIT %s) r LEFT JOIN LATERAL ("
    + _V27_BEFORE.format(same="r.session IS NOT NULL AND p.session = r.session")
    + ") s ON true LEFT JOIN LATERAL ("
    + _V27_BEFORE.format(same="r.session IS NULL")
    + ") u ON true ORDER BY r.seq"
).encode()


async def _v27_replies(cur: psycopg.AsyncCursor[tuple[object, ...]]) -> None:
    """v27 (reterm30): every turn indexed under the tokens of the terms
    :func:`memstrata.search.reterm.turn_terms` gives it by today's rule of "the turn
    before" (session 29's; a store written before may hold a reply indexed under a
    question of its call listed elsewhere, which a purge of that question no longer
    reaches). Read :data:`memstrata.search.reterm.PART` turns at a time, each with the
    turn listed before it; only those whose ``lex_tokens`` differ are written, their
    postings and tenants' statistics replaced (a schema written since changes nothing).
    A turn's public doc holds its own terms only: left as it is."""
    from memstrata._async.store.postgres import lexical
    from memstrata.search import reterm as rt
    from memstrata.store import fts5
    from memstrata.store.sqlite.codec import scope_token

    last = 0
    while True:
        await cur.execute(_V27_TURNS, (last, rt.PART))
        rows = await cur.fetchall()
        if not rows:
            return
        last = cast(int, rows[-1][0])
        olds: list[lexical.Doc] = []
        news: list[lexical.Doc] = []
        updates: list[tuple[list[str], int, int]] = []
        for seq, tenant, user, session, created, raw, status, tokens, *before in rows:
            p_session, p_created, p_raw, p_status = before
            made = rt.turn_terms(
                rt.Turn(cast(str | None, session), created, str(raw), status == "active"),
                None
                if p_raw is None
                else rt.Turn(
                    cast(str | None, p_session), p_created, str(p_raw), p_status == "active"
                ),
            )
            doc = fts5.document_tokens(made)
            had = list(cast(list[str], tokens))
            if doc == had:
                continue
            s = cast(int, seq)
            tok = scope_token(str(tenant), str(user))
            updates.append((doc, len(doc) + 1, s))
            olds.append((s, str(tenant), tok, had))
            news.append((s, str(tenant), tok, doc))
        if news:
            await cur.executemany(  # one pipelined round trip, not one per turn
                b"UPDATE records SET lex_tokens = %s, lex_len = %s WHERE seq = %s", updates
            )
            await lexical.index(cur.connection, news, old=olds, keep_public=False)


# v28 (purge31): the records citing given ids, by index (store/citations.py): a purge by
# ids reads the records citing what it purges (``citing``), not every record of the user.
# ``cited_ids`` is citations.cited in SQL (lax paths: a missing or odd field gives nothing;
# a superset is checked again by its readers); a GIN index on it, turns left out, with
# no pending list (fastupdate: a look-up would read every entry not yet merged, as many
# as the writes since the last vacuum; EXPLAIN showed 129 of them for 4 rows).
_V28_CITED = r"""
CREATE OR REPLACE FUNCTION cited_ids(ty TEXT, s TEXT, st TEXT, sup TEXT) RETURNS TEXT[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $f$
  SELECT CASE WHEN ty = 'message' THEN '{}'::text[] ELSE ARRAY(
    SELECT DISTINCT v #>> '{}' FROM (
      SELECT jsonb_path_query(s::jsonb, 'lax $[*]') AS v
      UNION ALL SELECT jsonb_path_query(st::jsonb, 'lax $.members[*]')
      UNION ALL SELECT jsonb_path_query(st::jsonb, 'lax $.conflicts[*].source_ids[*]')
      UNION ALL SELECT to_jsonb(sup) WHERE ty = 'fact' AND sup IS NOT NULL
    ) q WHERE jsonb_typeof(v) IN ('string', 'number')) END
$f$;
CREATE INDEX IF NOT EXISTS records_cited ON records
USING gin (cited_ids(type, source_ids, structured, superseded_by)) WITH (fastupdate = off)
WHERE type <> 'message';
"""


# v29 (purge31b): the records naming given ids in a link field, by index: a store purge by
# ids rewrites the user's records whose current version names a purged one in a link
# (``superseded_by``, ``structured`` ``replaces``/``carries_out``/``promoted_key``/
# ``episode_id``, ``metadata`` ``cluster_id`` and a refreshed note's ``dropped_sources``,
# a relation's target: store/purged_reader.py ``link_fix``) or holding a refreshed note
# (an archived note may name one), found by a scan of the user's rows before. A GIN index
# on ``linked_ids`` (those fields, lax paths) over the rows that may hold one (the scan's
# filter, so no turn gets an entry), no pending list (as v28); a partial index of the
# records holding a refreshed note.
LINKED_ROWS = (
    "(superseded_by IS NOT NULL OR relations <> '[]' "
    "OR strpos(structured, '\"replaces\"') > 0 "
    "OR strpos(structured, '\"carries_out\"') > 0 "
    "OR strpos(structured, '\"promoted_key\"') > 0 "
    "OR strpos(structured, '\"episode_id\"') > 0 "
    "OR strpos(metadata, '\"cluster_id\"') > 0 "
    "OR strpos(metadata, '\"dropped_sources\"') > 0)"
)
NOTED_ROWS = "strpos(metadata, '\"dropped_sources\"') > 0"
_V29_LINKED = (
    r"""
CREATE OR REPLACE FUNCTION linked_ids(st TEXT, m TEXT, rel TEXT, sup TEXT) RETURNS TEXT[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $f$
  SELECT ARRAY(
    SELECT DISTINCT v #>> '{}' FROM (
      SELECT jsonb_path_query(st::jsonb, 'lax $.replaces') AS v
      UNION ALL SELECT jsonb_path_query(st::jsonb, 'lax $.carries_out')
      UNION ALL SELECT jsonb_path_query(st::jsonb, 'lax $.promoted_key')
      UNION ALL SELECT jsonb_path_query(st::jsonb, 'lax $.episode_id')
      UNION ALL SELECT jsonb_path_query(m::jsonb, 'lax $.cluster_id')
      UNION ALL SELECT jsonb_path_query(m::jsonb, 'lax $.refreshed.dropped_sources[*]')
      UNION ALL SELECT jsonb_path_query(rel::jsonb, 'lax $[*][1]')
      UNION ALL SELECT to_jsonb(sup) WHERE sup IS NOT NULL
    ) q WHERE jsonb_typeof(v) = 'string')
$f$;
CREATE INDEX IF NOT EXISTS records_linked ON records
USING gin (linked_ids(structured, metadata, relations, superseded_by)) WITH (fastupdate = off)
WHERE """
    + LINKED_ROWS
    + """;
CREATE INDEX IF NOT EXISTS records_noted ON records (tenant, "user") WHERE """
    + NOTED_ROWS
    + """;
"""
)

# v30: done jobs by the time they were due, for the retention ``maintain`` sweeps
# (outbox.sweep_done; jobs32): it reads the jobs it deletes, not the table. On an upgrade
# it is built CONCURRENTLY before the migration's transaction (:data:`CONCURRENT`, pg33):
# built inside it, it held every write to ``jobs`` until that transaction committed. The
# step itself builds it only where that did not (a fresh store, an empty table), and
# builds again one left invalid by a build that was interrupted.
_JOBS_DONE = "jobs_done ON {}jobs (run_after) WHERE status = 'done'"
_V30_DONE_JOBS = (
    """
DO $f$ BEGIN
  IF EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
             WHERE c.oid = to_regclass('jobs_done') AND NOT i.indisvalid) THEN
    DROP INDEX jobs_done;
  END IF;
END $f$;
CREATE INDEX IF NOT EXISTS """
    + _JOBS_DONE.format("")
    + ";\n"
)


async def _v31_past_links(cur: psycopg.AsyncCursor[tuple[object, ...]]) -> None:
    """v31 (pg32): ``record_past_links``, its trigger, then the ids of every version
    archived before it (backfill.py: what an upgrade's pre-fill did not read, or every
    history)."""
    await cur.execute(backfill.DDL.encode())
    if not await backfill.catch_up(cur):
        await backfill.fill(cur)


# v32 (pg32): a word of 1,000-2,650 bytes written before session 31's bound (fts5.bounded:
# wider ones were refused) is indexed whole, while a query asks for its bounded token: such
# a record was not found by that word until written again. Its lex_tokens and postings
# take the bounded token (bounded.py: made before the transaction on an upgrade from 29-31,
# pg34; here, the rows written since, or every row).
async def _v32_bounded_words(cur: psycopg.AsyncCursor[tuple[object, ...]]) -> None:
    await bounded.bound_words(cur)


# v33 (pg33): step 31's trigger inserted every id of the version an update archives (a
# cluster's every member at each of its updates, each an index probe of ``ON CONFLICT``).
# Now only those the update drops from the record's current version: one the current
# version still names is found by records_linked or records_cited (a purge reads those
# too), and is inserted when an update drops it. A turn's current version is not in
# records_cited: a turn's archived ids are all kept, as before. So ``record_past_links`` of
# a record and the ids of its current version hold every id its archived versions name
# (tests/pg33/test_past_links_property.py).
_V33_PAST_LINKS_DROPPED = """
CREATE OR REPLACE FUNCTION record_past_links_keep() RETURNS trigger LANGUAGE plpgsql AS $f$
DECLARE
  kept TEXT[] := '{}';
BEGIN
  IF NEW.type <> 'message' THEN
    kept := linked_ids(NEW.structured, NEW.metadata, NEW.relations, NEW.superseded_by)
      || cited_ids(NEW.type, NEW.source_ids, NEW.structured, NEW.superseded_by);
  END IF;
  INSERT INTO record_past_links (id, seq)
  SELECT i, OLD.seq FROM (
    SELECT unnest(linked_ids(OLD.structured, OLD.metadata, OLD.relations, OLD.superseded_by))
    UNION SELECT v #>> '{}' FROM jsonb_path_query(OLD.source_ids::jsonb, 'lax $[*]') v
      WHERE jsonb_typeof(v) = 'string'
    UNION SELECT v #>> '{}' FROM jsonb_path_query(OLD.structured::jsonb, 'lax $.members[*]') v
      WHERE jsonb_typeof(v) = 'string'
    EXCEPT SELECT unnest(kept)
  ) q (i) WHERE i <> '[purged]' AND i <> OLD.id
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END $f$;
"""


# v34 (nul33): a note whose metadata (or structured, or relations) holds a NUL, kept as a
# "\u0000" escape in the JSON text (jsonb refuses one: SQLSTATE 22P05), was refused on
# PostgreSQL as soon as it entered records_linked (a relation, a merge) or step 33's
# trigger read it. The functions of those indexes and that trigger now read each real
# "\u0000" escape (one not itself escaped: an even run of backslashes before it) as U+FFFD,
# as nul_safe_jsonb (v21) does, but with built-ins only: an index's function is also run
# where the store's search_path is not set: PostgreSQL 17 and later run VACUUM, ANALYZE
# and CREATE INDEX with search_path "pg_catalog, pg_temp" (calling nul_safe_jsonb,
# tests/purge31's and purge31b's upgrade tests, an ANALYZE, failed on PostgreSQL 18.4:
# "function nul_safe_jsonb(text, unknown) does not exist ... during inlining"). An id never
# holds a NUL, so the ids extracted are those of the text; a NUL in a user's link field
# gives its text with U+FFFD in its place (an index answer is a superset its readers check
# again). cited_ids of a turn casts nothing, under either definition.
# Redefining the IMMUTABLE index functions needs no REINDEX: a row already in either index
# had every cast of its fields succeed, so its text holds no real "\u0000" escape, the
# replace leaves it as it is (a text without "\u0000" is not even read by it), and the
# function gives it the ids it gave before (tests/nul33/test_upgrade.py: a store upgraded
# from 33 gives the same ids for every row, and a purge by ids reads the index as before).
_NUL_SAFE = (
    r"(CASE WHEN strpos(@, '\u0000') = 0 THEN @ ELSE "
    r"regexp_replace(@, '(?<!\\)((?:\\\\)*)\\u0000', '\1\\ufffd', 'g') END)::jsonb"
)
_V34_NUL_SAFE = re.sub(
    r"NUL_SAFE\(([\w.]+)\)",
    lambda m: _NUL_SAFE.replace("@", m.group(1)),
    r"""
CREATE OR REPLACE FUNCTION cited_ids(ty TEXT, s TEXT, st TEXT, sup TEXT) RETURNS TEXT[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $f$
  SELECT CASE WHEN ty = 'message' THEN '{}'::text[] ELSE ARRAY(
    SELECT DISTINCT v #>> '{}' FROM (
      SELECT jsonb_path_query(NUL_SAFE(s), 'lax $[*]') AS v
      UNION ALL SELECT jsonb_path_query(NUL_SAFE(st), 'lax $.members[*]')
      UNION ALL SELECT jsonb_path_query(NUL_SAFE(st),
                                        'lax $.conflicts[*].source_ids[*]')
      UNION ALL SELECT to_jsonb(sup) WHERE ty = 'fact' AND sup IS NOT NULL
    ) q WHERE jsonb_typeof(v) IN ('string', 'number')) END
$f$;
CREATE OR REPLACE FUNCTION linked_ids(st TEXT, m TEXT, rel TEXT, sup TEXT) RETURNS TEXT[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $f$
  SELECT ARRAY(
    SELECT DISTINCT v #>> '{}' FROM (
      SELECT jsonb_path_query(NUL_SAFE(st), 'lax $.replaces') AS v
      UNION ALL SELECT jsonb_path_query(NUL_SAFE(st), 'lax $.carries_out')
      UNION ALL SELECT jsonb_path_query(NUL_SAFE(st), 'lax $.promoted_key')
      UNION ALL SELECT jsonb_path_query(NUL_SAFE(st), 'lax $.episode_id')
      UNION ALL SELECT jsonb_path_query(NUL_SAFE(m), 'lax $.cluster_id')
      UNION ALL SELECT jsonb_path_query(NUL_SAFE(m),
                                        'lax $.refreshed.dropped_sources[*]')
      UNION ALL SELECT jsonb_path_query(NUL_SAFE(rel), 'lax $[*][1]')
      UNION ALL SELECT to_jsonb(sup) WHERE sup IS NOT NULL
    ) q WHERE jsonb_typeof(v) = 'string')
$f$;
CREATE OR REPLACE FUNCTION record_past_links_keep() RETURNS trigger LANGUAGE plpgsql AS $f$
DECLARE
  kept TEXT[] := '{}';
BEGIN
  IF NEW.type <> 'message' THEN
    kept := linked_ids(NEW.structured, NEW.metadata, NEW.relations, NEW.superseded_by)
      || cited_ids(NEW.type, NEW.source_ids, NEW.structured, NEW.superseded_by);
  END IF;
  INSERT INTO record_past_links (id, seq)
  SELECT i, OLD.seq FROM (
    SELECT unnest(linked_ids(OLD.structured, OLD.metadata, OLD.relations, OLD.superseded_by))
    UNION SELECT v #>> '{}'
      FROM jsonb_path_query(NUL_SAFE(OLD.source_ids), 'lax $[*]') v
      WHERE jsonb_typeof(v) = 'string'
    UNION SELECT v #>> '{}'
      FROM jsonb_path_query(NUL_SAFE(OLD.structured), 'lax $.members[*]') v
      WHERE jsonb_typeof(v) = 'string'
    EXCEPT SELECT unnest(kept)
  ) q (i) WHERE i <> '[purged]' AND i <> OLD.id
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END $f$;
""",
)

MIGRATIONS: Final[list[tuple[int, Step]]] = [
    (1, _V1),
    (2, _V2_AUDIT),
    (3, _V3_AUDIT_REDACT),
    (4, _V4_JOB_LEASE_TOKEN),
    (5, _V5_API_KEYS),
    (6, _V6_TYPE_INDEXES),
    (7, _v7_history_deltas),
    (8, _V8_POSTING_LENGTH),
    (9, _V9_TENANT_STATISTICS),
    (10, _V10_POSTINGS_VACUUM),
    (11, _v11_reterm),
    (12, _V12_NAME_INDEXES),
    (13, _V13_NO_QUERY_VECTORS),
    (14, _V14_USER_HASH_INDEX),
    (15, _V15_OWN_VECTORS),
    # v16: a vector of a model other than the store's is refused (store/one_model.py)
    (16, PG_TRIGGERS),
    (17, _v17_fold),
    (18, _V18_BIGINT_COUNTS),
    (19, _V19_AUDIT_REDACT_READER),
    (20, _v20_readers),
    (21, _V21_PURGE_LEFTOVERS),
    (22, _V22_SHARED_WIDE),
    (23, _V23_PURGE_LOCK),
    (24, _v24_public),
    (25, _V25_SHARED_ROLES),
    (26, _V26_PUBLIC_OBSERVED),
    (27, _v27_replies),
    (28, _V28_CITED),
    (29, _V29_LINKED),
    (30, _V30_DONE_JOBS),
    (31, _v31_past_links),
    (32, _v32_bounded_words),
    (33, _V33_PAST_LINKS_DROPPED),
    (34, _V34_NUL_SAFE),
]
SCHEMA_VERSION: Final[int] = MIGRATIONS[-1][0]
_LOCK_KEY = 0x6D656D73  # "mems": serialises migrations of one database

# Indexes an upgrade builds with CREATE INDEX CONCURRENTLY before the migration's
# transaction (pg33): writes to their table go on while they are built, where the step's
# own CREATE INDEX held them until the whole migration committed. Each is (the step that
# needs it, its name, its definition with ``{}`` for the schema); that step builds it in
# the transaction where this did not (a fresh store) or left it invalid.
CONCURRENT: Final[list[tuple[int, str, str]]] = [(30, "jobs_done", _JOBS_DONE)]
_POLL_S = 0.2  # how often a process waiting to build them asks for the migration lock
# The oldest version whose upgrade makes them first: the back-fill reads ``records`` with
# today's columns and ``record_history`` as deltas (step 7), which an older store has not
# yet; such a store (an upgrade across many steps, rare) makes everything in the
# transaction, as before (tests/history: a version-6 store).
ONLINE_FROM = 29

if _RECORD_COLUMNS.count(",") + 1 != len(COLUMNS):  # pragma: no cover - import-time check
    raise StoreError("records schema and codec.COLUMNS disagree; fix postgres/schema.py")


async def _version(cur: psycopg.AsyncCursor[tuple[object, ...]], schema: str) -> int:
    await cur.execute("SELECT to_regclass(%s) IS NOT NULL", (f'"{schema}".schema_migrations',))
    row = await cur.fetchone()
    if not row or not row[0]:
        return 0
    await cur.execute(
        sql.SQL("SELECT coalesce(max(version), 0) FROM {}.schema_migrations").format(
            sql.Identifier(schema)
        )
    )
    found = await cur.fetchone()
    return int(found[0]) if found else 0  # type: ignore[call-overload]


async def check_pgvector(conn: psycopg.AsyncConnection[tuple[object, ...]], where: str) -> None:
    """Raise a :class:`StoreError` saying how to get pgvector when the server lacks it."""
    async with conn.cursor() as cur:
        await cur.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
        if await cur.fetchone():
            return
        await cur.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        available = await cur.fetchone() is not None
    if not available:
        raise StoreError(
            f"{where} has no pgvector extension, which memstrata needs for vector search; "
            "install pgvector on the server (https://github.com/pgvector/pgvector, or a "
            "PostgreSQL image that bundles it) and run CREATE EXTENSION vector; nothing "
            "was written"
        )
    try:
        async with conn.transaction():
            await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error as exc:
        raise StoreError(
            f"{where} has pgvector installed but not enabled, and this user may not enable "
            f"it ({exc.diag.message_primary or exc}); ask the database owner to run "
            "CREATE EXTENSION vector in this database; nothing was written"
        ) from None


async def _before_lock(conn: psycopg.AsyncConnection[tuple[object, ...]], schema: str) -> None:
    """What an upgrade makes before its transaction, while writes go on (pg33): the
    :data:`CONCURRENT` indexes of the steps ``schema`` lacks, each with CREATE INDEX
    CONCURRENTLY, step 31's back-fill (backfill.prefill) and step 32's re-term of long
    words (bounded.prebound, pg34). Under the database's
    migration lock held by this session, asked for every :data:`_POLL_S` (a statement
    waiting for it would hold a snapshot, which a concurrent build waits for: two processes
    upgrading at once would wait for each other). An index an interrupted build left
    invalid (a killed server, a cancelled statement) is dropped and built again; a
    migration killed here leaves its store at its version, perhaps with the index (its step
    then skips it), a part of the back-fill (the next upgrade's starts again) or of the
    re-term (each part whole; the next upgrade's finds the rest)."""
    while True:
        got = await (await conn.execute("SELECT pg_try_advisory_lock(%s)", (_LOCK_KEY,))).fetchone()
        if got and got[0]:
            break
        await asyncio.sleep(_POLL_S)  # async-only
        # sync: time.sleep(_POLL_S)
    try:
        async with conn.cursor() as cur:
            found = await _version(cur, schema)
        for version, name, definition in CONCURRENT:
            if version <= found:
                continue
            valid = await (
                await conn.execute(
                    "SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)",
                    (f'"{schema}"."{name}"',),
                )
            ).fetchone()
            if valid is not None and valid[0]:
                continue
            if valid is not None:  # an interrupted build's
                await conn.execute(
                    sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}.{}").format(
                        sql.Identifier(schema), sql.Identifier(name)
                    )
                )
            await conn.execute(
                sql.SQL(
                    "CREATE INDEX CONCURRENTLY IF NOT EXISTS " + definition.format("{}.")
                ).format(sql.Identifier(schema))
            )
        if found < 32:
            path = await (await conn.execute("SELECT current_setting('search_path')")).fetchone()
            await conn.execute(
                sql.SQL("SET search_path TO {}, public").format(sql.Identifier(schema))
            )
            try:
                if found < 31:
                    await backfill.prefill(conn)
                await bounded.prebound(conn)
            finally:
                await conn.execute(
                    "SELECT set_config('search_path', %s, false)", (path[0] if path else "",)
                )
    finally:
        await conn.execute("SELECT pg_advisory_unlock(%s)", (_LOCK_KEY,))


async def migrate(
    conn: psycopg.AsyncConnection[tuple[object, ...]], schema: str, where: str
) -> int:
    """Bring ``schema`` up to :data:`SCHEMA_VERSION`; return the version it was at.

    ``conn`` must be in autocommit mode. An upgrade first makes what it can while writes go
    on (:func:`_before_lock`: step 30's index, step 31's back-fill); then the check and
    every step run in one transaction,
    under the database's migration lock and, exclusively, the schema's version lock that
    every write transaction takes shared (migrated.py: a process opened at an older
    version refuses to write once this commits). A schema already at this version is
    read without either: an open does not wait for the writes under way.
    """
    async with conn.cursor() as cur:
        found = await _version(cur, schema)
    if found == SCHEMA_VERSION:
        return found
    if ONLINE_FROM <= found < SCHEMA_VERSION:
        await _before_lock(conn, schema)
    async with conn.transaction(), conn.cursor() as cur:
        await cur.execute(
            "SELECT pg_advisory_xact_lock(%s), pg_advisory_xact_lock(%s)",
            (_LOCK_KEY, schema_key(schema)),
        )
        found = await _version(cur, schema)
        if found > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{where} (schema {schema!r}) has memstrata schema version {found}, but this "
                f"memstrata only knows up to {SCHEMA_VERSION}; upgrade memstrata "
                "(pip install -U 'memstrata[postgres]') to open it"
            )
        if found == SCHEMA_VERSION:
            return found
        await cur.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
        await cur.execute(
            sql.SQL("SET LOCAL search_path TO {}, public").format(sql.Identifier(schema))
        )
        await cur.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {}.schema_migrations ("
                "version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL "
                "DEFAULT now())"
            ).format(sql.Identifier(schema))
        )
        for version, step in MIGRATIONS:
            if version <= found:
                continue
            if isinstance(step, str):
                await cur.execute(step.encode())
            else:
                await step(cur)
            await cur.execute(
                sql.SQL("INSERT INTO {}.schema_migrations (version) VALUES (%s)").format(
                    sql.Identifier(schema)
                ),
                (version,),
            )
    return found
