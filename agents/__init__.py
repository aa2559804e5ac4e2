"""batonflow.agents."""
