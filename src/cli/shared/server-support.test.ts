// The CLI's check that the control plane understands the fields it sends (issue 29), against
// the real control plane's OpenAPI document and that document with the field taken out (what a
// release before conditions declared).
import { describe, expect, test } from "bun:test";
import { testControlPlane } from "../../controlplane/testing.ts";
import { bodyEchoProblem, declaredFields, unsupportedMessage } from "./server-support.ts";

describe("control-plane support for a command's fields", () => {
  test("the document of this release declares condition and mode for create, update and apply; one without them is found out", async () => {
    const cp = await testControlPlane();
    const doc = (await cp.call("GET", "/api/v1/openapi.json", { token: null })).json;
    const create = declaredFields(doc, "POST", "/api/v1/organizations/{org}/policies")!;
    expect(create.has("condition") && create.has("mode")).toBe(true);
    expect(declaredFields(doc, "PATCH", "/api/v1/organizations/{org}/policies/{id}")!.has("condition")).toBe(true);
    expect(declaredFields(doc, "POST", "/api/v1/organizations/{org}/policies/apply", "policies")!.has("mode")).toBe(true);
    const old = structuredClone(doc);
    delete old.paths["/api/v1/organizations/{org}/policies"].post.requestBody.content["application/json"].schema.properties.condition;
    expect(declaredFields(old, "POST", "/api/v1/organizations/{org}/policies")!.has("condition")).toBe(false);
    expect(declaredFields(doc, "POST", "/api/v1/organizations/{org}/no-such-thing")).toBeNull();
  });

  test("an answer that dropped a field names its flag; defaults count as sent", () => {
    const used = [
      { flag: "--condition", field: "condition" },
      { flag: "--mode", field: "mode" },
    ];
    expect(bodyEchoProblem({ condition: "args.a < 5", mode: "shadow" }, { condition: "args.a < 5", mode: "shadow" }, used)).toBeNull();
    expect(bodyEchoProblem({ condition: "args.a < 5" }, { id: "pol_1" }, used.slice(0, 1))).toBe("--condition");
    expect(bodyEchoProblem({ mode: "enforce" }, {}, used.slice(1), { mode: "enforce" })).toBeNull();
    expect(bodyEchoProblem({ mode: "shadow" }, {}, used.slice(1), { mode: "enforce" })).toBe("--mode");
  });

  test("the message names the flag, the control plane's version, and the next step", () => {
    expect(unsupportedMessage("--condition", null)).toBe("the control plane (version before 0.2.0) does not support --condition; upgrade it first (docs/upgrade.md), then run this again");
    expect(unsupportedMessage("--mode", "0.2.0+abc")).toContain("(version 0.2.0+abc)");
  });
});
