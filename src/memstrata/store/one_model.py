"""One embedding model per store, kept by the store itself.

A store remembers the model and dims its vectors came from (``meta``: ``embedding_model``,
``embedding_dims``), and a :class:`~memstrata.Memory` opened with another embedder is refused.
A process opened *before* a migration (``memstrata reembed``) does not reopen, though: it
went on writing vectors of the old model into the migrated store, which the new model's
queries cannot find (or, at equal dims, find wrongly). So the store refuses them itself: a
trigger on ``vectors``, run before each row it inserts or re-models, aborts a write of a
vector whose model and dims are neither the store's nor those of the migration under way
(``reembed_to``, ``"model\\tdims"``: while it runs, writers of both models are let through,
and it walks the store again for what the old ones wrote). The writer gets
:class:`~memstrata.errors.EmbeddingMismatchError` and nothing of its call is written. A store
with no model yet (a new one) takes any.

Reads are kept to the model too (:class:`ModelPin`): such a process would go on embedding
its questions with the old model, and its searches would find nothing by meaning (other
dims) or the wrong records (same dims). Every search reads the store's model and dims in the
statement that reads its vector state, and a store object that has since seen another one
refuses the search. That model also picks the vectors a search compares with its question
(store/sqlite/vectors.py, _async/store/postgres/vectors.py): while a migration runs the
``vectors`` table holds both models' rows, and a question of one model compared with a
vector of the other is a meaningless score (at equal dims it ranked unrelated records);
after the switch, rows of the old model a writer left behind are skipped the same way.
"""

from __future__ import annotations

import threading

from memstrata.errors import EmbeddingMismatchError

__all__ = [
    "MARK",
    "PG_TRIGGERS",
    "SQLITE_TRIGGERS",
    "SQLSTATE",
    "ModelPin",
    "holds_another",
    "refusal",
    "refused",
]

MODEL_KEY = "embedding_model"
DIMS_KEY = "embedding_dims"
NEXT_KEY = "reembed_to"
# What the trigger's error says, to tell it from other constraint errors (SQLite raises it as
# an IntegrityError), and PostgreSQL's SQLSTATE for it (class MS: memstrata's own).
MARK = "memstrata: a vector of another embedding model"
SQLSTATE = "MS001"

_OTHER = (
    f"EXISTS (SELECT 1 FROM meta WHERE key = '{MODEL_KEY}') "
    f"AND NOT EXISTS (SELECT 1 FROM meta m, meta d WHERE m.key = '{MODEL_KEY}' "
    f"AND m.value = NEW.model AND d.key = '{DIMS_KEY}' AND d.value = CAST(NEW.dims AS TEXT)) "
    f"AND NOT EXISTS (SELECT 1 FROM meta WHERE key = '{NEXT_KEY}' "
    "AND value = NEW.model || char(9) || NEW.dims)"
)
SQLITE_TRIGGERS = f"""
CREATE TRIGGER IF NOT EXISTS vectors_one_model BEFORE INSERT ON vectors
WHEN {_OTHER}
BEGIN SELECT RAISE(ABORT, '{MARK}'); END;
CREATE TRIGGER IF NOT EXISTS vectors_one_model_update BEFORE UPDATE OF model, dims ON vectors
WHEN {_OTHER}
BEGIN SELECT RAISE(ABORT, '{MARK}'); END;
"""

