"""What ``acor mcp --http`` was asked for, checked before anything is
served: the address, the port, the token, the hosts and origins it answers
to, the workers. Plain data and the standard library only, so a bad option
is reported before the SDK is imported; the transport is
:mod:`acor.cli.mcp.transports.http`.

Safe by default: it listens on 127.0.0.1 unless ``--host`` says otherwise;
a host that is not loopback refuses to start without a token
(``ACOR_MCP_TOKEN`` or ``--token-file``); only the loopback names, the
address it listens on and ``--allow-host``'s are hosts it answers to, and
only pages of this machine and ``--allow-origin``'s are origins it trusts.
"""

import ipaddress
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field

from acor.cli.mcp.tokens import MAKE_TOKEN, named_tokens
from acor.cli.run.own_secrets import TOKEN_VAR as TOKEN_ENV

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
PATH = "/mcp"
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
                       environ: Mapping[str, str] | None = None
                       ) -> HttpOptions:
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


def _token(token_file: str | None, env: Mapping[str, str]) -> str | None:
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
