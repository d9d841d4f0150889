"""Where tools come from besides the project: installed packages and the
user's own tools dir.

A package ships tools by naming, in the entry-point group ``acor.tools``,
a package whose folder holds tool folders (``<tool>/manifest.json``) or
wrapper manifests (``<name>.json``)::

    [project.entry-points."acor.tools"]
    mytools = "mytools.acor_tools"

Discovery reads those folders after the project's tools dirs and the
user-wide one (:func:`user_tools_dir`). Nothing of the package is imported
to find its folder: only the top-level package's location is looked up, and
the rest of the dotted name is walked as directories, so a package whose
``__init__`` is slow, or broken, costs nothing and breaks nothing.

``importlib.metadata`` alone costs some 40 ms to import, so the warm path
must not call :func:`entry_point_dirs`: :func:`search_paths` names the
directories whose change (a distribution installed or removed) can change
its answer, for a stat-validated cache.
"""

from __future__ import annotations

import os
import sys

GROUP = "acor.tools"


class EntryPointProblem:
    """An ``acor.tools`` entry point that names no folder: why, and the fix."""

    __slots__ = ("name", "value", "origin", "reason", "recovery")

    def __init__(self, name: str, value: str, origin: str, reason: str,
                 recovery: str) -> None:
        self.name = name
        self.value = value
        self.origin = origin
        self.reason = reason
        self.recovery = recovery

    def __repr__(self) -> str:
        return (f"EntryPointProblem({self.origin}: {self.name} = "
                f"{self.value!r}: {self.reason})")


def user_tools_dir() -> str:
    """``$XDG_CONFIG_HOME/acor/tools``, else ``~/.config/acor/tools``.

    The XDG spec says a relative ``XDG_CONFIG_HOME`` is invalid and must be
    ignored: it would make the tools found depend on the current directory.
    """
    base = os.environ.get("XDG_CONFIG_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "acor", "tools")


def packages_searched() -> bool:
    """Whether installed packages' tools are looked for: yes, unless
    ``ACOR_NO_PACKAGE_TOOLS`` is set to something other than ``0`` (a
    project that wants only its own tools; the tests, isolated from
    whatever the venv holds)."""
    return os.environ.get("ACOR_NO_PACKAGE_TOOLS", "") in ("", "0")


def entry_point_dirs(problems: list[EntryPointProblem] | None = None
                     ) -> list[tuple[str, str]]:
    """``(directory, origin)`` for every ``acor.tools`` entry point whose
    value locates a folder, in ``sys.path`` order, each folder once.

    ``origin`` names the distribution (``"package acor-extras 1.2"``). An
    entry point that locates nothing is left out, and described in
    ``problems`` when a list is given (for ``acor doctor``).
    """
    from importlib.metadata import entry_points  # ~40 ms: cold path only
    found: list[tuple[str, str]] = []
    seen: set[str] = set()
    for ep in entry_points(group=GROUP):
        dist = getattr(ep, "dist", None)
        dist_name = dist.name if dist is not None else "its package"
        origin = f"package {dist.name} {dist.version}" if dist is not None \
            else "package (unknown distribution)"
        folder, why = _locate(ep.value)
        if folder is None:
            if problems is not None:
                problems.append(EntryPointProblem(
                    ep.name, ep.value, origin, why,
                    f"In {dist_name}'s packaging, make "
                    f"[project.entry-points.\"{GROUP}\"] {ep.name} name an "
                    "installed package folder (a dotted module name, no "
                    "':'), then reinstall it."))
            continue
        real = os.path.realpath(folder)
        if real not in seen:
            seen.add(real)
            found.append((folder, origin))
    return found


def _locate(value: str) -> tuple[str | None, str]:
    """The folder of the package named ``value``, or None and why."""
    module = value.strip()
    if ":" in module:
        return None, f"{value!r} names an object; it must name a package"
    parts = module.split(".")
    if not all(part.isidentifier() for part in parts):
        return None, f"{value!r} is not a dotted package name"
    import importlib.util  # 0.8 ms: the cold path only, as entry_points
    try:
        # A top-level name is found without being imported; the rest of
        # the path is walked as folders, so no package code runs.
        spec = importlib.util.find_spec(parts[0])
    except (ImportError, ValueError) as exc:
        return None, f"cannot look up {parts[0]!r}: {exc}"
    if spec is None:
        return None, f"no installed package {parts[0]!r}"
    roots = list(spec.submodule_search_locations or ())
    if not roots:
        return None, f"{parts[0]!r} is a module, not a package folder"
    for root in roots:
        folder = os.path.join(root, *parts[1:])
        if os.path.isdir(folder):
            return folder, ""
    # Not a folder of its parent: a package mapped elsewhere (an editable
    # install maps each package to its own source folder, as acor's own
    # acor.manifests). Asked of the import system only when its parent is
    # already imported: finding it then runs no package's code.
    parent = module.rpartition(".")[0]
    try:
        found = importlib.util.find_spec(module) \
            if parent and parent in sys.modules else None
    except (ImportError, ValueError):
        found = None
    for folder in (found.submodule_search_locations or ()) if found else ():
        if os.path.isdir(folder):
            return folder, ""
    return None, f"no folder {'/'.join(parts)} in {', '.join(roots)}"


def search_paths() -> list[str]:
    """The directories an installed distribution lives in (``sys.path``
    entries that are directories). Installing or removing one changes the
    modification time of one of them: a cache of :func:`entry_point_dirs`
    is valid while their ``stat()`` results are unchanged."""
    return [path for path in dict.fromkeys(
        os.path.abspath(p or os.curdir) for p in sys.path)
        if os.path.isdir(path)]
