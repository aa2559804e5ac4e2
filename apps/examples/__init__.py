"""Small runnable examples of batonflow apps (used by the demo, the docs and the tests)."""
