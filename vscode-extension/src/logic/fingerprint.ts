/**
 * The `kera/fingerprint` reply and how the status bar and messages show it.
 */

export interface FunctionFingerprint {
  name: string;
  fingerprint: string;
}

/** The result of the `kera/fingerprint` request. */
export interface FingerprintResult {
  /** The graph hash of the document as of its last save (`sha3-256:…`); null if unknown. */
  fingerprint: string | null;
  functions: FunctionFingerprint[];
  /** The document version that was last saved; null if it was never saved in this session. */
  savedVersion?: number | null;
  /** Whether the editor's text differs from the saved text the fingerprint belongs to. */
  changedSinceSave?: boolean;
}

/** Normalises an untrusted reply; `undefined` if it has no usable shape. */
export function asFingerprintResult(value: unknown): FingerprintResult | undefined {
  if (typeof value !== "object" || value === null) {
    return undefined;
  }
  const v = value as Record<string, unknown>;
  const fingerprint = typeof v.fingerprint === "string" && v.fingerprint !== "" ? v.fingerprint : null;
  const functions: FunctionFingerprint[] = [];
  if (Array.isArray(v.functions)) {
    for (const f of v.functions) {
      if (typeof f === "object" && f !== null) {
        const { name, fingerprint: fp } = f as Record<string, unknown>;
        if (typeof name === "string" && typeof fp === "string") {
          functions.push({ name, fingerprint: fp });
        }
      }
    }
  }
  return {
    fingerprint,
    functions,
    savedVersion: typeof v.savedVersion === "number" ? v.savedVersion : null,
    changedSinceSave: v.changedSinceSave === true,
  };
}

/**
 * The first `digits` hex digits of a fingerprint followed by `…`, without the algorithm prefix:
 * `sha3-256:3f9a1c2d…` → `3f9a1c2d…` (the form the server's code lenses use).
 * A fingerprint no longer than `digits` is returned whole.
 */
export function shortFingerprint(fingerprint: string, digits = 8): string {
  const hex = fingerprint.includes(":") ? fingerprint.slice(fingerprint.lastIndexOf(":") + 1) : fingerprint;
  return hex.length <= digits ? hex : `${hex.slice(0, digits)}…`;
}

export interface StatusBarView {
  text: string;
  tooltip: string;
}

export const STATUS_ICON = "$(key)";

/** What the status-bar item shows for a `kera/fingerprint` reply (undefined: no reply yet). */
export function statusBarView(result: FingerprintResult | undefined): StatusBarView {
  if (result === undefined || result.fingerprint === null) {
    return {
      text: `${STATUS_ICON} kera: not saved`,
      tooltip: "Kera: no fingerprint yet. Save the file to compute its fingerprint.",
    };
  }
  const modified = result.changedSinceSave === true;
  const lines = [
    modified
      ? "Kera fingerprint as of the last save (the file has changed since):"
      : "Kera fingerprint as of the last save:",
    result.fingerprint,
  ];
  for (const f of result.functions) {
    lines.push(`fn ${f.name}  ${shortFingerprint(f.fingerprint)}`);
  }
  lines.push("", "Click for all fingerprints.");
  return {
    text: `${STATUS_ICON} ${shortFingerprint(result.fingerprint)}${modified ? " (modified)" : ""}`,
    tooltip: lines.join("\n"),
  };
}

/** The fingerprint of one function in a reply, if the reply lists it. */
export function functionFingerprint(result: FingerprintResult, name: string): string | undefined {
  return result.functions.find((f) => f.name === name)?.fingerprint;
}
