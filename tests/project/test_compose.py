"""The README's compose file: the scale-out topology it promises, and a
command line each replica's `acor mcp` accepts.

`.ci/run` also hands the file to `docker compose config` (or
`docker-compose config`) where a compose tool is installed; these tests
hold what a syntax check cannot see: which services share what.
"""

import shlex
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from acor.cli.commands.mcp import mcp_command

REPO = Path(__file__).resolve().parents[2]
HEADING = "# compose.yaml"


def compose_text() -> str:
    """The README's fenced block that starts with the compose heading."""
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(HEADING))
    end = next(i for i in range(start, len(lines)) if lines[i] == "```")
    return "\n".join(lines[start:end]) + "\n"


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(compose_text())
    return loaded


def replicas(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: service for name, service in compose["services"].items()
            if "acor mcp" in str(service.get("command", ""))}


def environment(service: dict[str, Any]) -> dict[str, str]:
    return dict(item.partition("=")[::2] for item in service["environment"])


def test_two_replicas_share_the_state_volume_and_the_task_store(
        compose: dict[str, Any]) -> None:
    served = replicas(compose)
    assert len(served) == 2
    volumes = [service["volumes"] for service in served.values()]
    assert volumes[0] == volumes[1]
    state = [v for v in volumes[0] if v.split(":")[1].endswith(".acor/state")]
    assert len(state) == 1, volumes[0]
    assert state[0].split(":")[0] in compose["volumes"]  # named: shared
    stores = {environment(s)["ACOR_TASK_STORE"] for s in served.values()}
    assert len(stores) == 1
    assert stores.pop().startswith("postgresql://")
    for service in served.values():
        assert {"ACOR_MCP_KEY", "ACOR_MCP_TOKEN"} <= set(environment(service))


def test_the_database_is_the_store_the_replicas_name_and_waits_healthy(
        compose: dict[str, Any]) -> None:
    db = compose["services"]["db"]
    assert db["image"].startswith("postgres:")
    assert "healthcheck" in db
    for service in replicas(compose).values():
        url = environment(service)["ACOR_TASK_STORE"]
        assert "@db/" in url
        assert service["depends_on"]["db"] == {"condition": "service_healthy"}


def test_the_load_balancer_sends_to_both_replicas(
        compose: dict[str, Any]) -> None:
    proxy = compose["services"]["proxy"]
    words = shlex.split(proxy["command"])
    targets = {words[i + 1] for i, word in enumerate(words) if word == "--to"}
    assert targets == {f"{name}:8765" for name in replicas(compose)}


def test_each_replica_runs_a_command_line_acor_mcp_accepts(
        compose: dict[str, Any]) -> None:
    for service in replicas(compose).values():
        shell = shlex.split(service["command"])
        assert shell[:2] == ["sh", "-c"]
        script = shell[2]
        serve = shlex.split(script.split("&&")[1])
        assert serve[:2] == ["acor", "mcp"]
        # Parsed as the command would be: an unknown or mistyped option
        # fails here as it would in the container.
        with click.Context(mcp_command) as ctx:
            mcp_command.parse_args(ctx, serve[2:])
            assert ctx.params["http"] is True
        assert "tasks-postgres" in script.split("&&")[0]
