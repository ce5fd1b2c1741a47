/**
 * Starting, restarting and talking to the language server (`kera lsp`).
 */
import * as os from "os";
import * as vscode from "vscode";
import {
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  Middleware,
  ServerOptions,
  State,
  TransportKind,
  vsdiag,
} from "vscode-languageclient/node";
import { describeCommand, resolveServerCommand, ServerCommand, substitute } from "./logic/serverCommand";
import { SHOW_SAME_BITS_COMMAND } from "./logic/sameBitsUri";
import { COMPILE_COMMAND, SHOW_LOWERING_COMMAND } from "./logic/targets";

export const LANGUAGE_ID = "kera";

/** Client-side commands the server's code lenses and code actions are redirected to. */
export const OPEN_LOWERING_COMMAND = "kera.client.openLowering";
export const RUN_COMPILE_COMMAND = "kera.client.compile";
export const OPEN_SAME_BITS_COMMAND = "kera.client.openSameBits";

function workspaceFolderPath(): string | undefined {
  return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
}

/** The server command line from the current `kera.server.*` settings. */
export function currentServerCommand(): ServerCommand {
  const cfg = vscode.workspace.getConfiguration("kera.server");
  return resolveServerCommand(
    { command: cfg.get("command"), args: cfg.get("args"), pythonPath: cfg.get("pythonPath") },
    { workspaceFolder: workspaceFolderPath(), userHome: os.homedir() },
  );
}

function outputDirSetting(): string | undefined {
  const dir = vscode.workspace.getConfiguration("kera").get<string>("outputDir");
  if (typeof dir !== "string" || dir.trim() === "") {
    return undefined;
  }
  return substitute(dir.trim(), { workspaceFolder: workspaceFolderPath(), userHome: os.homedir() });
}

/**
 * Code lenses run `kera.showLowering` and `kera.showSameBits`, code actions
 * `kera.compileToTarget`. The lens commands only make sense in the client (they open a document), and the second returns a result the user
 * should see; so both are redirected to client commands that do that, whether or not the
 * server also registers them as executable commands.
 */
function redirect(command: vscode.Command | undefined): vscode.Command | undefined {
  if (command === undefined) {
    return undefined;
  }
  if (command.command === SHOW_LOWERING_COMMAND) {
    return { ...command, command: OPEN_LOWERING_COMMAND };
  }
  if (command.command === COMPILE_COMMAND) {
    return { ...command, command: RUN_COMPILE_COMMAND };
  }
  if (command.command === SHOW_SAME_BITS_COMMAND) {
    return { ...command, command: OPEN_SAME_BITS_COMMAND };
  }
  return command;
}

function redirectLens(lens: vscode.CodeLens): vscode.CodeLens {
  const cmd = redirect(lens.command);
  if (cmd !== lens.command) {
    lens.command = cmd;
  }
  return lens;
}

const middleware: Middleware = {
  // The server pushes diagnostics to every client and also answers pulls; VS Code would
  // show both lists. The extension keeps the pushed one (it arrives as soon as the analysis
  // of an edit ends) and answers the client's own pulls with nothing.
  provideDiagnostics() {
    return { kind: vsdiag.DocumentDiagnosticReportKind.full, items: [] };
  },
  provideWorkspaceDiagnostics() {
    return { items: [] };
  },
  async provideCodeLenses(document, token, next) {
    const lenses = await next(document, token);
    return lenses?.map(redirectLens);
  },
  async resolveCodeLens(lens, token, next) {
    const resolved = await next(lens, token);
    return resolved ? redirectLens(resolved) : resolved;
  },
  async provideCodeActions(document, range, context, token, next) {
    const actions = await next(document, range, context, token);
    return actions?.map((a) => {
      if (a instanceof vscode.CodeAction) {
        a.command = redirect(a.command);
        return a;
      }
      return redirect(a as vscode.Command) ?? a;
    });
  },
};

