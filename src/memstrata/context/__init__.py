"""Context assembly: the token budget, and the blocks in the order an LLM reads them."""
