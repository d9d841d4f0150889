"""A sealed retry: a 2026-07-28 call that comes back with the
``requestState`` of a question (:mod:`acor.cli.mcp.questions`) and the
client's answers.

The state left sealed by the SDK's RequestStateBoundary (encrypted and
authenticated under :mod:`acor.cli.mcp.keys`, bound to this tool and these
arguments) and came back verified; it holds the answers so far and the
run's session. A retry is good once, for :data:`APPROVAL_TTL` seconds. A
field that is a secret or a high-level approval (in the manifest, now) is
taken from the page this server opened for this very state, or not at all.
"""

import json
import secrets
import time
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from acor.cli.approval import APPROVAL_TTL, Field, fields_of
from acor.cli.mcp import results
from acor.cli.mcp.pages import Pages
from acor.cli.mcp.questions import (ANSWERS, Answers, Gathered, accepted,
                                    binding, unanswered)

STATE_VERSION = 1

NOT_FROM_A_FORM = (
    "This answer is not taken: the tool's manifest says only a person may "
    "give it, on the page acor serves (a secret or a high-level approval), "
    "and this request is not the one that page was opened for. Nothing was "
    "run. Call the tool again, and have a person answer on its page.")


def read_state(request_state: str | None) -> dict[str, Any] | None:
    """The plaintext this server minted (the RequestStateBoundary has
    already verified the seal), or None on a first call."""
    if request_state is None:
        return None
    try:
        state = json.loads(request_state)
    except ValueError:
        state = None
    if not (isinstance(state, dict) and state.get("v") == STATE_VERSION
            and _is_names(state.get("fields"))
            and isinstance(state.get("specs"), dict)
            and isinstance(state.get("answers"), dict)
            and isinstance(state.get("key"), str)
            and isinstance(state.get("round"), int)
            and (state.get("page") is None
                 or isinstance(state.get("page"), str))):
        raise MCPError(types.INVALID_PARAMS, "Invalid or expired requestState")
    return state


def _is_names(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


class SealedRetry:
    """One retry's state, checked and answered. ``used``: the nonces of
    the states this server has already taken (an answer approves one call,
    not every replay of it)."""

    def __init__(self, state: dict[str, Any], used: set[str],
                 pages: Pages) -> None:
        self.state = state
        self._used = used
        self._pages = pages

    async def resume(self, gathered: Gathered, tool: str,
                     params: types.CallToolRequestParams,
                     arguments: dict[str, Any],
                     schema: dict[str, Any] | None
                     ) -> dict[str, Any] | None:
        """Take the state's answers so far and this retry's into
        ``gathered``; or the result of a question not answered."""
        state = self.state
        self._take_once()
        gathered.answers = dict(state["answers"])
        gathered.asked = set(state.get("asked") or ())
        gathered.session = state.get("session")
        gathered.rounds = state["round"]
        # Who may answer is the manifest's word now, not the state's.
        fields = fields_of({name: state["specs"].get(name) or {}
                            for name in state["fields"]}, schema)
        got, declined = await self._answers(tool, params, arguments,
                                            fields)
        if declined is not None:
            return declined
        gathered.split(got, fields)
        return None

    def _take_once(self) -> None:
        """Unexpired, and used once."""
        state = self.state
        if not isinstance(state.get("expires"), (int, float)) or \
                time.time() > state["expires"]:
            raise MCPError(types.INVALID_PARAMS, (
                "This request has expired (an answer is valid for "
                f"{APPROVAL_TTL // 60} minutes): call the tool again"))
        nonce = state.get("nonce")
        if not isinstance(nonce, str) or nonce in self._used:
            raise MCPError(types.INVALID_PARAMS, (
                "This request was already answered: an answer is for one "
                "call only. Call the tool again"))
        self._used.add(nonce)

    async def _answers(self, tool: str,
                       params: types.CallToolRequestParams,
                       arguments: dict[str, Any], fields: list[Field]
                       ) -> tuple[Answers, dict[str, Any] | None]:
        """The retry's answers ({name: value}, None), or ({}, the result
        of a question not answered)."""
        state = self.state
        answer = _elicited(params.input_responses, state["key"])
        if state.get("page") is None:
            if any(f.out_of_band for f in fields):
                raise MCPError(types.INVALID_PARAMS, NOT_FROM_A_FORM)
            if answer is None or answer.action != "accept":
                return {}, self.declined(tool, answer)
            return accepted(answer, state["fields"]), None
        page = self._pages.get(state["page"])
        if page is not None and page.binding != binding(tool, arguments,
                                                         state):
            # Not the state this page was opened for: refused, and the
            # page left to the call it belongs to.
            raise MCPError(types.INVALID_PARAMS, NOT_FROM_A_FORM)
        # The client's answer first: a person who declined to open the
        # page has refused, and nothing waits for the page.
        if answer is None or answer.action != "accept":
            if page is not None:
                self._pages.close(page)
            return {}, self.declined(tool, answer)
        got = None if page is None else await self._pages.wait(page)
        if got is None:
            return {}, self.declined(tool, None, page=True)
        return got, None

    def declined(self, tool: str, answer: types.ElicitResult | None,
                 page: bool = False) -> dict[str, Any]:
        """A retry whose form was declined, dismissed or not answered: not
        an error (nothing failed, and an error invites the model to correct
        itself and try again, the wrong lesson from a person's no), and the
        run's state as the command line says it, ``input_needed`` (exit 3),
        with ``_meta["acor/result"]["answer"]`` saying which ending it
        was."""
        state = self.state
        ending = unanswered(
            "refused" if page else "none" if answer is None else
            ANSWERS.get(answer.action, "none"))
        lines = [ending.text, f"The tool '{tool}' still needs: "
                 f"{', '.join(state['fields'])}."]
        if state.get("audience") == "human":
            lines.append("Only a person may answer this: do not answer it "
                         "yourself.")
        return {"content": [results.acor_text("input_needed",
                                              "\n".join(lines))],
                "isError": False,
                "_meta": {"acor/result": results.unrun_meta(
                    tool, 3, "input_needed", session=state.get("session"),
                    answer=ending.answer)}}


def _elicited(responses: dict[str, Any] | None, key: str
              ) -> types.ElicitResult | None:
    answer = (responses or {}).get(key)
    return answer if isinstance(answer, types.ElicitResult) else None


def mint(tool: str, fields: list[Field], gathered: Gathered, *,
         specs: dict[str, Any], person: bool, command: list[str]
         ) -> dict[str, Any]:
    """The state a question leaves with, for :func:`read_state` to take
    back (the question adds its key, and a page's id)."""
    return {"v": STATE_VERSION, "tool": tool,
            "fields": [f.name for f in fields], "specs": specs,
            "answers": gathered.answers, "session": gathered.session,
            "round": gathered.rounds,
            "audience": "human" if person else "agent",
            "asked": sorted(gathered.asked), "command": command,
            "expires": time.time() + APPROVAL_TTL,
            "nonce": secrets.token_hex(12)}
