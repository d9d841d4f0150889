"""hello: the smallest useful ACOR tool.

    acor hello [NAME] [--steps STEPS] [--delay DELAY] [--fail] [--ask]

It greets NAME (default: World) after STEPS progress steps (default 2). Its
arguments are the "args" schema of manifest.json, parsed by
tool.parse_args(). It is used in benchmarks, so it does no work and never
sleeps unless --delay asks. --fail and --ask end the run the two other ways
(Failed, exit 1; Input Needed, exit 3), so that launchers and agents can be
tested against them.
"""

import time

from acor import AcorTool


def main():
    with AcorTool() as tool:
        args = tool.parse_args()  # a usage error ends the run: E_USAGE, exit 2
        for step in range(1, args.steps + 1):
            if args.delay:
                time.sleep(args.delay)
            tool.progress_bar(step, args.steps, "Step")  # per item: free

        if args.ask or args.fail:
            import shlex  # (re: only these endings pay for it)
            again = tool.command(args.name)  # the argv that greets NAME
            if args.ask:  # ends the process (exit 3): nothing runs after it
                tool.input_needed(
                    f"hello was asked to request input (--ask). To get a "
                    f"greeting instead, run: {shlex.join(again)}",
                    fields={"name": {"type": "string", "default": args.name,
                                     "description": "who to greet"}},
                    next=again)
            tool.fail("E_REQUESTED_FAILURE",  # ends the process (exit 1)
                      f"Not greeting {args.name}: --fail was given",
                      recovery=f"Rerun without --fail: {shlex.join(again)}",
                      next=again)

        tool.output(f"Hello, {args.name}!")
        tool.suggestions([f"Greet someone other than {args.name}",
                          "Profile a CSV file with the csvprofile tool"])


if __name__ == "__main__":
    main()
