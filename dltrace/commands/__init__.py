"""The ``dltrace`` commands: one module per command, each adding its own parser and handler.

Every module has ``add_parser(commands, parents)``, which adds its subcommand to the
``dltrace`` parser (``parents``: the shared options, ``common.Parents``) and sets the
handler ``args.handler(args) -> exit status`` that ``cli.run`` calls.  A new command is a new
module listed in ``COMMANDS``.
"""

from dltrace.commands import (
    demo,
    explain,
    impact,
    lineage_sql,
    register,
    results,
    rewrite,
    run,
    server,
    sql,
    tables,
    ui,
    views,
)

COMMANDS = (register, sql, rewrite, run, views, demo, impact, explain, results, lineage_sql, tables, server,
            ui)

__all__ = ["COMMANDS"]
