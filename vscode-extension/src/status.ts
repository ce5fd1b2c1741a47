/**
 * The status-bar item: the active Kera document's fingerprint as of its last save.
 */
import * as vscode from "vscode";
import { asFingerprintResult, FingerprintResult, statusBarView } from "./logic/fingerprint";
import { KeraServer, LANGUAGE_ID } from "./server";

export const SHOW_FINGERPRINT_COMMAND = "kera.showFingerprint";

/** How long to wait after the last edit before asking whether the file changed since saving. */
const EDIT_DEBOUNCE_MS = 400;
/** How long to wait after a save so that the server has handled `didSave` first. */
const SAVE_DELAY_MS = 100;

export async function requestFingerprint(server: KeraServer, uri: vscode.Uri): Promise<FingerprintResult | undefined> {
  const reply = await server.request<unknown>("kera/fingerprint", { uri: server.protocolUri(uri) });
  return asFingerprintResult(reply);
}

export class FingerprintStatus implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private readonly subscriptions: vscode.Disposable[] = [];
  private generation = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly server: KeraServer) {
    this.item = vscode.window.createStatusBarItem("kera.fingerprint", vscode.StatusBarAlignment.Right, 100);
    this.item.name = "Kera fingerprint";
    this.item.command = SHOW_FINGERPRINT_COMMAND;
    this.subscriptions.push(
      vscode.window.onDidChangeActiveTextEditor(() => this.schedule(0)),
      vscode.workspace.onDidSaveTextDocument((doc) => {
        if (doc === vscode.window.activeTextEditor?.document) {
          this.schedule(SAVE_DELAY_MS);
        }
      }),
      vscode.workspace.onDidChangeTextDocument((e) => {
        if (e.document === vscode.window.activeTextEditor?.document && e.contentChanges.length > 0) {
          this.schedule(EDIT_DEBOUNCE_MS);
        }
      }),
      server.onDidStart(() => this.schedule(0)),
    );
    this.schedule(0);
  }

  private schedule(delayMs: number): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.update();
    }, delayMs);
  }

  /** Asks the server for the active document's fingerprint and shows it. */
  async update(): Promise<void> {
    const generation = ++this.generation;
    const doc = vscode.window.activeTextEditor?.document;
    if (doc === undefined || doc.languageId !== LANGUAGE_ID) {
      this.item.hide();
      return;
    }
    if (this.server.current === undefined) {
      // Never start the server from here: a missing server would pop up an error per keystroke.
      this.item.text = "$(key) kera: no server";
      this.item.tooltip = "The Kera language server is not running. Run “Kera: Restart language server”.";
      this.item.show();
      return;
    }
    let view;
    try {
      view = statusBarView(await requestFingerprint(this.server, doc.uri));
    } catch (err) {
      view = { text: "$(key) kera: ?", tooltip: `kera/fingerprint failed: ${String(err)}` };
    }
    if (generation !== this.generation) {
      return; // a newer update is on its way
    }
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.show();
  }

  dispose(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
    }
    this.item.dispose();
    for (const s of this.subscriptions) {
      s.dispose();
    }
  }
}
