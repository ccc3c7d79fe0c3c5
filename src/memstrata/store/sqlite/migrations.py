"""Numbered schema migrations (the sqlite-utils way): a list of ``(version, step)``.

``PRAGMA user_version`` holds the version a file is at. Opening applies every newer step,
each in its own transaction together with the version bump, so a crash mid-way leaves the
file at the last complete version. A file at a version this code does not know was written
by a newer memstrata and is refused untouched: downgrading a schema silently loses data.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Final

from ...errors import SchemaVersionError, StoreError
from ..one_model import SQLITE_TRIGGERS
from .codec import COLUMNS

__all__ = [
    "FTS5_TOKENIZE",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "fts5_tables",
    "migrate",
    "schema_version",
]

Step = str | Callable[[sqlite3.Connection], None]

_RECORD_COLUMNS = """
    id TEXT NOT NULL, tenant TEXT NOT NULL, user TEXT NOT NULL, agent TEXT, session TEXT,
    visibility TEXT NOT NULL, type TEXT NOT NULL, role TEXT, raw TEXT NOT NULL, summary TEXT,
    structured TEXT NOT NULL, embedding_model TEXT, embedding_dims INTEGER,
    importance REAL NOT NULL, confidence REAL NOT NULL, tags TEXT NOT NULL,
    source TEXT NOT NULL, version INTEGER NOT NULL, created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL, observed_at TEXT NOT NULL, last_accessed_at TEXT,
    access_count INTEGER NOT NULL, decay_score REAL NOT NULL, valid_from TEXT, valid_to TEXT,
    superseded_by TEXT, relations TEXT NOT NULL, access TEXT NOT NULL,
    source_ids TEXT NOT NULL, metadata TEXT NOT NULL, content_hash TEXT NOT NULL,
    status TEXT NOT NULL, deleted_at TEXT
"""

_V1 = f"""
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

-- seq is the insertion order (ties of observed_at) and the FTS rowid.
CREATE TABLE records (seq INTEGER PRIMARY KEY AUTOINCREMENT, {_RECORD_COLUMNS});
CREATE UNIQUE INDEX records_id ON records (id);
CREATE INDEX records_scope_observed ON records (tenant, user, observed_at, seq);
CREATE INDEX records_hash ON records (content_hash);

CREATE TABLE record_versions ({_RECORD_COLUMNS}, PRIMARY KEY (id, version));
CREATE INDEX record_versions_scope ON record_versions (tenant, user);
CREATE INDEX record_versions_hash ON record_versions (content_hash);

-- tenant/user are repeated here so the vector cache loads one user by index.
CREATE TABLE vectors (
    record_id TEXT NOT NULL UNIQUE REFERENCES records (id) ON DELETE CASCADE,
    tenant TEXT NOT NULL, user TEXT NOT NULL,
    model TEXT, dims INTEGER NOT NULL, vector BLOB NOT NULL
);
CREATE INDEX vectors_scope ON vectors (tenant, user);

-- Terms arrive pre-tokenised (space-joined); scope_tok confines a MATCH to one user.
CREATE VIRTUAL TABLE lexical USING fts5 (
    scope_tok, terms, tokenize = 'unicode61 remove_diacritics 0'
);

-- Bumped on every change other than an append; the vector cache checks it per query.
CREATE TABLE scope_generation (scope_tok TEXT PRIMARY KEY, generation INTEGER NOT NULL);

CREATE TABLE embedding_cache (
    model_id TEXT NOT NULL, content_hash TEXT NOT NULL, dims INTEGER NOT NULL,
    vector BLOB NOT NULL, PRIMARY KEY (model_id, content_hash)
);

CREATE TABLE jobs (
    id TEXT PRIMARY KEY, kind TEXT NOT NULL, tenant TEXT NOT NULL, user TEXT NOT NULL,
    agent TEXT, session TEXT, payload TEXT NOT NULL, created_at TEXT NOT NULL,
    run_after TEXT NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL,
    last_error TEXT, lease_until TEXT, dedup_key TEXT
);
CREATE INDEX jobs_ready ON jobs (status, run_after);
CREATE INDEX jobs_scope ON jobs (tenant, user, status);
"""

# v2 (storage seam): the embedding cache is keyed by (tenant, user) through the scope token,
# so a user's purge reaches it (query embeddings included); the old unowned entries are only
# a cache and are dropped. Named counters (hits) live beside records, never as versions.
_V2 = """
DROP TABLE embedding_cache;
CREATE TABLE embedding_cache (
    scope_tok TEXT NOT NULL, model_id TEXT NOT NULL, key TEXT NOT NULL, dims INTEGER NOT NULL,
    vector BLOB NOT NULL, PRIMARY KEY (scope_tok, model_id, key)
) WITHOUT ROWID;

