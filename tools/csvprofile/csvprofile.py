"""csvprofile: profile a CSV file for an agent, in one streaming pass.

    acor csvprofile FILE [--key COLUMN | --no-key] [--out DIR]
                         [--delimiter D] [--encoding ENC] [--session ID]

The arguments are the "args" schema of manifest.json, parsed by
tool.parse_args(); every failure is one tool.fail() call with the exact
command to run next.

Per column: inferred type (int/float/bool/date/string), nulls, distinct
values, min/max/mean/stdev or top values; duplicates of the key column. The
full profile is written to DIR/<stem>.profile.json (DIR: ./acor-out). This
file is the ACOR side (arguments, progress, errors, report); the pass itself
is in profiler.py. Exit codes: 0 done, 1 failed, 2 bad arguments, 3 the key
column must be chosen (Input Needed).

Resumable runs: with --session ID the run is bound to an ACOR session and
saves a checkpoint after every chunk (`## Session Checkpoint: offset-N`, N
the byte offset of the next record), so a run that is killed or times out
can be started again with the same command and carries on from the last
checkpoint instead of from the top. A checkpoint holds the pass's whole
state (see profiler.py) and the identity of the file it was read from:
real path, size and mtime_ns, plus the sha256 of the bytes before N. It is
used only if all of those still match and the delimiter, encoding and key
columns are compatible; otherwise the run starts over and says why. The
profile's sha256 covers the whole file in resumed runs too: a hashlib object
cannot be saved, so a resumed run hashes the first N bytes again (a C loop,
about 1 GB/s, with a heartbeat every 16 MB) and checks them against the
checkpoint's digest, which also catches a file rewritten in place with the
same size and mtime. A finished session resumes at the end of the file: the
same command reports again without reading the file again, and an agent
answering Input Needed with --key and the same --session loses no work.
"""

import csv
import difflib
import json
import os
import re
import shlex
import time

from acor import AcorTool
from profiler import (CsvProblem, Source, new_state, profile_chunk, read_header,
                      resume_source, summarize)

CHUNK_ROWS = 10_000  # rows per chunk; a chunk also ends at each tenth of the bytes
CHECKPOINT_FORMAT = "csvprofile-checkpoint/1"  # change it when the engine's state changes
STATE_DIR_HINT = ("Make the state directory a writable folder, or point `state_dir` in "
                  ".acor/config.yaml (or ACOR_STATE_DIR) at one, then run: ")
HEARTBEAT_AFTER = 5.0  # seconds without a section before a chunk ends with a heartbeat
# id, uuid, key, order_id, order-id, "Order ID", orderId, OrderID (but not "paid")
ID_NAME = re.compile(r"(?i:(?:.*[_\-\s.])?(?:id|uuid|guid|key))$|.*[a-z](?:Id|ID)$")


def check_args(tool, args):
    """What the schema cannot say: --key and --no-key exclude each other,
    a delimiter is one character; the encoding's BOM is skipped."""
    if args.key is not None and args.no_key:
        tool.fail("E_USAGE", "--key and --no-key cannot be used together",
                  recovery="Give one of them: --key COLUMN checks that column "
                           "for duplicates, --no-key skips the check.",
                  next=rerun_argv(args, "--no-key"))
    if args.delimiter is not None:
        delim = "\t" if args.delimiter in ("tab", "\\t") else args.delimiter
        if len(delim) != 1:
            tool.fail("E_USAGE", f"--delimiter must be one character (or "
                                 f"'tab'), not {args.delimiter!r}",
                      recovery="Pass one character, e.g. --delimiter ';', or "
                               "leave it out to have it detected.",
                      next=rerun_argv(args, "--delimiter", ","))
        args.delimiter = delim
    # utf-8 (the default) also reads a file that starts with a BOM
    args.encoding = "utf-8-sig" if args.encoding.lower().replace("_", "-") \
        in ("utf-8", "utf8") else args.encoding


def rerun_argv(args, *extra):
    """The exact command to run next: every option the user gave, with extra
    options (e.g. "--key", "id") replacing the ones of the same name."""
    argv = ["acor", "csvprofile", args.file]
    for opt, value in (("--key", args.key), ("--no-key", args.no_key),
                       ("--out", args.out), ("--delimiter", args.delimiter),
                       ("--encoding", None if args.encoding == "utf-8-sig"
                        else args.encoding),
                       ("--session", args.session)):
        if value and opt not in extra and not (
                opt in ("--key", "--no-key") and
                {"--key", "--no-key"} & set(extra)):
            argv += [opt] if value is True else [opt, value]
    return argv + list(extra)


