"""Two readings of a turn that only knew English and Chinese (context/reactions.py,
context/answer_types.py; docs/measurements.md, "Session 34").

- The reaction rule took any sentence of at most three words without a first-person word
  for an interjection, in any language: "Ich bin Lehrerin." (I am a teacher) lost
  ``reaction_penalty`` as if it were "Wow!". Now the interjection rule applies to a turn
  that reads as English or Chinese only.
- A name at a sentence's start was not seen ("Mochi. My niece picked it." answers "What did
  Noor call the rabbit?"): with ``answer_type_boost`` the distractors that name other pets
  rose above it. A sentence that is only one to three capitalised words and a full stop is
  a name now, unless it is a word said alone ("Sure.", "Thanks.").
"""

from __future__ import annotations

import pytest

from memstrata.context.answer_types import holds_type, names_in
from memstrata.context.reactions import reaction_share


@pytest.mark.parametrize(
    "text",
    [
        "Ich bin Lehrerin.",
        "Soy de Lima.",
        "Dat is mooi.",
        "Danke, du bist toll!",
        "Genial. Ich komme morgen.",
        "Hey, ich bin Lehrerin.",
        "Anna: Je suis prof.",
        "すごい！",  # Japanese: its kanji are not Chinese
        "좋아요!",
    ],
)
def test_short_sentences_of_other_languages_are_not_reactions(text: str) -> None:
    assert reaction_share(text) == 0.0


@pytest.mark.parametrize(
    ("text", "share"),
    [
        ("Wow!", 1.0),
        ("Wow Nate!", 1.0),
        ("That's great!", 1.0),
        ("Keep it up!", 1.0),
        ("Take care!", 1.0),
        ("Same here!", 1.0),
        (";)", 1.0),
        ("太好了！", 1.0),
        ("太好了！我们明天去杭州。", 4 / 12),
        ("Hey Joanna! I won my fourth tournament.", 11 / 39),
    ],
)
def test_english_and_chinese_reactions_are_read_as_before(text: str, share: float) -> None:
    assert reaction_share(text) == pytest.approx(share)


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("Noor: Mochi. My niece picked it.", {"Mochi"}),
        ("Yes. Mochi.", {"Mochi"}),
        ("Sir Hops. He is a lop.", {"Sir Hops", "Hops"}),
        ("Oscar's rabbit is called Noodle, she sent me photos.", {"Noodle"}),
        # words said alone are not names
        ("Sure. I will.", set()),
        ("Thanks. See you!", set()),
        ("Wow. Good night.", set()),
        ("Done.", set()),
        # a sentence's first word followed by more words is not one either
        ("Mochi likes carrots.", set()),
    ],
)
def test_a_name_said_alone_at_a_sentence_start(text: str, names: set[str]) -> None:
    assert names_in(text) == names


def test_a_bare_name_answers_a_which_question_but_not_a_speaker() -> None:
    assert holds_type("name", "Noor: Mochi. My niece picked it.", {"Noor", "Oscar"})
    assert not holds_type("name", "Oscar: Noor. Good to see you.", {"Noor", "Oscar"})
