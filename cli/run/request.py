"""One run, asked for: :class:`RunRequest`, built once by
:func:`build_request` from what the caller gave (the command line, an MCP
call, a test), the project's config and the tool's manifest.

Every precedence of a run lives in :func:`build_request` and nowhere
else: the time limits (the caller's, else the manifest's, else the
config's, else 120 s), the output budget (the caller's, else the
manifest's, else the config's, else :data:`cli.sizes.DEFAULT_MAX_OUTPUT`),
the directory the tool runs in (the project root for a manifest that
says ``cwd: project``) and the state dir (the config's, else
:data:`cli.discovery.config.DEFAULT_STATE_DIR`). The runner
(:func:`acor.cli.run.launch.run`) and the front ends read the request;
none of them works a default out again.

A name the registry does not know, or a config acor cannot read, is not
raised here: the request carries it (``refused``) for the runner to
report in the caller's format, as every other ending is.
"""

from __future__ import annotations

from acor.cli.discovery.config import DEFAULT_STATE_DIR, ConfigError
from acor.cli.discovery.registry import load_registry
from acor.cli.errors import LauncherError, config_error, invalid_manifest, \
    unknown_tool
from acor.cli.sizes import DEFAULT_MAX_OUTPUT

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Mapping, Optional, Sequence, TypeVar

    from acor.cli.discovery.config import Config
    from acor.cli.discovery.registry import Registry
    from acor.cli.discovery.spec import ToolSpec

    T = TypeVar("T")

__all__ = ["DEFAULT_TIMEOUT", "RunRequest", "build_request", "open_registry"]

DEFAULT_TIMEOUT = 120.0  # seconds, when caller, manifest and config say none


class RunRequest:
    """What one run is: the tool and its arguments, where and how long it
    runs, its output budget, and what its caller is (a person at a
    terminal, the whole ``acor`` process). Built by
    :func:`build_request`; never changed after."""

    __slots__ = ("tool", "spec", "registry", "refused", "argv", "command",
                 "cwd", "run_dir", "timeout", "idle_timeout", "max_output",
                 "state_dir", "sandbox", "env", "human", "person",
                 "read_by_person", "inherit_stdin", "handle_signals",
                 "reap_orphans", "keep_events")

    tool: str                        # the tool's name, as asked for
    spec: Optional[ToolSpec]         # None: refused
    registry: Optional[Registry]
    refused: Optional[LauncherError]  # why it cannot run: unknown, config
    argv: tuple[str, ...]            # the tool's arguments
    command: tuple[str, ...]         # the acor argv `next` commands start with
    cwd: Optional[str]               # the caller's directory (None: ours)
    run_dir: Optional[str]           # where the tool runs (None: ours)
    timeout: float
    idle_timeout: Optional[float]
    max_output: int                  # bytes relayed (0: no limit)
    state_dir: str                   # where sessions and spilled output go
    sandbox: Optional[str]           # "default", "off", "check" or None
    env: Optional[Mapping[str, str]]  # added to the tool's environment
    human: Optional[Mapping[str, object]]  # a person's answers, own channel
    person: bool                     # the caller asks a person what is needed
    read_by_person: bool             # a person reads it, asked here or not
    inherit_stdin: bool
    handle_signals: bool             # acor is the whole process: its signals
    reap_orphans: bool               # ... and its orphans are the run's
    keep_events: bool                # the result holds every event

    def __init__(self, *, tool: str, spec: Optional[ToolSpec],
                 registry: Optional[Registry],
                 refused: Optional[LauncherError], argv: tuple[str, ...],
                 command: tuple[str, ...], cwd: Optional[str],
                 run_dir: Optional[str], timeout: float,
                 idle_timeout: Optional[float], max_output: int,
                 state_dir: str, sandbox: Optional[str],
                 env: Optional[Mapping[str, str]],
                 human: Optional[Mapping[str, object]], person: bool,
                 read_by_person: bool, inherit_stdin: bool,
                 handle_signals: bool, reap_orphans: bool,
                 keep_events: bool) -> None:
        given = locals()
        for name in self.__slots__:
            object.__setattr__(self, name, given[name])

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a RunRequest is not changed: {name}")

    @property
    def config(self) -> Optional[Config]:
        return self.registry.config if self.registry is not None else None