def rerun(args, *extra):
    return shlex.join(rerun_argv(args, *extra))


def plural(n, word):
    return f"{n or 'no'} {word}{'s' * (n != 1)}"


def human(n):
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KB" if n < 1 << 20 else \
        f"{n / (1 << 20):.1f} MB"


def open_csv(tool, args):
    """The open file (binary: Source decodes it) and its delimiter."""
    path = args.file
    if not os.path.exists(path):
        here = os.path.dirname(path) or "."
        near = sorted(n for n in os.listdir(here) if n.lower().endswith((".csv", ".tsv"))) \
            if os.path.isdir(here) else []
        with_file = lambda f: rerun(type(args)(**{**vars(args), "file": f}))
        recovery = (f"Check the path (relative to {os.getcwd()}) with `ls {shlex.quote(here)}`,"
                    f" then run: {with_file('<path/to/file.csv>')}")
        guess = difflib.get_close_matches(os.path.basename(path), near, n=1, cutoff=0.8)
        if guess:  # a typo is the likeliest cause: offer the command for the near match
            guess = os.path.join(os.path.dirname(path), guess[0])
            recovery = f"If you meant {guess}, run: {with_file(guess)}. Otherwise: {recovery}"
        tool.fail("E_FILE_NOT_FOUND", f"Cannot find {path}", recovery,
                  details=f"CSV files in {here}: {', '.join(near[:10])}" if near else None,
                  next=rerun_argv(type(args)(**{**vars(args), "file": guess})) if guess
                  else ["ls", here])
    try:
        f = open(path, "rb")
    except OSError as exc:  # a directory, or no permission
        tool.fail("E_FILE_UNREADABLE", f"Cannot read {path}: {exc.strerror}",
                  f"Check it is a readable file (`ls -ld {shlex.quote(path)}`), then run: "
                  f"{rerun(args)}", next=["ls", "-ld", path])
    if args.delimiter:
        return f, args.delimiter
    sample = f.read(65536).decode(args.encoding, errors="replace")
    f.seek(0)
    try:  # sniff complete lines only; a cut line misleads the Sniffer
        return f, csv.Sniffer().sniff(sample[:sample.rfind("\n") + 1] or sample, ",;\t|").delimiter
    except csv.Error:
        return f, ","


def begin(f, args, delim):
    """A pass from the top of the file: (source, records, column names)."""
    f.seek(0)
    source = Source(f, args.encoding)
    records = csv.reader(source, delimiter=delim, strict=True)
    return source, records, read_header(records, source)