CREATE TABLE counters (
    seq INTEGER NOT NULL REFERENCES records (seq) ON DELETE CASCADE,
    name TEXT NOT NULL, value INTEGER NOT NULL, PRIMARY KEY (seq, name)
) WITHOUT ROWID;

CREATE INDEX records_session ON records (tenant, user, session, observed_at, seq);
"""

# v3 (issue 7 items 3 and 7): ids are unique per (tenant, user), never globally, so an id
# of another tenant neither blocks an insert nor reveals that it exists; vectors are keyed
# by the record's seq (``own`` marks a vector that is the embedding of the record's own
# text, so the embedding cache need not keep a second copy); history keeps reverse deltas
# (history.py) instead of a full copy of the record per version.
_V3_DDL = """
CREATE TABLE vectors_v3 (
    seq INTEGER PRIMARY KEY REFERENCES records (seq) ON DELETE CASCADE,
    tenant TEXT NOT NULL, user TEXT NOT NULL, model TEXT, dims INTEGER NOT NULL,
    own INTEGER NOT NULL DEFAULT 0, vector BLOB NOT NULL
);
INSERT INTO vectors_v3 (seq, tenant, user, model, dims, vector)
    SELECT r.seq, v.tenant, v.user, v.model, v.dims, v.vector
    FROM vectors v JOIN records r ON r.id = v.record_id ORDER BY r.seq;
DROP TABLE vectors;
ALTER TABLE vectors_v3 RENAME TO vectors;
CREATE INDEX vectors_scope ON vectors (tenant, user);

