// The path and query of a request's absolute URL (Bun hands `scheme://host/path?query`), shared
// by the servers that route before or without a framework (the proxy's local API, the control
// plane's bundle-poll shortcut and request gate, and the hooks around its app that only need
// the path): reading them does not build a URL object for the usual URLs.

// A path of letters, digits and `/ - _ .` with no dot segment: the URL parser returns it unchanged.
const PLAIN_PATH = /^[A-Za-z0-9/_.-]*$/;
const DOT_SEGMENT = /\/\.\.?(?:\/|$)/;

/**
 * The path as `new URL(url).pathname` gives it, and the query without its `?` (empty when
 * none; up to a `#`). A plain path is sliced out as it is and the query taken raw; any other
 * (escapes, dot segments, no path at all) is left to the URL parser.
 */
export function requestTarget(url: string): { path: string; search: string } {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start > 0) {
    const q = url.indexOf("?", start);
    const h = url.indexOf("#", start);
    const end = q < 0 ? (h < 0 ? url.length : h) : h < 0 ? q : Math.min(q, h);
    const path = url.slice(start, end);
    if (PLAIN_PATH.test(path) && !DOT_SEGMENT.test(path)) {
      return { path, search: q < 0 || (h >= 0 && h < q) ? "" : url.slice(q + 1, h < 0 ? url.length : h) };
    }
  }
  const u = new URL(url);
  return { path: u.pathname, search: u.search.slice(1) };
}
