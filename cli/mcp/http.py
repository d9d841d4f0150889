"""``acor mcp --http``: the same MCP server, over the streamable HTTP
transport, at ``/mcp``, for agents on other machines.

Everything a call does is the stdio server's: the server is
:func:`acor.cli.mcp.app.build_server`, with the same handlers (schemas,
progress, cancellation, Input Needed, results), and only the transport
differs. The transport is the SDK's own (its session manager serves
protocol versions up to 2025-11-25 as sessions and 2026-07-28 as
self-contained requests); uvicorn serves it. Nothing here speaks HTTP
itself.

Safe by default:

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

This module imports only the standard library at the top: the options are
checked, and errors reported, before the SDK is imported.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import signal
import socket
import stat
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

from acor.cli.mcp.tokens import MAKE_TOKEN, SHARED, holder, named_tokens
from acor.cli.run.own_secrets import TOKEN_VAR as TOKEN_ENV, keep_private

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
PATH = "/mcp"
GRACE = 2.0             # seconds a call in flight gets when the server stops
BACKLOG = 1024
_LOOPBACK_NAMES = ("localhost", "ip6-localhost", "ip6-loopback")


@dataclass
class HttpOptions:
    """What ``acor mcp --http`` was asked for, checked. Plain data, so the
    parent can hand it to its workers (:class:`WorkerApp`)."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    token: str | None = field(default=None, repr=False)
    key: str | None = field(default=None, repr=False)  # ACOR_MCP_KEY
    allow_hosts: list[str] = field(default_factory=list)
    allow_origins: list[str] = field(default_factory=list)
    stateless: bool = False
    workers: int = 1
    only: list[str] | None = None
    timeout: float | None = None
    config_path: str | None = None

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    def url(self, port: int | None = None) -> str:
        host = self.host
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port if port is None else port}{PATH}"


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only. A name other than
    localhost is not trusted to (its address may change)."""
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def parse_http_options(*, host: str | None, port: str | None,
                       token_file: str | None, allow_hosts: tuple[str, ...],
                       allow_origins: tuple[str, ...], stateless: bool,
                       workers: str | None,
                       environ: dict[str, str] | None = None) -> HttpOptions:
    """The checked options; raises ValueError with what is wrong, why, and
    the exact next command."""
    env = os.environ if environ is None else environ
    options = HttpOptions(stateless=stateless)
    if host is not None:
        host = host.strip()
        if not host or any(c.isspace() or c in "/@?#" for c in host):
            raise ValueError(f"--host {host!r} is not a host name or address"
                             ", e.g. --host 127.0.0.1 or --host 0.0.0.0")
        options.host = host.strip("[]")
    options.port = _number("--port", port, DEFAULT_PORT, 0, 65535)
    options.workers = _number("--workers", workers, 1, 1, 64)
    if options.workers > 1:
        options.stateless = True
    options.allow_hosts = [_header_value("--allow-host", h)
                           for h in allow_hosts]
    options.allow_origins = [_origin(o) for o in allow_origins]
    options.token = _token(token_file, env)
    if options.token is None and not options.loopback:
        raise ValueError(
            f"--host {options.host} is reachable from other machines, so "
            "acor mcp needs a token that every client must send "
            f"(Authorization: Bearer TOKEN). Set {TOKEN_ENV} or pass "
            "--token-file FILE, e.g. "
            f"`export {TOKEN_ENV}=$({MAKE_TOKEN})` then "
            f"`acor mcp --http --host {options.host}`.")
    return options


def _number(flag: str, value: str | None, default: int, low: int,
            high: int) -> int:
    if value is None:
        return default
    try:
        number = int(value.strip())
    except ValueError:
        number = None
    if number is None or not low <= number <= high:
        raise ValueError(f"{flag} takes a whole number from {low} to {high}"
                         f", not {value!r}")
    return number


def _header_value(flag: str, value: str) -> str:
    value = value.strip()
    if not value or any(c.isspace() or c in "/@?#" for c in value) \
            or not value.isprintable():
        raise ValueError(f"{flag} takes a host as a client names it "
                         f"(mcp.example.com or mcp.example.com:443), not "
                         f"{value!r}")
    return value


def _origin(value: str) -> str:
    value = value.strip().rstrip("/")
    scheme, sep, rest = value.partition("://")
    if not sep or scheme not in ("http", "https") or not rest \
            or any(c.isspace() or c in "/@?#" for c in rest) \
            or not value.isprintable():
        raise ValueError(f"--allow-origin takes an origin such as "
                         f"https://app.example.com, not {value!r}")
    return value


def _token(token_file: str | None, env) -> str | None:
    if token_file is not None:
        try:
            info = os.stat(token_file)
            with open(token_file, encoding="utf-8") as handle:
                token = handle.read().strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"--token-file {token_file!r} cannot be read "
                             f"({exc.__class__.__name__}: "
                             f"{getattr(exc, 'strerror', None) or exc})"
                             ) from None
        if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise ValueError(f"--token-file {token_file!r} may be read by "
                             "other users; make it yours alone: "
                             f"`chmod 600 {token_file}`")
        where = f"--token-file {token_file!r}"
    else:
        token = env.get(TOKEN_ENV, "").strip()
        if not token:
            return None
        where = TOKEN_ENV
    named_tokens(token, where)  # one token, or NAME: TOKEN lines
    return token


def allowed_hosts(options: HttpOptions) -> list[str]:
    """The Host header values this server answers to: loopback names
    always, the address it listens on, and ``--allow-host``'s."""
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*",
             "127.0.0.1", "localhost", "[::1]"]
    if not options.loopback and options.host not in ("0.0.0.0", "::"):
        name = f"[{options.host}]" if ":" in options.host else options.host
        hosts += [name, f"{name}:*"]
    for host in options.allow_hosts:
        hosts += [host] if ":" in host.rsplit("]", 1)[-1] \
            else [host, f"{host}:*"]
    return hosts


