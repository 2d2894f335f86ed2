"""The `projectops` program: ``python -m projectops`` and the ``projectops`` console script.

This entry module sits above the layers: it hands ``mock-server`` to the server layer and every
other command to the client layer's CLI, so client and server never import each other.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run the program with `argv` (default ``sys.argv[1:]``); return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["mock-server"]:
        try:
            from projectops.server.mock import main as mock_main
        except ImportError as exc:
            print(
                f"error: the mock server needs the 'server' extra ({exc.name} is missing): "
                "pip install 'projectops[server]'",
                file=sys.stderr,
            )
            return 2
        return mock_main(args[1:])
    try:
        from projectops.client.cli import main as cli_main
    except ImportError as exc:
        print(
            f"error: the CLI needs the 'client' extra ({exc.name} is missing): "
            "pip install 'projectops[client]'",
            file=sys.stderr,
        )
        return 2
    return cli_main(args)


if __name__ == "__main__":
    sys.exit(main())
