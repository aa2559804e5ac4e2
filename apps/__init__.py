"""batonflow.apps."""
