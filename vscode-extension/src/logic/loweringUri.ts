/**
 * URIs of the read-only lowering documents (`kera-lowering:`).
 *
 * A lowering document shows one function of one source document lowered to one target, as
 * returned by the server's `kera/lowering` request. Everything the content provider needs is
 * in the URI, so VS Code can restore such a tab after a reload.
 *
 * The path is for people (it becomes the tab title: `saxpy.keg`); the query carries the real
 * parameters as base64url-encoded JSON, which no layer of URI encoding or decoding can alter
 * (a source URI may itself contain `%`, `?`, `&` or `#`).
 */

export const LOWERING_SCHEME = "kera-lowering";

/** The parameters of a `kera/lowering` request. */
export interface LoweringParams {
  /** The source document's URI, exactly as the language client sends it to the server. */
  uri: string;
  function: string;
  target: string;
}

export interface UriParts {
  scheme: string;
  path: string;
  query: string;
}

function pathSegment(s: string): string {
  // Names are identifiers today, but a segment must never contain a `/`.
  return s.replace(/[/\\?#%]/g, "_");
}

/** The last path segment of a URI without its extension (`file:///a/b/saxpy.kera` → `saxpy`). */
export function sourceStem(uri: string): string {
  let path = uri.replace(/^[A-Za-z][A-Za-z0-9+.-]*:/, "");
  const cut = path.search(/[?#]/);
  if (cut >= 0) {
    path = path.slice(0, cut);
  }
  let base = path.slice(path.lastIndexOf("/") + 1);
  try {
    base = decodeURIComponent(base);
  } catch {
    // keep it encoded
  }
  const dot = base.lastIndexOf(".");
  return dot > 0 ? base.slice(0, dot) : base || "untitled";
}

/** The components of the lowering document's URI (for `vscode.Uri.from`). */
export function loweringUriParts(params: LoweringParams): UriParts {
  const payload = JSON.stringify({ uri: params.uri, function: params.function, target: params.target });
  return {
    scheme: LOWERING_SCHEME,
    path: `/${pathSegment(sourceStem(params.uri))}/${pathSegment(params.function)}.${pathSegment(params.target)}`,
    query: Buffer.from(payload, "utf8").toString("base64url"),
  };
}

/** The lowering document's URI as a string. */
export function loweringUriString(params: LoweringParams): string {
  const parts = loweringUriParts(params);
  return `${parts.scheme}:${parts.path}?${parts.query}`;
}

/** The parameters encoded in a lowering URI's query; `undefined` if it is not one of ours. */
export function parseLoweringQuery(query: string): LoweringParams | undefined {
  let data: unknown;
  try {
    data = JSON.parse(Buffer.from(query.replace(/^\?/, ""), "base64url").toString("utf8"));
  } catch {
    return undefined;
  }
  if (typeof data !== "object" || data === null) {
    return undefined;
  }
  const { uri, function: fn, target } = data as Record<string, unknown>;
  if (typeof uri !== "string" || typeof fn !== "string" || typeof target !== "string") {
    return undefined;
  }
  if (uri === "" || fn === "" || target === "") {
    return undefined;
  }
  return { uri, function: fn, target };
}

/** Parses a whole lowering URI string (`kera-lowering:/…?…`). */
export function parseLoweringUri(uri: string): LoweringParams | undefined {
  if (!uri.startsWith(`${LOWERING_SCHEME}:`)) {
    return undefined;
  }
  const q = uri.indexOf("?");
  if (q < 0) {
    return undefined;
  }
  const hash = uri.indexOf("#", q);
  return parseLoweringQuery(uri.slice(q + 1, hash < 0 ? undefined : hash));
}
