"""`acor mcp` within the output budget (issue 22; issue 20 items 3, 15,
17): a flooding tool costs the client the budget, not the flood; the
server's memory stays bounded; the whole output is a file named in the
result, as a resource_link for clients that have them and as text for
sessions of 2024-11-05 and 2025-03-26, whose clients reject a result
holding a resource_link.

Real tools, the real runner, a real `acor mcp`: raw JSON-RPC over stdio
for the old protocol versions (no SDK client speaks them), the SDK's
client for the current ones."""

import hashlib
import json
import os
import subprocess
import sys
import time

import pytest

pytest.importorskip("mcp", reason="acor mcp needs the extra: "
                                  "pip install 'acor-cli[mcp]'")

from mcp import Client  # noqa: E402

from conftest import vm_hwm  # noqa: E402
from sample_tools import FLOOD, HOLDOUT  # noqa: E402

BIG_DATA = """
from acor import AcorTool
with AcorTool() as tool:
    tool.output([{"id": i, "name": f"row {i}"} for i in range(120000)])
"""


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def flood_project(project, isolated_discovery, monkeypatch):
    project.add_tool("flood", FLOOD)
    project.add_tool("big", BIG_DATA)
    monkeypatch.chdir(project.root)
    return project


def raw_session(project, version, calls, watch=False):
    """One `acor mcp` over stdio: initialize with ``version``, then each
    call; the answers by id, and the server's peak memory (``watch``)."""
    requests = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "old", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    requests += [{"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                  "params": {"name": name, "arguments": {"argv": argv}}}
                 for i, (name, argv) in enumerate(calls)]
    server = subprocess.Popen(
        [sys.executable, "-m", "acor", "mcp"], cwd=project.root,
        env=project.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE)
    server.stdin.write(b"".join(json.dumps(r).encode() + b"\n"
                                for r in requests))
    server.stdin.flush()
    answers, sizes, peak = {}, {}, 0
    while len(answers) < len(calls) + 1:
        if watch:
            peak = max(peak, vm_hwm(server.pid))
        line = server.stdout.readline()
        assert line, server.stderr.read()
        message = json.loads(line)
        if "id" in message:
            answers[message["id"]] = message
            sizes[message["id"]] = len(line)
    if watch:
        peak = max(peak, vm_hwm(server.pid))
    server.stdin.close()
    assert server.wait(timeout=30) == 0
    return answers, sizes, peak


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26",
                                     "2025-06-18", "2025-11-25"])
def test_a_flood_is_a_bounded_result_naming_the_whole_output(
        flood_project, version):
    answers, sizes, _ = raw_session(flood_project, version,
                                    [("flood", ["20000000"])])
    assert answers[0]["result"]["protocolVersion"] == version
    result = answers[1]["result"]
    assert sizes[1] < HOLDOUT
    content = result["content"]
    texts = [b["text"] for b in content if b["type"] == "text"]
    joined = "\n".join(texts)
    assert "FIRST LINE OF THE FLOOD" in joined
    assert "LAST LINE OF THE FLOOD" in joined
    assert "left out here" in joined
    meta = result["_meta"]["acor/result"]
    assert meta["truncated"] is True
    whole = open(meta["output_file"], "rb").read()
    assert hashlib.sha256(whole).hexdigest() == meta["sha256"]
    links = [b for b in content if b["type"] == "resource_link"]
    if version < "2025-06-18":
        # No resource_link: those clients reject the whole result.
        assert not links
        named = [t for t in texts if t.startswith("Output file: acor://file/")]
        assert len(named) == 1 and meta["sha256"] in named[0]
        assert "truncated" in named[0]
    else:
        assert len(links) == 1
        assert links[0]["uri"].startswith("acor://file/")
        assert links[0]["_meta"].pop("acor/path") == os.path.realpath(
            meta["output_file"])
        assert links[0]["_meta"] == {"acor/sha256": meta["sha256"],
                                     "acor/truncated": True}
        assert links[0]["size"] == meta["bytes"]


def test_the_server_stays_bounded_relaying_200_mb(flood_project):
    """Issue 20 item 3: 128 MiB of output took the server to 606 MB."""
    start = time.monotonic()
    answers, sizes, peak = raw_session(
        flood_project, "2025-06-18", [("flood", ["200000000"])], watch=True)
    assert answers[1]["result"]["_meta"]["acor/result"]["exit_code"] == 0
    assert sizes[1] < HOLDOUT
    assert peak < 100 * 1024 * 1024, peak
    assert time.monotonic() - start < 60


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_large_data_is_a_summary_in_structured_content(flood_project,
                                                             mode):
    from acor.cli.discovery.registry import load_registry
    from acor.cli.mcp.server import build_server
    from acor.cli.mcp.tools import Catalog
    server = build_server(Catalog(lambda: load_registry(
        cwd=str(flood_project.root))))
    async with Client(server, mode=mode) as client:
        done = await client.call_tool("big", {"argv": []})
        assert not done.is_error
        summary = done.structured_content
        assert summary["acor_truncated"] is True
        assert summary["type"] == "array" and summary["length"] == 120000
        value = json.load(open(summary["file"]))
        assert len(value) == 120000
        size = sum(len(json.dumps(b.model_dump())) for b in done.content)
        assert size < HOLDOUT
        flood = await client.call_tool("flood", {"argv": ["3000000"]})
        links = [b for b in flood.content if b.type == "resource_link"]
        assert len(links) == 1 and links[0].meta["acor/truncated"] is True
