"""What every built-in command shares of its invocation: the registry of
the project, loaded once per command and always with the global
``--config`` (else ``ACOR_CONFIG``, else the nearest .acor/config.yaml)."""

from __future__ import annotations

import click

from acor.cli.discovery.registry import Registry, load_registry


def command_registry(ctx: click.Context) -> Registry:
    """The registry, loaded once per command; ConfigError propagates."""
    obj: dict[str, object] = ctx.find_root().ensure_object(dict)
    if "registry" not in obj:
        obj["registry"] = load_registry(config_path=obj.get("config"))
    registry = obj["registry"]
    assert isinstance(registry, Registry)
    return registry
