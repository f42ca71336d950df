"""``dltrace ui``: serve the lineage explorer over the catalog (dltrace/ui, docs/ui.md).

It prints the URL and opens nothing.  It listens on 127.0.0.1 unless ``--host`` says
otherwise; on any other address every request must present a token (``--token``, else a
random one), which the printed URL carries.
"""

from __future__ import annotations

import argparse
import ipaddress
import secrets
import socket
import threading

from dltrace.commands.common import Parents
from dltrace.errors import BadInput, DltraceError

INSTALL = "pip install 'dltrace[ui]'"
DEFAULT_PORT = 8765


def add_parser(commands, parents: Parents) -> None:
    ui = commands.add_parser("ui", parents=[parents.common],
                             help="the lineage explorer in the browser (prints its URL)")
    ui.add_argument("--port", type=int, default=DEFAULT_PORT,
                    help=f"port to listen on (default {DEFAULT_PORT}; 0: any free one)")
    ui.add_argument("--host", default="127.0.0.1",
                    help="address to listen on (default 127.0.0.1; any other needs a token)")
    ui.add_argument("--token", help="the token every request must present (default on another address: a random one)")
    ui.set_defaults(handler=run)


def loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only.

    >>> loopback("127.0.0.1"), loopback("localhost"), loopback("::1"), loopback("0.0.0.0"), loopback("10.1.2.3")
    (True, True, True, False, False)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def url(host: str, port: int, token: str | None) -> str:
    """What to open.

    >>> url("127.0.0.1", 8765, None), url("::1", 80, "t0k")
    ('http://127.0.0.1:8765/', 'http://[::1]:80/?token=t0k')
    """
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/" + (f"?token={token}" if token else "")


def run(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from dltrace.ui.app import create_app
    except ImportError as error:
        raise DltraceError(f"dltrace ui needs Starlette and uvicorn ({error.name} is missing): {INSTALL}") from None
    from dltrace.session import catalog_dir
    from dltrace.storage import location

    if not 0 <= args.port <= 65535:
        raise BadInput(f"--port must be between 0 and 65535 (got {args.port})")
    if args.token is not None and not args.token.strip():
        raise BadInput("--token must not be empty")
    directory = location(catalog_dir(args.catalog))
    if not (directory / "catalog.json").exists():
        raise BadInput(f"no catalog at {directory}: register a table first (`dltrace register NAME PATH`) "
                       f"or give --catalog DIR")
    token = args.token or (None if loopback(args.host) else secrets.token_urlsafe(18))
    app = create_app(directory, master=args.master, token=token, allowed_hosts=[args.host])
    listening = bound(args.host, args.port)
    port = listening.getsockname()[1]
    print(f"dltrace ui: the lineage explorer of {directory} at {url(args.host, port, token)}", flush=True)
    print("dltrace ui: Ctrl-C stops it; it never saves, drops or registers anything", flush=True)
    threading.Thread(target=app.state.explorer.warm_up, daemon=True).start()  # Spark starts meanwhile
    uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off")).run(sockets=[listening])
    return 0


def bound(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port``, or one line saying why not (uvicorn would log it
    in several and exit)."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        listening = socket.socket(family, socket.SOCK_STREAM)
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind((host, port))
        listening.listen(128)
    except OSError as error:
        raise BadInput(f"cannot listen on {host}:{port}: {error.strerror or error} (another --port, or 0 for any)") \
            from None
    return listening
