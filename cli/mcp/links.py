"""The files acor linked in a call's result, each kept as an ``acor://``
link bound to the client it was made for.

A tool's Output Files and the whole output of a budgeted run reach the
client as resource links. A ``file://`` link names a path on the server's
disk, which a client on another machine cannot open, and which a client
could vary to name any other file. So each file is given a link of its
own, ``acor://file/ID`` (ID: 24 random bytes, URL-safe base64), kept as a
small record in ``STATE_DIR/links/ID.json`` (private to this user; one
file per link, so every worker and replica sharing the state dir reads
the same links). A record holds the file's real path, who it was linked
for and until when (:data:`KEEP_S`, the age at which the budget removes
the whole-output files too), and an HMAC under the server's key
(``ACOR_MCP_KEY``'s first key, any of them verifying; without it a key of
this process's own): a record a repository or a tool planted in the
folder names no file acor serves. Links outlive a restart, and reach
every replica, when the servers share ``ACOR_MCP_KEY``.

Who a link belongs to (:func:`identity`): over HTTP the bearer token the
call came with (a digest of its ``Authorization`` header, never the token
itself; the key the task store uses too), over stdio the user running the
server. Any other identity is told the link does not exist.

Only files a tool could have written are linked: under the project root
(under a sandboxed tool's write paths, when it declares a box) or acor's
own output folder, regular files, reached without a symbolic link at the
end. Anything else keeps its ``file://`` link and is never served.
"""

import hashlib
import hmac
import json
import os
import re
import secrets
import stat
import time
from dataclasses import asdict, dataclass
from typing import Any

from acor.cli.discovery.config import DEFAULT_STATE_DIR
from acor.cli.mcp.keys import shared_keys
from acor.cli.output.spill import MAX_AGE, output_dir

SCHEME = "acor://file/"
KEEP_S = MAX_AGE
FOLDER = "links"
_ID = re.compile(r"[A-Za-z0-9_-]{32}")
_STDIO = f"user:{os.getuid()}"
_OWN_KEY = secrets.token_bytes(32)  # without ACOR_MCP_KEY: this process's


def identity(ctx: Any) -> str:
    """Who is asking: over HTTP the bearer token the request came with (as
    a digest), ``http:no-token`` without one, else (stdio) the user
    running this server."""
    request = getattr(ctx, "request", None)
    if request is None:
        return _STDIO
    auth = request.headers.get("authorization")
    if not auth:
        return "http:no-token"
    return "token:" + hashlib.sha256(auth.encode()).hexdigest()[:32]


def over_stdio(ctx: Any) -> bool:
    return getattr(ctx, "request", None) is None


@dataclass
class Link:
    """One linked file: its real path, whose it is, until when."""

    id: str
    path: str
    owner: str
    expires: float
    name: str
    mime: str | None
    text: bool
    created: float

    @property
    def uri(self) -> str:
        return SCHEME + self.id


def link_id(uri: str) -> str | None:
    """The ID of an ``acor://file/ID`` URI (any query after it is the
    reader's), or None."""
    if not uri.startswith(SCHEME):
        return None
    found = uri[len(SCHEME):].split("?", 1)[0]
    return found if _ID.fullmatch(found) else None


class LinkStore:
    """The links of one state dir, signed under ``key`` (``ACOR_MCP_KEY``
    as the server took it; None: this process's own key)."""

    def __init__(self, state_dir: str, key: str | None = None) -> None:
        self.folder = os.path.join(state_dir, FOLDER)
        ring = shared_keys(key)
        self.keys = [k.encode() for k in ring] if ring else [_OWN_KEY]

    def _seal(self, record: dict[str, Any], key: bytes) -> str:
        text = json.dumps(record, sort_keys=True, separators=(",", ":"))
        return hmac.new(key, b"acor-link-v1\0" + text.encode(),
                        hashlib.sha256).hexdigest()

    def add(self, path: str, owner: str, mime: str | None) -> Link:
        os.makedirs(self.folder, mode=0o700, exist_ok=True)
        now = time.time()
        link = Link(secrets.token_urlsafe(24), path, owner, now + KEEP_S,
                    os.path.basename(path) or path, mime,
                    _looks_like_text(path, mime), now)
        target = os.path.join(self.folder, link.id + ".json")
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL |
                     os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        record = asdict(link)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({**record, "hmac": self._seal(record, self.keys[0])},
                      handle)
        return link

    def get(self, uri: str, owner: str) -> Link | None:
        """The link ``uri`` names if it is ``owner``'s and still kept."""
        found = link_id(uri)
        if found is None:
            return None
        link = self._load(found + ".json")
        if link is None or not hmac.compare_digest(link.owner, owner):
            return None
        return link

    def owned(self, owner: str) -> list[Link]:
        """``owner``'s links still kept, newest first; expired ones are
        removed on the way."""
        try:
            names = os.listdir(self.folder)
        except OSError:
            return []
        found = [link for link in map(self._load, names)
                 if link is not None and hmac.compare_digest(link.owner,
                                                             owner)]
        return sorted(found, key=lambda link: -link.created)

    def _load(self, name: str) -> Link | None:
        if not (name.endswith(".json") and _ID.fullmatch(name[:-5])):
            return None
        where = os.path.join(self.folder, name)
        try:
            fd = os.open(where, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
            with os.fdopen(fd, encoding="utf-8") as handle:
                record = json.load(handle)
            seal = record.pop("hmac")
            link = Link(**record)
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return None
        if not isinstance(seal, str) or not any(
                hmac.compare_digest(seal, self._seal(record, key))
                for key in self.keys):
            return None  # not a record this service wrote: never served
        if link.expires < time.time() or not _still_there(link.path):
            try:
                os.unlink(where)
            except OSError:
                pass
            return None
        return link


def _still_there(path: str) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


_TEXT_TYPES = ("application/json", "application/xml", "application/yaml",
               "application/x-yaml", "application/toml",
               "application/javascript", "application/x-sh")


def _looks_like_text(path: str, mime: str | None) -> bool:
    """Whether a file is served as text: a text type, or a first 8 KiB
    that is UTF-8 without a NUL byte."""
    if mime is not None and (mime.startswith("text/") or mime in
                             _TEXT_TYPES or mime.endswith("+json")):
        return True
    try:
        with open(path, "rb") as handle:
            head = handle.read(8192)
    except OSError:
        return False
    if b"\0" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(head) - 3  # a character cut by the 8 KiB
    return True


def roots(spec: Any, registry: Any) -> list[str]:
    """Where a file must be for acor to link it for ``spec``'s calls."""
    root = os.path.realpath(registry.config.root)
    found = [os.path.realpath(output_dir(state_dir_of(registry)))]
    box = getattr(spec, "sandbox", None)
    writes = box.get("write") if isinstance(box, dict) else None
    if isinstance(writes, list):
        found += [os.path.realpath(os.path.join(root, w)) for w in writes
                  if isinstance(w, str)]
    else:
        found.append(root)
    return found


def linkable(path: str, allowed: list[str]) -> str | None:
    """The real path of ``path`` when acor may link it (a regular file,
    no symbolic link at its end, inside one of ``allowed``), else None."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
    except (OSError, ValueError):
        return None
    real = os.path.realpath(path)
    if any(real == folder or real.startswith(folder.rstrip(os.sep) + os.sep)
           for folder in allowed):
        return real
    return None


def state_dir_of(registry: Any) -> str:
    config = registry.config
    state_dir = getattr(config, "state_dir", None) or DEFAULT_STATE_DIR
    return os.path.join(os.path.realpath(config.root), state_dir)
