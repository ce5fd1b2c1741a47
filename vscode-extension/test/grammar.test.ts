/**
 * The TextMate grammar, tokenised by the same engine VS Code uses (vscode-textmate with the
 * Oniguruma WebAssembly build), so colour is right before the language server starts.
 */
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { before, test } from "node:test";
import * as oniguruma from "vscode-oniguruma";
import * as vsctm from "vscode-textmate";

const ROOT = path.resolve(__dirname, "..", "..");
const GRAMMAR = path.join(ROOT, "syntaxes", "kera.tmLanguage.json");

let grammar: vsctm.IGrammar;

before(async () => {
  const wasm = fs.readFileSync(require.resolve("vscode-oniguruma/release/onig.wasm"));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns: string[]) => new oniguruma.OnigScanner(patterns),
      createOnigString: (s: string) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async (scopeName: string) =>
      scopeName === "source.kera" ? vsctm.parseRawGrammar(fs.readFileSync(GRAMMAR, "utf8"), GRAMMAR) : null,
  });
  const g = await registry.loadGrammar("source.kera");
  assert.ok(g, "the grammar loads");
  grammar = g;
});

interface Token {
  text: string;
  scopes: string[];
}

function tokenize(source: string): Token[][] {
  let stack = vsctm.INITIAL;
  return source.split("\n").map((line) => {
    const r = grammar.tokenizeLine(line, stack);
    stack = r.ruleStack;
    return r.tokens.map((t) => ({ text: line.slice(t.startIndex, t.endIndex), scopes: t.scopes }));
  });
}

/** The scopes of the token that contains the `nth` occurrence of `needle` (first character). */
function scopesAt(source: string, needle: string, nth = 0): string[] {
  const lines = tokenize(source);
  const srcLines = source.split("\n");
  let seen = 0;
  for (let i = 0; i < srcLines.length; i++) {
    let from = 0;
    for (;;) {
      const at = srcLines[i].indexOf(needle, from);
      if (at < 0) break;
      if (seen++ === nth) {
        let offset = 0;
        for (const t of lines[i]) {
          if (at >= offset && at < offset + t.text.length) return t.scopes;
          offset += t.text.length;
        }
      }
      from = at + 1;
    }
  }
  throw new Error(`${needle} #${nth} not found`);
}

function has(source: string, needle: string, scope: string, nth = 0): void {
  const scopes = scopesAt(source, needle, nth);
  assert.ok(
    scopes.some((s) => s === scope || s.startsWith(`${scope}.`)),
    `${JSON.stringify(needle)} #${nth} should be ${scope}, is ${scopes.join(" ")}`,
  );
}

function hasNot(source: string, needle: string, scope: string, nth = 0): void {
  const scopes = scopesAt(source, needle, nth);
  assert.ok(
    !scopes.some((s) => s === scope || s.startsWith(`${scope}.`)),
    `${JSON.stringify(needle)} #${nth} should not be ${scope}, is ${scopes.join(" ")}`,
  );
}

test("comments: line, doc, four slashes, nested block", () => {
  const src = [
    "/// doc comment",
    "//// not a doc comment",
    "// line",
    "/* outer /* inner */ still outer */ fn after() {}",
    "/* open",
    "   fn inside() {}",
    "*/ let y = 1;",
  ].join("\n");
  has(src, "doc comment", "comment.line.documentation");
  has(src, "not a doc", "comment.line.double-slash");
  hasNot(src, "not a doc", "comment.line.documentation");
  has(src, "line", "comment.line.double-slash");
  has(src, "still outer", "comment.block");
  has(src, "after", "entity.name.function");
  hasNot(src, "after", "comment");
  has(src, "inside", "comment.block");
  has(src, "y", "variable.other");
  hasNot(src, "let", "comment");
});

