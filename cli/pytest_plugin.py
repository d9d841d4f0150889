"""acor's pytest plugin: the ``acor_run`` fixture.

::

    def test_greets(acor_run):
        result = acor_run("hello", "Ada")
        assert result.exit_code == 0
        assert result.of("output")[0].text == "Hello, Ada!"

        result = acor_run("wc", args={"path": "data.txt"})  # as `acor call`
        assert result.data["lines"] == 3

The launcher runs in the test process, through the same runner as
``acor``; the tool runs in its own process. ``acor_run`` returns the run's
:class:`~acor.cli.run.result.RunResult`: ``.exit_code``, ``.state``,
``.events``, ``.data``, ``.errors``, ``.stderr``, ``.duration`` and
``.of(event_type)``.

pytest loads this module in every session of anyone who installs acor, so
it imports nothing at start-up: the runner is imported on first use.
"""

from __future__ import annotations

import os

import pytest

TYPE_CHECKING = False  # pytest loads this module in every session: only mypy
if TYPE_CHECKING:
    from typing import Any, Callable, Iterator, Mapping, Optional, Union

    from acor.cli.discovery.registry import Registry
    from acor.cli.discovery.spec import ToolSpec
    from acor.cli.errors import UsageError
    from acor.cli.run.result import RunResult
    from acor.cli.run.warm import WarmStarter

    PathLike = Union[str, "os.PathLike[str]"]


def _tool(name: PathLike, cwd: Optional[str]
          ) -> tuple[Union[str, ToolSpec], Optional[Registry]]:
    """``(tool, registry)`` for the runner: a name as discovery knows it
    (from ``cwd``, as the runner looks), or a tool folder / manifest path
    resolved to its spec."""
    if not (isinstance(name, os.PathLike) or (isinstance(name, str) and (
            os.sep in name or "/" in name))):
        return name, None
    from acor.cli.discovery.resolve import resolve
    from acor.cli.errors import LauncherError
    try:
        target = resolve(os.fspath(name))
    except LauncherError as exc:
        pytest.fail(f"acor_run: {exc.reason}. {exc.recovery}", pytrace=False)
    if target.spec is None and target.skipped is not None:
        pytest.fail(f"acor_run: acor skips {target.manifest_path}: "
                    f"{target.skipped.reason}. {target.skipped.recovery}",
                    pytrace=False)
    if target.spec is None:  # neither loaded nor skipped: no manifest
        pytest.fail(f"acor_run: acor does not load {target.manifest_path} "
                    "as a tool. Give a tool folder with manifest.json, or "
                    "a <name>.json wrapper manifest.", pytrace=False)
    return target.spec, target.registry


def _argv_from_values(spec: ToolSpec, values: Mapping[str, Any]
                      ) -> Union[list[str], UsageError]:
    """The argv for ``values``, as `acor call` builds it, or the
    :class:`cli.errors.UsageError` listing every violation of the tool's
    args schema (the result of that call: a test may mean it)."""
    from acor.cli.arguments import call_argv
    from acor.cli.errors import UsageError
    try:
        return call_argv(spec, values)
    except UsageError as exc:
        return exc


def _usage_result(spec: ToolSpec, error: UsageError) -> RunResult:
    """What `acor call` answers for arguments that fail the schema: an
    E_USAGE failure, exit 2, nothing run."""
    from acor.cli.run.result import RunResult
    from acor.events import Status
    event = error.to_event()
    return RunResult(exit_code=2, state="failed", error_code=event.code,
                     events=[event, Status("failed")], data=None,
                     errors=[event], stderr="", duration=0.0,
                     tool=spec.name, version=spec.version, argv=[],
                     session=None, next=event.next, fields=None,
                     audience="agent")


@pytest.fixture(scope="session")
def _acor_warm_start() -> Iterator[WarmStarter]:
    """One warm start for the test session: every ``acor_run`` of a Python
    tool forks from it instead of starting an interpreter."""
    from acor.cli.run.warm import WarmStarter
    warm = WarmStarter()
    yield warm
    warm.close()


@pytest.fixture
def acor_run(_acor_warm_start: WarmStarter) -> Callable[..., RunResult]:
    """Run a tool through acor: ``acor_run(name, *argv, args=None,
    timeout=None, cwd=None, human=None)`` returns its RunResult. ``name``
    is a tool's name or the path of its folder; ``args`` a dict of values
    checked against the tool's args schema and turned into the argv;
    ``human`` what a person answered for its human-only arguments
    (``{"yes": True}``), passed on their own channel as acor passes a
    person's answers: the test plays the person."""

    def run_tool(name: PathLike, *argv: PathLike,
                 args: Optional[Mapping[str, Any]] = None,
                 timeout: Optional[float] = None,
                 cwd: Optional[PathLike] = None,
                 human: Optional[Mapping[str, object]] = None) -> RunResult:
        if args is not None and argv:
            raise TypeError("acor_run takes an argv or args=, not both")
        from acor.cli.run.launch import run
        from acor.cli.run.request import build_request
        folder = None if cwd is None else os.fspath(cwd)
        tool, registry = _tool(name, folder)
        words = [os.fspath(a) for a in argv]
        if args is not None:
            request = build_request(tool, (), registry=registry, cwd=folder)
            if request.spec is None:  # the runner says why, as acor would
                return run(request, warm=_acor_warm_start)
            given = _argv_from_values(request.spec, args)
            if not isinstance(given, list):
                return _usage_result(request.spec, given)
            tool, registry, words = request.spec, request.registry, given
        return run(build_request(tool, words, registry=registry, cwd=folder,
                                 timeout=timeout, human=human),
                   warm=_acor_warm_start)

    return run_tool
