/**
 * URIs of the read-only same-bits tables (`kera-same-bits:`): the per-target result digests
 * of one exported function, as returned by the server's `kera/sameBits` request (the command
 * of the same-bits code lens, `kera.showSameBits`, opens one).
 *
 * Built like the lowering URIs (logic/loweringUri.ts): the path is for people (the tab title:
 * `saxpy.same-bits`), the query carries the parameters as base64url-encoded JSON.
 */
import { sourceStem } from "./loweringUri";

export const SAME_BITS_SCHEME = "kera-same-bits";
/** The server's lens command; the extension redirects it to a client command. */
export const SHOW_SAME_BITS_COMMAND = "kera.showSameBits";

/** The parameters of a `kera/sameBits` request. */
export interface SameBitsParams {
  /** The source document's URI, exactly as the language client sends it to the server. */
  uri: string;
  function: string;
}

function pathSegment(s: string): string {
  return s.replace(/[/\\?#%]/g, "_");
}

/** The components of the table's URI (for `vscode.Uri.from`). */
export function sameBitsUriParts(params: SameBitsParams): { scheme: string; path: string; query: string } {
  const payload = JSON.stringify({ uri: params.uri, function: params.function });
  return {
    scheme: SAME_BITS_SCHEME,
    path: `/${pathSegment(sourceStem(params.uri))}/${pathSegment(params.function)}.same-bits`,
    query: Buffer.from(payload, "utf8").toString("base64url"),
  };
}

/** The parameters encoded in a table URI's query; `undefined` if it is not one of ours. */
export function parseSameBitsQuery(query: string): SameBitsParams | undefined {
  let data: unknown;
  try {
    data = JSON.parse(Buffer.from(query.replace(/^\?/, ""), "base64url").toString("utf8"));
  } catch {
    return undefined;
  }
  if (typeof data !== "object" || data === null) {
    return undefined;
  }
  const { uri, function: fn } = data as Record<string, unknown>;
  if (typeof uri !== "string" || typeof fn !== "string" || uri === "" || fn === "") {
    return undefined;
  }
  return { uri, function: fn };
}

/** `[uri, function]` from the lens command's arguments; `undefined` if malformed. */
export function sameBitsArguments(args: unknown[]): [string, string] | undefined {
  const [uri, fn] = args;
  if (typeof uri !== "string" || typeof fn !== "string" || uri === "" || fn === "") {
    return undefined;
  }
  return [uri, fn];
}