def profile(tool, args):
    f, delim = open_csv(tool, args)
    with f:
        st = os.fstat(f.fileno())
        size = st.st_size
        identity = {"path": os.path.realpath(args.file), "size": size,
                    "mtime_ns": st.st_mtime_ns}
        source, records, names = begin(f, args, delim)
        if args.key and args.key not in names:
            close = [n for n in names if n.lower() == args.key.lower()]
            fixed = rerun_argv(args, "--key", (close or names)[0])
            tool.fail("E_KEY_NOT_FOUND", f"{args.file} has no column {args.key!r}",
                      f"Run: {shlex.join(fixed)}  (columns: {', '.join(names)})",
                      next=fixed)
        # Without --key, remember every id-like column's values: the key is chosen after.
        keys = [names.index(args.key)] if args.key else [] if args.no_key else \
            [i for i, n in enumerate(names) if ID_NAME.match(n)]
        state = new_state(names, keys, source)
        tool.status("working", f"Profiling {args.file} ({human(size)}, "
                               f"{plural(len(names), 'column')}, delimiter {delim!r})")
        resumed = None
        if args.session:
            resumed = resume(tool, args, f, identity, delim, names, keys)
            if resumed:
                source, state = resumed
                records = csv.reader(source, delimiter=delim, strict=True)
            else:  # from the top; checking the checkpoint may have moved f
                source, records, names = begin(f, args, delim)
                state = new_state(names, keys, source)
        tick = next_tick = size / 10
        while next_tick <= state["offset"]:  # a resumed pass: the next tenth to report
            next_tick += tick
        last, more, saved_at = -1, True, state["offset"] if resumed else None
        said = time.monotonic()
        while more:
            more = profile_chunk(records, source, state, max(1, args.chunk_rows), next_tick)
            pct = int(100 * source.offset / size)
            if pct > last and (source.offset >= next_tick or not more):
                tool.progress(pct, f"{plural(state['rows'], 'row')}, {human(source.offset)} "
                                   f"of {human(size)}")
                last, said = pct, time.monotonic()
            elif time.monotonic() - said >= HEARTBEAT_AFTER:
                tool.heartbeat()  # a tenth of a big file can take a while: still alive
                said = time.monotonic()
            while next_tick <= source.offset:
                next_tick += tick
            # state is complete up to state["offset"]: a checkpoint, if it moved on.
            if args.session and state["offset"] != saved_at:
                saved_at = state["offset"]
                save(tool, args, f"offset-{saved_at}", {
                    "format": CHECKPOINT_FORMAT, "file": identity, "delimiter": delim,
                    "encoding": args.encoding, "sha256_prefix": source.sha256.hexdigest(),
                    "engine": state})
                said = time.monotonic()
            if args.slow > 0 and more:
                time.sleep(args.slow)
    if state["ragged"]:
        bad = state["ragged_lines"]
        tool.fail("E_CSV_PARSE", f"{state['ragged']} rows of {args.file} do not have "
                  f"{len(names)} fields; the first is at line {bad[0][0]}",
                  f"Fix those lines (quote fields that contain {delim!r}); if most lines "
                  f"are wrong, pass the right --delimiter. Then run: {rerun(args)}",
                  details="; ".join(f"line {ln}: {n} fields" for ln, n in bad),
                  next=["sed", "-n", f"{bad[0][0]}p", args.file])
    return report(tool, args, state, names, size, delim, source.sha256.hexdigest())


def start_session(tool, args):
    """Bind the run to --session; a bad id is a usage error, before any file."""
    try:
        tool.session(args.session, keep=2)  # cumulative state: the newest suffices
    except (TypeError, ValueError) as exc:
        fixed = rerun_argv(args, "--session", "orders-1")
        tool.fail("E_USAGE", f"--session: {exc}",
                  f"Run again with a valid id, e.g. {shlex.join(fixed)}", next=fixed)


def resume(tool, args, f, identity, delim, names, keys):
    """(source, state) carrying on from the session's latest checkpoint, or
    None to start from the top; either way a Status line says which and why."""
    from acor.sessions import CorruptSessionError
    try:
        last = tool.resume()
    except CorruptSessionError as exc:
        tool.fail("E_SESSION_CORRUPT", f"Session {args.session} cannot be read", str(exc),
                  details=exc.path)
    except OSError as exc:  # e.g. the state dir is a file
        tool.fail("E_STATE_READ", f"Cannot read session {args.session}: "
                  f"{exc.strerror or exc}", STATE_DIR_HINT + rerun(args),
                  details=getattr(exc, "filename", None))
    if last is None:
        tool.status("working", f"Session {args.session} has no checkpoint yet: starting "
                               f"at byte 0")
        return None
    cid, saved = last
    why = mismatch(saved, identity, delim, args.encoding, names, keys)
    if why is None:
        try:
            source, prefix = resume_source(f, args.encoding, saved["engine"],
                                           on_block=tool.heartbeat)
        except (OSError, ValueError) as exc:
            why = f"cannot read {args.file} up to the checkpoint ({exc})"
        else:
            if prefix != saved["sha256_prefix"]:
                why = (f"the first {saved['engine']['offset']} bytes of {args.file} are not "
                       f"the ones checkpoint {cid} read (sha256 differs)")
    if why is not None:
        tool.status("working", f"Starting over at byte 0: checkpoint {cid} of session "
                               f"{args.session} does not apply, {why}.")
        return None
    state, size = saved["engine"], identity["size"]
    tool.status("working", f"Resumed from checkpoint {cid} of session {args.session}: byte "
                           f"{state['offset']} of {size} (line {state['line']}), "
                           f"{plural(state['rows'], 'row')} already profiled"
                           + (" (the whole file)" if state["offset"] >= size else ""))
    return source, state


