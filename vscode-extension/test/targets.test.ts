import assert from "node:assert/strict";
import { test } from "node:test";
import { functionNameAt } from "../src/logic/functionAt";
import {
  asCompileResult,
  compileOffersFromCodeActions,
  describeCompileResult,
  functionNames,
  loweringOffersFromCodeLenses,
  normaliseTargetName,
  targetNames,
} from "../src/logic/targets";

const U = "file:///w/saxpy.kera";

// The shapes the server may answer textDocument/codeAction with: CodeAction objects that carry
// a command, and bare Commands.
const actions = [
  { title: "Compile `saxpy` to keg", kind: "source", command: { title: "Compile", command: "kera.compileToTarget", arguments: [U, "saxpy", "keg"] } },
  { title: "Compile `saxpy` to wasm", command: "kera.compileToTarget", arguments: [U, "saxpy", "wasm"] },
  { title: "Compile `saxpy_pure` to keg", kind: "source", command: { title: "x", command: "kera.compileToTarget", arguments: [U, "saxpy_pure", "keg"] } },
  { title: "Fix it", kind: "quickfix", edit: { changes: {} } },
  { title: "Other", command: { title: "Other", command: "kera.somethingElse", arguments: [U, "saxpy", "keg"] } },
  { title: "Bad args", command: { title: "x", command: "kera.compileToTarget", arguments: [U, "saxpy"] } },
  { title: "Bad args 2", command: { title: "x", command: "kera.compileToTarget", arguments: [U, 3, "keg"] } },
  { title: "Compile `saxpy` to keg", command: { title: "dup", command: "kera.compileToTarget", arguments: [U, "saxpy", "keg"] } },
  null,
  "junk",
];

test("compile offers from code actions", () => {
  const offers = compileOffersFromCodeActions(actions);
  assert.deepEqual(
    offers.map((o) => [o.function, o.target, o.title]),
    [
      ["saxpy", "keg", "Compile `saxpy` to keg"],
      ["saxpy", "wasm", "Compile `saxpy` to wasm"],
      ["saxpy_pure", "keg", "Compile `saxpy_pure` to keg"],
    ],
  );
  assert.deepEqual(targetNames(offers), ["keg", "wasm"]);
  assert.deepEqual(targetNames(offers, "saxpy"), ["keg", "wasm"]);
  assert.deepEqual(targetNames(offers, "saxpy_pure"), ["keg"]);
  assert.deepEqual(targetNames(offers, "missing"), []);
  assert.deepEqual(functionNames(offers), ["saxpy", "saxpy_pure"]);
  assert.equal(offers[0].uri, U);
});

test("no offers from empty or odd replies", () => {
  assert.deepEqual(compileOffersFromCodeActions(null), []);
  assert.deepEqual(compileOffersFromCodeActions({}), []);
  assert.deepEqual(compileOffersFromCodeActions([]), []);
});

test("lowering offers from code lenses", () => {
  const lenses = [
    { range: {}, command: { title: "fingerprint 3f9a1c2d… · keg", command: "kera.showLowering", arguments: [U, "saxpy", "keg"] } },
    { range: {}, command: { title: "fingerprint 3f9a1c2d… · wasm", command: "kera.showLowering", arguments: [U, "saxpy", "wasm"] } },
    { range: {} }, // unresolved
  ];
  const offers = loweringOffersFromCodeLenses(lenses);
  assert.deepEqual(targetNames(offers, "saxpy"), ["keg", "wasm"]);
  assert.equal(offers[0].title, "fingerprint 3f9a1c2d… · keg");
});

test("compile results", () => {
  const r = asCompileResult({ path: "/w/.kera-out/saxpy.keg", fingerprint: "sha3-256:ab", target: "keg" });
  assert.ok(r);
  assert.equal(describeCompileResult("saxpy", r), "Compiled saxpy to keg: /w/.kera-out/saxpy.keg (fingerprint sha3-256:ab)");
  assert.equal(asCompileResult({ path: "/x" }), undefined);
  assert.equal(asCompileResult(null), undefined);
});

test("typed target names are only trimmed", () => {
  assert.equal(normaliseTargetName("  wasm "), "wasm");
  assert.equal(normaliseTargetName(""), undefined);
  assert.equal(normaliseTargetName(undefined), undefined);
  assert.equal(normaliseTargetName("no-such-target"), "no-such-target");
});

const SOURCE = [
  "// a comment that says fn nope() {}", // 0
  "const K: i64 = 4;", // 1
  "", // 2
  "/// doc", // 3
  "pub fn saxpy[N](a: f32, x: &f32[N], y: &mut f32[N]) {", // 4
  "    for i in 0..N {", // 5
  "        y[i] = a * x[i] + y[i];", // 6
  "    }", // 7
  "}", // 8
  "", // 9
  "fn helper(x: f32) -> f32 { x }", // 10
  "    // fn commented() {}", // 11
  "", // 12
].join("\n");

test("functionNameAt searches backwards, then forwards", () => {
  assert.equal(functionNameAt(SOURCE, 6), "saxpy");
  assert.equal(functionNameAt(SOURCE, 4), "saxpy");
  assert.equal(functionNameAt(SOURCE, 9), "saxpy");
  assert.equal(functionNameAt(SOURCE, 10), "helper");
  assert.equal(functionNameAt(SOURCE, 12), "helper");
  assert.equal(functionNameAt(SOURCE, 0), "saxpy", "before the first function: the next one");
  assert.equal(functionNameAt(SOURCE, 99), "helper", "past the end: the last one");
  assert.equal(functionNameAt(SOURCE.replace(/\n/g, "\r\n"), 6), "saxpy");
  assert.equal(functionNameAt("const A: i32 = 1;", 0), undefined);
});

test("functionNameAt can be restricted to the names the server knows", () => {
  assert.equal(functionNameAt(SOURCE, 12, ["saxpy"]), "saxpy");
  assert.equal(functionNameAt(SOURCE, 6, ["helper"]), "helper");
  assert.equal(functionNameAt(SOURCE, 6, []), undefined);
});