test("strings and escapes", () => {
  const src = 'fn f() { print("a\\tb \\u{1F600} // not a comment \\q"); }';
  has(src, '"a', "string.quoted.double");
  has(src, "\\t", "constant.character.escape");
  has(src, "\\u{1F600}", "constant.character.escape");
  has(src, "// not", "string.quoted.double");
  hasNot(src, "// not", "comment");
  has(src, "\\q", "invalid.illegal.escape");
  has(src, "print", "support.function.builtin");
  // An unterminated string ends at the end of its line.
  const open = 'fn g() { print("oops);\nlet z = 1; }';
  has(open, "z", "variable.other");
  hasNot(open, "z", "string");
});

test("numbers with suffixes, ranges and invalid literals", () => {
  const src = "let a = 1_000u8 + 0xFF_u16 + 0o755 + 0b1010_0101i64 + 2.5E-3f32 + 1e10 + 3f32 + 1.0_f64 + 12abc; for i in 0..N {} 1.5..2.5";
  has(src, "1_000", "constant.numeric.integer.decimal");
  has(src, "u8", "entity.name.type.numeric");
  has(src, "0xFF_", "constant.numeric.integer.hexadecimal");
  has(src, "u16", "entity.name.type.numeric");
  has(src, "0o755", "constant.numeric.integer.octal");
  has(src, "0b1010", "constant.numeric.integer.binary");
  has(src, "2.5E-3", "constant.numeric.float");
  has(src, "f32", "entity.name.type.numeric");
  has(src, "1e10", "constant.numeric.float");
  has(src, "3f32", "constant.numeric");
  has(src, "1.0_f64", "constant.numeric.float");
  has(src, "12abc", "invalid.illegal.numeric");
  has(src, "0..N", "constant.numeric.integer.decimal");
  has(src, "..N", "keyword.operator.range");
  has(src, "1.5..", "constant.numeric.float");
  has(src, "2.5", "constant.numeric.float", 1);
  // `0x1f32` is the integer 0x1F32, not 0x1 with a float suffix.
  const hex = "let h = 0x1f32;";
  const scopes = scopesAt(hex, "0x1f32");
  assert.ok(scopes.includes("constant.numeric.integer.hexadecimal.kera"));
  has(hex, "f32", "constant.numeric.integer.hexadecimal");
});

test("use declarations: the keyword and the module path", () => {
  const src = "use geo::shapes::{area, norm as size};\npub fn f() {}";
  has(src, "use", "keyword.other.use");
  has(src, "geo", "entity.name.namespace");
  has(src, "shapes", "entity.name.namespace");
  has(src, "pub", "storage.modifier");
});

test("keywords, booleans, casts", () => {
  const src =
    "pub fn f(mut x: i32) -> bool { let mut y = x as i64; if true { return false; } else { while y > 0 { break; } } for i in 0..3 { continue; } y == 0 }";
  has(src, "pub", "storage.modifier");
  has(src, "fn", "storage.type.function");
  has(src, "mut x", "storage.modifier");
  has(src, "mut y", "storage.modifier");
  has(src, "let", "storage.type");
  has(src, "as i64", "keyword.operator.cast");
  for (const kw of ["if true", "else {", "while y", "for i", "in 0", "break;", "continue;", "return false"]) {
    has(src, kw, "keyword.control");
  }
  has(src, "true", "constant.language.boolean");
  has(src, "false", "constant.language.boolean");
  hasNot(src, "y ==", "keyword");
});

test("structs, constants and field access", () => {
  const src = "pub struct Gains { pub kp: f32 }\nconst GRAVITY: f32 = -9.81;\nfn f(g: Gains) -> f32 { g.kp * GRAVITY }";
  has(src, "struct", "storage.type");
  has(src, "Gains", "entity.name.type.struct");
  has(src, "GRAVITY", "variable.other.constant");
  has(src, "Gains", "entity.name.type", 1);
  has(src, "kp", "variable.other.member", 0);
  has(src, "kp", "variable.other.member", 1);
  const lit = "fn f(a: f32) -> P { P { x: a, y: 1.0 } }";
  has(lit, "x:", "variable.other.member");
  has(lit, "a:", "variable.parameter");
  has(src, "f32", "support.type.primitive");
});