-- A rowid table: deltas of 1-2 kB pack far tighter than in a WITHOUT ROWID b-tree.
CREATE TABLE record_history (
    seq INTEGER NOT NULL REFERENCES records (seq) ON DELETE CASCADE,
    version INTEGER NOT NULL, delta BLOB NOT NULL, PRIMARY KEY (seq, version)
);
"""


def _v3(conn: sqlite3.Connection) -> None:
    from .history import encode_delta, reverse_delta

    for statement in _statements(_V3_DDL):
        conn.execute(statement)
    cols = ", ".join(COLUMNS)
    ids = [r[0] for r in conn.execute("SELECT DISTINCT id FROM record_versions")]
    for record_id in ids:
        current = conn.execute(
            f"SELECT seq, {cols} FROM records WHERE id = ?", (record_id,)
        ).fetchone()
        if current is None:  # an orphan version (cannot happen through the API): drop it
            continue
        seq, newer = current[0], dict(zip(COLUMNS, current[1:], strict=True))
        for row in conn.execute(
            f"SELECT {cols} FROM record_versions WHERE id = ? ORDER BY version DESC", (record_id,)
        ).fetchall():
            old = dict(zip(COLUMNS, row, strict=True))
            conn.execute(
                "INSERT INTO record_history (seq, version, delta) VALUES (?, ?, ?)",
                (seq, old["version"], encode_delta(reverse_delta(old, newer))),
            )
            newer = old
    conn.execute("DROP TABLE record_versions")
    conn.execute("DROP INDEX records_id")
    conn.execute("CREATE UNIQUE INDEX records_key ON records (tenant, user, id)")
    conn.execute("DROP INDEX records_hash")
    conn.execute("CREATE INDEX records_hash ON records (tenant, user, content_hash)")


# The audit log (memstrata/audit.py): append-only, never purged by retention; triggers
# refuse every change but a user's purge redacting who and which ids.
_V4_AUDIT = """
CREATE TABLE audit_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, tenant TEXT NOT NULL,
    user TEXT, actor TEXT NOT NULL, action TEXT NOT NULL, at TEXT NOT NULL,
    record_ids TEXT NOT NULL, reason TEXT, policy TEXT, score REAL, details TEXT NOT NULL
);
CREATE INDEX audit_log_tenant_at ON audit_log (tenant, at, seq);
-- The one update allowed: a user's purge redacts who and which ids (audit.py).
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
WHEN NOT (NEW.user IS NULL AND NEW.record_ids = '[]' AND NEW.reason = '[purged]'
          AND NEW.details = '{}' AND NEW.actor IN (OLD.actor, '[purged]')
          AND NEW.seq = OLD.seq AND NEW.id = OLD.id AND NEW.tenant = OLD.tenant
          AND NEW.action = OLD.action AND NEW.at = OLD.at
          AND NEW.policy IS OLD.policy AND NEW.score IS OLD.score)
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
"""


# Job leases carry a token per claim (fencing: a worker whose lease was taken over can no
# longer finish, fail or renew the job); renewals find a claim's jobs by it.
_V5_JOB_LEASE_TOKEN = """
ALTER TABLE jobs ADD COLUMN lease_token TEXT;
CREATE INDEX jobs_lease_token ON jobs (lease_token);
"""

# Lists by type (key memory, the newest summaries, a session's turns) read only their rows:
# without these, every build_context scanned all of a user's records twice (12 ms at 10k).
_V6_TYPE_INDEXES = """
CREATE INDEX records_type ON records (tenant, user, type, observed_at, seq);
CREATE INDEX records_session_type ON records (tenant, user, session, type, observed_at, seq);
"""

# v7 (issue 7 item 6): a change number per vector row, raised whenever the row or its
# record's masked columns change, so the vector cache reloads only what changed (a cluster's
# new centroid) instead of the user's whole matrix (store/sqlite/vectors.py).
_V7_VECTOR_REV = """
ALTER TABLE vectors ADD COLUMN rev INTEGER NOT NULL DEFAULT 0;
UPDATE vectors SET rev = seq;
DROP INDEX vectors_scope;
CREATE INDEX vectors_rev ON vectors (tenant, user, rev);
"""


def _v8(conn: sqlite3.Connection) -> None:
    """History deltas in the compact format (issue 7 item 7; ``history.py``): splices of
    sliding provenance windows, token diffs of rewritten texts, small steps of moved
    centroids, a preset deflate dictionary. Every record's versions are rebuilt from the
    old deltas, re-encoded, and rebuilt again from the new ones; the step refuses to commit
    unless both give the same rows. Older memstrata cannot read the new format: the
    version bump makes it refuse the file rather than fail on its history."""
    from .history import apply_delta, decode_delta, encode_delta, reverse_delta

    cols = ", ".join(COLUMNS)
    seqs = [r[0] for r in conn.execute("SELECT DISTINCT seq FROM record_history ORDER BY seq")]
    for seq in seqs:
        current = conn.execute(f"SELECT {cols} FROM records WHERE seq = ?", (seq,)).fetchone()
        if current is None:  # history of a row that is gone (cannot happen: FK cascade)
            continue
        rows = [dict(zip(COLUMNS, current, strict=True))]
        history = conn.execute(
            "SELECT version, delta FROM record_history WHERE seq = ? ORDER BY version DESC", (seq,)
        ).fetchall()
        for _version, blob in history:
            rows.append(apply_delta(rows[-1], decode_delta(blob)))
        blobs = [
            encode_delta(reverse_delta(old, newer))
            for newer, old in zip(rows[:-1], rows[1:], strict=True)
        ]
        check = rows[0]
        for blob, old in zip(blobs, rows[1:], strict=True):
            check = apply_delta(check, decode_delta(blob))
            if check != old:  # pragma: no cover - reverse_delta verifies each op already
                raise StoreError(
                    f"re-encoding the history of record seq {seq} would change "
                    "it; nothing was changed: report this as a bug"
                )
        conn.executemany(
            "UPDATE record_history SET delta = ? WHERE seq = ? AND version = ?",
            [(blob, seq, version) for blob, (version, _) in zip(blobs, history, strict=True)],
        )


# The FTS5 tables of schemas 1-9 (v10 replaced them): one per tenant from v9, named by a
# hash of the tenant id (lexical.tenant_key), holding (rowid = the record's seq,
# scope_tok, terms).
FTS5_TOKENIZE = "tokenize = 'unicode61 remove_diacritics 0'"


def fts5_tables(conn: sqlite3.Connection) -> list[str]:
    """The per-tenant FTS5 tables of a file before v10 (FTS5's shadow tables excluded)."""
    return [
        str(r[0])
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'lex_*' "
            "AND sql LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name"
        )
    ]


