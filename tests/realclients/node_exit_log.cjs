// Preloaded into a Node.js CLI under check (NODE_OPTIONS=--require): appends to the file named
// by $SESSION_RELAY_CHECK_EXIT_LOG the error of an uncaught exception or unhandled rejection
// that ends the program, and its exit code. It only watches: `uncaughtExceptionMonitor` and
// `exit` listeners change nothing in what the program does.
//
// Why: Gemini CLI routes process.stderr into its own UI while it runs, and its handler of an
// uncaught exception writes the stack there, then exits 1. On a terminal the program prints
// nothing at all; this file is the only place the error is left.
"use strict";
const fs = require("node:fs");

const file = process.env.SESSION_RELAY_CHECK_EXIT_LOG;
if (file) {
  const log = (text) => {
    try {
      fs.appendFileSync(file, `[pid ${process.pid} ${new Date().toISOString()}] ${text}\n`);
    } catch {
      // A diagnostic must never be the reason the program fails.
    }
  };
  process.on("uncaughtExceptionMonitor", (error, origin) => {
    log(`${origin}: ${error instanceof Error ? error.stack || error.message : String(error)}`);
  });
  process.on("exit", (code) => log(`exit ${code}`));
}
