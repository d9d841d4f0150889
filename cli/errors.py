"""The launcher's errors: every one an :class:`acor.errors.AcorError`
(reason, code, recovery, next, exit code), reported the same way.

:func:`acor.cli.output.formats.report` writes one in ACOR form, an Error
then the one final status an agent expects (and the result line in JSON),
and returns its exit code.
"""

from __future__ import annotations

from acor import exitcodes
from acor.errors import AcorError

from acor.cli.textsafe import printable

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    # What these errors read of discovery's objects, which live in a layer
    # above this one (acor.cli.discovery.config.ConfigError, .registry's
    # Registry and Skipped): described here, not imported.
    from typing import Collection, Protocol, Sequence

    class ConfigProblem(Protocol):
        @property
        def reason(self) -> str: ...
        @property
        def recovery(self) -> str | None: ...
        @property
        def where(self) -> str: ...

    class SkippedManifest(Protocol):
        @property
        def reason(self) -> str: ...
        @property
        def recovery(self) -> str: ...
        @property
        def path(self) -> str: ...

    class ToolNames(Protocol):
        @property
        def tools(self) -> Collection[str]: ...
        def skipped_named(self, name: str) -> SkippedManifest | None: ...
        def close_matches(self, name: str) -> list[str]: ...


class LauncherError(AcorError):
    """A run that could not start, or a built-in command that failed."""

    code = "E_LAUNCHER"
    exit_code = exitcodes.FAILED


class UsageError(LauncherError):
    """A wrong invocation: says what is wrong and what to type instead."""

    code = "E_USAGE"
    exit_code = exitcodes.USAGE


def config_error(exc: ConfigProblem) -> LauncherError:
    """A :class:`acor.cli.discovery.config.ConfigError` as the error a
    run reports."""
    return LauncherError(f"Invalid configuration: {exc.reason}",
                         exc.recovery, code="E_CONFIG",
                         details=f"file: {exc.where}",
                         next=["acor", "doctor"],
                         exit_code=exitcodes.USAGE)


def unknown_tool(name: str, registry: ToolNames, args: Sequence[str] = (),
                 command: Sequence[str] = ("acor",)) -> LauncherError:
    """No tool called ``name``: the error every command gives. A manifest
    discovery skipped that claims the name is named with its reason
    (:func:`invalid_manifest`), whichever command asked."""
    skipped = registry.skipped_named(name)
    if skipped is not None:
        return invalid_manifest(name, skipped)
    matches = registry.close_matches(name)
    shown = printable(name)[:200]
    if matches:
        details = "Did you mean: " + ", ".join(matches) + "?"
        recovery = (f"If you meant {matches[0]}, run the command below; "
                    "`acor list` shows every tool.")
        next_argv = [*command, matches[0], *args]
    else:
        known = ", ".join(sorted(registry.tools)) or "none"
        details = f"Known tools: {known}"
        recovery = ("Run `acor list` to see the available tools; "
                    "`acor doctor` shows manifests that were skipped and why.")
        next_argv = ["acor", "list"]
    return LauncherError(f"Unknown tool '{shown}'", recovery,
                         code="E_UNKNOWN_TOOL", details=details,
                         next=next_argv, exit_code=exitcodes.USAGE)


# How discovery's reason starts for a tool that is not what acor.lock pins
# (cli.discovery.registry writes it).
PINNED = "it is not what acor.lock pins: "


def invalid_manifest(name: str, skipped: SkippedManifest) -> LauncherError:
    """A tool whose manifest was found but skipped: say which, and why."""
    if skipped.reason.startswith(PINNED):  # changed since a person locked it
        return LauncherError(
            f"Tool '{printable(name)}' is not served: "
            f"{printable(skipped.reason)}", printable(skipped.recovery),
            code="E_TOOL_CHANGED", details=f"manifest: "
            f"{printable(skipped.path)}", next=["acor", "doctor"],
            exit_code=exitcodes.USAGE)
    return LauncherError(
        f"Tool '{printable(name)}' has an invalid manifest: "
        f"{printable(skipped.reason)}", printable(skipped.recovery),
        code="E_INVALID_MANIFEST",
        details=f"manifest: {printable(skipped.path)}",
        next=["acor", "doctor"], exit_code=exitcodes.USAGE)
