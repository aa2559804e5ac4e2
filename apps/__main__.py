"""``python -m batonflow.apps`` runs the ``batonflow`` command line."""

from .cli import main

main()
