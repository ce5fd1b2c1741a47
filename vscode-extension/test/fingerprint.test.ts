import assert from "node:assert/strict";
import { test } from "node:test";
import {
  asFingerprintResult,
  functionFingerprint,
  shortFingerprint,
  statusBarView,
  STATUS_ICON,
} from "../src/logic/fingerprint";

const FP = "sha3-256:1940c3cddbcd38c5e3d88639eab5170d4afdfb3f8f92c3bc7adefefcbd76bc8e";
const SAXPY = "sha3-256:dac462fd747e394e07048403ab5e7a4816b8900290a49e5d58ae2373d2ad6985";

test("shortFingerprint drops the algorithm and keeps 8 hex digits", () => {
  assert.equal(shortFingerprint(FP), "1940c3cd…");
  assert.equal(shortFingerprint("3f9a1c2d5e"), "3f9a1c2d…");
  assert.equal(shortFingerprint(FP, 12), "1940c3cddbcd…");
  assert.equal(shortFingerprint("abc"), "abc");
  assert.equal(shortFingerprint("sha3-256:12345678"), "12345678");
});

test("a saved, unmodified document", () => {
  const r = asFingerprintResult({
    fingerprint: FP,
    functions: [{ name: "saxpy", fingerprint: SAXPY }],
    savedVersion: 3,
    changedSinceSave: false,
  });
  assert.ok(r);
  const view = statusBarView(r);
  assert.equal(view.text, `${STATUS_ICON} 1940c3cd…`);
  assert.match(view.tooltip, /as of the last save:/);
  assert.ok(view.tooltip.includes(FP));
  assert.ok(view.tooltip.includes("fn saxpy  dac462fd…"));
  assert.equal(functionFingerprint(r, "saxpy"), SAXPY);
  assert.equal(functionFingerprint(r, "nope"), undefined);
});

test("modified since the save", () => {
  const view = statusBarView(asFingerprintResult({ fingerprint: FP, functions: [], savedVersion: 3, changedSinceSave: true }));
  assert.equal(view.text, `${STATUS_ICON} 1940c3cd… (modified)`);
  assert.match(view.tooltip, /changed since/);
});

test("no fingerprint yet", () => {
  assert.match(statusBarView(undefined).text, /not saved/);
  assert.match(statusBarView(asFingerprintResult({ fingerprint: null, functions: [] })).text, /not saved/);
});

test("replies are validated", () => {
  assert.equal(asFingerprintResult(null), undefined);
  assert.equal(asFingerprintResult("x"), undefined);
  const r = asFingerprintResult({ fingerprint: FP, functions: [{ name: "a" }, 7, { name: "b", fingerprint: SAXPY }], savedVersion: "3" });
  assert.deepEqual(r, { fingerprint: FP, functions: [{ name: "b", fingerprint: SAXPY }], savedVersion: null, changedSinceSave: false });
});