/** Owns the language client; survives restarts. */
export class KeraServer implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private starting: Promise<LanguageClient | undefined> | undefined;
  private readonly onDidStartEmitter = new vscode.EventEmitter<LanguageClient>();
  /** Fires each time a client has started (first start and restarts). */
  readonly onDidStart = this.onDidStartEmitter.event;

  constructor(
    readonly output: vscode.OutputChannel,
    private readonly traceOutput: vscode.OutputChannel,
  ) {}

  /** The running client, starting it if needed; undefined if it cannot be started. */
  async ready(): Promise<LanguageClient | undefined> {
    if (this.client !== undefined && this.client.state === State.Running) {
      return this.client;
    }
    if (this.starting === undefined) {
      this.starting = this.start().finally(() => {
        this.starting = undefined;
      });
    }
    return this.starting;
  }

  private async start(): Promise<LanguageClient | undefined> {
    if (this.client !== undefined) {
      const old = this.client;
      this.client = undefined;
      try {
        await old.stop(2000);
      } catch {
        // it was not running
      }
      old.dispose();
    }
    const cmd = currentServerCommand();
    const outputDir = outputDirSetting();
    const serverOptions: ServerOptions = {
      command: cmd.command,
      args: cmd.args,
      transport: TransportKind.stdio,
      options: { cwd: workspaceFolderPath(), env: { ...process.env } },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [
        { scheme: "file", language: LANGUAGE_ID },
        { scheme: "untitled", language: LANGUAGE_ID },
      ],
      synchronize: { configurationSection: "kera" },
      initializationOptions: outputDir === undefined ? {} : { outputDir },
      outputChannel: this.output,
      traceOutputChannel: this.traceOutput,
      middleware,
    };
    // The id "kera" makes the client read `kera.trace.server`.
    const client = new LanguageClient(LANGUAGE_ID, "Kera Language Server", serverOptions, clientOptions);
    this.output.appendLine(`Starting the Kera language server: ${describeCommand(cmd)}`);
    try {
      await client.start();
    } catch (err) {
      this.output.appendLine(`Could not start the Kera language server: ${String(err)}`);
      void this.reportStartFailure(cmd, err);
      try {
        await client.stop(1000);
      } catch {
        // never ran
      }
      return undefined;
    }
    this.client = client;
    this.onDidStartEmitter.fire(client);
    return client;
  }

  private async reportStartFailure(cmd: ServerCommand, err: unknown): Promise<void> {
    const detail = err instanceof Error ? err.message : String(err);
    const choice = await vscode.window.showErrorMessage(
      `Kera: could not start the language server with \`${describeCommand(cmd)}\` (${detail}). ` +
        "Install Kera (`pip install -e .` in the repository) or set `kera.server.command` or " +
        "`kera.server.pythonPath`.",
      "Open Settings",
      "Show Log",
    );
    if (choice === "Open Settings") {
      await vscode.commands.executeCommand("workbench.action.openSettings", "kera.server");
    } else if (choice === "Show Log") {
      this.output.show(true);
    }
  }

  /** Stops the current server (if any) and starts a new one with the current settings. */
  async restart(): Promise<LanguageClient | undefined> {
    if (this.starting !== undefined) {
      await this.starting;
    }
    this.starting = this.start().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  /** The running client without starting one. */
  get current(): LanguageClient | undefined {
    return this.client?.state === State.Running ? this.client : undefined;
  }

  /** A request to the server; rejects with a readable error when there is no server. */
  async request<R>(method: string, params: unknown): Promise<R> {
    const client = await this.ready();
    if (client === undefined) {
      throw new Error("the Kera language server is not running (see the Kera output channel)");
    }
    return client.sendRequest<R>(method, params);
  }

  /** Runs one of the server's commands (`workspace/executeCommand`). */
  async executeCommand<R>(command: string, args: unknown[]): Promise<R> {
    const client = await this.ready();
    if (client === undefined) {
      throw new Error("the Kera language server is not running (see the Kera output channel)");
    }
    return client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args }) as Promise<R>;
  }

  /** The URI string the client uses for `document` in its messages to the server. */
  protocolUri(uri: vscode.Uri): string {
    return this.client?.code2ProtocolConverter.asUri(uri) ?? uri.toString();
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client !== undefined) {
      try {
        await client.stop(2000);
      } catch {
        // already stopped
      }
    }
  }

  dispose(): void {
    void this.stop();
    this.onDidStartEmitter.dispose();
  }
}

/** The message of an error from the server or the client, for the user. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) {
    return err.message;
  }
  if (typeof err === "object" && err !== null && typeof (err as { message?: unknown }).message === "string") {
    return (err as { message: string }).message;
  }
  return String(err);
}
