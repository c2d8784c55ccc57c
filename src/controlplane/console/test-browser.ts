// Test support: a browser over the in-process app, a cookie jar that keeps what the console
// sets, for console tests that sign in, post forms and follow single sign-on.
import type { TestControlPlane } from "../testing.ts";

const FORM = { "content-type": "application/x-www-form-urlencoded" };

/** A browser: a cookie jar over the in-process app. */
export function browser(cp: TestControlPlane) {
  const jar = new Map<string, string>();
  const cookie = () => [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
  const keep = (res: Response) => {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(";");
      const i = pair!.indexOf("=");
      const name = pair!.slice(0, i);
      const value = pair!.slice(i + 1);
      if (/Max-Age=0/.test(c) || value === "") jar.delete(name);
      else jar.set(name, value);
    }
    return res;
  };
  const send = async (path: string, init: RequestInit = {}) => {
    const headers = new Headers(init.headers);
    if (jar.size) headers.set("cookie", cookie());
    return keep(await cp.app.handle(new Request(`http://localhost${path}`, { ...init, headers })));
  };
  return {
    jar,
    send,
    get: async (path: string) => send(path),
    post: async (path: string, form: Record<string, string>) => send(path, { method: "POST", headers: FORM, body: new URLSearchParams(form) }),
    api: async (method: string, path: string) => {
      const res = await send(path, { method });
      return { status: res.status, json: (await res.json().catch(() => null)) as any };
    },
    /** The session's CSRF token, read from the page header's sign-out form. */
    csrf: async () => /action="\/sign-out">\s*<input type="hidden" name="_csrf" value="([^"]+)"/.exec(await (await send("/")).text())![1]!,
  };
}
export type Browser = ReturnType<typeof browser>;
