/**
 * Which function the cursor is in, without asking the server.
 *
 * Kera functions are items at the top level of a file (they do not nest), so the nearest
 * `fn <name>` at or above the cursor line names the function the cursor is in. If there is
 * none above (the cursor is before the first function), the first one below is used.
 * Comment lines are skipped; a `fn` inside a string or a block comment can fool this, which is
 * why the server's answer (from its code actions) is preferred when there is one.
 */

const FN_RE = /^\s*(?:pub\s+)?fn\s+([A-Za-z_][A-Za-z0-9_]*)/;
const COMMENT_RE = /^\s*(\/\/|\/\*|\*)/;

function fnOnLine(line: string): string | undefined {
  if (COMMENT_RE.test(line)) {
    return undefined;
  }
  return FN_RE.exec(line)?.[1];
}

/**
 * The name of the function around `line` (0-based) of `text`.
 * If `known` is given, only those names count (e.g. the functions `kera/fingerprint` lists).
 */
export function functionNameAt(text: string, line: number, known?: readonly string[]): string | undefined {
  const lines = text.split(/\r?\n/);
  const ok = (name: string | undefined) => name !== undefined && (known === undefined || known.includes(name));
  const start = Math.max(0, Math.min(line, lines.length - 1));
  for (let i = start; i >= 0; i--) {
    const name = fnOnLine(lines[i]);
    if (ok(name)) {
      return name;
    }
  }
  for (let i = start + 1; i < lines.length; i++) {
    const name = fnOnLine(lines[i]);
    if (ok(name)) {
      return name;
    }
  }
  return undefined;
}
