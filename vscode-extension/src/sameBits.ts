/**
 * Same-bits tables: read-only `kera-same-bits:` documents fed by the `kera/sameBits` request
 * (the per-target result digests of one exported function), refreshed when their source
 * document is saved. The request waits for a running check, so a table opened from a
 * "checking…" lens fills in when the check ends.
 */
import * as vscode from "vscode";
import { parseSameBitsQuery, SAME_BITS_SCHEME, SameBitsParams, sameBitsUriParts } from "./logic/sameBitsUri";
import { errorMessage, KeraServer } from "./server";

interface SameBitsResult {
  text: string;
}

export class SameBitsProvider implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(private readonly server: KeraServer) {
    this.subscriptions.push(vscode.workspace.onDidSaveTextDocument((doc) => this.refreshFor(doc.uri)));
  }

  async provideTextDocumentContent(uri: vscode.Uri, token: vscode.CancellationToken): Promise<string> {
    const params = parseSameBitsQuery(uri.query);
    if (params === undefined) {
      return `Not a Kera same-bits URI: ${uri.toString()}\n`;
    }
    try {
      const result = await this.server.request<SameBitsResult | null>("kera/sameBits", params);
      if (token.isCancellationRequested) {
        return "";
      }
      if (result === null || typeof result !== "object" || typeof result.text !== "string") {
        return `The server returned no same-bits table for \`${params.function}\`.\n`;
      }
      return result.text;
    } catch (err) {
      return `Could not check \`${params.function}\`:\n${errorMessage(err)}\n`;
    }
  }

  /** Re-fetches every open table of `source` (after a save). */
  refreshFor(source: vscode.Uri): void {
    const key = this.server.protocolUri(source);
    for (const doc of vscode.workspace.textDocuments) {
      if (doc.uri.scheme !== SAME_BITS_SCHEME) {
        continue;
      }
      const params = parseSameBitsQuery(doc.uri.query);
      if (params !== undefined && (params.uri === key || params.uri === source.toString())) {
        this.changed.fire(doc.uri);
      }
    }
  }

  refresh(uri: vscode.Uri): void {
    this.changed.fire(uri);
  }

  dispose(): void {
    this.changed.dispose();
    for (const s of this.subscriptions) {
      s.dispose();
    }
  }
}

/** Opens (or reveals and refreshes) the same-bits table of one function beside the editor. */
export async function openSameBits(provider: SameBitsProvider, params: SameBitsParams): Promise<void> {
  const uri = vscode.Uri.from(sameBitsUriParts(params));
  const already = vscode.workspace.textDocuments.some((d) => d.uri.toString() === uri.toString());
  const doc = await vscode.workspace.openTextDocument(uri);
  await vscode.window.showTextDocument(doc, {
    viewColumn: vscode.ViewColumn.Beside,
    preserveFocus: true,
    preview: true,
  });
  if (already) {
    provider.refresh(uri);
  }
}