def _v9(conn: sqlite3.Connection) -> None:
    """v9 (tenant isolation): one FTS5 table per tenant instead of one for the file, so a
    tenant's BM25 statistics hold its own records only. Each row moves to its record's
    tenant's table with its rowid, scope token and terms unchanged."""
    from .lexical import tenant_key

    tenants = [r[0] for r in conn.execute("SELECT DISTINCT tenant FROM records ORDER BY tenant")]
    for tenant in tenants:
        name = tenant_key(tenant)
        conn.execute(f"CREATE VIRTUAL TABLE {name} USING fts5 (scope_tok, terms, {FTS5_TOKENIZE})")
        conn.execute(
            f"INSERT INTO {name} (rowid, scope_tok, terms) SELECT l.rowid, l.scope_tok, l.terms "
            "FROM lexical l JOIN records r ON r.seq = l.rowid WHERE r.tenant = ? ORDER BY l.rowid",
            (tenant,),
        )
    conn.execute("DROP TABLE lexical")


# v10 (a search reads its user's postings only): the tables of lexical.py.
_V10_DDL = """
CREATE TABLE lex_tenants (
    id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE,
    docs INTEGER NOT NULL, tokens INTEGER NOT NULL
);
CREATE TABLE lex_scopes (
    id INTEGER PRIMARY KEY, scope_tok TEXT NOT NULL UNIQUE, tenant INTEGER NOT NULL
);
CREATE TABLE lex_postings (
    scope INTEGER NOT NULL, token TEXT NOT NULL, seq INTEGER NOT NULL,
    tf INTEGER NOT NULL, len INTEGER NOT NULL, PRIMARY KEY (scope, token, seq)
) WITHOUT ROWID;
CREATE TABLE lex_df (
    tenant INTEGER NOT NULL, token TEXT NOT NULL, df INTEGER NOT NULL,
    PRIMARY KEY (tenant, token)
) WITHOUT ROWID;
CREATE TABLE lex_docs (
    seq INTEGER PRIMARY KEY, scope INTEGER NOT NULL, len INTEGER NOT NULL, terms TEXT NOT NULL
);
"""


def _v10(conn: sqlite3.Connection) -> None:
    """v10: the per-tenant FTS5 tables become postings keyed by user (lexical.py). Each
    tenant's rows are indexed anew from what FTS5 held (its ``rowid`` is the record's seq,
    ``terms`` the indexed text; a row whose record is gone, which no write leaves, is not
    carried over), then the FTS5 tables are dropped. One transaction, like every step."""
    from . import lexical

    for statement in _statements(_V10_DDL):
        conn.execute(statement)
    for name in fts5_tables(conn):
        last = 0
        while True:
            batch = conn.execute(
                f"SELECT l.rowid, r.tenant, r.user, l.terms FROM {name} l "
                "JOIN records r ON r.seq = l.rowid WHERE l.rowid > ? ORDER BY l.rowid LIMIT 5000",
                (last,),
            ).fetchall()
            if not batch:
                break
            lexical.index(
                conn, [(int(seq), str(t), str(u), str(text).split()) for seq, t, u, text in batch]
            )
            last = int(batch[-1][0])
        conn.execute(f"DROP TABLE {name}")


def _v11(conn: sqlite3.Connection) -> None:
    """v11 (terms in every language, :mod:`memstrata.search.scripts`): the records whose
    indexed terms hold Hangul, kana, a space-less script or a letter that may carry marks
    are indexed again under the terms :func:`memstrata.search.reterm.reterm` makes, the
    tenants' statistics following (unindex, then index, in this one transaction). Every
    other record (English, Chinese …) is only read: its terms cannot change."""
    from memstrata.search.scripts import may_change
    from memstrata.search.tokenize import tokenize_v10, tokenize_v14

    _reterm(
        conn,
        "SELECT seq, terms FROM lex_docs WHERE seq > ? ORDER BY seq LIMIT 5000",
        lambda row: may_change(str(row[1])),
        old=tokenize_v10,
        new=tokenize_v14,
    )


