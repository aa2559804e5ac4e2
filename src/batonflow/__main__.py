"""``python -m batonflow`` (and the ``batonflow`` console script) run the command line.

The command line needs the ``cli`` extra (typer, rich). Without it, this entry point prints one
line naming the extra to install, instead of a traceback.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Run the ``batonflow`` command line, or say which extra it needs."""
    from batonflow._extras import MissingDependencyError

    try:
        from batonflow.apps.cli import main as cli_main
    except MissingDependencyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    cli_main()


if __name__ == "__main__":
    main()
