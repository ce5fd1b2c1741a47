/**
 * The Kera extension: a language client for `kera lsp` plus the few things that live in the
 * editor (lowering documents, the fingerprint in the status bar, target pickers).
 */
import * as vscode from "vscode";
import { registerCommands } from "./commands";
import { LOWERING_SCHEME } from "./logic/loweringUri";
import { LoweringProvider } from "./lowering";
import { SAME_BITS_SCHEME, sameBitsArguments } from "./logic/sameBitsUri";
import { openSameBits, SameBitsProvider } from "./sameBits";
import { KeraServer, OPEN_LOWERING_COMMAND, OPEN_SAME_BITS_COMMAND, RUN_COMPILE_COMMAND } from "./server";
import { FingerprintStatus, SHOW_FINGERPRINT_COMMAND } from "./status";

let server: KeraServer | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel("Kera");
  const trace = vscode.window.createOutputChannel("Kera Trace");
  server = new KeraServer(output, trace);
  const lowering = new LoweringProvider(server);
  const sameBits = new SameBitsProvider(server);
  context.subscriptions.push(
    sameBits,
    vscode.workspace.registerTextDocumentContentProvider(SAME_BITS_SCHEME, sameBits),
    // the same-bits lens (`kera.showSameBits`, redirected here): the per-target digest table
    vscode.commands.registerCommand(OPEN_SAME_BITS_COMMAND, async (...args: unknown[]) => {
      const parsed = sameBitsArguments(args);
      if (parsed === undefined) {
        void vscode.window.showErrorMessage("Kera: showing same bits needs [uri, function].");
        return;
      }
      await openSameBits(sameBits, { uri: parsed[0], function: parsed[1] });
    }),
  );
  context.subscriptions.push(
    output,
    trace,
    server,
    lowering,
    vscode.workspace.registerTextDocumentContentProvider(LOWERING_SCHEME, lowering),
    new FingerprintStatus(server),
  );
  registerCommands(context, server, lowering, {
    openLowering: OPEN_LOWERING_COMMAND,
    runCompile: RUN_COMPILE_COMMAND,
    showFingerprint: SHOW_FINGERPRINT_COMMAND,
  });
  const s = server;
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration(async (e) => {
      if (e.affectsConfiguration("kera.server")) {
        const choice = await vscode.window.showInformationMessage(
          "Kera: the server settings changed. Restart the language server?",
          "Restart",
        );
        if (choice === "Restart") {
          await s.restart();
        }
      }
    }),
  );
  void server.ready();
}

export async function deactivate(): Promise<void> {
  await server?.stop();
  server = undefined;
}
