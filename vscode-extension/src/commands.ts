/**
 * The commands of the command palette and the client-side targets of the server's code
 * lenses and code actions.
 */
import * as vscode from "vscode";
import { shortFingerprint } from "./logic/fingerprint";
import { functionNameAt } from "./logic/functionAt";
import {
  asCompileResult,
  compileOffersFromCodeActions,
  COMPILE_COMMAND,
  describeCompileResult,
  functionNames,
  normaliseTargetName,
  TargetOffer,
  targetArguments,
  targetNames,
} from "./logic/targets";
import { LoweringProvider, openLowering } from "./lowering";
import { errorMessage, KeraServer, LANGUAGE_ID } from "./server";
import { requestFingerprint } from "./status";

function activeKeraEditor(): vscode.TextEditor | undefined {
  const editor = vscode.window.activeTextEditor;
  if (editor === undefined || editor.document.languageId !== LANGUAGE_ID) {
    void vscode.window.showWarningMessage("Kera: open a .kera file first.");
    return undefined;
  }
  return editor;
}

/** The function under the cursor and the targets the server offers for it. */
interface Choice {
  uri: string;
  function: string | undefined;
  targets: string[];
  offers: TargetOffer[];
}

/**
 * Asks the server which (function, target) pairs it offers at the cursor, through the same
 * code actions the light bulb shows. Falls back to finding `fn <name>` above the cursor when the
 * server offers nothing (then the user types the target name).
 */
async function choiceAtCursor(server: KeraServer, editor: vscode.TextEditor): Promise<Choice | undefined> {
  const client = await server.ready();
  if (client === undefined) {
    return undefined;
  }
  const doc = editor.document;
  const uri = server.protocolUri(doc.uri);
  let offers: TargetOffer[] = [];
  try {
    const actions = await client.sendRequest("textDocument/codeAction", {
      textDocument: { uri },
      range: client.code2ProtocolConverter.asRange(editor.selection),
      context: { diagnostics: [], triggerKind: 1 },
    });
    offers = compileOffersFromCodeActions(actions);
  } catch (err) {
    server.output.appendLine(`textDocument/codeAction failed: ${errorMessage(err)}`);
  }
  const line = editor.selection.active.line;
  const offered = functionNames(offers);
  const fn =
    offered.length > 0
      ? (functionNameAt(doc.getText(), line, offered) ?? offered[0])
      : functionNameAt(doc.getText(), line);
  return { uri, function: fn, targets: fn === undefined ? [] : targetNames(offers, fn), offers };
}

const OTHER_TARGET = "$(edit) Other target…";

/** A target for `fn`: from a quick pick of the offered ones, or typed by the user. */
async function pickTarget(choice: Choice, fn: string, verb: string): Promise<string | undefined> {
  if (choice.targets.length > 0) {
    const items: vscode.QuickPickItem[] = choice.targets.map((t) => ({
      label: t,
      description: choice.offers.find((o) => o.function === fn && o.target === t)?.title,
    }));
    items.push({ label: OTHER_TARGET, description: "type a target name", alwaysShow: true });
    const picked = await vscode.window.showQuickPick(items, {
      title: `${verb} \`${fn}\``,
      placeHolder: "target (offered by the Kera language server)",
    });
    if (picked === undefined) {
      return undefined;
    }
    if (picked.label !== OTHER_TARGET) {
      return picked.label;
    }
  }
  const typed = await vscode.window.showInputBox({
    title: `${verb} \`${fn}\``,
    prompt: "Target name (the server reports an error for a target it does not know)",
    placeHolder: "keg",
  });
  return normaliseTargetName(typed);
}

async function runCompile(server: KeraServer, lowering: LoweringProvider, ...args: unknown[]): Promise<void> {
  const parsed = targetArguments(args);
  if (parsed === undefined) {
    void vscode.window.showErrorMessage(`Kera: ${COMPILE_COMMAND} needs [uri, function, target].`);
    return;
  }
  const [uri, fn, target] = parsed;
  try {
    const reply = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Kera: compiling ${fn} to ${target}…` },
      () => server.executeCommand<unknown>(COMPILE_COMMAND, [uri, fn, target]),
    );
    const result = asCompileResult(reply);
    if (result === undefined) {
      void vscode.window.showWarningMessage(`Kera: compiled ${fn} to ${target}, but the server's reply had no path.`);
      return;
    }
    server.output.appendLine(describeCompileResult(fn, result));
    const choice = await vscode.window.showInformationMessage(
      `Compiled ${fn} to ${result.target}: ${result.path} (fingerprint ${shortFingerprint(result.fingerprint)})`,
      "Reveal File",
      "Show Lowering",
    );
    if (choice === "Reveal File") {
      await vscode.commands.executeCommand("revealFileInOS", vscode.Uri.file(result.path));
    } else if (choice === "Show Lowering") {
      await openLowering(lowering, { uri, function: fn, target: result.target });
    }
  } catch (err) {
    void vscode.window.showErrorMessage(`Kera: could not compile ${fn} to ${target}: ${errorMessage(err)}`);
  }
}

