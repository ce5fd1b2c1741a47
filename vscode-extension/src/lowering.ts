/**
 * Lowering previews: read-only `kera-lowering:` documents fed by the `kera/lowering` request,
 * refreshed whenever their source document is saved.
 */
import * as vscode from "vscode";
import { LoweringParams, loweringUriParts, LOWERING_SCHEME, parseLoweringQuery } from "./logic/loweringUri";
import { errorMessage, KeraServer } from "./server";

/** The result of `kera/lowering`. */
interface LoweringResult {
  target: string;
  function: string;
  text: string;
  fingerprint: string;
}

export function loweringUri(params: LoweringParams): vscode.Uri {
  return vscode.Uri.from(loweringUriParts(params));
}

export class LoweringProvider implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(private readonly server: KeraServer) {
    this.subscriptions.push(
      vscode.workspace.onDidSaveTextDocument((doc) => this.refreshFor(doc.uri)),
      server.onDidStart(() => this.refreshAll()),
    );
  }

  async provideTextDocumentContent(uri: vscode.Uri, token: vscode.CancellationToken): Promise<string> {
    const params = parseLoweringQuery(uri.query);
    if (params === undefined) {
      return `Not a Kera lowering URI: ${uri.toString()}\n`;
    }
    try {
      const result = await this.server.request<LoweringResult | null>("kera/lowering", params);
      if (token.isCancellationRequested) {
        return "";
      }
      if (result === null || typeof result !== "object" || typeof result.text !== "string") {
        return `The server returned no lowering of \`${params.function}\` to ${params.target}.\n`;
      }
      return result.text.endsWith("\n") ? result.text : `${result.text}\n`;
    } catch (err) {
      return `Could not lower \`${params.function}\` to ${params.target}:\n${errorMessage(err)}\n`;
    }
  }

  /** Re-fetches every open lowering document of `source` (after a save). */
  refreshFor(source: vscode.Uri): void {
    const key = this.server.protocolUri(source);
    for (const doc of vscode.workspace.textDocuments) {
      if (doc.uri.scheme !== LOWERING_SCHEME) {
        continue;
      }
      const params = parseLoweringQuery(doc.uri.query);
      if (params !== undefined && (params.uri === key || params.uri === source.toString())) {
        this.changed.fire(doc.uri);
      }
    }
  }

  /** Re-fetches one lowering document. */
  refresh(uri: vscode.Uri): void {
    this.changed.fire(uri);
  }

  refreshAll(): void {
    for (const doc of vscode.workspace.textDocuments) {
      if (doc.uri.scheme === LOWERING_SCHEME) {
        this.changed.fire(doc.uri);
      }
    }
  }

  dispose(): void {
    this.changed.dispose();
    for (const s of this.subscriptions) {
      s.dispose();
    }
  }
}

/** Opens (or reveals and refreshes) the lowering of one function beside the current editor. */
export async function openLowering(provider: LoweringProvider, params: LoweringParams): Promise<void> {
  const uri = loweringUri(params);
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
