"""batonflow.rag."""
