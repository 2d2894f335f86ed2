"""What every command of the ``projectops`` program stands on, below the features that
contribute the commands and above the clients and the server they call (docs/cli.md).

- :mod:`projectops.program.commands`: the :class:`~projectops.program.commands.Command` seam
  the features' commands are composed through, the argument types, and listening and serving
  with uvicorn until a signal stops it;
- :mod:`projectops.program.failures`: the exit codes, and how a failed call is reported, by
  the CLI as a line and by the MCP tool server as a sentence (docs/contract.md §5.6).

:mod:`projectops.cli` composes the program from the features' commands; this package knows
none of them.
"""
