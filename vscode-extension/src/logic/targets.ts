/**
 * Finding the targets a function can be compiled to, from what the server offers.
 *
 * Clients never hard-code the list of targets: the server's code actions
 * ("Compile `f` to <target>", command `kera.compileToTarget` with `[uri, function, target]`)
 * and code lenses (command `kera.showLowering` with the same arguments) say which exist.
 */

export const COMPILE_COMMAND = "kera.compileToTarget";
export const SHOW_LOWERING_COMMAND = "kera.showLowering";

/** One (function, target) pair the server offers for a document. */
export interface TargetOffer {
  title: string;
  uri: string;
  function: string;
  target: string;
}

interface CommandLike {
  title?: unknown;
  command?: unknown;
  arguments?: unknown;
}

/** The `Command` inside an LSP `Command` or `CodeAction` (or a VS Code CodeAction/CodeLens). */
function commandOf(item: unknown): CommandLike | undefined {
  if (typeof item !== "object" || item === null) {
    return undefined;
  }
  const obj = item as Record<string, unknown>;
  if (typeof obj.command === "string") {
    return obj as CommandLike; // a Command
  }
  if (typeof obj.command === "object" && obj.command !== null) {
    const inner = obj.command as CommandLike;
    // A CodeAction's title is the one the user sees; fall back to the command's.
    return { ...inner, title: typeof obj.title === "string" ? obj.title : inner.title };
  }
  return undefined;
}

/** `(uri, function, target)` if `args` has that shape. */
export function targetArguments(args: unknown): [string, string, string] | undefined {
  if (!Array.isArray(args) || args.length < 3) {
    return undefined;
  }
  const [uri, fn, target] = args as unknown[];
  if (typeof uri === "string" && typeof fn === "string" && typeof target === "string" && fn && target) {
    return [uri, fn, target];
  }
  return undefined;
}

/**
 * The offers carried by code actions or code lenses whose command is `command`,
 * in the server's order, without duplicates.
 */
export function offersFromCommands(items: unknown, command: string): TargetOffer[] {
  if (!Array.isArray(items)) {
    return [];
  }
  const seen = new Set<string>();
  const offers: TargetOffer[] = [];
  for (const item of items) {
    const cmd = commandOf(item);
    if (cmd === undefined || cmd.command !== command) {
      continue;
    }
    const args = targetArguments(cmd.arguments);
    if (args === undefined) {
      continue;
    }
    const [uri, fn, target] = args;
    const key = JSON.stringify([uri, fn, target]);
    if (seen.has(key)) {
      continue;
    }
    seen.add(key);
    offers.push({ title: typeof cmd.title === "string" ? cmd.title : `${fn} → ${target}`, uri, function: fn, target });
  }
  return offers;
}

/** The compile offers in a `textDocument/codeAction` reply. */
export function compileOffersFromCodeActions(actions: unknown): TargetOffer[] {
  return offersFromCommands(actions, COMPILE_COMMAND);
}

/** The lowering offers in a `textDocument/codeLens` reply. */
export function loweringOffersFromCodeLenses(lenses: unknown): TargetOffer[] {
  return offersFromCommands(lenses, SHOW_LOWERING_COMMAND);
}

/** The distinct target names of some offers, in order (optionally for one function only). */
export function targetNames(offers: TargetOffer[], fn?: string): string[] {
  const names: string[] = [];
  for (const o of offers) {
    if ((fn === undefined || o.function === fn) && !names.includes(o.target)) {
      names.push(o.target);
    }
  }
  return names;
}

/** The distinct function names of some offers, in order. */
export function functionNames(offers: TargetOffer[]): string[] {
  const names: string[] = [];
  for (const o of offers) {
    if (!names.includes(o.function)) {
      names.push(o.function);
    }
  }
  return names;
}

/** The result of `kera.compileToTarget`. */
export interface CompileResult {
  path: string;
  fingerprint: string;
  target: string;
}

export function asCompileResult(value: unknown): CompileResult | undefined {
  if (typeof value !== "object" || value === null) {
    return undefined;
  }
  const { path, fingerprint, target } = value as Record<string, unknown>;
  if (typeof path !== "string" || typeof fingerprint !== "string" || typeof target !== "string") {
    return undefined;
  }
  return { path, fingerprint, target };
}

/** The message shown after a successful compile. */
export function describeCompileResult(fn: string, result: CompileResult): string {
  return `Compiled ${fn} to ${result.target}: ${result.path} (fingerprint ${result.fingerprint})`;
}

/** A target name the user typed: trimmed; undefined if empty. The server judges the rest. */
export function normaliseTargetName(input: string | undefined): string | undefined {
  const t = (input ?? "").trim();
  return t === "" ? undefined : t;
}
