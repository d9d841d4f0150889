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
:class:`~acor.cli.runner.RunResult`: ``.exit_code``, ``.state``,
``.events``, ``.data``, ``.errors``, ``.stderr``, ``.duration`` and
``.of(event_type)``.

pytest loads this module in every session of anyone who installs acor, so
it imports nothing at start-up: the runner is imported on first use.
"""

from __future__ import annotations

import os

import pytest


def _tool(name):
    """A name as discovery knows it, or a tool folder / manifest path."""
    if isinstance(name, os.PathLike) or (isinstance(name, str) and (
            os.sep in name or "/" in name)):
        from .check import NotFound, resolve
        try:
            target = resolve(os.fspath(name))
        except NotFound as exc:
            pytest.fail(f"acor_run: {exc.error.title}: {exc.error.recovery}",
                        pytrace=False)
        if target.spec is None:
            pytest.fail(f"acor_run: acor skips {target.manifest_path}: "
                        f"{target.skipped.reason}. {target.skipped.recovery}",
                        pytrace=False)
        return target.spec, target.manifest_path
    return name, None


def _argv_from_values(tool, manifest_path, values):
    """The argv for ``values``, as `acor call` builds it; every violation
    of the tool's args schema fails the test, all of them listed."""
    import json
    from acor import args as schemas
    if manifest_path is None:
        from .discover import load_registry
        spec = load_registry().get(tool)
        if spec is None:
            pytest.fail(f"acor_run: no tool {tool!r} here (see `acor "
                        "list`)", pytrace=False)
        manifest_path = spec.manifest_path
    with open(manifest_path, encoding="utf-8-sig") as f:
        schema = json.load(f).get("args")
    if schema is None:  # free argv: {"argv": [...]}
        from .check import FREE_ARGV
        schema = FREE_ARGV
    problems = schemas.validate(schema, values)
    if problems:
        pytest.fail(f"acor_run: args do not fit {manifest_path}:\n  "
                    + "\n  ".join(problems), pytrace=False)
    if schema is FREE_ARGV:
        return list(values.get("argv", []))
    return schemas.to_argv(schema, values)


@pytest.fixture
def acor_run():
    """Run a tool through acor: ``acor_run(name, *argv, args=None,
    timeout=None, cwd=None)`` returns its RunResult. ``name`` is a tool's
    name or the path of its folder; ``args`` a dict of values checked
    against the tool's args schema and turned into the argv."""

    def run_tool(name, *argv, args=None, timeout=None, cwd=None):
        if args is not None and argv:
            raise TypeError("acor_run takes an argv or args=, not both")
        from .runner import run
        tool, manifest_path = _tool(name)
        if args is not None:
            argv = _argv_from_values(tool, manifest_path, args)
        return run(tool, [os.fspath(a) for a in argv],
                   cwd=None if cwd is None else os.fspath(cwd),
                   timeout=timeout)

    return run_tool
