"""``python -m batonflow.apps`` runs the ``batonflow`` command line (as ``python -m batonflow``)."""

from batonflow.__main__ import main

main()
