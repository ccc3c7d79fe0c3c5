"""memstrata: layered long-term memory for LLM agents."""

__version__ = "0.1.0"
