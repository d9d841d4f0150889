"""The streaming engine of csvprofile: no ACOR, no CLI, only the profile.

Everything the pass knows lives in one JSON-serialisable dict, `state`
(see new_state). profile_chunk() folds rows into it and stops at a record
boundary, where state["offset"] is the byte offset of the next record: to
resume, json-load the state and hand it to resume_source(), which positions
a new Source at that offset (re-hashing the bytes before it), and keep going.
Memory is bounded per column (DISTINCT_LIMIT), except for the key columns,
whose every value must be remembered to find duplicates.
"""

import codecs
import csv
import datetime
import hashlib
import math
import re

DISTINCT_LIMIT = 10_000   # exact distinct counts up to here, then ">10000"
NULLS = {"", "null", "none", "na", "n/a", "nan"}
BOOLS = {"true", "false", "yes", "no"}
INT_RE = re.compile(r"[+-]?(?:0|[1-9]\d*)$")   # "007" is a code, not a number
FLOAT_RE = re.compile(r"[+-]?(?:(?:0|[1-9]\d*)(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$")
DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?"
                     r"(?:Z|[+-]\d{2}:?\d{2})?$")


class CsvProblem(Exception):
    """The file cannot be profiled: code is an ACOR error code, lines the
    first and last physical line of the record at fault."""
    def __init__(self, code, message, first_line, last_line=None):
        super().__init__(message)
        self.code, self.first_line = code, first_line
        self.last_line = first_line if last_line is None else last_line


class Source:
    """The file's lines as text for csv.reader, counting the bytes consumed
    (so progress is real) and hashing them (so the profile names its input).
    csv.reader pulls lines only as a record needs them, so between records
    `offset` is exactly where the next record starts."""
    def __init__(self, f, encoding):
        self.f, self.decoder = f, codecs.getincrementaldecoder(encoding)()
        self.offset, self.line, self.sha256 = 0, 0, hashlib.sha256()

    def __iter__(self):
        for raw in self.f:
            self.offset += len(raw)
            self.line += 1
            self.sha256.update(raw)
            try:
                yield self.decoder.decode(raw)
            except UnicodeDecodeError as exc:
                raise CsvProblem("E_CSV_ENCODING", f"Line {self.line} is not valid "
                                 f"{exc.encoding}: {exc.reason}", self.line) from None


def resume_source(f, encoding, state, on_block=None):
    """A Source for the open binary file `f` that carries on where `state` (a
    JSON round trip of a previous pass's state) stopped: positioned at
    state["offset"], counting lines from state["line"], with the sha256 of
    the bytes before the offset computed again (hashlib objects cannot be
    saved; hashing is a C loop, about 1 GB/s). on_block() is called after
    16 MB hashed while more is left (a tool sends a heartbeat there). Returns
    (source, prefix_hex): compare prefix_hex with the one saved beside the
    state to be sure the file still starts with the bytes that were read."""
    offset = state["offset"]
    f.seek(0)
    digest, left = hashlib.sha256(), offset
    while left:
        block = f.read(min(left, 1 << 24))
        if not block:
            raise ValueError(f"the file is shorter than the checkpoint's offset {offset}")
        digest.update(block)
        left -= len(block)
        if left and on_block is not None:
            on_block()
    source = Source(f, encoding)
    source.offset, source.line, source.sha256 = offset, state["line"], digest
    return source, digest.hexdigest()


def read_header(records, source):
    """Column names from the first non-blank record, made unique."""
    try:
        header = next((row for row in records if row), None)
    except csv.Error as exc:
        raise CsvProblem("E_CSV_PARSE", f"Malformed CSV header: {exc}", 1, source.line)
    if header is None:
        raise CsvProblem("E_CSV_EMPTY", "The file has no header row", 1)
    names = []  # blank or repeated names would collide in the profile
    for i, h in enumerate(header):
        name = h.strip() or f"column_{i + 1}"
        names.append(name if name not in names else f"{name}_{i + 1}")
    return names


def new_state(names, key_columns, source):
    return {"offset": source.offset, "line": source.line, "rows": 0, "blank_lines": 0,
            "ragged": 0, "ragged_lines": [],
            "columns": [new_column(n) for n in names],
            # JSON object keys are strings: the column index, as text
            "keys": {str(i): {"first": {}, "dups": {}, "nulls": 0, "null_lines": []}
                     for i in key_columns}}


def new_column(name):
    return {"name": name, "nulls": 0, "ints": 0, "floats": 0, "bools": 0, "dates": 0,
            "counts": {}, "overflow": False, "min_len": None, "max_len": None,
            "n": 0, "mean": 0.0, "m2": 0.0, "min": None, "max": None,
            "date_min": None, "date_max": None, "not_numeric": [], "not_date": []}


def bucket(value):
    # Long free text is counted by digest, so 10,000 distinct essays stay small.
    if len(value) <= 100:
        return value
    return value[:80] + "…#" + hashlib.sha1(value.encode()).hexdigest()[:10]


