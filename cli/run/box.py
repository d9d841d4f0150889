"""The sandbox one run gets: which box (the manifest's, the config's
default, ``acor check``'s, or none), resolved against the project and
made (its private temp dir), or refused when this kernel cannot enforce
it. The runner (:mod:`acor.cli.run.launch`) asks :func:`open_box`; the
box itself is :mod:`acor.cli.sandbox`'s.

Only a boxed run loads the sandbox's modules: the others, most runs, do
not pay for them (hence the imports inside the functions below, each on
the path of a run).
"""

from __future__ import annotations

import os

from acor.events import Error

from acor.cli.discovery.cache import cache_dir

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from contextlib import ExitStack
    from typing import Any, Callable, Optional

    from acor.cli.discovery.config import Config
    from acor.cli.discovery.spec import ToolSpec
    from acor.cli.run.policy import RunPolicy
    from acor.cli.run.request import RunRequest
    from acor.cli.sandbox.policy import Box

    Declared = dict[str, Any]

__all__ = ["CHECK_BOX", "Unenforceable", "open_box"]

# The box `acor check` runs examples in: code from a repository that may
# not be trusted writes only a temp dir and reaches no network.
CHECK_BOX = {"write": [], "network": False}


class Unenforceable(Exception):
    """A box the tool declares that this kernel cannot enforce: the
    error the run fails closed with."""

    def __init__(self, error: Error) -> None:
        super().__init__(error.title)
        self.error = error


def open_box(request: RunRequest, spec: ToolSpec, policy: RunPolicy,
             run_env: dict[str, str], made: ExitStack
             ) -> Optional[tuple[Box, Callable[[], str]]]:
    """The run's box, resolved, with its private temp dir made (named in
    ``run_env``, removed when ``made`` closes), and the note to add to an
    error that looks like a denial; None: the run is not boxed. Raises
    :class:`Unenforceable`."""
    declared = declared_box(spec, policy.config, request.sandbox)
    if declared is None:
        return None
    from acor.cli.sandbox import kernel
    lacks = kernel.missing(declared, kernel.offers(cache_dir()))
    if lacks:
        raise Unenforceable(_unavailable(spec, policy, lacks))
    box = _make_box(declared, spec, policy, request.cwd, run_env)
    made.callback(_remove_tmpdir, run_env)
    return box, lambda: _denial_note(spec, declared)


def declared_box(spec: ToolSpec, config: Optional[Config],
                 mode: Optional[str]) -> Optional[Declared]:
    """The sandbox this run gets, as declared (None: none): ``mode`` is
    the caller's ("default", "off", "check"), else the config's."""
    mode = mode or (config.sandbox if config is not None else None)
    if mode == "off":
        return None
    if mode == "check":
        read = (spec.sandbox or {}).get("read")
        return dict(CHECK_BOX, **({"read": read} if read is not None
                                  else {}))
    if spec.sandbox is not None:
        return spec.sandbox
    if mode == "default":
        from acor.cli.sandbox.policy import DEFAULT
        return dict(DEFAULT)
    return None


def _make_box(declared: Declared, spec: ToolSpec, policy: RunPolicy,
              cwd: Optional[str], run_env: dict[str, str]) -> Box:
    """The resolved box, with the run's private TMPDIR made and named."""
    from acor.cli.discovery.sources import user_tools_dir
    from acor.cli.discovery.trust import trust_file
    from acor.cli.sandbox.policy import (guarded, own_folder,
                                         private_tmpdir, resolve)
    tmpdir = private_tmpdir(spec.name)
    for name in ("TMPDIR", "TMP", "TEMP"):
        run_env[name] = tmpdir
    config = policy.config
    here = os.path.abspath(cwd or os.getcwd())
    root = config.root if config is not None else \
        os.path.abspath(policy.run_dir or here)
    tool_dir = spec.path if spec.kind == "acor" else None
    own = own_folder(config.state_dir, spec.name, root) \
        if config is not None and spec.kind == "acor" else None
    users = [cache_dir(), os.path.dirname(trust_file()), user_tools_dir()]
    box: Box = resolve(declared, root, tool_dir, tmpdir,
                       guarded(root, config, here, users), own)
    return box


def _remove_tmpdir(run_env: dict[str, str]) -> None:
    from acor.cli.sandbox.policy import remove_tree
    remove_tree(run_env["TMPDIR"])


def _denial_note(spec: ToolSpec, declared: Declared) -> str:
    """The recovery added to an error that looks like a denial."""
    import json  # only on a denial: a run need not load it
    where = f"the \"sandbox\" field of {spec.manifest_path}" \
        if spec.sandbox is not None else \
        "the default box (--sandbox or `sandbox: default` in the config)"
    return (f"This tool runs in a sandbox ({json.dumps(declared)}): it may "
            "write only there and in its temp dir, and reach a network only "
            "with \"network\": true. If the denial is one the tool should "
            f"not get, widen {where} (\"write\", \"read\", \"network\").")


def _unavailable(spec: ToolSpec, policy: RunPolicy, lacks: list[str]
                 ) -> Error:
    """Fail closed: a declared sandbox this kernel cannot enforce. The
    override is shown for a person to choose, never as the next command:
    an agent that follows `next` must not leave the box on its own."""
    import shlex  # only when refused

    from acor.cli.sandbox.kernel import SOCKETS
    unboxed = shlex.join(["acor", "--no-sandbox", spec.name, *policy.args])
    sockets = (" A tool that needs UNIX sockets may instead declare "
               "\"unix_sockets\": true in its box (then it may connect to "
               "any socket file it can reach).") if SOCKETS in lacks else ""
    return Error(
        f"Tool '{spec.name}' declares a sandbox this kernel cannot enforce",
        "E_SANDBOX_UNAVAILABLE", "missing: " + "; ".join(lacks),
        "The tool was not run. Run it on a kernel that offers these (`acor "
        "doctor` says what this one does). Only if a person trusts the tool "
        "with all their rights, they may run it without the sandbox: "
        f"`{unboxed}`, or put `sandbox: \"off\"` in .acor/config.yaml. An "
        "agent should ask its user, not do this itself." + sockets,
        ["acor", "doctor"])