test("functions: definitions, parameters, calls and builtins", () => {
  const src = "pub fn softmax[N](x: &f32[N]) -> f32[N] {\n    let e = exp(x - max(x));\n    e / sum(&e) + helper(e)\n}";
  has(src, "softmax", "entity.name.function");
  has(src, "x:", "variable.parameter");
  has(src, "exp", "support.function.builtin");
  has(src, "max(x)", "support.function.builtin");
  has(src, "sum", "support.function.builtin");
  has(src, "helper", "entity.name.function.call");
  hasNot(src, "helper", "support.function.builtin");
});

test("type parameters and their bounds", () => {
  const src = "pub fn axpy<T: Float>[N](a: T, x: &T[N]) -> T {\n    a\n}";
  has(src, "T: Float", "entity.name.type.parameter");
  has(src, "Float", "support.type.bound");
  has(src, "N]", "variable.parameter.dimension");
  has(src, "a: T", "variable.parameter");
  has(src, "axpy", "entity.name.function");
});

test("tensor types and dimensions", () => {
  const src = "fn m[M, K](a: &f32[M, K], b: f64[K, 4] @device) {\n    let z: f32[M, 4] = zeros();\n}";
  has(src, "M, K]", "variable.parameter.dimension");
  has(src, "f32", "support.type.primitive");
  has(src, "4]", "constant.numeric.integer.decimal");
  has(src, "f32[M", "support.type.primitive", 1);
  has(src, "M, 4", "variable.parameter.dimension");
  has(src, "4] =", "constant.numeric.integer.decimal");
  has(src, "zeros", "support.function.builtin");
});

test("memory spaces and effects", () => {
  const src = [
    "pub fn upload[N](x: f32[N] @host) -> f32[N] @device ! transfer, io {",
    "    let done = false;",
    "    if !done { print(1); }",
    "    move_to(x, device)",
    "}",
  ].join("\n");
  has(src, "@host", "punctuation.definition.annotation");
  has(src, "host", "entity.other.attribute-name.memory-space");
  has(src, "device", "entity.other.attribute-name.memory-space");
  has(src, "!", "keyword.operator.effect");
  has(src, "transfer", "entity.other.attribute-name.effect");
  has(src, "io", "entity.other.attribute-name.effect");
  has(src, "!done", "keyword.operator.logical");
  hasNot(src, "done {", "entity.other.attribute-name.effect");
  has(src, "move_to", "support.function.builtin");
  const multi = "fn f(x: &f32[N] @unified,\n      y: &mut f32[N] @pinned)\n    ! io\n{ }";
  has(multi, "unified", "entity.other.attribute-name.memory-space");
  has(multi, "pinned", "entity.other.attribute-name.memory-space");
  has(multi, "io", "entity.other.attribute-name.effect");
  has(multi, "y:", "variable.parameter");
});

test("operators", () => {
  const src = "fn f() { a += b << 2; c = a && b || !d; e = a != b; g = a -> b; h = a & b | c ^ d; }";
  has(src, "+=", "keyword.operator.assignment.compound");
  has(src, "<<", "keyword.operator.bitwise");
  has(src, "&&", "keyword.operator.logical");
  has(src, "!=", "keyword.operator.comparison");
  has(src, "= a &&", "keyword.operator.assignment");
});

test("every example tokenises without an invalid token", () => {
  const examples = path.join(ROOT, "..", "examples");
  if (!fs.existsSync(examples)) {
    return; // not inside the Kera repository
  }
  const files = fs.readdirSync(examples).filter((f) => f.endsWith(".kera"));
  assert.ok(files.length > 0);
  for (const file of files) {
    const text = fs.readFileSync(path.join(examples, file), "utf8");
    const lines = tokenize(text);
    lines.forEach((tokens, i) => {
      for (const t of tokens) {
        assert.ok(!t.scopes.some((s) => s.startsWith("invalid.")), `${file}:${i + 1}: ${JSON.stringify(t.text)} is ${t.scopes.join(" ")}`);
      }
    });
    // No region runs away: a function defined after the whole file is still recognised.
    has(`${text}\nfn zz_after() {}\n`, "zz_after", "entity.name.function");
    hasNot(`${text}\nfn zz_after() {}\n`, "zz_after", "comment");
  }
});
