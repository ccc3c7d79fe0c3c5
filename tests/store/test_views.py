"""``views``: what a context shows of a record, read without decoding it, field for field
what the decoded record holds, on every store (issue 13 §3: ``build_context`` renders its
~200 candidates from views and decodes none)."""

from __future__ import annotations

from memstrata.records import RecordStatus, RecordType, Role
from memstrata.scope import Scope
from memstrata.store import Store
from memstrata.store.types import RecordView

from .conftest import T0, Maker

ME = Scope("t1", "u1")


def test_views_are_the_decoded_records_fields(store: Store, maker: Maker) -> None:
    writes = [
        maker.write(type=RecordType.MESSAGE, role=Role.USER, session="s1"),
        maker.write(
            text="Mia: yesterday I sailed",
            type=RecordType.MESSAGE,
            role=Role.ASSISTANT,
            metadata={"speaker": "Mia", "dia_id": "D1:3"},
        ),
        # a speaker that is not a string, sources other than the record itself
        maker.write(
            type=RecordType.SUMMARY, source_ids=("r0001", "r0002"), metadata={"speaker": 7}
        ),
        maker.write(type=RecordType.NOTE, metadata={"note": '"speaker"', "speaker": ["a", "b"]}),
        maker.write(text="我们聊过的那部剧你看完了吗？", type=RecordType.MESSAGE, role=Role.USER),
        maker.write(id="back\\slash", type=RecordType.FACT, source_ids=("back\\slash",)),
    ]
    store.insert(writes)
    store.set_status(ME, [writes[3].record.id], RecordStatus.DELETED, T0)  # still read by id
    ids = [w.record.id for w in writes] + ["nope"]
    views = store.views(ME, ids)  # type: ignore[attr-defined]
    records = store.get_many(ME, ids)
    assert views == {r.id: RecordView.of(r) for r in records}
    assert views["r0002"].speaker == "Mia" and views["r0001"].speaker is None
    assert views["r0003"].speaker == 7 and views["r0004"].speaker == ["a", "b"]
    assert views["back\\slash"].source_ids == ("back\\slash",)
    assert store.views(Scope("t1", "u2"), ids) == {}  # type: ignore[attr-defined]
    assert store.views(ME, []) == {}  # type: ignore[attr-defined]