def build_request(tool: str | ToolSpec, argv: Sequence[str] = (), *,
                  registry: Optional[Registry] = None,
                  config_path: Optional[str] = None,
                  cwd: Optional[str] = None,
                  timeout: Optional[float] = None,
                  idle_timeout: Optional[float] = None,
                  max_output: Optional[int] = None,
                  command: Sequence[str] = ("acor",),
                  sandbox: Optional[str] = None,
                  env: Optional[Mapping[str, str]] = None,
                  human: Optional[Mapping[str, object]] = None,
                  person: bool = False, read_by_person: bool = False,
                  inherit_stdin: bool = False, whole_process: bool = False,
                  keep_events: bool = True) -> RunRequest:
    """The request to run ``tool`` (a name, discovered from ``cwd`` with
    ``config_path`` (``--config``; ``ACOR_CONFIG`` is read by discovery)
    unless ``registry`` is given, or a resolved spec) with ``argv``.
    ``timeout``, ``idle_timeout`` and ``max_output`` are the caller's
    (None: the manifest's, else the config's, else the default);
    ``command`` the acor argv that ran it (for ``next`` commands);
    ``person``: the caller asks a person what the tool needs;
    ``read_by_person``: a person reads the run, asked or not (the rich
    view at a terminal, ``--no-input`` included), so nothing in it is
    written for an agent; ``whole_process``: acor is this run and nothing
    else (the ``acor`` command), so the run handles its signals and its
    orphans."""
    name = tool if isinstance(tool, str) else tool.name
    try:
        spec, registry = _resolve(tool, registry, config_path, cwd, argv,
                                  command)
        refused = None
    except LauncherError as exc:
        spec, refused = None, exc
    config = registry.config if registry is not None else None
    return RunRequest(
        tool=name, spec=spec, registry=registry, refused=refused,
        argv=tuple(argv), command=tuple(command), cwd=cwd,
        run_dir=run_directory(spec, config, cwd),
        timeout=_first(DEFAULT_TIMEOUT, timeout,
                       spec.timeout if spec else None,
                       config.timeout if config else None),
        idle_timeout=_first(None, idle_timeout,
                            spec.idle_timeout if spec else None,
                            config.idle_timeout if config else None),
        max_output=output_budget(spec, config, max_output),
        state_dir=(config.state_dir if config else None) or
        DEFAULT_STATE_DIR,
        sandbox=sandbox, env=env, human=human or None, person=person,
        read_by_person=person or read_by_person,
        inherit_stdin=inherit_stdin, handle_signals=whole_process,
        reap_orphans=whole_process, keep_events=keep_events)


def output_budget(spec: Optional[ToolSpec], config: Optional[Config],
                  given: Optional[int] = None) -> int:
    """The bytes of a run's output the agent is shown (0: no limit):
    ``given`` (the caller's), else the manifest's ``max_output``, else the
    config's, else the default. MCP's tool listing tells hosts the same."""
    return _first(DEFAULT_MAX_OUTPUT, given,
                  spec.max_output if spec else None,
                  config.max_output if config else None)


def _resolve(tool: str | ToolSpec, registry: Optional[Registry],
             config_path: Optional[str], cwd: Optional[str],
             argv: Sequence[str], command: Sequence[str]
             ) -> tuple[ToolSpec, Optional[Registry]]:
    if not isinstance(tool, str):
        return tool, registry
    if registry is None:
        registry = open_registry(config_path, cwd)
    spec = registry.get(tool)
    if spec is not None:
        return spec, registry
    skipped = registry.skipped_named(tool)
    if skipped is not None:
        raise invalid_manifest(tool, skipped)
    raise unknown_tool(tool, registry, list(argv), list(command))


def open_registry(config_path: Optional[str] = None,
                  cwd: Optional[str] = None) -> Registry:
    """The tools discovered from ``cwd`` with ``config_path``
    (``--config``; else ``ACOR_CONFIG``, else the nearest
    .acor/config.yaml: :func:`cli.discovery.config.find_config`), or the
    LauncherError a run reports for a config acor cannot use."""
    try:
        return load_registry(cwd=cwd, config_path=config_path)
    except ConfigError as exc:
        raise config_error(exc) from None


def run_directory(spec: Optional[ToolSpec], config: Optional[Config],
             cwd: Optional[str]) -> Optional[str]:
    """Where the tool runs: the project root for ``cwd: project`` (when
    there is a project), else the caller's directory."""
    if spec is not None and spec.cwd_mode == "project" and \
            config is not None:
        return str(config.root)
    return cwd


def _first(default: T, *values: Optional[T]) -> T:
    """The first of ``values`` that is set (a 0 is set: no budget, say),
    else ``default``."""
    return next((v for v in values if v is not None), default)
