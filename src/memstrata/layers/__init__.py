"""The memory layers (DESIGN §2): each a small module, each testable on its own."""
