/**
 * How the extension turns its settings into the command that starts `kera lsp`.
 *
 * Kept free of `vscode` imports so that it can be unit-tested with plain node.
 */

/** The `kera.server.*` settings, as read from the workspace configuration. */
export interface ServerSettings {
  /** `kera.server.command`: the executable (default `kera`). */
  command?: unknown;
  /** `kera.server.args`: its arguments (default `["lsp"]`). */
  args?: unknown;
  /** `kera.server.pythonPath`: if set, the server runs as `<python> -m kera_core lsp`. */
  pythonPath?: unknown;
}

/** Values substituted for `${workspaceFolder}`, `${userHome}` and a leading `~`. */
export interface Substitutions {
  workspaceFolder?: string;
  userHome?: string;
}

export interface ServerCommand {
  command: string;
  args: string[];
}

export const DEFAULT_COMMAND = "kera";
export const DEFAULT_ARGS: readonly string[] = ["lsp"];
export const PYTHON_MODULE_ARGS: readonly string[] = ["-m", "kera_core", "lsp"];

/**
 * Replaces `${workspaceFolder}` and `${userHome}` (and `~` at the start) so that settings such
 * as `${workspaceFolder}/.venv/bin/kera` work in a checked-in `.vscode/settings.json`.
 * A variable whose value is unknown is left as written, so that the error the user sees
 * names what they typed.
 */
export function substitute(value: string, subs: Substitutions): string {
  let out = value;
  if (subs.workspaceFolder !== undefined) {
    out = out.split("${workspaceFolder}").join(subs.workspaceFolder);
  }
  if (subs.userHome !== undefined) {
    out = out.split("${userHome}").join(subs.userHome);
    if (out === "~" || out.startsWith("~/")) {
      out = subs.userHome + out.slice(1);
    }
  }
  return out;
}

function nonEmptyString(value: unknown): string | undefined {
  if (typeof value !== "string") {
    return undefined;
  }
  const trimmed = value.trim();
  return trimmed === "" ? undefined : trimmed;
}

/**
 * The command line that starts the language server.
 *
 * `pythonPath` wins when set, because it is the way to say "use the interpreter of this
 * virtual environment" without having the `kera` console script on `PATH`; otherwise
 * `command` and `args` are used, with the defaults `kera` and `["lsp"]`.
 */
export function resolveServerCommand(
  settings: ServerSettings,
  subs: Substitutions = {},
): ServerCommand {
  const python = nonEmptyString(settings.pythonPath);
  if (python !== undefined) {
    return { command: substitute(python, subs), args: [...PYTHON_MODULE_ARGS] };
  }
  const command = substitute(nonEmptyString(settings.command) ?? DEFAULT_COMMAND, subs);
  const args = Array.isArray(settings.args)
    ? settings.args.map((a) => substitute(String(a), subs))
    : [...DEFAULT_ARGS];
  return { command, args };
}

/** The command line as one string, for messages and logs (arguments with spaces quoted). */
export function describeCommand(cmd: ServerCommand): string {
  const quote = (s: string) => (/[\s"']/.test(s) || s === "" ? JSON.stringify(s) : s);
  return [cmd.command, ...cmd.args].map(quote).join(" ");
}
