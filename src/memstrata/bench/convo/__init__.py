"""A synthetic multi-session conversational evaluation set (English and Chinese)."""
