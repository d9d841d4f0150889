"""The files acor ships beside its code, found through
:mod:`importlib.resources`, so that a regular, an editable and a zipped
install find them the same way (never by a path relative to a checkout)."""

from __future__ import annotations

# The name acor is installed by (`pip install acor-cli`): "acor" on the
# package index is an unrelated project. The import package and the
# command are both `acor`.
DISTRIBUTION = "acor-cli"
# The install line of acor with its MCP server.
MCP_INSTALL = f"pip install '{DISTRIBUTION}[mcp]'"

# The JSON Schemas in acor/schemas/, by the name `acor schema` takes.
SCHEMAS = {"events": "events.schema.json", "manifest": "manifest.schema.json"}


def schema_text(name: str) -> str:
    """The text of the schema called ``name`` (a key of :data:`SCHEMAS`);
    raises OSError when the installation lacks it."""
    from importlib import resources
    return resources.files("acor.schemas").joinpath(
        SCHEMAS[name]).read_text(encoding="utf-8")