def is_date(v):
    try:
        return bool(DATE_RE.match(v)) and bool(datetime.datetime.fromisoformat(v))
    except ValueError:  # matches the pattern but is no date, e.g. 2024-02-30
        return False


def add_value(col, value, line):
    v = value.strip()
    if v.lower() in NULLS:
        col["nulls"] += 1
        return
    k, counts = bucket(v), col["counts"]
    if k in counts:
        counts[k] += 1
    elif len(counts) < DISTINCT_LIMIT:
        counts[k] = 1
    else:
        col["overflow"] = True  # distinct is now a lower bound, top values approximate
    col["min_len"] = min(col["min_len"] or len(v), len(v))
    col["max_len"] = max(col["max_len"] or 0, len(v))
    number = int(v) if INT_RE.match(v) else float(v) if FLOAT_RE.match(v) else None
    if number is not None and math.isfinite(number):
        col["ints"] += isinstance(number, int)
        col["floats"] += 1
        col["n"] += 1  # Welford's running mean and variance: one pass, O(1) memory
        delta = number - col["mean"]
        col["mean"] += delta / col["n"]
        col["m2"] += delta * (number - col["mean"])
        col["min"] = number if col["min"] is None else min(col["min"], number)
        col["max"] = number if col["max"] is None else max(col["max"], number)
    elif len(col["not_numeric"]) < 5:  # examples, in case the column is mostly numeric
        col["not_numeric"].append([line, v[:40]])
    col["bools"] += v.lower() in BOOLS
    if is_date(v):
        col["dates"] += 1
        col["date_min"] = min(col["date_min"] or v, v)  # ISO 8601 sorts as text
        col["date_max"] = max(col["date_max"] or v, v)
    elif len(col["not_date"]) < 5:
        col["not_date"].append([line, v[:40]])


def add_key(key, value, line):
    v = value.strip()
    if v.lower() in NULLS:
        key["nulls"] += 1
        if len(key["null_lines"]) < 20:
            key["null_lines"].append(line)
    elif v in key["first"]:
        key["dups"].setdefault(v, [key["first"][v]]).append(line)
    else:
        key["first"][v] = line


def profile_chunk(records, source, state, max_rows, stop_offset):
    """Fold up to max_rows records into state, stopping early once the bytes
    read reach stop_offset. Returns False when the file is exhausted."""
    width = len(state["columns"])
    for _ in range(max_rows):
        start = state["line"] + 1
        try:
            row = next(records)
        except StopIteration:
            return False
        except csv.Error as exc:
            raise CsvProblem("E_CSV_PARSE", f"Malformed CSV at line {source.line}: {exc}",
                             start, source.line)
        state["line"], state["offset"] = source.line, source.offset
        if not row:
            state["blank_lines"] += 1
        elif len(row) != width:  # ragged: keep going, so all of them are reported at once
            state["ragged"] += 1
            if len(state["ragged_lines"]) < 10:
                state["ragged_lines"].append([start, len(row)])
        else:
            state["rows"] += 1
            for col, value in zip(state["columns"], row):
                add_value(col, value, start)
            for i, key in state["keys"].items():
                add_key(key, row[int(i)], start)
        if source.offset >= stop_offset:
            break
    return True


def summarize(col, rows):
    """The reported profile of one column."""
    nonnull = rows - col["nulls"]
    kind = ("empty" if not nonnull else "int" if col["ints"] == nonnull else
            "float" if col["floats"] == nonnull else "bool" if col["bools"] == nonnull else
            "date" if col["dates"] == nonnull else "string")
    counts = col["counts"]
    s = {"name": col["name"], "type": kind, "nulls": col["nulls"],
         "null_pct": round(100 * col["nulls"] / rows, 1) if rows else 0.0,
         "distinct": f">{DISTINCT_LIMIT}" if col["overflow"] else len(counts),
         "unique": bool(nonnull) and not col["overflow"] and len(counts) == rows}
    if kind in ("int", "float"):
        sd = math.sqrt(col["m2"] / (col["n"] - 1)) if col["n"] > 1 else 0.0
        s.update(min=col["min"], max=col["max"], mean=round(col["mean"], 4), stdev=round(sd, 4))
    elif kind == "date":
        s.update(min=col["date_min"], max=col["date_max"])
    elif kind in ("string", "bool"):
        top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
        s.update(top_values=[[v, n] for v, n in top], min_length=col["min_len"],
                 max_length=col["max_len"], top_values_approximate=col["overflow"])
    # A column of almost only numbers (or dates) usually hides a few typos.
    for share, odd, what in ((col["floats"], col["not_numeric"], "numeric"),
                             (col["dates"], col["not_date"], "dates")):
        if kind == "string" and share / nonnull >= 0.9:
            s["mostly"] = {"type": what, "pct": round(100 * share / nonnull, 1),
                           "exceptions": [{"line": ln, "value": v} for ln, v in odd]}
    return s
