import assert from "node:assert/strict";
import { test } from "node:test";
import {
  parseSameBitsQuery,
  SAME_BITS_SCHEME,
  sameBitsArguments,
  sameBitsUriParts,
} from "../src/logic/sameBitsUri";

const params = { uri: "file:///home/u/proj/saxpy.kera", function: "saxpy" };

test("same-bits URIs: scheme, readable path, and the parameters back", () => {
  const parts = sameBitsUriParts(params);
  assert.equal(parts.scheme, SAME_BITS_SCHEME);
  assert.equal(parts.scheme, "kera-same-bits");
  assert.equal(parts.path, "/saxpy/saxpy.same-bits");
  assert.match(parts.query, /^[A-Za-z0-9_-]+$/);
  assert.deepEqual(parseSameBitsQuery(parts.query), params);
  const tricky = { uri: "file:///tmp/my%20dir/a%26b.kera?x=1#f", function: "a/b" };
  assert.deepEqual(parseSameBitsQuery(sameBitsUriParts(tricky).query), tricky);
  assert.equal(sameBitsUriParts(tricky).path, "/a&b/a_b.same-bits");
});

test("same-bits URIs: foreign or damaged queries are rejected", () => {
  assert.equal(parseSameBitsQuery(""), undefined);
  assert.equal(parseSameBitsQuery("not base64 !!"), undefined);
  assert.equal(parseSameBitsQuery(Buffer.from('{"uri":"u"}').toString("base64url")), undefined);
  assert.equal(parseSameBitsQuery(Buffer.from('{"uri":"u","function":""}').toString("base64url")), undefined);
});

test("the lens command's arguments", () => {
  assert.deepEqual(sameBitsArguments(["file:///a.kera", "f"]), ["file:///a.kera", "f"]);
  assert.deepEqual(sameBitsArguments(["file:///a.kera", "f", "extra"]), ["file:///a.kera", "f"]);
  assert.equal(sameBitsArguments(["file:///a.kera"]), undefined);
  assert.equal(sameBitsArguments([1, "f"]), undefined);
});
