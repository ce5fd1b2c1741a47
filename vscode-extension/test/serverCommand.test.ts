import assert from "node:assert/strict";
import { test } from "node:test";
import { describeCommand, resolveServerCommand, substitute } from "../src/logic/serverCommand";

test("defaults: kera lsp", () => {
  assert.deepEqual(resolveServerCommand({}), { command: "kera", args: ["lsp"] });
});

test("unset-looking values fall back to the defaults", () => {
  assert.deepEqual(resolveServerCommand({ command: "  ", args: undefined, pythonPath: "" }), {
    command: "kera",
    args: ["lsp"],
  });
  assert.deepEqual(resolveServerCommand({ command: 42, args: "lsp", pythonPath: null }), {
    command: "kera",
    args: ["lsp"],
  });
});

test("a custom command and arguments", () => {
  assert.deepEqual(resolveServerCommand({ command: "/opt/kera/bin/kera", args: ["lsp", "--log", "debug"] }), {
    command: "/opt/kera/bin/kera",
    args: ["lsp", "--log", "debug"],
  });
});

test("an explicit empty argument list is kept", () => {
  assert.deepEqual(resolveServerCommand({ command: "kera-lsp", args: [] }), { command: "kera-lsp", args: [] });
});

test("pythonPath wins over command and args", () => {
  assert.deepEqual(
    resolveServerCommand({ command: "kera", args: ["other"], pythonPath: " /venv/bin/python " }),
    { command: "/venv/bin/python", args: ["-m", "kera_core", "lsp"] },
  );
});

test("variables are substituted", () => {
  const subs = { workspaceFolder: "/ws", userHome: "/home/u" };
  assert.deepEqual(resolveServerCommand({ command: "${workspaceFolder}/.venv/bin/kera", args: ["lsp", "${userHome}/x"] }, subs), {
    command: "/ws/.venv/bin/kera",
    args: ["lsp", "/home/u/x"],
  });
  assert.deepEqual(resolveServerCommand({ pythonPath: "~/venv/bin/python" }, subs).command, "/home/u/venv/bin/python");
  assert.equal(substitute("~user/x", subs), "~user/x");
  // An unknown variable stays as written, so the error message names it.
  assert.equal(substitute("${workspaceFolder}/kera", {}), "${workspaceFolder}/kera");
});

test("describeCommand quotes what needs quoting", () => {
  assert.equal(describeCommand({ command: "kera", args: ["lsp"] }), "kera lsp");
  assert.equal(describeCommand({ command: "/my dir/kera", args: ["lsp", ""] }), '"/my dir/kera" lsp ""');
});
