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


def _tool(name, cwd):
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
    if target.spec is None:
        pytest.fail(f"acor_run: acor skips {target.manifest_path}: "
                    f"{target.skipped.reason}. {target.skipped.recovery}",
                    pytrace=False)
    return target.spec, target.registry


def _argv_from_values(spec, values):
    """The argv for ``values``, as `acor call` builds it, or the
    :class:`cli.errors.UsageError` listing every violation of the tool's
    args schema (the result of that call: a test may mean it)."""
    from acor.cli.arguments import call_argv
    from acor.cli.errors import UsageError
    try:
        return call_argv(spec, values)
    except UsageError as exc:
        return exc


def _usage_result(spec, error):
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
def _acor_warm_start():
    """One warm start for the test session: every ``acor_run`` of a Python
    tool forks from it instead of starting an interpreter."""
    from acor.cli.run.warm import WarmStarter
    warm = WarmStarter()
    yield warm
    warm.close()


@pytest.fixture
def acor_run(_acor_warm_start):
    """Run a tool through acor: ``acor_run(name, *argv, args=None,
    timeout=None, cwd=None, human=None)`` returns its RunResult. ``name``
    is a tool's name or the path of its folder; ``args`` a dict of values
    checked against the tool's args schema and turned into the argv;
    ``human`` what a person answered for its human-only arguments
    (``{"yes": True}``), passed on their own channel as acor passes a
    person's answers: the test plays the person."""

    def run_tool(name, *argv, args=None, timeout=None, cwd=None,
                 human=None):
        if args is not None and argv:
            raise TypeError("acor_run takes an argv or args=, not both")
        from acor.cli.run.launch import run
        from acor.cli.run.request import build_request
        cwd = None if cwd is None else os.fspath(cwd)
        tool, registry = _tool(name, cwd)
        if args is not None:
            request = build_request(tool, (), registry=registry, cwd=cwd)
            if request.spec is None:  # the runner says why, as acor would
                return run(request, warm=_acor_warm_start)
            argv = _argv_from_values(request.spec, args)
            if not isinstance(argv, list):
                return _usage_result(request.spec, argv)
            tool, registry = request.spec, request.registry
        return run(build_request(tool, [os.fspath(a) for a in argv],
                                 registry=registry, cwd=cwd, timeout=timeout,
                                 human=human), warm=_acor_warm_start)

    return run_tool