def _v15(conn: sqlite3.Connection) -> None:
    """v15 (accent-insensitive terms, :func:`memstrata.search.scripts.fold`): the records
    whose indexed terms or text hold a Latin or Greek letter with diacritics (or a mark
    after one) are indexed again under the terms :func:`memstrata.search.tokenize.tokenize`
    makes now, as v11 did for its scripts. Rows whose text and terms are both ASCII (all
    of an English store) are passed over by SQLite itself, never read into Python."""
    from memstrata.search.scripts import may_fold
    from memstrata.search.tokenize import tokenize, tokenize_v14

    _reterm(
        conn,
        "SELECT d.seq, d.terms, r.raw FROM lex_docs d JOIN records r ON r.seq = d.seq "
        "WHERE d.seq > ? AND (length(CAST(d.terms AS BLOB)) != length(d.terms) "
        "OR length(CAST(r.raw AS BLOB)) != length(r.raw)) ORDER BY d.seq LIMIT 5000",
        lambda row: may_fold(str(row[1])) or may_fold(str(row[2])),
        old=tokenize_v14,
        new=tokenize,
        fold_strays=True,
    )


def _reterm(
    conn: sqlite3.Connection,
    batches: str,
    pick: Callable[[tuple[object, ...]], bool],
    *,
    old: Callable[[str], list[str]],
    new: Callable[[str], list[str]],
    fold_strays: bool = False,
) -> None:
    """Re-term the records ``pick`` chooses among the rows of ``batches`` (``seq`` first,
    read 5,000 at a time after the last one): :func:`memstrata.search.reterm.reterm_steps`
    (PostgreSQL's loop too) from the ``old`` tokenizer's terms to the ``new`` one's,
    replies' question terms included; unindex, then index the changed ones."""
    from memstrata.search import reterm as rt

    from . import lexical

    steps = rt.reterm_steps(pick, old=old, new=new, fold_strays=fold_strays)
    answer: object = None
    while (step := rt.next_step(steps, answer)) is not None:
        answer = None
        if isinstance(step, rt.Batch):
            answer = conn.execute(batches, (step.last,)).fetchall()
        elif isinstance(step, rt.Rows):
            found = conn.execute(
                "SELECT r.seq, r.tenant, r.user, r.session, r.type, r.observed_at, r.raw, d.terms "
                "FROM json_each(?) AS j CROSS JOIN records r ON r.seq = j.value "
                "JOIN lex_docs d ON d.seq = r.seq ORDER BY r.seq",
                (json.dumps(step.seqs),),
            ).fetchall()
            answer = [
                rt.Row(
                    int(row[0]),
                    str(row[1]),
                    str(row[2]),
                    row[4] == "message",
                    str(row[6]),
                    lexical.document_tokens(str(row[7])),
                    tuple(row),
                )
                for row in found
            ]
        elif isinstance(step, rt.Befores):
            answer = {
                r.seq: _turns_before(conn, r.seq, *r.raw[1:6])  # type: ignore[arg-type]
                for r in step.rows
            }
        else:
            docs = [
                (r.seq, r.tenant, r.user, made)
                for r, made in step.made
                if lexical.terms_text(made) != r.raw[7]
            ]
            if docs:
                lexical.unindex(conn, [d[0] for d in docs])
                lexical.index(conn, docs)


def _turns_before(
    conn: sqlite3.Connection,
    seq: int,
    tenant: str,
    user: str,
    session: str | None,
    kind: str,
    observed: str,
) -> list[str]:
    """The texts of the messages that may be the turn ``seq`` answers, likeliest first: the
    session's message before it by time (what a write reads), then by insertion."""
    if kind != "message":
        return []
    same = "tenant = ? AND user = ? AND session IS ? AND type = 'message'"
    out: list[str] = []
    for order, where, args in (
        (
            "observed_at DESC, seq DESC",
            "(observed_at < ? OR (observed_at = ? AND seq < ?))",
            (observed, observed, seq),
        ),
        ("seq DESC", "seq < ?", (seq,)),
    ):
        found = conn.execute(
            f"SELECT raw FROM records WHERE {same} AND {where} ORDER BY {order} LIMIT 1",
            (tenant, user, session, *args),
        ).fetchone()
        if found is not None:
            out.append(str(found[0]))
    return out


