"""Wrapped programs: tools that know nothing of ACOR.

A ``manifests/<name>.json`` with a ``command`` runs a plain program. The
launcher speaks for it: Ready at the start, its stdout as Output sections as
it arrives (escaped like any text, so it cannot forge a section), lines that
match ``progress_pattern`` as Progress too, and at exit Complete, or the
manifest's ``errors`` entry for the exit code with the stderr tail, then
Failed.
"""

import re

from acor import exitcodes
from acor.events import Error, Output, Progress, Status


class WrappedProtocol:
    def __init__(self, spec):
        self.spec = spec
        pattern = getattr(spec, "progress_pattern", None)
        self.pattern = re.compile(pattern) if pattern else None
        self.errors = getattr(spec, "errors", None) or {}

    def env(self):
        return {}

    def start(self):
        return [Status("ready")]

    def feed(self, block):
        """One read's worth of lines: Output in order, a Progress after
        each line that reports one."""
        events, pending = [], []
        for line in block.split("\n"):
            pending.append(line)
            match = self.pattern.search(line) if self.pattern else None
            if match:
                events.append(Output("\n".join(pending)))
                pending = []
                events.append(Progress(_percent(match.group("percent")),
                                       line.strip()))
        if pending:
            events.append(Output("\n".join(pending)))
        return events

    def tick(self):
        return []

    def close(self):
        return []

    def ending(self, returncode, stderr_tail):
        if returncode == 0:
            return [Status("complete")], exitcodes.OK
        known = self.errors.get(str(returncode), {})
        if returncode is not None and returncode < 0:
            what = f"was killed by signal {-returncode}"
        else:
            what = f"exited with code {returncode}"
        message = known.get("message") or \
            f"{self.spec.name} {what}"
        recovery = known.get("recovery") or (
            "Read the output and stderr above for the cause, then run it "
            "again with corrected arguments.")
        details = f"exit code: {returncode}"
        if stderr_tail:
            details += "\nstderr (last lines):\n" + stderr_tail
        code = known.get("code") or f"E_EXIT_{abs(returncode or 0)}"
        return [Error(message, code, details, recovery),
                Status("failed")], exitcodes.FAILED


def _percent(text):
    try:
        value = float(text)
    except (TypeError, ValueError):
        return 0
    value = min(100.0, max(0.0, value))
    return int(value) if value == int(value) else round(value, 2)
