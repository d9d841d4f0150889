"""The ``resources`` capability and the ``acor_read`` tool: the files acor
linked (:mod:`acor.cli.mcp.links`), read in pieces by the client they were
linked for.

* A call's result: each ``file://`` link to a file acor may serve becomes
  its ``acor://file/ID`` link (over stdio ``_meta["acor/path"]`` keeps the
  local path), and acor's own text naming the file names the link.
* ``resources/list``: the caller's links, newest first, in pages.
* ``resources/read``: one piece of a link. ``acor://file/ID`` is its start;
  ``acor://file/ID?offset=N&length=M`` the piece from byte N. A piece is
  at most the output budget (``max_output``; base64 takes a blob's third
  more); its ``_meta`` gives ``acor/offset``, ``acor/length``,
  ``acor/size`` and, unless it ends the file, ``acor/next`` (the URI of
  the next piece). Text is served as text, cut at a character boundary;
  anything else as a blob.
* ``acor_read`` (a tool, because most hosts never let the model call
  ``resources/read``): a link, an offset, a length; the same binding and
  bounds. A project tool of the same name is served instead.

A link that is not the caller's, expired, or never made is "not found"
(-32602), whichever it is.
"""

import base64
import codecs
import mimetypes
import os
import stat
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from acor.cli.mcp.links import (Link, LinkStore, identity, linkable,
                                over_stdio, roots, state_dir_of)
from acor.cli.mcp.results import acor_text, tool_text
from acor.cli.mcp.versions import MODERN_VERSIONS
from acor.cli.sizes import DEFAULT_MAX_OUTPUT
from acor.cli.textsafe import printable

READ_TOOL = "acor_read"
PAGE = 100           # links per resources/list page
NO_LIMIT_PIECE = 1 << 20  # a piece's bytes when max_output is 0 (none)
_NOT_FOUND = ("Resource not found: {uri} is not a link acor made for this "
              "client, or it is no longer kept (links last as long as the "
              "files acor keeps, a week at most)")

Handler = Callable[[Any, Any], Awaitable[Any]]

READ_TOOL_DEFINITION: dict[str, Any] = {
    "name": READ_TOOL,
    "title": "Read a file acor linked",
    "description": (
        "Read a piece of a file an acor tool's result linked (an "
        "acor://file/... URI: an output file, or the whole output of a run "
        "cut to fit the budget). Give the link, an offset in bytes (0 at "
        "first) and optionally a length; the answer says the file's size "
        "and the offset of the next piece. Text comes as text, anything "
        "else as base64."),
    "inputSchema": {
        "type": "object",
        "properties": {
            "uri": {"type": "string", "description":
                    "the acor://file/... link from a result"},
            "offset": {"type": "integer", "minimum": 0, "default": 0,
                       "description": "the first byte to read"},
            "length": {"type": "integer", "minimum": 1, "description":
                       "bytes to read at most (default and most: the "
                       "output budget)"}},
        "required": ["uri"], "additionalProperties": False},
    "annotations": {"title": "Read a file acor linked",
                    "readOnlyHint": True, "idempotentHint": True,
                    "destructiveHint": False, "openWorldHint": False}}


class Piece:
    """Bytes [offset, offset + length) of a link, as text or base64."""

    def __init__(self, link: Link, offset: int, data: bytes, size: int,
                 as_text: str | None) -> None:
        self.link = link
        self.offset = offset
        self.length = len(data) if as_text is None else \
            len(as_text.encode("utf-8"))
        self.size = size
        self.text = as_text
        self.blob = None if as_text is not None else \
            base64.b64encode(data).decode("ascii")

    @property
    def next_offset(self) -> int | None:
        end = self.offset + self.length
        return end if end < self.size else None

    def meta(self) -> dict[str, Any]:
        facts: dict[str, Any] = {"acor/offset": self.offset,
                                 "acor/length": self.length,
                                 "acor/size": self.size}
        if self.next_offset is not None:
            facts["acor/next"] = (f"{self.link.uri}?offset="
                                  f"{self.next_offset}")
        return facts


