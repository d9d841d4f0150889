// acor.mjs: speak ACOR from a Node.js tool (Node 18 or later, no
// dependencies). acor names this file in ACOR_MJS for the tools it runs:
//
//     const { AcorTool } = await import(process.env.ACOR_MJS);
//     const tool = new AcorTool().start();
//     tool.progress(50, "Halfway");
//     tool.output("Counted 3 lines");
//     tool.outputData("json", { lines: 3 });
//     tool.stop();                        // or tool.fail(CODE, MESSAGE)
//
// The same rules as the Python library and acor.sh (docs/protocol.md):
// every text is escaped so that no line of it can start a section; under
// acor every section is framed with the run's token, read once when this
// module loads (from the pipe ACOR_FRAME_FD, else ACOR_FRAME_TOKEN) and
// removed from the environment, so programs the tool runs cannot forge a
// section. Run directly, it writes plain ACOR Markdown.
//
// Methods (a misuse throws a TypeError that says why, writing nothing):
//   start()                               ## Status: Ready
//   status(state, message?)               an intermediate status (Working)
//   progress(percent, message?)           0 to 100
//   progressBar(current, total, label?)
//   output(text)
//   outputData(format, data)              json|yaml|text|markdown; json
//                                         takes any JSON value
//   error(code, message, {recovery, details, next})   the run goes on;
//                                         next: the argv to run next
//   directive(text)                       written once, before the ending
//   suggestions(items)
//   heartbeat()                           keeps an idle timeout from firing
//   stop(state?)                          complete|failed|cancelled
//   fail(code, message, {...})            Error, Failed, exit 1 (2: E_USAGE)
//   inputNeeded(message, {fields, audience, next})   Input Needed, exit 3
//   human(name)                           what a person gave for the
//                                         human-only argument `name`, or
//                                         undefined (docs/protocol.md)
//   args                                  the arguments acor checked
//                                         against the manifest's schema,
//                                         one object (ACOR_ARGS or the file
//                                         ACOR_ARGS_FILE names); undefined
//                                         when not run by acor
//
// A run left running when the process exits ends Complete on exit code 0,
// otherwise with an Error (unless one was reported) and Failed; an uncaught
// exception is reported as E_UNCAUGHT and the run ends Failed, exit 1.

import { closeSync, fstatSync, readFileSync, readSync, writeSync }
  from "node:fs";

const STARTS = "#{1,6}([ \\t]|$)|=+[ \\t]*$|-+[ \\t]*$|```|~~~|" +
  "<[Ss][Cc][Rr][Ii][Pp][Tt]|<[Pp][Rr][Ee]|<[Ss][Tt][Yy][Ll][Ee]|" +
  "<[Tt][Ee][Xx][Tt][Aa][Rr][Ee][Aa]|<[!?]|" +
  "\\*\\*[A-Z][A-Za-z ]{0,30}\\*\\*:|__[A-Z][A-Za-z ]{0,30}__:|\\\\|\\x1e";
// A line is risky when, after blanks, it could start a block (see the same
// rules in acor.sh); nested text (items, fields) is stricter.
const RISKY = new RegExp("^([ \\t\\f\\v]*)(" + STARTS + ")");
const NESTED = new RegExp("^([ \\t\\f\\v]*)(" + STARTS +
  "|[-+*]([ \\t]|$)|-[ \\t]*-[ \\t]*-|_[ \\t]*_[ \\t]*_|[0-9]{1,9}[.)]([ \\t]|$)" +
  "|[>[<|]|\\*\\*|__)");
