"""batonflow.observability."""
