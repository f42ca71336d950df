"""``dltrace server start|stop|status``: the warm Spark the other commands use while it runs
(dltrace/server.py)."""

from __future__ import annotations

import argparse
import time

from dltrace import server


def add_parser(commands, parents) -> None:
    parser = commands.add_parser(
        "server", help="keep Spark warm between commands: start, stop or show the local Spark Connect server",
        description="While the server runs, commands without --master/SPARK_MASTER/SPARK_REMOTE use it "
                    "instead of starting a JVM each (DLTRACE_SERVER=off: never; auto: start it on first use).")
    parser.add_argument("action", choices=("start", "stop", "status"))
    parser.add_argument("--idle-minutes", type=float, default=server.IDLE_MINUTES,
                        help=f"start: stop after this many minutes without a command (default {server.IDLE_MINUTES:g})")
    parser.add_argument("--memory", help="start: its Spark driver memory (default: $SPARK_DRIVER_MEMORY or 8g)")
    parser.set_defaults(handler=run, uses_spark=False)


def run(args: argparse.Namespace) -> int:
    if args.action == "start":
        state, started = server.start(args.idle_minutes, args.memory)
        print(("started" if started else "already running:") + " " + described(state))
    elif args.action == "stop":
        state = server.stop()
        print(f"stopped the server (pid {state['pid']})" if state else "no server was running")
    else:
        state = server.read_state()
        why = state and server.compatible(state) and server.unusable(state)  # what a command would find
        print(described(state) + (f"; not used: {why}" if why else "") if state
              else "not running (`dltrace server start` starts it)")
    return 0


def described(state: dict) -> str:
    now = time.time()
    used = now - server.last_used(state)
    note = "" if server.compatible(state) else (f"; not used by this dltrace: it runs dltrace {state['version']} "
                                                f"with {state['python']}")
    return (f"Spark Connect at {state['url']} (pid {state['pid']}, up {minutes(now - state['started'])}, "
            f"last used {minutes(used)} ago, stops after {state['idle_minutes']:g} idle minutes; "
            f"log: {server.state_dir() / 'server.log'}){note}")


def minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"
