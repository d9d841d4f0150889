"""Exit codes, shared by tools and the launcher (documented in the README).

A tool that stops for input exits with :data:`INPUT_NEEDED`; the launcher
maps every ending of a run to one of these so an agent can branch on the code
alone.
"""

OK = 0            #: the tool completed
FAILED = 1        #: the tool failed (its Error section says why)
USAGE = 2         #: bad invocation or configuration: unknown tool, bad option
INPUT_NEEDED = 3  #: the tool needs input; its Input Needed section says which
TIMEOUT = 124     #: the launcher stopped the tool: timeout or idle timeout
BROKEN_PIPE = 141  #: the reader of acor's output went away (128 + SIGPIPE)
CANCELLED = 130   #: cancelled by SIGINT/SIGTERM (128 + SIGINT, as shells do)

#: The exit code of each ending a tool gives its run (its final status, or
#: Input Needed): the one mapping the library, the launcher's relay and
#: `acor check` share. acor's own stops add TIMEOUT and CANCELLED.
OF_ENDING = {"complete": OK, "failed": FAILED, "input_needed": INPUT_NEEDED,
             "cancelled": CANCELLED}