# Row by row, as SQLite's, with one read of ``meta`` per row (measured on a loaded 2-core
# machine: ~20-40 us per row, where a check per statement over its rows (a transition table)
# cost 50-150 us per statement, and the pipelined INSERTs of a small batch are one statement
# per row). The function keeps the schema it was created in, whatever the caller's
# search_path.
PG_TRIGGERS = f"""
DROP TRIGGER IF EXISTS vectors_one_model ON vectors;
CREATE OR REPLACE FUNCTION vectors_one_model() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
DECLARE
    model TEXT;
    dims TEXT;
    next TEXT;
BEGIN
    SELECT max(value) FILTER (WHERE key = '{MODEL_KEY}'),
           max(value) FILTER (WHERE key = '{DIMS_KEY}'),
           max(value) FILTER (WHERE key = '{NEXT_KEY}')
      INTO model, dims, next
      FROM meta WHERE key IN ('{MODEL_KEY}', '{DIMS_KEY}', '{NEXT_KEY}');
    IF model IS NOT NULL AND NOT (NEW.model = model AND NEW.dims::text = dims)
       AND (NEW.model || E'\\t' || NEW.dims) IS DISTINCT FROM next THEN
        RAISE EXCEPTION USING ERRCODE = '{SQLSTATE}', MESSAGE = '{MARK}',
            DETAIL = model || E'\\t' || coalesce(dims, '');
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER vectors_one_model BEFORE INSERT OR UPDATE OF model, dims ON vectors
FOR EACH ROW EXECUTE FUNCTION vectors_one_model();
"""


def refusal(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or an error it was raised from) is the trigger's refusal."""
    seen = 0
    while exc is not None and seen < 8:
        if getattr(exc, "sqlstate", None) == SQLSTATE or MARK in str(exc):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def holds_another(stored: str | None, stored_dims: str | None, model: str, dims: int) -> bool:
    """Whether ``meta``'s model and dims (``stored``, ``stored_dims``: None in a new store)
    are another model's than an embedder's ``model`` of ``dims``: what a Memory opening the
    store refuses, and what makes a server's ``/readyz`` answer not ready."""
    return stored is not None and (stored != model or stored_dims != str(dims))


def refused(where: str, model: str | None, dims: str | None) -> EmbeddingMismatchError:
    """The error for a write the trigger refused; ``model``/``dims``: the store's now."""
    model, dims = model or None, dims or "?"
    return EmbeddingMismatchError(
        f"{where} now holds vectors of embedding model {model!r} ({dims} dims), and this "
        "Memory embeds with another (the store was migrated after this Memory was opened: "
        "`memstrata reembed`); nothing of this call was written: open the store again with "
        "its embedder"
    )


class ModelPin:
    """The embedding model a store object serves: the model and dims it last read from or
    wrote to ``meta`` through ``get_meta``/``set_meta`` (a Memory reads them as it opens,
    ``reembed`` writes them at its switch). :meth:`check` is given what a search read in
    ``meta``; another model there means another process migrated the store since this one
    opened it, and the search is refused rather than answered with the old model's
    question vector. A store object no Memory opened (nothing read yet) checks nothing."""

    def __init__(self, where: str = "this store") -> None:
        self.where = where
        self._model: str | None = None
        self._dims: str | None = None
        self._lock = threading.Lock()

    def saw(self, key: str, value: str | None, *, read: bool = False) -> None:
        """Note a ``meta`` write of ``key`` (or a ``read``); other keys are ignored. A read
        pins only an object that has seen nothing yet (the Memory's opening): until session
        25 any read re-pinned, so one ``get_meta`` of the model (the server's ``/readyz``,
        polled by every load balancer) turned a process the migration left behind into one
        that searched the new model's vectors with its old model's questions."""
        if value is None:
            return
        with self._lock:
            if key == MODEL_KEY and (self._model is None or not read):
                self._model = value
            elif key == DIMS_KEY and (self._dims is None or not read):
                self._dims = value

    def check(self, model: str | None, dims: str | None) -> None:
        """Raise :class:`EmbeddingMismatchError` if ``meta`` now holds another model or
        other dims than this object last saw there."""
        with self._lock:
            mine, my_dims = self._model, self._dims
        if (mine is None or model is None or mine == model) and (
            my_dims is None or dims is None or my_dims == dims
        ):
            return
        raise EmbeddingMismatchError(
            f"{self.where} now holds vectors of embedding model {model!r} ({dims} dims), not of "
            f"{mine!r} ({my_dims} dims) that this Memory embeds its questions with: another "
            "process migrated it (`memstrata reembed`) after this one opened it, so the "
            "call stopped before searching: open the store again with its "
            "embedder"
        )
