"""The page a person answers on, out of band: URL-mode elicitation.

A secret, or an approval of level ``high``, is never asked through an MCP
client's form (the specification keeps secrets and the authorization of
transactions out of forms). ``acor mcp`` serves the question itself: a
one-page form on ``127.0.0.1`` (starlette on uvicorn, the ASGI server the
``mcp`` extra brings, in a thread of its own, started on first need), at
an address holding a one-time token. The page shows exactly what is
approved (the tool, the command, the tool's reason, the fields); its
answer goes to the server, never through the client, and is used for that
one call. A token is good for one answer and for :data:`APPROVAL_TTL`
seconds; the server keeps answers in memory only and never logs a request
(no access log: the address holds the token).
"""

from __future__ import annotations

import hmac
import html
import secrets
import socket
import threading
import time
from typing import Any

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from acor.args import human_value

from acor.cli.approval import APPROVAL_TTL, Field, safe_line


class Page:
    """One question, waiting for a person's answer on its page."""

    def __init__(self, lines: list[str], fields: list[Field]) -> None:
        self.id = secrets.token_hex(8)
        self.token = secrets.token_urlsafe(32)
        self.lines = lines
        self.fields = fields
        self.expires = time.monotonic() + APPROVAL_TTL
        self.answers: dict[str, Any] | None = None
        self.refused = False
        self.used = False
        self.url = ""
        # What the answer is for (a 2026-07-28 retry's state, see
        # acor.cli.mcp.calls): set by the caller that opened the page.
        self.binding: str | None = None

    @property
    def done(self) -> bool:
        return self.used

    @property
    def expired(self) -> bool:
        return time.monotonic() > self.expires

    def take(self) -> dict[str, Any] | None:
        """The answers, once (None: refused, expired or not answered);
        the page is closed and forgets them."""
        answers, self.answers = self.answers, None
        self.used = True
        return answers


class Pages:
    """The pages of one ``acor mcp``: started on first use."""

    def __init__(self) -> None:
        self._pages: dict[str, Page] = {}
        self._lock = threading.Lock()
        self._base: str | None = None
        self._server: Any = None  # a uvicorn.Server once started

    def open(self, lines: list[str], fields: list[Field]) -> Page:
        base = self._start()
        page = Page(lines, fields)
        page.url = f"{base}/approve/{page.id}?token={page.token}"
        with self._lock:
            self._drop_expired()
            self._pages[page.id] = page
        return page

    def get(self, page_id: str) -> Page | None:
        with self._lock:
            return self._pages.get(page_id)

    def close(self, page: Page) -> None:
        with self._lock:
            self._pages.pop(page.id, None)
        page.take()

    async def wait(self, page: Page) -> dict[str, Any] | None:
        """The answers once the person sent the page; None when they
        refused or the page expired."""
        while not page.used and not page.expired:
            await anyio.sleep(0.05)
        answers = None if page.refused or not page.used else page.answers
        self.close(page)
        return answers

    def _drop_expired(self) -> None:
        for key in [k for k, p in self._pages.items() if p.expired]:
            del self._pages[key]

    def _start(self) -> str:
        with self._lock:
            if self._base is not None:
                return self._base
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", 0))
            sock.listen(16)
            port = sock.getsockname()[1]
            host = f"127.0.0.1:{port}"
            config = uvicorn.Config(_app(self, host), log_level="warning",
                                    access_log=False, lifespan="off")
            self._server = server = uvicorn.Server(config)
            thread = threading.Thread(target=server.run,
                                      kwargs={"sockets": [sock]},
                                      name="acor-approval-pages",
                                      daemon=True)
            thread.start()
            self._base = f"http://{host}"
            return self._base

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True


_HEADERS = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer",
            "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "default-src 'none'; "
            "style-src 'unsafe-inline'; form-action 'self'; "
            "frame-ancestors 'none'"}