const INDENTED = /^[ \t]+[^ \t]/;
const CANDIDATE = /(^|\n)[ \t\f\v]*[-#=`~<*_\\\x1e]/;
const CLOSING = /^([\s\S]*[^#]|)(#+[ \t]*)$/;
const SAFE_WORD = /^[A-Za-z0-9_@%+=:,./-]+$/;
const STATE_WORD = /^[A-Za-z][A-Za-z0-9_ -]{0,63}$/;
const CODE = /^[A-Za-z0-9_.:-]{1,64}$/;
const FORMATS = ["json", "yaml", "text", "markdown"];
const MAX_HUMAN = 32 * 1024;

const fold = (text) => String(text).replace(/\r\n?/g, "\n");

function escapeText(text) {
  const folded = fold(text);
  if (!CANDIDATE.test(folded)) return folded;
  return folded.split("\n").map((line) => {
    const m = RISKY.exec(line);
    return m ? m[1] + "\\" + line.slice(m[1].length) : line;
  }).join("\n");
}

function escapeNested(text) {
  return fold(text).split("\n").map((line) => {
    if (INDENTED.test(line)) return "\\" + line;
    const m = NESTED.exec(line);
    return m ? m[1] + "\\" + line.slice(m[1].length) : line;
  }).join("\n");
}

function escapeInline(text) {
  const line = fold(text).replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
  const m = CLOSING.exec(line);
  return m ? m[1] + "\\" + m[2] : line;
}

function indent(text) {
  const [first, ...rest] = text.split("\n");
  return [first, ...rest.map((line) => (line ? "  " + line : ""))]
    .join("\n");
}

function field(label, value) {
  let escaped = escapeNested(value);
  if (escaped.split("\n")[0]) escaped = " " + escaped;
  return indent(`**${label}**:${escaped}`);
}

function item(text) {
  const escaped = escapeNested(text);
  const cut = escaped.indexOf("\n");
  let first = cut < 0 ? escaped : escaped.slice(0, cut);
  const rest = cut < 0 ? "" : escaped.slice(cut);
  // A blank first line would read as an empty item, then a setext line.
  if (!first.replace(/[ \t]/g, "")) first = "\\" + first;
  return indent(`- ${first}${rest}`);
}

function shellJoin(argv) {
  return argv.map((word) => {
    word = String(word);
    return SAFE_WORD.test(word) ? word
      : "'" + word.replace(/'/g, "'\"'\"'") + "'";
  }).join(" ");
}

// JSON on one line as acor writes it: ", " and ": " between items.
function jsonLine(value) {
  if (Array.isArray(value)) return "[" + value.map(jsonLine).join(", ") + "]";
  if (value !== null && typeof value === "object") {
    return "{" + Object.entries(value)
      .map(([k, v]) => JSON.stringify(k) + ": " + jsonLine(v)).join(", ") +
      "}";
  }
  const text = JSON.stringify(value);
  if (text === undefined) throw new TypeError("not a JSON value");
  return text;
}

function percentText(value) {
  const number = Number(value);
  if (typeof value === "boolean" || value === null || value === "" ||
      !Number.isFinite(number)) {
    throw new TypeError(
      `progress: the percentage must be a number from 0 to 100, not ${value}`);
  }
  if (number <= 0) return "0";
  if (number >= 100) return "100";
  // Hundredths rounded half up on the decimal digits, as acor.sh does.
  const [whole, frac = ""] = number.toFixed(6).split(".");
  const digits = (frac + "000").slice(0, 3);
  const hundredths = Number(whole) * 100 + Number(digits.slice(0, 2)) +
    (Number(digits[2]) >= 5 ? 1 : 0);
  if (hundredths >= 10000) return "100";
  if (hundredths % 100 === 0) return String(hundredths / 100);
  if (hundredths % 10 === 0) {
    return `${Math.floor(hundredths / 100)}.${(hundredths % 100) / 10}`;
  }
  return `${Math.floor(hundredths / 100)}.` +
    String(hundredths % 100).padStart(2, "0");
}

function capitalize(word) {
  return word.charAt(0).toUpperCase() + word.slice(1).toLowerCase();
}

function readPipe(variable, limit) {
  // Only a pipe is the launcher's: a descriptor that is a terminal or a
  // file is never read. Its writing end is closed, so the read ends.
  const value = process.env[variable];
  delete process.env[variable];
  if (!value || !/^[0-9]+$/.test(value) || Number(value) < 3) return null;
  const fd = Number(value);
  try {
    if (!fstatSync(fd).isFIFO()) return null;
    const chunks = [];
    let size = 0;
    const buffer = Buffer.alloc(4096);
    for (;;) {
      const n = readSync(fd, buffer, 0, buffer.length, null);
      if (n === 0) break;
      chunks.push(Buffer.from(buffer.subarray(0, n)));
      size += n;
      if (size > limit) return null;
    }
    return Buffer.concat(chunks).toString("utf8");
  } catch {
    return null;
  } finally {
    try { closeSync(fd); } catch { /* already closed */ }
  }
}

function readToken() {
  const fromPipe = readPipe("ACOR_FRAME_FD", 4096);
  let token = fromPipe !== null ? fromPipe.split("\n")[0]
    : process.env.ACOR_FRAME_TOKEN || "";
  delete process.env.ACOR_FRAME_TOKEN;
  if (!/^[0-9A-Za-z]+$/.test(token)) token = "";  // not the launcher's
  return token;
}

function decodeHuman(text) {
  const values = new Map();
  for (const line of (text || "").split("\n")) {
    const eq = line.indexOf("=");
    if (eq <= 0) continue;
    const encoded = line.slice(eq + 1);
    const bytes = [];
    for (let i = 0; i < encoded.length; i++) {
      const hex = encoded.slice(i + 1, i + 3);
      if (encoded[i] === "%" && /^[0-9A-Fa-f]{2}$/.test(hex)) {
        bytes.push(parseInt(hex, 16));
        i += 2;
      } else {
        bytes.push(encoded.charCodeAt(i) & 0x7f);
      }
    }
    values.set(line.slice(0, eq), Buffer.from(bytes).toString("utf8"));
  }
  return values;
}

const TOKEN = readToken();
const MARK = TOKEN ? `\x1eacor:${TOKEN}\x1e` : "";
const HUMAN = decodeHuman(readPipe("ACOR_HUMAN_FD", MAX_HUMAN));

function writeAll(text) {
  const data = Buffer.from(text, "utf8");
  let offset = 0;
  while (offset < data.length) {
    try {
      offset += writeSync(1, data, offset, data.length - offset);
    } catch (error) {
      if (error.code !== "EAGAIN") throw error;
      // stdout is a non-blocking pipe that is full: wait for the reader.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
    }
  }
}

function write(section) {
  writeAll(TOKEN ? `${MARK}${section}${MARK}end\n` : section);
}

function textSection(heading, text) {
  write(text ? `## ${heading}\n${escapeText(text)}\n\n` : `## ${heading}\n\n`);
}

export class AcorTool {
  #state = "created";
  #errored = false;
  #directives = [];

  get state() { return this.#state; }
  get errored() { return this.#errored; }

  start() {
    if (this.#state !== "created") return this;
    this.#state = "running";
    current = this;
    write("## Status: Ready\n\n");
    return this;
  }

  #running(what) {
    if (this.#state !== "running") {
      throw new TypeError(`${what}: the run is ${this.#state} (call start() ` +
        "first; nothing may follow stop())");
    }
  }

  status(state, message = "") {
    this.#running("status");
    if (/^(complete|failed|cancelled)$/i.test(state)) {
      throw new TypeError(`status: '${state}' is not an intermediate state ` +
        "(use stop())");
    }
    if (!STATE_WORD.test(state)) {
      throw new TypeError(`status: a state is a word like Working, not '${state}'`);
    }
    textSection(`Status: ${escapeInline(capitalize(state))}`, message);
    return this;
  }

  progress(percent, message = "") {
    this.#running("progress");
    textSection(`Progress: ${percentText(percent)}%`, message);
    return this;
  }

  progressBar(current, total, label = "") {
    this.#running("progressBar");
    if (!Number.isInteger(current) || !Number.isInteger(total) ||
        current < 0 || total < 0) {
      throw new TypeError("progressBar: current and total must be whole " +
        `numbers, not ${current} ${total}`);
    }
    const percent = total === 0 || current >= total ? "100"
      : percentText((current * 100) / total);
    textSection(`Progress: ${percent}%`, `${label} (${current}/${total})`.trim());
    return this;
  }

  output(text) {
    this.#running("output");
    textSection("Output", typeof text === "string" ? text : jsonLine(text));
    return this;
  }

  outputData(format, data) {
    this.#running("outputData");
    if (!FORMATS.includes(format)) {
      throw new TypeError(`outputData: the format is ${FORMATS.join(", ")}, ` +
        `not '${format}'`);
    }
    let text = format === "json" && typeof data !== "string"
      ? JSON.stringify(data, null, 2) : fold(data);
    if (text === undefined) throw new TypeError("outputData: not JSON data");
    text = text.replace(/\n+$/, "");
    // The data goes verbatim inside a fence longer than any backtick run.
    let fence = "```";
    while (text.includes(fence)) fence += "`";
    write(`## Output Data\n${fence}${format}\n${text}\n${fence}\n\n`);
    return this;
  }

  error(code, message, { recovery, details, next } = {}) {
    this.#running("error");
    if (!CODE.test(code)) {
      throw new TypeError("error: the code must be letters, digits, '_', " +
        `'.', ':' or '-', like E_FILE_NOT_FOUND; not '${code}'`);
    }
    let body = `**Code**: ${code}`;
    if (details !== undefined) body += "\n" + field("Details", details);
    if (recovery !== undefined) body += "\n" + field("Recovery", recovery);
    if (next !== undefined) body += "\n" + field("Next", shellJoin(next));
    write(`## Error: ${escapeInline(message)}\n${body}\n\n`);
    this.#errored = true;
    return this;
  }

  directive(text) {
    this.#running("directive");
    this.#directives.push(String(text));
    return this;
  }

  suggestions(items) {
    this.#running("suggestions");
    write("## Suggestions\n" + items.map((i) => item(i) + "\n").join("") +
      "\n");
    return this;
  }

  heartbeat() {
    writeAll(TOKEN ? `${MARK}heartbeat\n` : "<!-- acor:heartbeat -->\n");
    return this;
  }

  #flushDirectives() {
    if (!this.#directives.length) return;
    write("## AI Directive\n" +
      this.#directives.map((d) => item(d) + "\n").join("") + "\n");
    this.#directives = [];
  }

  stop(state = "complete") {
    if (this.#state === "created") {
      throw new TypeError("stop: the run has not started (call start() first)");
    }
    if (this.#state !== "running") return this;
    if (!["complete", "failed", "cancelled"].includes(state)) {
      throw new TypeError("stop: the state is complete, failed or " +
        `cancelled, not '${state}'`);
    }
    this.#flushDirectives();
    write(`## Status: ${capitalize(state)}\n\n`);
    this.#state = state;
    return this;
  }

  fail(code, message, options = {}) {
    this.error(code, message, options);
    this.stop("failed");
    process.exit(code === "E_USAGE" ? 2 : 1);
  }

  inputNeeded(message, { fields, audience = "agent", next } = {}) {
    this.#running("inputNeeded");
    if (audience !== "agent" && audience !== "human") {
      throw new TypeError("inputNeeded: the audience must be agent or " +
        `human, not '${audience}'`);
    }
    const lines = [];
    if (audience !== "agent") lines.push(field("Audience", audience));
    if (fields !== undefined) lines.push(field("Fields", jsonLine(fields)));
    if (next !== undefined) lines.push(field("Next", shellJoin(next)));
    this.#flushDirectives();
    if (lines.length) {
      const text = message ? escapeText(message) + "\n\n" : "";
      write(`## Input Needed\n${text}${lines.join("\n")}\n\n`);
    } else {
      textSection("Input Needed", message);
    }
    this.#state = "input_needed";
    process.exit(3);
  }

  human(name) {
    return HUMAN.get(name);
  }

  get args() {
    return ARGS;
  }
}

// The validated arguments (docs/protocol.md, "Arguments as JSON").
const ARGS = (() => {
  const file = process.env.ACOR_ARGS_FILE;
  const text = file ? readFileSync(file, "utf8") : process.env.ACOR_ARGS;
  return text ? JSON.parse(text) : undefined;
})();

let current = null;

process.on("uncaughtException", (error) => {
  if (current && current.state === "running") {
    current.error("E_UNCAUGHT", String(error && error.message || error), {
      recovery: "Read the tool's stderr for the stack, fix the cause, then " +
        "run it again.", details: String(error && error.stack || error) });
    current.stop("failed");
  } else {
    process.stderr.write(String(error && error.stack || error) + "\n");
  }
  process.exit(1);
});

process.on("exit", (code) => {
  if (!current || current.state !== "running") return;
  if (code === 0) {
    current.stop("complete");
    return;
  }
  if (!current.errored) current.error("E_SCRIPT_EXIT", `The script exited with status ${code} ` +
    "before finishing", { recovery: "Read its stderr for the cause, fix " +
    "it, then run it again.", details: `exit status: ${code}` });
  current.stop("failed");
});
