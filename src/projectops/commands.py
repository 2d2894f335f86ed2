"""The seam the ``projectops`` program is composed through: :class:`Command`.

Each layer lists its own commands (``projectops.client.cli.commands()``,
``projectops.server.commands.commands()``); :mod:`projectops.__main__`, the layer above both,
builds one parser from them. No registry, no import-time registration.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Command", "port"]


@dataclass(frozen=True)
class Command:
    """One subcommand of ``projectops``.

    Attributes:
        name: the subcommand, e.g. ``"mock-server"``; unique in the program.
        help: one line for the command listing of ``projectops --help``.
        configure: adds the subcommand's arguments to its parser.
        run: runs the command with the parsed arguments; returns the exit code. It imports the
            optional dependencies it needs itself; an ``ImportError`` is reported as one line
            naming `extra`, exit 2.
        description: the text of ``projectops <name> --help`` (default: `help`).
        connection: whether the command calls the service, so it takes ``--base-url`` and
            ``--timeout`` (after parsing: ``args.base_url``, ``args.timeout``).
        extra: the install extra the command needs (``client``, ``server``, ``mcp``), or ``""``.
    """

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    description: str = ""
    connection: bool = False
    extra: str = ""


def port(text: str, *, lowest: int = 1) -> int:
    """A TCP port from the command line (argparse ``type``); `lowest` 0 allows "any free one".

    Raises:
        argparse.ArgumentTypeError: not a whole number from `lowest` to 65535.
    """
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not lowest <= value <= 65535:
        raise argparse.ArgumentTypeError(
            f"expected a TCP port from {lowest} to 65535, got {text!r}"
        )
    return value