def read_piece(link: Link, offset: int, length: int, limit: int) -> Piece:
    """Up to ``length`` bytes of ``link``'s file from ``offset``, within
    ``limit`` bytes on the wire (base64 makes a blob's bytes a third
    more). Raises OSError when it cannot be read (gone, replaced by
    something that is not a regular file)."""
    if os.path.realpath(link.path) != link.path:  # a folder on it is a link
        raise OSError(f"{link.name} is no longer where it was linked")
    fd = os.open(link.path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW |
                 os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{link.name} is no longer a regular file")
        size = info.st_size
        offset = min(offset, size)
        raw = min(length, limit if link.text else limit * 3 // 4)
        data = os.pread(fd, max(0, min(raw, size - offset)), offset)
    finally:
        os.close(fd)
    as_text = _text(data, offset + len(data) >= size) if link.text else None
    return Piece(link, offset, data, size, as_text)


def _text(data: bytes, final: bool) -> str | None:
    """``data`` as text, a character cut at its end left for the next
    piece; None when it is not UTF-8 (served as a blob then)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        return decoder.decode(data, final=final)
    except UnicodeDecodeError:
        return None


class Files:
    """Links made, listed and read for one server (see the module)."""

    def __init__(self, catalog: Any, key: str | None = None) -> None:
        self.catalog = catalog
        self.key = key

    def _store(self, registry: Any) -> LinkStore:
        return LinkStore(state_dir_of(registry), self.key)

    async def _registry(self) -> Any:
        return await anyio.to_thread.run_sync(self.catalog.registry)

    def _limit(self, registry: Any) -> int:
        limit = getattr(registry.config, "max_output", None)
        if limit is None:
            limit = DEFAULT_MAX_OUTPUT
        return limit or NO_LIMIT_PIECE

    # --- results ----------------------------------------------------------

    async def link(self, ctx: Any, name: str, result: Any) -> Any:
        """``result`` (a ``CallToolResult``) with its servable files linked
        for the caller."""
        if not isinstance(result, types.CallToolResult) or not any(
                isinstance(b, types.ResourceLink) or _names_a_file(b)
                for b in result.content):
            return result
        registry = await self._registry()
        spec = self.catalog.get(registry, name)
        if spec is None:
            return result
        store = self._store(registry)
        allowed = roots(spec, registry)
        return await anyio.to_thread.run_sync(
            _relink, result, store, allowed, identity(ctx), over_stdio(ctx))

    # --- resources/list and resources/read -------------------------------

    async def list_resources(self, ctx: Any, params: Any) -> dict[str, Any]:
        registry = await self._registry()
        store = self._store(registry)
        links = await anyio.to_thread.run_sync(store.owned, identity(ctx))
        start = _cursor(getattr(params, "cursor", None))
        page = links[start:start + PAGE]
        listing: dict[str, Any] = {"resources": [_resource(link)
                                                 for link in page]}
        if start + PAGE < len(links):
            listing["nextCursor"] = str(start + PAGE)
        if ctx.protocol_version in MODERN_VERSIONS:
            listing.update(resultType="complete", ttlMs=0,
                           cacheScope="private")
        return listing

    async def read_resource(self, ctx: Any, params: Any
                            ) -> types.ReadResourceResult:
        registry = await self._registry()
        limit = self._limit(registry)
        offset, length = _range(params.uri, limit)
        piece = await self._piece(ctx, registry, params.uri, offset, length,
                                  limit)
        contents: types.TextResourceContents | types.BlobResourceContents
        if piece.text is not None:
            contents = types.TextResourceContents(
                uri=params.uri, mime_type=piece.link.mime or "text/plain",
                text=piece.text, _meta=piece.meta())
        else:
            contents = types.BlobResourceContents(
                uri=params.uri, mime_type=piece.link.mime or
                "application/octet-stream", blob=piece.blob or "",
                _meta=piece.meta())
        return types.ReadResourceResult(contents=[contents])

    async def _piece(self, ctx: Any, registry: Any, uri: str, offset: int,
                     length: int, limit: int) -> Piece:
        store = self._store(registry)
        link = await anyio.to_thread.run_sync(store.get, uri, identity(ctx))
        if link is None:
            raise MCPError(types.INVALID_PARAMS,
                           _NOT_FOUND.format(uri=_shown(uri)),
                           data={"uri": _shown(uri)})
        try:
            return await anyio.to_thread.run_sync(read_piece, link, offset,
                                                  length, limit)
        except OSError:
            raise MCPError(types.INVALID_PARAMS,
                           _NOT_FOUND.format(uri=_shown(uri)),
                           data={"uri": _shown(uri)}) from None

    # --- the read tool ----------------------------------------------------

    def list_tools(self, inner: Handler) -> Handler:
        async def listing(ctx: Any, params: Any) -> Any:
            found = await inner(ctx, params)
            tools = found["tools"]
            if not any(tool.get("name") == READ_TOOL for tool in tools):
                found["tools"] = [*tools, READ_TOOL_DEFINITION]
            return found
        return listing

    def call_tool(self, inner: Handler) -> Handler:
        async def call(ctx: Any, params: Any) -> Any:
            if params.name == READ_TOOL and self.catalog.get(
                    await self._registry(), READ_TOOL) is None:
                return await self._read_tool(ctx, params.arguments or {})
            return await self.link(ctx, params.name,
                                   await inner(ctx, params))
        return call

    async def _read_tool(self, ctx: Any, arguments: dict[str, Any]
                         ) -> types.CallToolResult:
        registry = await self._registry()
        limit = self._limit(registry)
        uri, offset, length = arguments.get("uri"), \
            arguments.get("offset", 0), arguments.get("length", limit)
        if not (isinstance(uri, str) and _count(offset, 0)
                and _count(length, 1)) or set(arguments) - {
                    "uri", "offset", "length"}:
            return _tool_error(
                "E_USAGE", "acor_read takes uri (an acor://file/... link), "
                "offset (a whole number, 0 or more) and length (1 or more)")
        try:
            piece = await self._piece(ctx, registry, uri, offset, length,
                                      limit)
        except MCPError as exc:
            return _tool_error("E_NOT_FOUND", exc.error.message)
        summary = (f"Bytes {piece.offset} to {piece.offset + piece.length} "
                   f"of {piece.size} of {piece.link.name}")
        summary += (f"; the next piece: offset {piece.next_offset}."
                    if piece.next_offset is not None else "; the end.")
        if piece.text is None:
            summary += " Binary: the piece above is base64."
        body = piece.text if piece.text is not None else piece.blob or ""
        # The file's text is the tool's: labelled when it begins like
        # acor's own (results.tool_text), which "labelled" says.
        block = tool_text(body)
        return types.CallToolResult(
            content=[types.TextContent.model_validate(block),
                     types.TextContent.model_validate(acor_text("file",
                                                                summary))],
            structured_content={
                "uri": piece.link.uri, "offset": piece.offset,
                "length": piece.length, "size": piece.size,
                "next_offset": piece.next_offset,
                "encoding": "text" if piece.text is not None else "base64",
                "mime_type": piece.link.mime,
                "labelled": block["text"] != body},
            is_error=False)


def install(server: Server, catalog: Any, key: str | None = None) -> Files:
    """Serve resources and ``acor_read`` on ``server``, and link the files
    of every call's result (its tools handlers wrapped). ``key``:
    ``ACOR_MCP_KEY`` as the server took it, which signs the links."""
    files = Files(catalog, key)
    for method, wrap in (("tools/list", files.list_tools),
                         ("tools/call", files.call_tool)):
        entry = server.get_request_handler(method)
        if entry is not None:
            server.add_request_handler(method, entry.params_type,
                                       wrap(entry.handler))
    server.add_request_handler("resources/list",
                               types.PaginatedRequestParams,
                               files.list_resources)
    server.add_request_handler("resources/read",
                               types.ReadResourceRequestParams,
                               files.read_resource)
    return files


def _relink(result: types.CallToolResult, store: LinkStore,
            allowed: list[str], owner: str, stdio: bool
            ) -> types.CallToolResult:
    """Each link to a file acor may serve made an ``acor://`` one, in
    place; acor's own text that named the file names the link."""
    named: dict[str, str] = {}
    for block in result.content:
        if not isinstance(block, types.ResourceLink) or \
                not block.uri.startswith("file://"):
            continue
        path = unquote(block.uri[len("file://"):])
        real = linkable(path, allowed)
        if real is None:
            continue
        try:
            link = store.add(real, owner, block.mime_type)
        except OSError:  # no state dir to keep it in: the file:// link
            continue
        named[block.uri] = named[path] = link.uri
        block.uri = link.uri
        if stdio:
            block.meta = {**(block.meta or {}), "acor/path": real}
    for block in result.content:
        if isinstance(block, types.TextContent) and _names_a_file(block):
            block.text = _renamed(block.text, named, store, allowed, owner)
    return result


def _renamed(text: str, named: dict[str, str], store: LinkStore,
             allowed: list[str], owner: str) -> str:
    """``text`` with each file it names by URI ("Output file: file://...",
    for clients without resource links) or by path (the budget's note)
    named by its link."""
    for word in text.replace("(", " ").replace(")", " ").split():
        word = word.rstrip(".,;]")
        if word in named:
            continue
        path = unquote(word[len("file://"):]) if word.startswith(
            "file://") else word if word.startswith("/") else None
        real = None if path is None else linkable(path, allowed)
        if real is not None:
            try:
                named[word] = store.add(real, owner, _mime(real)).uri
            except OSError:
                continue
    for old in sorted(named, key=len, reverse=True):
        text = text.replace(old, named[old])
    return text


# acor's own blocks that name files: the budget's notes ("the whole output
# is in PATH") and the file lines of clients without resource links.
# Others (an error's details) quote the tool, and keep its words.
_FILE_BLOCKS = ("budget", "file")


def _names_a_file(block: Any) -> bool:
    return isinstance(block, types.TextContent) and \
        (block.meta or {}).get("acor/block") in _FILE_BLOCKS


def _mime(path: str) -> str | None:
    return mimetypes.guess_type(path)[0]


def _resource(link: Link) -> dict[str, Any]:
    entry: dict[str, Any] = {"uri": link.uri, "name": link.name,
                             "mimeType": link.mime or (
                                 "text/plain" if link.text else
                                 "application/octet-stream")}
    try:
        entry["size"] = os.stat(link.path).st_size
    except OSError:
        pass
    return entry


def _range(uri: str, limit: int) -> tuple[int, int]:
    """(offset, length) a read URI asks for: its query's, else the start
    and the most a piece may be."""
    query = parse_qs(urlsplit(uri).query) if "?" in uri else {}
    try:
        offset = int(query.get("offset", ["0"])[0])
        length = int(query.get("length", [str(limit)])[0])
    except ValueError:
        offset = length = -1
    if offset < 0 or length < 1:
        raise MCPError(types.INVALID_PARAMS, (
            "offset and length in a link's query are whole numbers "
            "(offset 0 or more, length 1 or more), as in "
            "acor://file/ID?offset=0&length=32768"))
    return offset, length


def _cursor(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not cursor.isdigit():
        raise MCPError(types.INVALID_PARAMS, "Invalid cursor: pass the "
                       "nextCursor of the previous page")
    return int(cursor)


def _count(value: Any, low: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and \
        value >= low


def _shown(uri: str) -> str:
    return printable(uri)[:300]


def _tool_error(code: str, message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent.model_validate(
        acor_text("error", f"Error {code}: {message}"))], is_error=True)
