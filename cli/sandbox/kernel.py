"""What this kernel offers a sandbox, probed once and cached per kernel
release (a probe forks: about a millisecond; the cache makes it free).

The cache is one line, ``RELEASE LANDLOCK_ABI NETWORK(0|1)``: read on the
path of every sandboxed run, where importing :mod:`json` (and :mod:`re`
with it) would cost more than the sandbox itself."""

from __future__ import annotations

import os

_memo: dict | None = None


def offers(cache_dir: str | None = None) -> dict:
    """{"landlock": ABI version (0: none), "network": bool (an
    unprivileged user and network namespace can be made)}, kept in
    ``cache_dir`` (acor's cache folder) when given."""
    global _memo
    if _memo is not None:
        return _memo
    release = os.uname().release
    if cache_dir is None:
        _memo = _probe()
        return _memo
    path = os.path.join(cache_dir, "sandbox")
    try:
        with open(path, encoding="utf-8") as f:
            cached_release, abi, network = f.read().split()
        if cached_release == release:
            _memo = {"landlock": int(abi), "network": network == "1"}
            return _memo
    except (OSError, ValueError):
        pass
    _memo = _probe()
    try:
        os.makedirs(cache_dir, exist_ok=True)
        tmp = f"{path}.{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(f"{release} {_memo['landlock']} "
                    f"{int(_memo['network'])}\n")
        os.replace(tmp, path)
    except OSError:
        pass  # probed again next time
    return _memo


def _probe() -> dict:
    from acor.cli.sandbox.enter import landlock_abi
    return {"landlock": landlock_abi(), "network": _namespaces_work()}


def _namespaces_work() -> bool:
    # Imported before the fork: the child of a threaded process (acor mcp)
    # must not wait for a lock another thread held (the import lock).
    from acor.cli.run.own_secrets import dumpable_again
    from acor.cli.sandbox.enter import _no_network
    pid = os.fork()
    if pid == 0:  # the child tries, and says by its exit status
        try:
            dumpable_again()  # as a boxed tool's fork (run.process)
            _no_network()
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def missing(box: dict, found: dict) -> list[str]:
    """What ``box`` needs that this kernel does not offer (``found``, from
    :func:`offers`; []: nothing)."""
    lacks = []
    if found["landlock"] < 1:
        lacks.append("Landlock (Linux 5.13 or later, enabled with "
                     "lsm=landlock)")
    if not box.get("network") and not found["network"]:
        lacks.append("unprivileged user and network namespaces "
                     "(kernel.unprivileged_userns_clone, or user.max_user_"
                     "namespaces above 0)")
    return lacks
