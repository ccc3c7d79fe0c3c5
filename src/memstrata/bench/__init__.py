"""Benchmarks for memstrata: LoCoMo retrieval and context quality, and scale curves.

Run them with ``memstrata bench locomo`` and ``memstrata bench scale``. This package uses
only memstrata's public API; the library never imports it. LoCoMo data is read at run time
from ``--data`` and never shipped.
"""