# v12 (IF NOT EXISTS: tests turn new files into older ones without dropping them): a
# fact's key and a document's qa_id, read by index (store.key_versions: the first
# version of a key made after deletes read every version of it, 41 ms at 1,020). Partial
# indexes: the rows of the type whose metadata holds the name as a string (the last one by
# rowid), and the live ones among them in the order a listing reads them (a key's current
# fact, a document's chunks); the queries (where.key_sql) repeat these expressions word for
# word.
_V12_NAME_INDEXES = """
CREATE INDEX IF NOT EXISTS records_fact_key ON records
(tenant, user, json_extract(metadata, '$.key'))
WHERE type = 'fact' AND json_type(metadata, '$.key') = 'text';
CREATE INDEX IF NOT EXISTS records_fact_live ON records
(tenant, user, json_extract(metadata, '$.key'), observed_at, seq)
WHERE type = 'fact' AND json_type(metadata, '$.key') = 'text' AND status = 'active'
AND superseded_by IS NULL;
CREATE INDEX IF NOT EXISTS records_doc_key ON records
(tenant, user, json_extract(metadata, '$.qa_id'))
WHERE type = 'knowledge' AND json_type(metadata, '$.qa_id') = 'text';
CREATE INDEX IF NOT EXISTS records_doc_live ON records
(tenant, user, json_extract(metadata, '$.qa_id'), observed_at, seq)
WHERE type = 'knowledge' AND json_type(metadata, '$.qa_id') = 'text' AND status = 'active'
AND superseded_by IS NULL;
"""

# v13: search queries' vectors are no longer cached in the store (embedder/cache.py: a read
# writes nothing, and the table does not grow with every new question); the entries that
# earlier versions wrote are dropped. Passages' keys are content hashes, never "q:...".
_V13_NO_QUERY_VECTORS = "DELETE FROM embedding_cache WHERE substr(key, 1, 2) = 'q:';"


# v16 (a whole-user purge reads what was shared with the user, not the tenant's records,
# history and audit log): the index of readers (store/purged_reader.py), ``rr``. A row
# (t, r, u, i): tenant, reader, user (the owner), and either a record id (text: a version
# of that record of the user names the reader) or an audit_log seq (an integer: a
# set_access event of the user names the reader). ``rr_u`` finds the rows of an owner (their
# purge, a record purge). Names and text are this short, without types, triggers or audit
# indexes, because the schema must stay on the file's first page: a file damaged past its
# first third still opens (tests/err26); 152 bytes were left on that page, these two take
# about 127 (SQLite keeps the text without IF NOT EXISTS, there for tests that turn a new
# file into an older one without dropping what later steps made).
_V16_READERS = """
CREATE TABLE IF NOT EXISTS rr(t,r,u,i,PRIMARY KEY(t,r,u,i))WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS rr_u ON rr(t,u);
"""


def _v16(conn: sqlite3.Connection) -> None:
    """v16: :data:`_V16_READERS`, filled from what the file holds: every record's current
    row, every earlier version (its deltas decoded, a record at a time) and every
    set_access event."""
    from .history import apply_delta, decode_delta

    for statement in _statements(_V16_READERS):
        conn.execute(statement)
    conn.execute(
        "INSERT OR IGNORE INTO rr SELECT r.tenant, j.value, r.user, r.id FROM records r, "
        "json_each(r.access, '$.allowed_users') j "
        "WHERE instr(r.access, '\"allowed_users\":[]') = 0"
    )
    conn.execute(
        "INSERT OR IGNORE INTO rr SELECT a.tenant, u.value, a.user, a.seq FROM audit_log a, "
        "json_each(a.details, '$.allowed_users') u "
        "WHERE a.action = 'set_access' AND a.user IS NOT NULL"
    )
    cols = ", ".join(COLUMNS)
    last = 0
    while True:
        seqs = [
            int(r[0])
            for r in conn.execute(
                "SELECT DISTINCT seq FROM record_history WHERE seq > ? ORDER BY seq LIMIT 500",
                (last,),
            )
        ]
        if not seqs:
            break
        last = seqs[-1]
        for seq in seqs:
            current = conn.execute(f"SELECT {cols} FROM records WHERE seq = ?", (seq,)).fetchone()
            if current is None:  # cannot happen: FK cascade
                continue
            row = dict(zip(COLUMNS, current, strict=True))
            named: set[str] = set()
            for (blob,) in conn.execute(
                "SELECT delta FROM record_history WHERE seq = ? ORDER BY version DESC", (seq,)
            ).fetchall():
                row = apply_delta(row, decode_delta(blob))
                named.update(json.loads(str(row["access"])).get("allowed_users", ()))
            conn.executemany(
                "INSERT OR IGNORE INTO rr VALUES (?, ?, ?, ?)",
                [(row["tenant"], u, row["user"], row["id"]) for u in sorted(named)],
            )


