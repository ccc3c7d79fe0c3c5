"""Search in Korean, Japanese, Hindi and Thai: hit@1 / hit@5 of hand-written questions.

Per language, the 20 messages of ``tests/search/tok17_texts.py`` plus 60 distractors,
each the first half of one message and the second half of another (hard negatives that
share words with the answer), and 20 questions; ``Memory.search`` top 5, lexical and
hybrid. Usage: ``python scripts/multiscript_search.py hashing|default``
(docs/measurements.md, "Lexical terms in every language").
"""

import json
import random
import sys
import tempfile
import unicodedata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "search"))
from tok17_texts import PAIRS  # noqa: E402

from memstrata import Memory, Scope  # noqa: E402


def halves(text, lang):
    if lang in ("ko", "hi"):
        w = text.split(" ")
        k = len(w) // 2
        return " ".join(w[:k]), " ".join(w[k:])
    k = len(text) // 2
    while k < len(text) and unicodedata.category(text[k])[0] == "M":
        k += 1
    return text[:k], text[k:]


emb = sys.argv[1] if len(sys.argv) > 1 else "hashing"
d = tempfile.mkdtemp()
mem = Memory(f"sqlite:///{d}/m.db", embedder=emb, background=False)
out = {}
for lang, pairs in PAIRS.items():
    rng = random.Random(17)
    msgs = [m for m, _ in pairs]
    dis = []
    while len(dis) < 60:
        i, j = rng.sample(range(len(msgs)), 2)
        dis.append(halves(msgs[i], lang)[0] + halves(msgs[j], lang)[1])
    order = list(range(len(msgs) + len(dis)))
    rng.shuffle(order)
    texts = msgs + dis
    ids = {}
    for n in order:
        ids[n] = mem.add_message(Scope("t", lang, session=f"s{n}"), "user", texts[n]).id
    for mode in ("lexical", "hybrid"):
        h1 = h5 = 0
        for i, (_, q) in enumerate(pairs):
            hits = [h.record.id for h in mem.search(Scope("t", lang), q, top_k=5, mode=mode)]
            h1 += bool(hits) and hits[0] == ids[i]
            h5 += ids[i] in hits
        out[f"{lang} {mode}"] = f"{h1}/{h5}"
mem.close()
print(emb, json.dumps(out, ensure_ascii=False))
