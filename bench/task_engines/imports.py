"""Import cost of each engine's module, alone and after what `acor mcp
--http` imports anyway (the MCP SDK's server, uvicorn, starlette, anyio,
pydantic): the cumulative -X importtime of the module, median and minimum
of ROUNDS interleaved runs. Arguments: NAME=PYTHON:MODULE ..."""

import statistics
import subprocess
import sys

ROUNDS = 15
ALREADY = ("import mcp.server.lowlevel, mcp.server.streamable_http_manager, "
           "uvicorn, starlette.applications, anyio, pydantic")


def cumulative_ms(python: str, module: str, code: str) -> float:
    err = subprocess.run([python, "-X", "importtime", "-c", code],
                         capture_output=True, text=True, check=True).stderr
    for line in err.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] == module:
            return int(parts[1]) / 1000
    raise SystemExit(f"{module} not in the import log")


engines = {}
for arg in sys.argv[1:]:
    name, rest = arg.split("=", 1)
    engines[name] = rest.split(":", 1)
found: dict[str, dict[str, list[float]]] = {
    name: {"alone": [], "after acor mcp": []} for name in engines}
for _ in range(ROUNDS):
    for name, (python, module) in engines.items():
        found[name]["alone"].append(
            cumulative_ms(python, module, f"import {module}"))
        found[name]["after acor mcp"].append(
            cumulative_ms(python, module, f"{ALREADY}; import {module}"))
for name, runs in found.items():
    print(name, {where: {"median_ms": round(statistics.median(xs)),
                         "min_ms": round(min(xs))}
                 for where, xs in runs.items()})
