import { describe, expect, test } from "bun:test";
import { UsageError } from "../../command/index.ts";
import { type Report, boolFlag, intervalSeconds, renderReport } from "./directory-sync.ts";

describe("directory-sync flags", () => {
  test("--dry-run / --create-users take exactly true or false", () => {
    expect(boolFlag("dry-run", "true")).toBe(true);
    expect(boolFlag("create-users", "false")).toBe(false);
    for (const bad of ["yes", "TRUE", "1", "", undefined]) {
      expect(() => boolFlag("create-users", bad)).toThrow(UsageError);
      expect(() => boolFlag("create-users", bad)).toThrow(/--create-users must be true or false/);
    }
  });

  test("--interval takes seconds or m/h durations", () => {
    expect(intervalSeconds("90")).toBe(90);
    expect(intervalSeconds("30m")).toBe(1800);
    expect(intervalSeconds("1h")).toBe(3600);
    expect(() => intervalSeconds("soon")).toThrow(/--interval must be/);
  });

  test("--interval is refused locally outside the control plane's 60 s to 7 days", () => {
    expect(intervalSeconds("60")).toBe(60);
    expect(intervalSeconds("168h")).toBe(604800);
    for (const bad of ["0", "59s", "169h", "99999999m"]) {
      expect(() => intervalSeconds(bad)).toThrow(new UsageError(`--interval "${bad}" is out of range; write from 60 s to 7 days (168h), e.g. --interval 1h`));
    }
  });
});

describe("renderReport", () => {
  const base: Report = { started_at: "2026-01-02T03:04:05.000Z", finished_at: "2026-01-02T03:04:06.000Z", dry_run: false, status: "succeeded", counts: {}, changes: [], errors: [] };

  test("shows when, the non-zero counts, each change and the errors", () => {
    const text = renderReport({
      ...base,
      counts: { groups_created: 1, memberships_removed: 1, users_skipped: 0 },
      changes: [
        { kind: "create_group", group: "chat-users" },
        { kind: "remove_member", group: "chat-admins", email: "bob@example.com", user_id: "usr_1" },
        { kind: "skip_user", email: null, external_id: "e-1", reason: "not found in the directory" },
      ],
    });
    expect(text).toContain("started:   2026-01-02 03:04:05Z");
    expect(text).toContain("counts:    1 groups created, 1 memberships removed\n");
    expect(text).toMatch(/remove member\s+chat-admins\s+bob@example\.com/);
    expect(text).toMatch(/skip user\s+-\s+e-1\s+not found in the directory/);
  });

  test("a dry run says nothing was applied; a failure lists its errors", () => {
    expect(renderReport({ ...base, dry_run: true })).toContain("succeeded (dry run: nothing was applied)");
    const failed = renderReport({ ...base, status: "failed", errors: ["the client secret was refused by the token endpoint: invalid_client"] });
    expect(failed).toMatch(/last sync:\s+failed/);
    expect(failed).toContain("Errors:\n  the client secret was refused");
  });
});