def mismatch(saved, identity, delim, encoding, names, keys):
    """Why a checkpoint's state cannot be continued in this run, or None."""
    if not isinstance(saved, dict) or saved.get("format") != CHECKPOINT_FORMAT:
        return f"it is not a {CHECKPOINT_FORMAT} checkpoint"
    old = saved["file"]
    if old["path"] != identity["path"]:
        return f"it is of another file ({old['path']})"
    changed = [what for what in ("size", "mtime_ns") if old[what] != identity[what]]
    if changed:
        return "the file changed since (" + ", ".join(
            f"{what} {old[what]} then, {identity[what]} now" for what in changed) + ")"
    if saved["delimiter"] != delim or saved["encoding"] != encoding:
        return (f"it read the file with delimiter {saved['delimiter']!r} and encoding "
                f"{saved['encoding']}, not {delim!r} and {encoding}")
    engine = saved["engine"]
    if [c["name"] for c in engine["columns"]] != names:
        return "its columns are not the file's"
    missing = [names[i] for i in keys if str(i) not in engine["keys"]]
    if missing:
        return f"it did not track the key column {', '.join(missing)}"
    return None


def save(tool, args, checkpoint_id, state):
    try:
        tool.checkpoint(checkpoint_id, state)
    except TimeoutError as exc:
        tool.fail("E_SESSION_LOCKED", f"Cannot save checkpoint {checkpoint_id} of session "
                  f"{args.session}: it stays locked", "Another run of this session is "
                  "saving to it: wait for it to finish, or use another --session.",
                  details=str(exc))
    except OSError as exc:
        tool.fail("E_STATE_WRITE", f"Cannot save checkpoint {checkpoint_id} of session "
                  f"{args.session}: {exc.strerror or exc}",
                  STATE_DIR_HINT + rerun(args), details=getattr(exc, "filename", None))


def choose_key(tool, args, state, names):
    """--key; or the obvious key: a column named `id`, or the only id-like
    column whose values are (nearly: >= 90%) all distinct. Otherwise ask."""
    if args.key or args.no_key or not state["rows"]:
        return args.key
    near = [names[int(i)] for i, k in state["keys"].items()
            if len(k["first"]) >= 0.9 * state["rows"]]
    ids = [n for n in near if n.lower() == "id"]
    if ids or len(near) == 1:
        return (ids or near)[0]
    unique = [c["name"] for c in state["columns"] if summarize(c, state["rows"])["unique"]]
    why = ("Several id-like columns are unique or nearly unique" if near else
           "No column named like an id is unique; these columns have a distinct value "
           "in every row" if unique else "No column has a distinct value in every row")
    listing = "".join(f"\n- {n}" for n in near or unique)
    # With a session, the answer resumes at the end of the file: no work is lost.
    ask = rerun_argv(args, "--key", "<KEY>")
    tool.input_needed(
        f"csvprofile needs the key column of {args.file} (the column whose values should "
        f"be unique) to look for duplicates. {why}.{listing}\n\n"
        f"Run this command with your choice of column:\n{shlex.join(ask)}"
        f"\n\nOr profile without duplicate detection:\n{rerun(args, '--no-key')}",
        fields={"key": {"type": "string", **({"enum": near or unique} if near or unique
                                             else {}),
                        "description": f"the column of {args.file} whose values "
                                       f"should be unique"}},
        next=ask)


