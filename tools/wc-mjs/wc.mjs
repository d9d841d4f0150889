#!/usr/bin/env node
// wc-mjs: count the lines, words and bytes of files. An ACOR tool in
// JavaScript: acor.mjs (shipped with acor; acor passes its path in
// ACOR_MJS) writes the sections, escaped and framed, exactly as the Python
// library does.
//
//     acor wc-mjs FILE...
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

// Run directly: ask acor's Python where acor.mjs is.
const helper = process.env.ACOR_MJS || execFileSync(
  process.env.ACOR_PYTHON || "python3", ["-c", "import acor, os; " +
  "print(os.path.join(os.path.dirname(acor.__file__), 'share', 'acor.mjs'))"],
  { encoding: "utf8" }).trim();
const { AcorTool } = await import(pathToFileURL(helper).href);

const tool = new AcorTool().start();

// Under acor the arguments arrive checked against the manifest's schema
// (acor answers --help and wrong flags itself); run directly, every
// argument is a file.
const files = tool.args ? tool.args.files : process.argv.slice(2);
if (!files.length) {
  tool.fail("E_USAGE", "No file given", {
    recovery: "Give one or more files, e.g. acor wc-mjs notes.txt.",
    details: "usage: acor wc-mjs FILE...", next: ["acor", "wc-mjs", "--help"] });
}

const counts = [];
let failed = false;
files.forEach((file, index) => {
  let data;
  try {
    data = readFileSync(file);
  } catch {
    tool.error("E_FILE_NOT_FOUND", `No readable file ${file}`, {
      recovery: "Check the path (relative paths start from the current " +
        "directory), then run it again." });
    failed = true;
  }
  if (data !== undefined) {
    // As `LC_ALL=C wc`: newlines, runs of ASCII blanks, bytes.
    const text = data.toString("latin1");
    counts.push({ path: file, lines: (text.match(/\n/g) || []).length,
      words: (text.match(/[^ \t\n\v\f\r]+/g) || []).length,
      bytes: data.length });
  }
  tool.progressBar(index + 1, files.length, "Counted");
});

tool.outputData("json", counts);
if (failed) {
  tool.stop("failed");
  process.exit(1);
}
tool.stop();
