"""The SDK's server over the stdio wire that
:mod:`acor.cli.mcp.transports.stdio` claimed.

This module imports the SDK (about 0.9 s), so the stdio transport imports
it in a background thread while it answers the client's opening request.
The opening request is replayed to the SDK first and the SDK's answer to
it is dropped (the client already has the first answer); everything else
passes through. The streams are the SDK's stdio transport restated for a
claimed pair of descriptors: one daemon thread reads lines (a read blocked
on a silent client must never keep the process alive), writes go through
worker threads (a slow reader must never block the event loop).
"""

import gc
import json
import signal
import sys
import threading
from typing import Any, Protocol

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import mcp_types as types
from anyio.streams.memory import (MemoryObjectReceiveStream,
                                  MemoryObjectSendStream)
from mcp.server.lowlevel import Server
from mcp.shared.message import SessionMessage

from acor import exitcodes

from acor.cli.mcp.handshake import Opening
from acor.cli.mcp.server import build_server
from acor.cli.mcp.tools import Catalog
from acor.cli.run.warm import WarmStarter

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

Inbound = SessionMessage | Exception
Outbound = SessionMessage


class Lines(Protocol):
    """What the streams need of the wire
    (:class:`acor.cli.mcp.transports.stdio.Wire`): a line at a time in,
    whole messages out."""

    def read_line(self) -> bytes | None: ...

    def try_write(self, data: bytes) -> bool: ...

    def write(self, data: bytes) -> None: ...


def serve_stdio(catalog: Catalog, wire: Lines, opening: Opening, *,
                timeout: float | None, warm: WarmStarter | None,
                key: str | None) -> int:
    """Serve ``catalog`` until the client closes stdin (0) or a signal
    stops us (130). Either way every running tool is stopped first."""
    server = build_server(catalog, timeout=timeout, warm=warm, key=key)
    # The SDK's modules are most of the heap and live as long as we do: out
    # of the collector's sight, a full collection no longer walks them (it
    # cost 40 ms in the middle of a 1,000-tool listing).
    gc.freeze()
    return anyio.run(_serve, server, wire, opening)


async def _serve(server: Server[Any], wire: Lines, opening: Opening) -> int:
    inbound_send, inbound = anyio.create_memory_object_stream[Inbound](16)
    outbound, outbound_receive = \
        anyio.create_memory_object_stream[Outbound](16)
    reader = threading.Thread(
        target=_read_lines, name="acor-mcp-reader", daemon=True,
        args=(wire, opening, inbound_send, anyio.lowlevel.current_token()))
    serving = anyio.CancelScope()
    signalled: list[int] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(_stop_on_signal, serving, signalled)
        async with anyio.create_task_group() as io:
            io.start_soon(_write_lines, wire, opening, outbound_receive,
                          serving)
            reader.start()
            with serving:
                await server.run(inbound, outbound,
                                 server.create_initialization_options())
            # server.run closed `outbound` on its way out: the writer sends
            # what is left and ends.
        tg.cancel_scope.cancel()
    return exitcodes.CANCELLED if signalled else exitcodes.OK


def _read_lines(wire: Lines, opening: Opening,
                send: MemoryObjectSendStream[Inbound],
                token: anyio.lowlevel.EventLoopToken) -> None:
    """The reader thread: the opening line again, then stdin, as parsed
    messages (or the parse error, which the SDK answers)."""
    line: bytes | None = opening.line
    try:
        while line is not None:
            if line.strip():
                # Parsed once: only a line the SDK's model refuses is looked
                # at again, for the error the SDK would not send.
                message = _parse(line)
                refusal = _not_a_message(line) \
                    if isinstance(message, Exception) else None
                if refusal is not None:
                    wire.write(refusal)
                else:
                    _deliver(send, message, token)
            line = wire.read_line()
        anyio.from_thread.run_sync(send.close, token=token)
    except (anyio.RunFinishedError, anyio.BrokenResourceError,
            anyio.ClosedResourceError):
        pass  # the server stopped first (a signal): nothing left to feed