def allowed_origins(options: HttpOptions) -> list[str]:
    """The Origin values a browser may send: pages served from this
    machine, and ``--allow-origin``'s. A client that is not a browser
    sends none, and is not asked for one."""
    return ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*",
            "http://127.0.0.1", "http://localhost", "http://[::1]",
            *options.allow_origins]


class TokenVerifier:
    """The SDK's TokenVerifier for the token file's (or variable's)
    tokens, compared in constant time: one shared token is one principal,
    "acor-token"; named tokens are one principal each, and the log says
    which name each request came with (:mod:`acor.cli.mcp.tokens`)."""

    def __init__(self, token: str) -> None:
        self._tokens = named_tokens(token, "the token")

    async def verify_token(self, token: str):
        from mcp.server.auth.provider import AccessToken
        name = holder(self._tokens, token)
        if name is None:
            return None
        if name != SHARED:
            print(f"acor mcp: a request from {name}", file=sys.stderr,
                  flush=True)
        return AccessToken(token="<redacted>", client_id=name, scopes=[])


def make_app(options: HttpOptions, ready=None):
    """The ASGI app (Starlette) serving ``/mcp`` for ``options``: the SDK's
    session manager behind, when there is a token, the SDK's bearer
    authentication. Starts the warm starter of this process; the app's
    lifespan closes it. ``ready()`` is called once it serves."""
    from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
    from mcp.server.auth.middleware.bearer_auth import (BearerAuthBackend,
                                                        RequireAuthMiddleware)
    from mcp.server.streamable_http_manager import (
        StreamableHTTPASGIApp, StreamableHTTPSessionManager)
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.authentication import AuthenticationMiddleware
    from starlette.routing import Route

    from acor.cli.discovery.registry import load_registry
    from acor.cli.mcp.app import build_server
    from acor.cli.mcp.tools import Catalog
    from acor.cli.run.warm import WarmStarter

    only = set(options.only) if options.only is not None else None
    catalog = Catalog(lambda: load_registry(config_path=options.config_path),
                      only)
    warm = WarmStarter()
    server = build_server(catalog, timeout=options.timeout, warm=warm,
                          key=options.key)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=allowed_hosts(options),
        allowed_origins=allowed_origins(options))
    manager = StreamableHTTPSessionManager(
        server, stateless=options.stateless, security_settings=security)
    endpoint: Any = StreamableHTTPASGIApp(manager)
    middleware = []
    if options.token is not None:
        endpoint = RequireAuthMiddleware(endpoint, required_scopes=[])
        middleware = [
            Middleware(AuthenticationMiddleware,
                       backend=BearerAuthBackend(TokenVerifier(
                           options.token))),
            Middleware(AuthContextMiddleware)]

    @contextlib.asynccontextmanager
    async def lifespan(app):
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

    def __init__(self, app) -> None:
        self.app = app
        self.scopes: set = set()
        self.stopping = False

    async def __call__(self, scope, receive, send) -> None:
        import anyio
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
def _stop_requests_on_signal(requests: _InFlight):
    """While serving, SIGINT and SIGTERM first end every request in
    flight, then reach uvicorn's own handler (which stops the server)."""
    import asyncio
    import threading
    if threading.current_thread() is not threading.main_thread():
        yield  # signals reach the main thread only: nothing to chain
        return
    loop = asyncio.get_running_loop()
    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(sig)
        if not callable(handler):
            continue

        def chained(signum, frame, handler=handler):
            loop.call_soon_threadsafe(requests.stop)
            handler(signum, frame)
        previous[sig] = signal.signal(sig, chained)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class WorkerApp:
    """uvicorn's app factory for ``--workers``: pickled by the supervisor
    into the start-up message a spawned worker reads from its pipe, so the
    options, the token and the key reach the worker in that message alone
    (not its environment, not its argv). Unpickling it first makes the
    worker undumpable, as its parent is, before the secrets are kept."""

    def __init__(self, options: HttpOptions) -> None:
        self.options = options

    def __getstate__(self) -> dict:
        return asdict(self.options)

    def __setstate__(self, state: dict) -> None:
        keep_private()
        self.options = HttpOptions(**state)

    def __call__(self):
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
    stopped. A problem found before serving is reported on stderr: exit 2.
    """
    from acor.events import Error

    from acor.cli.discovery.registry import load_registry
    from acor.cli.mcp.server import fail, sdk_problem, start_problem
    from acor.cli.mcp.tools import Catalog
    problem = sdk_problem()
    if problem is None:
        only = set(options.only) if options.only is not None else None
        problem = start_problem(Catalog(
            lambda: load_registry(config_path=options.config_path), only),
            options.key)
    if problem is not None:
        return fail(problem)
    if options.workers > 1 and not (options.key or "").strip():
        # Workers share one socket, so a retry may reach another worker:
        # they must share the key that seals requestState.
        import secrets
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

    def stop(signum, frame) -> None:
        # Before uvicorn has its own handlers (or after it handed the
        # signal back): note it, and have uvicorn stop, or not start.
        stopped.append(signum)
        for server in serving:
            server.should_exit = True
    previous = {sig: signal.signal(sig, stop)
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
        for sig, handler in previous.items():
            signal.signal(sig, handler)


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
    import uvicorn

    from acor import exitcodes
    from acor.events import Error

    from acor.cli.mcp.server import fail
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
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    from acor import exitcodes
    sock.set_inheritable(True)
    config = uvicorn.Config(WorkerApp(options), factory=True,
                            workers=options.workers, fd=sock.fileno(),
                            **config_args)
    Multiprocess(config, sockets=[sock]).run()
    return exitcodes.CANCELLED