def _app(pages: Pages, host: str) -> Starlette:
    def reply(body: str, status: int = 200) -> HTMLResponse:
        return HTMLResponse(_document(body), status_code=status,
                            headers=_HEADERS)

    def find(request: Request) -> Page | None:
        # A page is for a browser on this machine: a request naming
        # another host (DNS rebinding) is refused.
        if request.headers.get("host") != host:
            return None
        page = pages.get(request.path_params["page"])
        if page is None or page.used or page.expired:
            return None
        return page

    async def show(request: Request) -> HTMLResponse:
        page = find(request)
        token = request.query_params.get("token", "")
        if page is None or not hmac.compare_digest(token, page.token):
            return reply("<p>This request is not open: it was answered, "
                         "it expired, or the address is wrong.</p>", 404)
        return reply(_form(page))

    async def answer(request: Request) -> HTMLResponse:
        page = find(request)
        form = await request.form()
        token = str(form.get("token", ""))
        if page is None or not hmac.compare_digest(token, page.token):
            return reply("<p>This request is not open: it was answered, "
                         "it expired, or the address is wrong.</p>", 404)
        if form.get("action") != "approve":
            page.refused, page.used = True, True
            return reply("<p>Refused. Nothing was approved; you can close "
                         "this page.</p>")
        answers, problems = _read(page.fields, form)
        if problems:
            return reply("".join(f"<p>{html.escape(p)}</p>"
                                 for p in problems) + _form(page), 400)
        page.answers, page.used = answers, True
        return reply("<p>Sent. You can close this page.</p>")

    return Starlette(routes=[
        Route("/approve/{page}", show, methods=["GET"]),
        Route("/approve/{page}", answer, methods=["POST"])])


def _read(fields: list[Field], form: FormData
          ) -> tuple[dict[str, Any], list[str]]:
    answers: dict[str, Any] = {}
    problems: list[str] = []
    for field in fields:
        text = str(form.get("f_" + field.name, ""))
        prop = {k: v for k, v in field.prop.items()
                if k in ("type", "enum", "minimum", "maximum")}
        value, problem = human_value(prop, text)
        if problem is not None:
            problems.append(f"{field.name}: {problem}")
        else:
            answers[field.name] = value
    return answers, problems


def _form(page: Page) -> str:
    rows = []
    for field in page.fields:
        name = "f_" + html.escape(field.name, quote=True)
        label = html.escape(safe_line(field.name))
        description = html.escape(safe_line(field.prop.get("description",
                                                           "")))
        if field.kind == "boolean":
            control = (f'<label><input type="radio" name="{name}" '
                       f'value="true" required> yes</label> '
                       f'<label><input type="radio" name="{name}" '
                       f'value="false"> no</label>')
        elif isinstance(field.prop.get("enum"), list):
            options = "".join(
                f'<option value="{html.escape(str(v), quote=True)}">'
                f'{html.escape(safe_line(v))}</option>'
                for v in field.prop["enum"])
            control = f'<select name="{name}">{options}</select>'
        else:
            kind = "password" if field.secret else "text"
            control = (f'<input type="{kind}" name="{name}" required '
                       f'autocomplete="off">')
        rows.append(f"<p><b>{label}</b> {description}<br>{control}</p>")
    lines = "\n".join(html.escape(line) for line in page.lines)
    return (f"<pre>{lines}</pre><form method=\"post\">"
            f'<input type="hidden" name="token" '
            f'value="{html.escape(page.token, quote=True)}">'
            + "".join(rows) +
            '<button name="action" value="approve">Send</button> '
            '<button name="action" value="refuse" formnovalidate>'
            "Refuse</button></form>")


def _document(body: str) -> str:
    return ("<!doctype html><html><head><meta charset=\"utf-8\">"
            "<title>acor: a person's answer</title>"
            "<style>body{font-family:sans-serif;max-width:44em;margin:2em "
            "auto}pre{white-space:pre-wrap}</style></head><body>"
            f"{body}</body></html>")
