/**
 * The manifest, the language configuration and the source agree with each other.
 */
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { DEFAULT_ARGS, DEFAULT_COMMAND } from "../src/logic/serverCommand";

const ROOT = path.resolve(__dirname, "..", "..");
const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8"));
const langConfig = JSON.parse(fs.readFileSync(path.join(ROOT, "language-configuration.json"), "utf8"));
const sources = fs
  .readdirSync(path.join(ROOT, "src"), { recursive: true })
  .map(String)
  .filter((f) => f.endsWith(".ts"))
  .map((f) => fs.readFileSync(path.join(ROOT, "src", f), "utf8"))
  .join("\n");

test("the language, grammar and configuration are contributed", () => {
  const [lang] = manifest.contributes.languages;
  assert.equal(lang.id, "kera");
  assert.deepEqual(lang.extensions, [".kera"]);
  assert.ok(fs.existsSync(path.join(ROOT, lang.configuration)));
  const [grammar] = manifest.contributes.grammars;
  assert.equal(grammar.language, "kera");
  const tm = JSON.parse(fs.readFileSync(path.join(ROOT, grammar.path), "utf8"));
  assert.equal(tm.scopeName, grammar.scopeName);
  assert.equal(manifest.main, "./dist/extension.js");
});

test("every contributed command is registered by the code", () => {
  for (const { command } of manifest.contributes.commands) {
    assert.ok(sources.includes(`"${command}"`), `${command} is not registered in src/`);
  }
});

test("settings are documented and their defaults match the code", () => {
  const props = manifest.contributes.configuration.properties;
  for (const key of [
    "kera.server.command",
    "kera.server.args",
    "kera.server.pythonPath",
    "kera.outputDir",
    "kera.sameBits.enabled",
    "kera.sameBits.onOpen",
    "kera.sameBits.targets",
    "kera.trace.server",
  ]) {
    assert.ok(props[key], `${key} is not contributed`);
    assert.ok(typeof props[key].markdownDescription === "string" && props[key].markdownDescription.length > 20, `${key} is not documented`);
  }
  assert.equal(props["kera.server.command"].default, DEFAULT_COMMAND);
  assert.deepEqual(props["kera.server.args"].default, DEFAULT_ARGS);
  assert.deepEqual(props["kera.trace.server"].enum, ["off", "messages", "verbose"]);
  // the server's defaults (kera_lsp/server.py Settings)
  assert.equal(props["kera.sameBits.enabled"].default, true);
  assert.equal(props["kera.sameBits.onOpen"].default, false);
  assert.deepEqual(props["kera.sameBits.targets"].default, ["interp", "wasm", "x86_64", "arm64"]);
});

test("the engine and @types/vscode agree (vsce refuses otherwise)", () => {
  const engine = manifest.engines.vscode.replace(/^\^/, "");
  assert.equal(manifest.devDependencies["@types/vscode"], engine);
});

test("comments, brackets and auto-closing pairs", () => {
  assert.equal(langConfig.comments.lineComment, "//");
  assert.deepEqual(langConfig.comments.blockComment, ["/*", "*/"]);
  const opens = langConfig.autoClosingPairs.map((p: { open: string }) => p.open);
  for (const o of ["{", "[", "(", '"']) {
    assert.ok(opens.includes(o), `auto-closing ${o}`);
  }
  assert.deepEqual(langConfig.surroundingPairs.map((p: string[]) => p[0]), ["{", "[", "(", '"']);
});

test("indentation rules", () => {
  const inc = new RegExp(langConfig.indentationRules.increaseIndentPattern);
  const dec = new RegExp(langConfig.indentationRules.decreaseIndentPattern);
  assert.ok(inc.test("pub fn f(x: f32) -> f32 {"));
  assert.ok(inc.test("    for i in 0..N {"));
  assert.ok(inc.test("let y = f("));
  assert.ok(!inc.test("let y = f(x);"));
  assert.ok(!inc.test("fn f() { 1 }"));
  assert.ok(dec.test("    }"));
  assert.ok(dec.test(")"));
  assert.ok(!dec.test("    x }"));
});

test("Enter after a /// line continues the doc comment, not after ////", () => {
  const rule = langConfig.onEnterRules.find((r: { action: { appendText?: string } }) => r.action.appendText === "/// ");
  assert.ok(rule);
  const before = new RegExp(rule.beforeText);
  assert.ok(before.test("/// y <- a*x + y"));
  assert.ok(before.test("    /// indented"));
  assert.ok(!before.test("//// four slashes"));
  assert.ok(!before.test("// plain"));
  for (const r of langConfig.onEnterRules) {
    for (const k of ["beforeText", "afterText", "previousLineText"]) {
      if (r[k] !== undefined) new RegExp(r[k]); // compiles
    }
  }
});
