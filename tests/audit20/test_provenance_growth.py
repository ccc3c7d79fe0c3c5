"""``episodes.record_conversation`` cites the sources of the records it summarises, one
entry per source of each record: given its own earlier episodes (which cite the same
messages) the list doubled with every generation. The fuzzer's run reached an episode
citing 4.4 million ids (a 160 MB record; exporting the user took 2.4 GB). Now a derived
record cites each source once (``writes.note_record``)."""

from __future__ import annotations

from memstrata import Memory, Scope

ALICE = Scope("acme", "alice", session="s1")


def test_an_episode_of_episodes_cites_each_message_once(mem: Memory) -> None:
    messages = [
        mem.add_message(ALICE, "user", f"I sail on weekends, trip number {i}") for i in range(3)
    ]
    episode = mem.episodes.record_conversation(ALICE, [*messages, *messages])
    assert episode is not None
    for _ in range(12):  # 2**12 entries before
        again = mem.episodes.record_conversation(ALICE, [episode, episode, *messages])
        assert again is not None
        episode = again
    assert sorted(episode.source_ids) == sorted(m.id for m in messages)
    stored = mem.get(ALICE, episode.id)
    assert len(stored.source_ids) == 3


def test_a_source_given_twice_is_cited_once(mem: Memory) -> None:
    m = mem.add_message(ALICE, "user", "the shed key is under the blue pot")
    rec = mem.episodes.record_feedback(ALICE, "that answer helped", source_ids=[m.id, m.id])
    assert rec.source_ids == (m.id,)
