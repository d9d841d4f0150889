"""hello: the smallest useful ACOR tool.

    acor hello [NAME] [--steps N] [--delay SECONDS] [--fail] [--ask]

It greets NAME (default: World) after N progress steps (default 2). It is
used in benchmarks, so it does no work, never sleeps unless --delay asks, and
parses its few options by hand (argparse would cost more than the tool).
--fail and --ask exercise the two other endings of a run (Failed, exit 1;
Input Needed, exit 3), so launchers and agents can be tested against them.
"""

import shlex
import sys
import time

from acor import AcorTool, ToolState

USAGE = """usage: acor hello [NAME] [--steps N] [--delay SECONDS] [--fail] [--ask]

Greet NAME (default: World) after N progress steps.

  --steps N        progress steps before the greeting (default 2)
  --delay SECONDS  sleep this long at each step (default 0)
  --fail           end as Failed (exit 1) instead of greeting
  --ask            end with Input Needed (exit 3) instead of greeting
  -h, --help       show this help"""


class UsageError(Exception):
    pass


def parse(argv):
    opts = {"name": "World", "steps": 2, "delay": 0.0, "fail": False, "ask": False,
            "help": False}
    names, args = [], iter(argv)
    for arg in args:
        option, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if arg in ("-h", "--help"):
            opts["help"] = True
        elif arg in ("--fail", "--ask"):
            opts[arg[2:]] = True
        elif option in ("--steps", "--delay"):
            value = value if eq else next(args, "")
            try:
                opts[option[2:]] = int(value) if option == "--steps" else float(value)
            except ValueError:
                raise UsageError(f"{option} needs a number, not {value!r}") from None
        elif arg.startswith("-") and arg != "-":
            raise UsageError(f"unknown option {arg}")
        else:
            names.append(arg)
    if len(names) > 1:
        raise UsageError(f"one NAME only, not {len(names)} (quote a name with spaces)")
    if opts["steps"] < 1 or not 0 <= opts["delay"] <= 3600:
        raise UsageError("--steps must be at least 1, --delay between 0 and 3600 seconds")
    opts["name"] = names[0] if names else opts["name"]
    return opts


def main(argv=None):
    with AcorTool() as tool:
        try:
            opts = parse(sys.argv[1:] if argv is None else argv)
        except UsageError as exc:
            tool.error("E_USAGE", str(exc), recovery="Run `acor hello --help` for the options, "
                       "then rerun, e.g. `acor hello Ada --steps 3`.")
            tool.stop(ToolState.FAILED)
            return 2
        if opts["help"]:
            tool.output(USAGE)
            return 0

        name, steps = opts["name"], opts["steps"]
        for step in range(1, steps + 1):
            if opts["delay"]:
                time.sleep(opts["delay"])
            tool.progress(step * 100 // steps, f"Step {step} of {steps}")

        if opts["ask"]:
            # input_needed() ends the process (exit 3): nothing runs after it.
            tool.input_needed(f"hello was asked to request input (--ask). "
                              f"To get a greeting instead, run: acor hello {shlex.quote(name)}")
        if opts["fail"]:
            tool.error("E_REQUESTED_FAILURE", f"Not greeting {name}: --fail was given",
                       recovery=f"Rerun without --fail: acor hello {shlex.quote(name)}")
            tool.stop(ToolState.FAILED)
            return 1

        tool.output(f"Hello, {name}!")
        tool.suggestions([f"Greet someone other than {name}",
                          "Profile a CSV file with the csvprofile tool"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
