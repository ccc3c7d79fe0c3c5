"""``OpenAIEmbedder(model, base_url="http://[::1")`` (and so ``memstrata --embedder openai:m
--openai-base-url "http://[::1" search ...``, ``serve`` with that option) raises httpx's raw
``InvalidURL`` ("Invalid port: ':1'") as it is built: a rich traceback from the CLI, where
every other bad option is one line.

Left for ``embedder/openai.py`` (``_async/embedder/openai.py``), a provider file outside
audit29's: map the client's ``InvalidURL`` (and ``ValueError``) while building it to a
``ValidationError`` naming ``base_url`` and the fix; the CLI's ``open_memory`` then prints
it as one line, as it does every ``MemstrataError``."""

from __future__ import annotations

import pytest

from memstrata import ValidationError
from memstrata.embedder.openai import OpenAIEmbedder


def test_a_base_url_httpx_cannot_parse_is_a_validation_error() -> None:
    with pytest.raises(ValidationError, match="base_url"):
        OpenAIEmbedder("m", base_url="http://[::1")
