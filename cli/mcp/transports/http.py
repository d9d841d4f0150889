"""``acor mcp --http``: the same MCP server, over the streamable HTTP
transport, at ``/mcp``, for agents on other machines.

Everything a call does is the stdio server's: the server is
:func:`acor.cli.mcp.server.build_server`, with the same handlers (schemas,
progress, cancellation, Input Needed, results), and only the transport
differs. The transport is the SDK's own (its session manager serves
protocol versions up to 2025-11-25 as sessions and 2026-07-28 as
self-contained requests); uvicorn serves it. Nothing here speaks HTTP
itself.

Safe by default (the options are checked by
:mod:`acor.cli.mcp.transports.http_options`, before the SDK is imported):

* it listens on 127.0.0.1 unless ``--host`` says otherwise;
* every request's ``Host`` must be one this server answers to (421
  otherwise) and a browser's ``Origin`` one it trusts (403 otherwise), so a
  web page cannot reach it through DNS rebinding;
* a host that is not loopback refuses to start without a token
  (``ACOR_MCP_TOKEN`` or ``--token-file``); with a token every request needs
  ``Authorization: Bearer TOKEN`` (401 otherwise), compared in constant time.

TLS belongs to a reverse proxy in front (docs/mcp.md shows one).

Scale-out: ``--workers N`` runs N uvicorn workers on one socket; replicas
behind a load balancer share ``ACOR_MCP_KEY`` (:mod:`acor.cli.mcp.keys`).
With several workers the pre-2026 protocol is served stateless (no
session to pin to one worker), as ``--stateless`` asks for. A worker gets
the options, the token and the key in the pickled start-up message
uvicorn's supervisor writes on the pipe a spawned worker reads once (see
:class:`WorkerApp`), never in its environment or its argv.
"""

import asyncio
import contextlib
import secrets
import signal
import socket
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import asdict
from types import FrameType
from typing import Any

import anyio
import uvicorn
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import (BearerAuthBackend,
                                                    RequireAuthMiddleware)
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import (StreamableHTTPASGIApp,
                                                StreamableHTTPSessionManager)
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.supervisors import Multiprocess

from acor import exitcodes
from acor.events import Error

from acor.cli.mcp.transports.http_options import (PATH, HttpOptions,
                                                  allowed_hosts,
                                                  allowed_origins)
from acor.cli.mcp.server import build_server
from acor.cli.mcp.start import fail
from acor.cli.mcp.tokens import SHARED, holder, named_tokens
from acor.cli.mcp.tools import Catalog
from acor.cli.run.own_secrets import keep_private
from acor.cli.run.warm import WarmStarter

GRACE = 2.0             # seconds a call in flight gets when the server stops
BACKLOG = 1024


class TokenVerifier:
    """The SDK's TokenVerifier for the token file's (or variable's)
    tokens, compared in constant time: one shared token is one principal,
    "acor-token"; named tokens are one principal each, and the log says
    which name each request came with (:mod:`acor.cli.mcp.tokens`)."""

    def __init__(self, token: str) -> None:
        self._tokens = named_tokens(token, "the token")

    async def verify_token(self, token: str) -> AccessToken | None:
        name = holder(self._tokens, token)
        if name is None:
            return None
        if name != SHARED:
            print(f"acor mcp: a request from {name}", file=sys.stderr,
                  flush=True)
        return AccessToken(token="<redacted>", client_id=name, scopes=[])


def make_app(options: HttpOptions,
             ready: Callable[[], None] | None = None) -> "_InFlight":
    """The ASGI app (Starlette) serving ``/mcp`` for ``options``: the SDK's
    session manager behind, when there is a token, the SDK's bearer
    authentication. Starts the warm starter of this process; the app's
    lifespan closes it. ``ready()`` is called once it serves."""
    only = set(options.only) if options.only is not None else None
    catalog = Catalog.of_project(options.config_path, only)
    warm = WarmStarter()
    server = build_server(catalog, timeout=options.timeout, warm=warm,
                          key=options.key, connections=not options.stateless,
                          one_process=options.workers == 1)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=allowed_hosts(options),
        allowed_origins=allowed_origins(options))
    manager = StreamableHTTPSessionManager(
        server, stateless=options.stateless, security_settings=security)
    endpoint: Any = StreamableHTTPASGIApp(manager)
    middleware: list[Middleware] = []
    if options.token is not None:
        endpoint = RequireAuthMiddleware(endpoint, required_scopes=[])
        middleware = [
            Middleware(AuthenticationMiddleware,
                       backend=BearerAuthBackend(TokenVerifier(
                           options.token))),
            Middleware(AuthContextMiddleware)]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            async with manager.run():
                with _stop_requests_on_signal(requests):
                    if ready is not None:
                        ready()
                    yield
        finally:
            warm.close()

    requests = _InFlight(Starlette(routes=[Route(PATH, endpoint=endpoint)],
                                   middleware=middleware, lifespan=lifespan))
    return requests


