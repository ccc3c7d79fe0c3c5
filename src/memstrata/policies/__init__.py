"""Write policies (DESIGN §4): dedup, the low-value filter, chunking and update modes."""