async function pickCompile(server: KeraServer, lowering: LoweringProvider): Promise<void> {
  const editor = activeKeraEditor();
  if (editor === undefined) {
    return;
  }
  const choice = await choiceAtCursor(server, editor);
  if (choice === undefined) {
    return;
  }
  if (choice.function === undefined) {
    void vscode.window.showWarningMessage("Kera: put the cursor inside a function (`fn name(…) { … }`).");
    return;
  }
  const target = await pickTarget(choice, choice.function, "Compile");
  if (target !== undefined) {
    await runCompile(server, lowering, choice.uri, choice.function, target);
  }
}

async function pickLowering(server: KeraServer, lowering: LoweringProvider): Promise<void> {
  const editor = activeKeraEditor();
  if (editor === undefined) {
    return;
  }
  const choice = await choiceAtCursor(server, editor);
  if (choice === undefined) {
    return;
  }
  if (choice.function === undefined) {
    void vscode.window.showWarningMessage("Kera: put the cursor inside a function (`fn name(…) { … }`).");
    return;
  }
  const target = await pickTarget(choice, choice.function, "Show the lowering of");
  if (target !== undefined) {
    await openLowering(lowering, { uri: choice.uri, function: choice.function, target });
  }
}

async function showFingerprint(server: KeraServer): Promise<void> {
  const editor = activeKeraEditor();
  if (editor === undefined) {
    return;
  }
  let result;
  try {
    result = await requestFingerprint(server, editor.document.uri);
  } catch (err) {
    void vscode.window.showErrorMessage(`Kera: kera/fingerprint failed: ${errorMessage(err)}`);
    return;
  }
  if (result === undefined || result.fingerprint === null) {
    void vscode.window.showInformationMessage("Kera: no fingerprint yet. Save the file to compute it.");
    return;
  }
  const here = functionNameAt(editor.document.getText(), editor.selection.active.line, result.functions.map((f) => f.name));
  const items: (vscode.QuickPickItem & { value: string })[] = [
    { label: "$(file-code) file", description: result.fingerprint, value: result.fingerprint },
  ];
  const fns = [...result.functions].sort((a, b) => (a.name === here ? -1 : b.name === here ? 1 : 0));
  for (const f of fns) {
    items.push({
      label: `$(symbol-function) ${f.name}`,
      description: f.fingerprint,
      detail: f.name === here ? "under the cursor" : undefined,
      value: f.fingerprint,
    });
  }
  const saved = result.savedVersion === null || result.savedVersion === undefined ? "" : ` (version ${result.savedVersion})`;
  const picked = await vscode.window.showQuickPick(items, {
    title: `Kera fingerprints as of the last save${saved}${result.changedSinceSave ? " — the file has changed since" : ""}`,
    placeHolder: "pick one to copy it",
    matchOnDescription: true,
  });
  if (picked !== undefined) {
    await vscode.env.clipboard.writeText(picked.value);
    void vscode.window.setStatusBarMessage(`Kera: copied ${picked.value}`, 3000);
  }
}

export function registerCommands(
  context: vscode.ExtensionContext,
  server: KeraServer,
  lowering: LoweringProvider,
  ids: { openLowering: string; runCompile: string; showFingerprint: string },
): void {
  const register = (id: string, fn: (...args: unknown[]) => unknown) =>
    context.subscriptions.push(vscode.commands.registerCommand(id, fn));
  register("kera.pickCompileTarget", () => pickCompile(server, lowering));
  register("kera.pickLowering", () => pickLowering(server, lowering));
  register(ids.showFingerprint, () => showFingerprint(server));
  register("kera.restartServer", () => server.restart());
  register("kera.showOutput", () => server.output.show(true));
  register(ids.runCompile, (...args) => runCompile(server, lowering, ...args));
  register(ids.openLowering, async (...args) => {
    const parsed = targetArguments(args);
    if (parsed === undefined) {
      void vscode.window.showErrorMessage("Kera: showing a lowering needs [uri, function, target].");
      return;
    }
    const [uri, fn, target] = parsed;
    await openLowering(lowering, { uri, function: fn, target });
  });
}
