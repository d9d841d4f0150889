"""A tool named on the command line by its name or by its path (a tool
folder, its ``manifest.json``, a wrapper's ``<name>.json``, or the ``.py``
file of a function tool), found as discovery finds it: ``acor check`` and
the pytest plugin's ``acor_run`` take either."""

from __future__ import annotations

import os

from acor.cli.discovery.registry import Registry, load_registry, scan
from acor.cli.errors import UsageError, unknown_tool

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from acor.cli.discovery.config import Config
    from acor.cli.discovery.registry import Skipped
    from acor.cli.discovery.spec import ToolSpec


class Target:
    """The tool to check: its manifest, and what discovery made of it."""

    __slots__ = ("name", "manifest_path", "folder", "spec", "skipped",
                 "registry")

    def __init__(self, name: str, manifest_path: str,
                 spec: ToolSpec | None = None, skipped: Skipped | None = None,
                 registry: Registry | None = None) -> None:
        self.name = name
        self.manifest_path = manifest_path
        # Examples run here: tool folders hold their sample inputs.
        self.folder = os.path.dirname(manifest_path)
        self.spec = spec          # a ToolSpec, None if discovery skips it
        self.skipped = skipped    # discovery's Skipped, when it does
        self.registry = registry


def looks_like_path(ref: str) -> bool:
    return os.sep in ref or "/" in ref or \
        ref.endswith((".json", ".py")) or \
        os.path.isfile(os.path.join(ref, "manifest.json"))


def resolve(ref: str, cwd: str | None = None,
            config_path: str | None = None) -> Target:
    """The tool called ``ref``, or at path ``ref`` (a tool folder, its
    manifest.json, or a wrapper's ``<name>.json``), in the registry of
    ``cwd`` and ``config_path`` (``--config``). Raises
    :class:`acor.cli.errors.LauncherError` when there is none, and
    :class:`acor.cli.discovery.config.ConfigError`."""
    registry = load_registry(cwd=cwd, config_path=config_path)
    if looks_like_path(ref):
        return _resolve_path(os.path.abspath(os.path.join(cwd or "", ref)),
                             registry.config)
    spec = registry.get(ref)
    if spec is not None:
        return Target(spec.name, spec.manifest_path, spec, None, registry)
    skipped = registry.skipped_named(ref)
    if skipped is not None:
        path = skipped.path if skipped.path.endswith((".json", ".py")) \
            else os.path.join(skipped.path, "manifest.json")
        return Target(ref, path, None, skipped, registry)
    raise unknown_tool(ref, registry, [], ["acor", "check"])


def _resolve_path(path: str, config: Config) -> Target:
    if os.path.isdir(path):
        path = os.path.join(path, "manifest.json")
    if not os.path.isfile(path):
        raise UsageError(f"No manifest at {path}", "Give a tool's name "
                         "(`acor list`), its folder, or its manifest file.",
                         code="E_FILE_NOT_FOUND", next=["acor", "list"])
    entry = os.path.dirname(path) if os.path.basename(path) == \
        "manifest.json" else path
    # Discovery of just the folder holding it: the same checks, no others.
    config.tools_dirs = [os.path.dirname(entry)]
    registry = scan(config)
    real = os.path.realpath(entry)
    # A function tool's path is its tools dir; its file is where it is
    # written (the one named after the file, of several in one).
    found = [s for s in registry.tools.values()
             if os.path.realpath(s.path) == real or
             os.path.realpath(s.manifest_path) == real]
    stem = os.path.splitext(os.path.basename(entry))[0]
    spec = next((s for s in found if s.name == stem), None) or \
        next(iter(found), None)
    skipped = next((s for s in registry.skipped
                    if os.path.realpath(s.path) == real), None)
    name = spec.name if spec else os.path.splitext(
        os.path.basename(entry))[0]
    return Target(name, path, spec, skipped, registry)