class _InFlight:
    """Every HTTP request in flight, each in a cancel scope, so that a stop
    signal ends them at once, as it ends stdio's: their calls are cancelled
    and their tools stopped, rather than uvicorn waiting for them and then
    cancelling what is left (which it logs as a crash)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.scopes: set[anyio.CancelScope] = set()
        self.stopping = False

    async def __call__(self, scope: Scope, receive: Receive,
                       send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        with anyio.CancelScope() as cancel:
            if self.stopping:
                cancel.cancel()
            self.scopes.add(cancel)
            try:
                await self.app(scope, receive, send)
            finally:
                self.scopes.discard(cancel)

    def stop(self) -> None:
        self.stopping = True
        for cancel in list(self.scopes):
            cancel.cancel()


@contextlib.contextmanager
def _stop_requests_on_signal(requests: _InFlight) -> Iterator[None]:
    """While serving, SIGINT and SIGTERM first end every request in
    flight, then reach uvicorn's own handler (which stops the server)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signals reach the main thread only: nothing to chain
        return
    loop = asyncio.get_running_loop()
    previous: dict[int, Any] = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(sig)
        if not callable(handler):
            continue

        def chained(signum: int, frame: FrameType | None,
                    handler: Callable[[int, FrameType | None], Any] = handler
                    ) -> None:
            loop.call_soon_threadsafe(requests.stop)
            handler(signum, frame)
        previous[sig] = signal.signal(sig, chained)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


class WorkerApp:
    """uvicorn's app factory for ``--workers``: pickled by the supervisor
    into the start-up message a spawned worker reads from its pipe, so the
    options, the token and the key reach the worker in that message alone
    (not its environment, not its argv). Unpickling it first makes the
    worker undumpable, as its parent is, before the secrets are kept."""

    def __init__(self, options: HttpOptions) -> None:
        self.options = options

    def __getstate__(self) -> dict[str, Any]:
        return asdict(self.options)

    def __setstate__(self, state: dict[str, Any]) -> None:
        keep_private()
        self.options = HttpOptions(**state)

    def __call__(self) -> _InFlight:
        return make_app(self.options)


def bind(options: HttpOptions) -> socket.socket:
    """The listening socket (port 0: a free one); OSError says why not."""
    infos = socket.getaddrinfo(options.host, options.port,
                               type=socket.SOCK_STREAM,
                               flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(address)
        sock.listen(BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock


def serve_http(options: HttpOptions) -> int:
    """Serve until SIGINT, SIGTERM or SIGHUP; 130 then, as stdio. Calls
    still running get ``GRACE`` seconds, then are cancelled and their tools
    stopped.
    A port that cannot be listened on is reported on stderr: exit 2. The
    caller has run the checks of :mod:`acor.cli.mcp.start`.
    """
    if options.workers > 1 and not (options.key or "").strip():
        # Workers share one socket, so a retry may reach another worker:
        # they must share the key that seals requestState.
        options.key = secrets.token_hex(32)
    try:
        sock = bind(options)
    except OSError as exc:
        return fail(Error(
            f"acor mcp cannot listen on {options.host} port {options.port}: "
            f"{exc.strerror or exc}", "E_MCP_LISTEN", f"url: "
            f"{options.url()}",
            "Pick another port (`--port 0` takes a free one) or stop what "
            "uses this one."))
    port = sock.getsockname()[1]
    config_args: dict[str, Any] = dict(
        log_level="warning", access_log=False, lifespan="on",
        timeout_graceful_shutdown=GRACE, server_header=False,
        proxy_headers=False)
    stopped: list[int] = []
    serving: list[Any] = []  # the uvicorn server, once there is one

    def stop(signum: int, frame: FrameType | None) -> None:
        # Before uvicorn has its own handlers (or after it handed the
        # signal back): note it, and have uvicorn stop, or not start.
        stopped.append(signum)
        for server in serving:
            server.should_exit = True
    previous: dict[int, Any] = {sig: signal.signal(sig, stop)
                for sig in (signal.SIGINT, signal.SIGTERM)}
    # A closed terminal stops the server as Ctrl-C does.
    previous[signal.SIGHUP] = signal.signal(
        signal.SIGHUP, lambda *_: signal.raise_signal(signal.SIGTERM))
    try:
        if options.workers == 1:
            return _serve_one(options, config_args, sock, stopped, serving)
        _announce(options, port)
        return _serve_workers(options, config_args, sock)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _announce(options: HttpOptions, port: int) -> None:
    mode = "stateless" if options.stateless else "sessions"
    print(f"acor mcp: serving at {options.url(port)} (protocol up to "
          f"2025-11-25 as {mode}, and 2026-07-28; "
          f"{'bearer token required' if options.token else 'no token'}"
          f"{f'; {options.workers} workers' if options.workers > 1 else ''}"
          "). Ctrl-C stops it.", file=sys.stderr, flush=True)


def _serve_one(options: HttpOptions, config_args: dict[str, Any],
               sock: socket.socket, stopped: list[int],
               serving: list[Any]) -> int:
    port = sock.getsockname()[1]
    config = uvicorn.Config(make_app(options, lambda: _announce(options,
                                                                port)),
                            **config_args)
    server = uvicorn.Server(config)
    serving.append(server)
    if stopped:
        return exitcodes.CANCELLED  # stopped while it was being built
    server.run(sockets=[sock])
    if stopped:
        return exitcodes.CANCELLED
    if not server.started:
        return fail(Error("acor mcp --http failed to start", "E_MCP_LISTEN",
                          f"url: {options.url(port)}",
                          "Read the error above, fix it, and start again."))
    return exitcodes.OK


def _serve_workers(options: HttpOptions, config_args: dict[str, Any],
                   sock: socket.socket) -> int:
    """uvicorn's own supervisor: workers on the one socket, each building
    the app from what :class:`WorkerApp` carried to it; it returns once a
    signal stopped them."""
    sock.set_inheritable(True)
    config = uvicorn.Config(WorkerApp(options), factory=True,
                            workers=options.workers, fd=sock.fileno(),
                            **config_args)
    Multiprocess(config, sockets=[sock]).run()
    return exitcodes.CANCELLED
