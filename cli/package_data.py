"""The files acor ships beside its code, found through
:mod:`importlib.resources`, so that a regular, an editable and a zipped
install find them the same way (never by a path relative to a checkout)."""

from __future__ import annotations

import json
import shlex
from importlib import metadata, resources
from urllib.parse import unquote, urlsplit

# The name acor is installed by: "acor" on the package index is an
# unrelated project. The import package and the command are both `acor`.
# acor-cli is not published yet: every install line acor writes is
# made by install_line(), from how this acor was installed.
DISTRIBUTION = "acor-cli"

# The JSON Schemas in acor/schemas/, by the name `acor schema` takes.
SCHEMAS = {"events": "events.schema.json", "manifest": "manifest.schema.json"}


def schema_text(name: str) -> str:
    """The text of the schema called ``name`` (a key of :data:`SCHEMAS`);
    raises OSError when the installation lacks it."""
    return resources.files("acor.schemas").joinpath(
        SCHEMAS[name]).read_text(encoding="utf-8")


def installed_from() -> tuple[str, str]:
    """How this acor was installed, in words, and the pip requirement that
    installs it the same way again (``extra`` left to :func:`install_line`):
    from what pip recorded (PEP 610's direct_url.json) for the
    distribution. A local folder or wheel is named by its path, since
    nothing else would find it: acor-cli is not on the package index yet."""
    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return ("from a checkout, not installed (no package metadata)",
                DISTRIBUTION)
    try:
        direct = json.loads(dist.read_text("direct_url.json") or "null")
    except ValueError:
        direct = None
    version = dist.version
    if not isinstance(direct, dict) or not isinstance(direct.get("url"),
                                                      str):
        return f"from the package index ({DISTRIBUTION} {version})", \
            DISTRIBUTION
    url = direct["url"]
    if url.startswith("file://"):
        path = unquote(urlsplit(url).path)
        if (direct.get("dir_info") or {}).get("editable"):
            return f"editable, from the folder {path}", f"-e {path}"
        if "archive_info" in direct:
            return f"from the file {path}", path
        return f"from the folder {path}", path
    vcs = direct.get("vcs_info")
    if isinstance(vcs, dict) and isinstance(vcs.get("vcs"), str):
        commit = vcs.get("commit_id")
        at = f"@{commit}" if isinstance(commit, str) else ""
        return (f"from {vcs['vcs']}+{url}{at}",
                f"{DISTRIBUTION} @ {vcs['vcs']}+{url}{at}")
    return f"from {url}", f"{DISTRIBUTION} @ {url}"


def install_line(extra: str | None = None, python: str | None = None
                 ) -> str:
    """The command that installs this acor again as it was installed (with
    ``extra``, e.g. "mcp"), with ``python -m pip`` when ``python`` is
    given, quoted for a POSIX shell."""
    _, requirement = installed_from()
    editable = requirement.startswith("-e ")
    target = requirement.removeprefix("-e ")
    if extra:
        if " @ " in target:
            name, _, url = target.partition(" @ ")
            target = f"{name}[{extra}] @ {url}"
        else:
            target = f"{target}[{extra}]"
    words = ([python, "-m", "pip"] if python else ["pip"]) + ["install"] + \
        (["-e"] if editable else []) + [target]
    return shlex.join(words)


def __getattr__(name: str) -> str:
    # The MCP extra's install line: found only by who asks (acor mcp),
    # since reading the package metadata costs every other command.
    if name == "MCP_INSTALL":
        return install_line("mcp")
    raise AttributeError(name)
