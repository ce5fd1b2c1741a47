/**
 * The bundle (dist/extension.js) loads with only `vscode` external and exports the entry points.
 * Skipped when the bundle has not been built (`npm run bundle`).
 */
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

const BUNDLE = path.resolve(__dirname, "..", "..", "dist", "extension.js");

/** Stands in for the `vscode` module: every member is a class (the client extends some). */
function fakeVscode(): unknown {
  return new Proxy(
    {},
    {
      get: (_target, prop) => (prop === "then" || prop === "__esModule" ? undefined : class {}),
    },
  );
}

test("the bundle loads and exports activate and deactivate", { skip: !fs.existsSync(BUNDLE) && "not bundled" }, () => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const Module = require("node:module") as { _load: (request: string, ...rest: unknown[]) => unknown };
  const load = Module._load;
  const requested: string[] = [];
  Module._load = function (request: string, ...rest: unknown[]) {
    requested.push(request);
    if (request === "vscode") {
      return fakeVscode();
    }
    return load.call(this, request, ...rest);
  };
  try {
    const ext = require(BUNDLE) as { activate?: unknown; deactivate?: unknown };
    assert.equal(typeof ext.activate, "function");
    assert.equal(typeof ext.deactivate, "function");
  } finally {
    Module._load = load;
  }
  // Everything but `vscode` and node's own modules is inside the bundle.
  const builtin = new Set(require("node:module").builtinModules as string[]);
  const external = requested.filter((r) => r !== "vscode" && r !== BUNDLE && !builtin.has(r.replace(/^node:/, "")));
  assert.deepEqual(external, []);
});