def _v17(conn: sqlite3.Connection) -> None:
    """v17 (caller29): the public part of each user's memory indexed on its own, for a
    caller's statistics (lexical.py, :func:`lexical.rebuild_public`). Rows only: no schema
    object (the schema must stay on the file's first page)."""
    from . import lexical

    lexical.rebuild_public(conn)


def _v18(conn: sqlite3.Connection) -> None:
    """v18 (role29): the index of readers names, for each record, the roles its current
    ``access`` shares it with (store/sqlite/roles.py), so a caller with roles finds them
    without a scan of the owner's rows. Rows only: no schema object."""
    from .roles import MARK

    rows = conn.execute(
        "SELECT r.tenant, j.value, r.user, r.id FROM records r, "
        "json_each(r.access, '$.allowed_roles') j "
        "WHERE instr(r.access, '\"allowed_roles\":[]') = 0"
    ).fetchall()
    conn.executemany(
        "INSERT OR IGNORE INTO rr VALUES (?, ?, ?, ?)",
        [(t, MARK + str(role).encode(), u, i) for t, role, u, i in rows],
    )


# The public records schema 19 reads at a time (mem31: before, all of them in one list).
_V19_PART = 5000
_V19_PUBLIC = (
    "SELECT tenant, user, id, observed_at, seq FROM records "
    "WHERE seq > ? AND visibility = 'public' ORDER BY seq LIMIT ?"
)


def _v19(conn: sqlite3.Connection) -> None:
    """v19 (caller30): the index of readers names each user's public records too, in their
    listing's order (store/sqlite/roles.py, ``public_reader``), so a caller's ``list`` walks
    what it may read without walking the owner's rows. Read :data:`_V19_PART` records at a
    time, in ``seq`` order (mem31: a store of many public records is not held whole in
    memory); the step is one transaction all the same. Rows only: no schema object."""
    from . import roles

    last = 0
    while rows := conn.execute(_V19_PUBLIC, (last, _V19_PART)).fetchall():
        last = int(rows[-1][4])
        conn.executemany(
            "INSERT OR IGNORE INTO rr VALUES (?, ?, ?, ?)",
            [
                (t, roles.public_reader(str(u), str(at), int(seq)), u, i)
                for t, u, i, at, seq in rows
            ],
        )


# v20 (reterm30): every turn's reply terms by today's rule. A turn's "turn before" is the
# message listed just before it (time, then seq) in its session, or without a session among
# the user's messages; one indexed step back (records_session_type, records_type) a turn.
_V20_BEFORE = (
    "SELECT p.seq FROM records p WHERE p.tenant = r.tenant AND p.user = r.user AND {same}"
    "p.type = 'message' AND (p.observed_at, p.seq) < (r.observed_at, r.seq) "
    "ORDER BY p.observed_at DESC, p.seq DESC LIMIT 1"
)
_V20_TURNS = (
    "SELECT t.seq, t.tenant, t.user, t.session, t.created_at, t.raw, t.status, d.terms, "
    "p.session, p.created_at, p.raw, p.status FROM (SELECT r.seq, r.tenant, r.user, "
    "r.session, r.created_at, r.raw, r.status, CASE WHEN r.session IS NULL THEN ("
    + _V20_BEFORE.format(same="")
    + ") ELSE ("
    + _V20_BEFORE.format(same="p.session = r.session AND ")
    + ") END AS before FROM records r WHERE r.seq > ? AND r.type = 'message' "
    "ORDER BY r.seq LIMIT ?) t LEFT JOIN lex_docs d ON d.seq = t.seq "
    "LEFT JOIN records p ON p.seq = t.before ORDER BY t.seq"
)


