"""What every built-in command shares of its invocation: the registry of
the project, loaded once per command and always with the global
``--config`` (else ``ACOR_CONFIG``, else the nearest .acor/config.yaml)."""

from __future__ import annotations

import click

from acor.cli.discovery.registry import Registry, load_registry

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any


def command_registry(ctx: click.Context) -> Registry:
    """The registry, loaded once per command; ConfigError propagates."""
    obj: dict[str, Any] = ctx.find_root().ensure_object(dict)
    if "registry" not in obj:
        config: str | None = obj.get("config")  # the global --config
        obj["registry"] = load_registry(config_path=config)
    registry: Registry = obj["registry"]
    return registry