def report(tool, args, state, names, size, delim, sha256):
    rows = state["rows"]
    cols = [summarize(c, rows) for c in state["columns"]]
    key = choose_key(tool, args, state, names)  # may end the run with Input Needed
    k = state["keys"][str(names.index(key))] if key else {"dups": {}, "nulls": 0,
                                                          "null_lines": []}
    dups = sorted(({"value": v, "lines": ls} for v, ls in k["dups"].items()),
                  key=lambda d: d["lines"][0])
    prof = {"file": args.file, "bytes": size, "sha256": sha256, "delimiter": delim,
            "rows": rows, "blank_lines": state["blank_lines"], "columns": cols,
            "key": {"column": key, "chosen": "given" if args.key else "auto" if key else None,
                    "duplicates": dups, "null_keys": k["nulls"],
                    "null_key_lines": k["null_lines"]}}
    out_dir = args.out or "acor-out"
    out = os.path.join(out_dir, os.path.splitext(os.path.basename(args.file))[0]
                       + ".profile.json")
    try:  # write, then rename: nobody ever reads half a profile
        os.makedirs(out_dir, exist_ok=True)
        with open(out + ".tmp", "w", encoding="utf-8") as f:
            json.dump(prof, f, indent=2, ensure_ascii=False)
        os.replace(out + ".tmp", out)
    except OSError as exc:
        fixed = rerun_argv(args, "--out", "/tmp/acor-out")
        tool.fail("E_OUTPUT_WRITE", f"Cannot write {out}: {exc.strerror}",
                  f"Choose a writable directory: {shlex.join(fixed)}", next=fixed)

    # Directives only for what needs fixing, with the lines to look at.
    issues = []
    if dups:
        shown = ", ".join(f"{d['value']} (lines {', '.join(map(str, d['lines']))})"
                          for d in dups[:5])
        more = f", and {len(dups) - 5} more listed in {out}" if len(dups) > 5 else ""
        issues.append(f"{len(dups)} duplicate values in key column {key}")
        tool.ai_directive(f"Review the {len(dups)} duplicate values of key column {key} in "
                          f"{args.file}: {shown}{more}. Keep one row per {key} or fix the key.")
    if k["nulls"]:
        issues.append(f"{k['nulls']} rows with an empty key {key}")
        tool.ai_directive(f"Fill in or remove the {k['nulls']} rows of {args.file} with an "
                          f"empty {key} (lines {', '.join(map(str, k['null_lines']))}).")
    for c in (c for c in cols if "mostly" in c):
        m = c["mostly"]
        odd = ", ".join(f"line {e['line']}: {e['value']!r}" for e in m["exceptions"])
        issues.append(f"column {c['name']} is {m['pct']}% {m['type']} with exceptions")
        tool.ai_directive(f"Column {c['name']} of {args.file} is {m['pct']}% {m['type']} "
                          f"but has other values ({odd}): correct them if they are typos.")

    tool.output(f"Profiled {args.file}: {plural(rows, 'row')} x {plural(len(cols), 'column')}, "
                f"{plural(len(issues), 'issue')} found.")
    summary = {"file": args.file, "rows": rows, "delimiter": delim, "column_count": len(cols),
               "key": key, "key_chosen": prof["key"]["chosen"], "duplicate_keys": len(dups),
               "duplicates": dups[:10], "null_keys": k["nulls"], "issues": issues,
               "profile": out,
               "columns": [{f: c[f] for f in ("name", "type", "nulls", "distinct", "min",
                                              "max", "mean") if f in c} for c in cols[:50]]}
    tool.output(summary)
    tool.output_files({out: f"Full profile of {args.file}: types, nulls, distinct counts, "
                            f"stats and top values of every column; all duplicate keys"})
    sparse = [f"{c['name']} ({c['null_pct']}% empty)" for c in cols if c["null_pct"] >= 50]
    numeric = [c["name"] for c in cols if c["type"] in ("int", "float")]
    tool.suggestions([s for s in (
        dups and f"Deduplicate {args.file} on {key}, keeping the first row of each value",
        sparse and f"Decide whether the mostly empty columns are needed: {', '.join(sparse)}",
        numeric and f"Plot the distributions of the numeric columns: {', '.join(numeric[:5])}",
        "Profile the next export of this file and compare the two profiles to spot drift",
    ) if s])


def main():
    with AcorTool() as tool:
        args = tool.parse_args()  # --help and usage errors end the run here
        check_args(tool, args)
        if args.session is not None:
            start_session(tool, args)
        try:
            profile(tool, args)
        except CsvProblem as p:  # the engine knows the line; the CLI knows the next step
            span = p.first_line if p.first_line == p.last_line else \
                f"{p.first_line}-{p.last_line}"
            quoted = shlex.quote(args.file)
            tool.fail(p.code, f"{args.file}: {p}", {
                "E_CSV_PARSE": f"Fix the quoting of the record at line {span} (see "
                               f"`sed -n '{p.first_line},{p.last_line}p' {quoted}`), "
                               f"then run: {rerun(args)}",
                "E_CSV_ENCODING": f"Find the file's encoding (`file -i {quoted}`), then "
                                  f"run e.g.: {rerun(args, '--encoding', 'latin-1')}",
                "E_CSV_EMPTY": "Check this is the right file (it is empty), or "
                               "regenerate it, then run again."}[p.code],
                next={"E_CSV_PARSE": ["sed", "-n", f"{p.first_line},{p.last_line}p",
                                      args.file],
                      "E_CSV_ENCODING": ["file", "-i", args.file]}.get(p.code))


if __name__ == "__main__":
    main()
