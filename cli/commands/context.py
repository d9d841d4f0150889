"""What every built-in command shares of its invocation: the registry of
the project, loaded once per command and always with the global
``--config`` (else ``ACOR_CONFIG``, else the nearest .acor/config.yaml)."""

from __future__ import annotations

import click


def command_registry(ctx: click.Context):
    """The registry, loaded once per command; ConfigError propagates."""
    obj = ctx.find_root().ensure_object(dict)
    if "registry" not in obj:
        from acor.cli.discovery.registry import load_registry
        obj["registry"] = load_registry(config_path=obj.get("config"))
    return obj["registry"]