def _v20(conn: sqlite3.Connection) -> None:
    """v20 (reterm30): every turn indexed under the terms
    :func:`memstrata.search.reterm.turn_terms` gives it by today's rule of "the turn
    before" (session 29's; a store written before may hold a reply indexed under a
    question of its call listed elsewhere, which a purge of that question no longer
    reaches). Read :data:`memstrata.search.reterm.PART` turns at a time, each with the
    turn listed before it; only those whose stored terms differ are indexed again (a
    store written since changes nothing). Rows only: no schema object."""
    from memstrata.search import reterm as rt

    from . import lexical

    last = 0
    while rows := conn.execute(_V20_TURNS, (last, rt.PART)).fetchall():
        last = int(rows[-1][0])
        docs: list[lexical.Doc] = []
        for seq, tenant, user, session, created, raw, status, terms, *before in rows:
            if terms is None:  # not indexed (no write leaves a turn so): left as it is
                continue
            p_session, p_created, p_raw, p_status = before
            made = rt.turn_terms(
                rt.Turn(session, created, str(raw), status == "active"),
                None
                if p_raw is None
                else rt.Turn(p_session, p_created, str(p_raw), p_status == "active"),
            )
            if lexical.terms_text(made) != terms:
                docs.append((int(seq), str(tenant), str(user), made))
        if docs:
            lexical.unindex(conn, [d[0] for d in docs])
            lexical.index(conn, docs)


def _v21(conn: sqlite3.Connection) -> None:
    """v21 (purge31): the index of readers names, for each record but a turn, the ids its
    current version cites (store/citations.py, store/sqlite/cites.py), so a purge by ids
    reads the records citing what it purges, not every record of the user. Read a part
    of the records at a time (by ``seq``). Rows only: no schema object."""
    from .cites import backfill

    backfill(conn)


def _v22(conn: sqlite3.Connection) -> None:
    """v22 (purge31b): the index of readers also names, for each record, the ids a version
    of it names where a store's purge by ids rewrites it (a link, a refreshed note's
    dropped sources, an archived version's sources: store/citations.py ``linked``), so
    that purge reads the records naming what it purges, not every record of the user.
    Every version is read once (the deltas of a part of the records at a time, by
    ``seq``). Rows only: no schema object."""
    from .cites import backfill_links

    backfill_links(conn)


MIGRATIONS: Final[list[tuple[int, Step]]] = [
    (1, _V1),
    (2, _V2),
    (3, _v3),
    (4, _V4_AUDIT),
    (5, _V5_JOB_LEASE_TOKEN),
    (6, _V6_TYPE_INDEXES),
    (7, _V7_VECTOR_REV),
    (8, _v8),
    (9, _v9),
    (10, _v10),
    (11, _v11),
    (12, _V12_NAME_INDEXES),
    (13, _V13_NO_QUERY_VECTORS),
    # v14: a vector of a model other than the store's is refused (store/one_model.py)
    (14, SQLITE_TRIGGERS),
    (15, _v15),
    (16, _v16),
    (17, _v17),
    (18, _v18),
    (19, _v19),
    (20, _v20),
    (21, _v21),
    (22, _v22),
]
SCHEMA_VERSION: Final[int] = MIGRATIONS[-1][0]

# Guard against the two column lists drifting apart.
if _RECORD_COLUMNS.count(",") + 1 != len(COLUMNS):  # pragma: no cover - import-time check
    raise StoreError("records schema and codec.COLUMNS disagree; fix migrations.py")


def schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection, *, path: str) -> int:
    """Bring the file up to :data:`SCHEMA_VERSION`; return the version it was at.

    ``conn`` must be in autocommit mode (``isolation_level=None``): each step runs in an
    explicit ``BEGIN IMMEDIATE`` so two processes opening a new file do not both migrate it.
    """
    found = schema_version(conn)
    if found > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{path} has schema version {found}, but this memstrata only knows up to "
            f"{SCHEMA_VERSION}; upgrade memstrata (pip install -U memstrata) to open it"
        )
    for version, step in MIGRATIONS:
        if version <= found:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            if schema_version(conn) >= version:  # another process got here first
                conn.execute("COMMIT")
                continue
            if isinstance(step, str):
                for statement in _statements(step):
                    conn.execute(statement)
            else:
                step(conn)
            conn.execute(f"PRAGMA user_version = {int(version)}")
            conn.execute("COMMIT")
        except BaseException:
            # SQLite rolls back by itself on some errors (a full disk, no memory): a
            # ROLLBACK then fails ("no transaction is active") and would hide the cause
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    return found


def _statements(script: str) -> list[str]:
    """Split a migration script; ``executescript`` would commit our transaction."""
    out: list[str] = []
    buf = ""
    for line in script.splitlines(keepends=True):
        if line.lstrip().startswith("--"):
            continue
        buf += line
        if sqlite3.complete_statement(buf):
            out.append(buf.strip())
            buf = ""
    if buf.strip():
        out.append(buf.strip())
    return out
