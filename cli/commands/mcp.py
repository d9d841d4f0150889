"""``acor mcp``: the command that serves every tool to MCP clients, over
stdio (:mod:`acor.cli.mcp.transports.stdio`) or HTTP
(:mod:`acor.cli.mcp.transports.http`); :mod:`acor.cli.commands.mcp_config`
writes a client's config for it. The MCP SDK is imported only once the
server is about to serve."""

from __future__ import annotations

import os
from collections.abc import Mapping

import click

from acor.events import Error

from acor.cli.commands.mcp_config import CLIENTS, http_url, print_config, \
    print_http_config
from acor.cli.mcp.transports.http_options import HttpOptions, parse_http_options
from acor.cli.mcp.start import fail, parse_options, sdk_problem, start_problem
from acor.cli.mcp.transports.stdio import serve
from acor.cli.mcp.tools import Catalog
from acor.cli.run import own_secrets
from acor.cli.tasks.place import SERVER_ENV, STORE_ENV
from acor.cli.tasks.stores import StoreProblem, open_store
from acor.cli.textsafe import quote


@click.command("mcp")
@click.option("--tools", "tools", metavar="NAME,...", multiple=True,
              help="Serve only these tools (comma-separated names; the "
                   "option may be repeated).")
@click.option("--timeout", metavar="S",
              help="Seconds before a call's tool is stopped (default: the "
                   "tool's manifest, the config, then 120).")
@click.option("--cwd", metavar="DIR",
              help="Work in DIR, the project: tools are found from there "
                   "and run there (as `git -C`: a relative --config starts "
                   "from DIR too). Clients start servers in a folder of "
                   "their own.")
@click.option("--print-config", "client", type=click.Choice(CLIENTS),
              help="Print the config that makes this client start acor "
                   "mcp for this project (absolute paths), and exit.")
@click.option("--http", "http", is_flag=True,
              help="Serve over MCP's streamable HTTP transport at /mcp "
                   "instead of stdio.")
@click.option("--host", metavar="H",
              help="--http: the address to listen on (default 127.0.0.1; "
                   "any other needs a token).")
@click.option("--port", metavar="P",
              help="--http: the port (default 8765; 0 picks a free one).")
@click.option("--token-file", metavar="FILE",
              help="--http: the bearer token every request must carry "
                   "(default: $ACOR_MCP_TOKEN).")
@click.option("--allow-host", "allow_hosts", metavar="NAME", multiple=True,
              help="--http: a Host name clients reach this server by, e.g. "
                   "behind a proxy (repeatable).")
@click.option("--allow-origin", "allow_origins", metavar="ORIGIN",
              multiple=True,
              help="--http: a browser Origin allowed to call (repeatable).")
@click.option("--stateless", is_flag=True,
              help="--http: no sessions for protocols before 2026-07-28, "
                   "so any replica can answer any request.")
@click.option("--workers", metavar="N",
              help="--http: uvicorn worker processes (more than 1 implies "
                   "--stateless).")
@click.option("--task-store", "task_store", metavar="URL",
              envvar=STORE_ENV, show_envvar=True,
              help="Keep MCP tasks in this shared store, a postgresql:// "
                   "URL, so that replicas on several machines share them "
                   "(needs the tasks-postgres extra); default: the state "
                   "dir's embedded store.")
