import assert from "node:assert/strict";
import { test } from "node:test";
import {
  LOWERING_SCHEME,
  loweringUriParts,
  loweringUriString,
  parseLoweringQuery,
  parseLoweringUri,
  sourceStem,
} from "../src/logic/loweringUri";

const params = { uri: "file:///home/u/proj/saxpy.kera", function: "saxpy", target: "keg" };

test("the scheme and a readable path (the tab title is function.target)", () => {
  const parts = loweringUriParts(params);
  assert.equal(parts.scheme, LOWERING_SCHEME);
  assert.equal(parts.scheme, "kera-lowering");
  assert.equal(parts.path, "/saxpy/saxpy.keg");
  assert.match(parts.query, /^[A-Za-z0-9_-]+$/, "the query survives any URI encoding");
});

test("build then parse gives the parameters back", () => {
  assert.deepEqual(parseLoweringQuery(loweringUriParts(params).query), params);
  assert.deepEqual(parseLoweringUri(loweringUriString(params)), params);
});

test("source URIs with escapes, query and fragment round-trip exactly", () => {
  const tricky = {
    uri: "file:///tmp/my%20dir/a%26b%3Fc.kera?x=1&y=%2F#frag",
    function: "f_1",
    target: "wasm",
  };
  assert.deepEqual(parseLoweringQuery(loweringUriParts(tricky).query), tricky);
  assert.deepEqual(parseLoweringUri(loweringUriString(tricky)), tricky);
  const untitled = { uri: "untitled:Untitled-1", function: "main", target: "keg" };
  assert.deepEqual(parseLoweringUri(loweringUriString(untitled)), untitled);
  assert.equal(loweringUriParts(untitled).path, "/Untitled-1/main.keg");
});

test("names cannot break out of their path segment", () => {
  const parts = loweringUriParts({ uri: "file:///a/b.kera", function: "a/b", target: "x?y#z" });
  assert.equal(parts.path, "/b/a_b.x_y_z");
});

test("foreign or damaged URIs are rejected", () => {
  assert.equal(parseLoweringQuery(""), undefined);
  assert.equal(parseLoweringQuery("not base64 !!"), undefined);
  assert.equal(parseLoweringQuery(Buffer.from("[1,2]").toString("base64url")), undefined);
  assert.equal(parseLoweringQuery(Buffer.from('{"uri":"u","function":"f"}').toString("base64url")), undefined);
  assert.equal(parseLoweringQuery(Buffer.from('{"uri":"u","function":"","target":"t"}').toString("base64url")), undefined);
  assert.equal(parseLoweringUri("file:///x?abc"), undefined);
  assert.equal(parseLoweringUri("kera-lowering:/x/y.keg"), undefined);
});

test("a leading ? and a fragment are ignored", () => {
  const q = loweringUriParts(params).query;
  assert.deepEqual(parseLoweringQuery(`?${q}`), params);
  assert.deepEqual(parseLoweringUri(`${loweringUriString(params)}#L3`), params);
});

test("sourceStem", () => {
  assert.equal(sourceStem("file:///a/b/saxpy.kera"), "saxpy");
  assert.equal(sourceStem("file:///a/b/my%20file.kera"), "my file");
  assert.equal(sourceStem("file:///a/b/.hidden"), ".hidden");
  assert.equal(sourceStem("file:///a/b/"), "untitled");
  assert.equal(sourceStem("file:///a/x.kera?q=1#f"), "x");
});
