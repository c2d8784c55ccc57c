import { describe, expect, test } from "bun:test";
import { SafeHtml, escapeHtml, html, path, query, raw } from "./html.ts";

describe("html template", () => {
  test("escapes every interpolated string", () => {
    const evil = `<script>alert("x")</script>&'\``;
    expect(html`<p>${evil}</p>`.value).toBe("<p>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;&#96;</p>");
  });

  test("an attribute value cannot be broken out of", () => {
    const out = html`<input value="${'" autofocus onfocus="alert(1)'}">`.value;
    expect(out).toBe('<input value="&quot; autofocus onfocus=&quot;alert(1)">');
    expect(out).not.toContain('" autofocus');
  });

  test("nested templates are kept, not escaped twice", () => {
    const inner = html`<b>${"a<b"}</b>`;
    expect(html`<p>${inner}</p>`.value).toBe("<p><b>a&lt;b</b></p>");
  });

  test("lists are joined; null, undefined and booleans render nothing; numbers render", () => {
    expect(html`<ul>${["<a>", html`<li>x</li>`]}</ul>`.value).toBe("<ul>&lt;a&gt;<li>x</li></ul>");
    expect(html`${null}${undefined}${false}${true}${0}${42}`.value).toBe("042");
  });

  test("raw is the only way to pass markup through", () => {
    expect(html`${raw("<hr>")}`.value).toBe("<hr>");
    expect(raw("<hr>")).toBeInstanceOf(SafeHtml);
    expect(html`${"<hr>"}`.value).toBe("&lt;hr&gt;");
  });

  test("escapeHtml leaves plain text alone", () => {
    expect(escapeHtml("agent helpdesk 1")).toBe("agent helpdesk 1");
  });

  test("path encodes each dynamic segment", () => {
    expect(path`/installations/${"inst_1/../x?y"}/tools`).toBe("/installations/inst_1%2F..%2Fx%3Fy/tools");
  });

  test("query keeps only non-empty values", () => {
    expect(query({ tool: "crm.lookup", decision: "", user: null, limit: 50 })).toBe("?tool=crm.lookup&limit=50");
    expect(query({ a: "" })).toBe("");
  });
});