@click.pass_context
def mcp_command(ctx: click.Context, tools: tuple[str, ...],
                timeout: str | None, cwd: str | None = None,
                client: str | None = None, http: bool = False,
                host: str | None = None, port: str | None = None,
                token_file: str | None = None,
                allow_hosts: tuple[str, ...] = (),
                allow_origins: tuple[str, ...] = (), stateless: bool = False,
                workers: str | None = None,
                task_store: str | None = None) -> int:
    """Serve every tool to MCP clients (Claude Code, Claude Desktop,
    Cursor, VS Code, Codex...) over stdio, or over HTTP with --http: typed
    arguments, progress, input requests and cancellation. Needs the mcp
    extra (README, "Installing"). `acor mcp --print-config claude`, run in
    the project, writes the client's config."""
    # The token and the key are read once, here, and held in memory only:
    # gone from the environment every tool, worker and fork server
    # inherits, and this process closed to the user's other processes
    # (its /proc/PID/environ still holds what it started with).
    own_secrets.keep_private()
    secrets = own_secrets.take_all()
    # The store's URL may hold a password: no tool inherits it.
    os.environ.pop(STORE_ENV, None)
    key = secrets.get(own_secrets.KEY_VAR)
    http_only = {"--host": host, "--port": port, "--token-file": token_file,
                 "--allow-host": allow_hosts or None,
                 "--allow-origin": allow_origins or None,
                 "--stateless": stateless or None, "--workers": workers}
    try:
        only, seconds = parse_options(",".join(tools) if tools else None,
                                      timeout)
        _check_modes(http, http_only)
        options = parse_http_options(
            host=host, port=port, token_file=token_file,
            allow_hosts=allow_hosts, allow_origins=allow_origins,
            stateless=stateless, workers=workers,
            environ=secrets) if http else None
    except ValueError as exc:
        return fail(Error(str(exc), "E_USAGE", None,
                          "Run `acor mcp --help` for the options."))
    if cwd is not None:
        try:
            os.chdir(cwd)
        except OSError as exc:
            return fail(Error(f"--cwd {quote(cwd)}: {exc.strerror}",
                              "E_USAGE", None,
                              "Give the project's folder, as an absolute "
                              "path: --cwd /abs/project."))
    config = (ctx.obj or {}).get("config") or os.environ.get("ACOR_CONFIG")
    if client is not None and options is not None:
        return _print_http_config(client, options)
    if client is not None:
        return print_config(client, only, timeout, seconds, config)
    problem = _use_store(task_store)
    if problem is not None:
        return fail(problem)
    if options is not None:
        options.key = key
        options.only = sorted(only) if only is not None else None
        options.timeout = seconds
        options.config_path = config
        return serve_http(options)
    return serve(only, seconds, config, key)


def _use_store(url: str | None) -> Error | None:
    """Why the shared task store ``url`` cannot be used, or None, checked
    (reached, its tables made) before serving, not at the first task;
    then handed to this server and its workers. None: the embedded one."""
    if not url:
        return None
    try:
        open_store(url, "").close()
    except StoreProblem as exc:
        return Error(exc.title, "E_TASK_STORE", None, exc.recovery)
    os.environ[SERVER_ENV] = url
    return None


def _print_http_config(client: str, options: HttpOptions) -> int:
    """The URL entry for the server these --http options start."""
    if options.port == 0:
        return fail(Error("--print-config needs the port clients connect "
                          "to, and --port 0 picks one at start", "E_USAGE",
                          None, "Give a fixed port, e.g. `acor mcp --http "
                          "--port 8765 --print-config " + client + "`."))
    url = http_url(options.host, options.port, list(options.allow_hosts))
    return print_http_config(client, url, options.token is not None)


def _check_modes(http: bool, http_only: Mapping[str, object]) -> None:
    """Raise ValueError when options of one mode come with another."""
    given = [flag for flag, value in http_only.items() if value is not None]
    if given and not http:
        verb = "applies" if len(given) == 1 else "apply"
        raise ValueError(f"{', '.join(given)} only {verb} with --http, "
                         f"e.g. `acor mcp --http {given[0]} ...`")


def serve_http(options: HttpOptions) -> int:
    """Check what stdio checks, then serve over HTTP."""
    only = set(options.only) if options.only is not None else None
    problem = sdk_problem() or start_problem(
        Catalog.of_project(options.config_path, only), options.key)
    if problem is not None:
        return fail(problem)
    # The SDK, starlette and uvicorn: imported only once they are known to
    # be there (an ImportError is no way to say the extra is missing).
    from acor.cli.mcp.transports.http import serve_http as serve_over_http
    code: int = serve_over_http(options)
    return code