def _deliver(send: MemoryObjectSendStream[Inbound], message: Inbound,
             token: anyio.lowlevel.EventLoopToken) -> None:
    """``message`` into the server's stream: put there at once while it
    has room (a call in the loop, no task made for it), else waited for."""
    try:
        anyio.from_thread.run_sync(send.send_nowait, message, token=token)
    except anyio.WouldBlock:
        anyio.from_thread.run(send.send, message, token=token)


def _not_a_message(line: bytes) -> bytes | None:
    """The JSON-RPC error for a line that is not one message (the SDK
    would drop it unanswered), or None: not JSON (-32700), a batch, which
    the protocol no longer allows (-32600), or an object that is not a
    request, notification or response (-32600, with its id when it has a
    usable one)."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return _error_line(None, -32700, "Parse error: the line is not "
                           "JSON")
    if isinstance(value, list):
        return _error_line(None, -32600, "Invalid Request: JSON-RPC "
                           "batches are not supported; send one message "
                           "per line")
    if not isinstance(value, dict) or value.get("jsonrpc") != "2.0":
        ident = value.get("id") if isinstance(value, dict) else None
        return _error_line(ident if isinstance(ident, (str, int)) and
                           not isinstance(ident, bool) else None, -32600,
                           'Invalid Request: not a JSON-RPC 2.0 message '
                           '("jsonrpc": "2.0")')
    return None


def _error_line(ident: int | str | None, code: int, message: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": ident,
                       "error": {"code": code, "message": message}},
                      separators=(",", ":")).encode() + b"\n"


def _parse(line: bytes) -> Inbound:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(
            line, by_name=False))
    except Exception as exc:  # the SDK turns it into a JSON-RPC error
        return exc


async def _write_lines(wire: Lines, opening: Opening,
                       receive: MemoryObjectReceiveStream[Outbound],
                       serving: anyio.CancelScope) -> None:
    """Every message the server sends, one JSON line each; the SDK's
    answer to the replayed opening request is checked and dropped."""
    pending_drop = opening.answer is not None
    async with receive:
        async for session_message in receive:
            message = session_message.message
            if pending_drop and getattr(message, "id", None) == \
                    opening.request_id and isinstance(
                        message, (types.JSONRPCResponse, types.JSONRPCError)):
                pending_drop = False
                _check_early_answer(message, opening)
                continue
            data = message.model_dump_json(by_alias=True,
                                           exclude_unset=True).encode()
            try:
                # Most messages fit a pipe with room: written at once. A
                # larger one, or a full pipe (a slow reader), waits in a
                # worker thread, never on the event loop.
                if not wire.try_write(data + b"\n"):
                    await anyio.to_thread.run_sync(wire.write, data + b"\n")
            except OSError:
                # The client is gone (EPIPE): stop every run, then exit.
                serving.cancel()
                return


def _check_early_answer(
        message: types.JSONRPCResponse | types.JSONRPCError,
        opening: Opening) -> None:
    """The SDK's own answer to the opening request must be the first
    answer sent; say so on stderr if it is not (an SDK upgrade changed
    it)."""
    if isinstance(message, types.JSONRPCError):
        print(f"acor mcp: the SDK refused the opening request acor "
              f"answered: {message.error.message}", file=sys.stderr,
              flush=True)
        return
    sdk_answer = json.loads(message.model_dump_json(
        by_alias=True, exclude_unset=True))["result"]
    if sdk_answer != opening.answer:
        print(f"acor mcp: the early answer differs from the SDK's: sent "
              f"{json.dumps(opening.answer)}, the SDK has "
              f"{json.dumps(sdk_answer)}", file=sys.stderr, flush=True)


async def _stop_on_signal(serving: anyio.CancelScope,
                          signalled: list[int]) -> None:
    """A signal cancels every request, so every running tool is stopped;
    further signals are absorbed until that is done (the runner bounds it:
    TERM, grace, KILL), so no tool outlives the server."""
    with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
        async for signum in signals:
            signalled.append(signum)
            serving.cancel()
