// Budget routes: the admin API under /organizations/{org}/budgets (`svc budgets
// create|list|delete`, the console's usage page), the runtime's GET /runtime/limits and
// POST /runtime/budget-leases (leases.ts).
import { Budget, BudgetDeleted, BudgetList } from "../../contract/admin-api.ts";
import { Elysia, t } from "elysia";
import { BudgetLeaseRequest, BudgetLeaseResponse, LimitsResponse } from "../../contract/runtime-api.ts";
import { acting } from "../audit/admin-events.ts";
import { authPlugin } from "../auth/plugin.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { grantLeases } from "./leases.ts";
import { budgetsForRuntime, budgetsWithStatus, createBudget, deleteBudget } from "./service.ts";

const tags = ["budgets"];

export const BudgetCreate = t.Object({
  name: t.String({ minLength: 1, maxLength: 200 }),
  scope: t.Union([t.Literal("user"), t.Literal("group"), t.Literal("agent")]),
  target: t.String({ minLength: 1, maxLength: 320, description: "user: usr_… or email; group: grp_… or name; agent: agt_…" }),
  period: t.Union([t.Literal("day"), t.Literal("month")]),
  unit: t.Union([t.Literal("tokens"), t.Literal("money")]),
  limit: t.Number({ exclusiveMinimum: 0, maximum: 1e15 }),
});

export function budgetRoutes(deps: ControlPlaneDeps) {
  return new Elysia({ name: "budget-routes" })
    .use(authPlugin(deps))
    .get("/organizations/:org/budgets", async ({ principal }) => ({ budgets: await budgetsWithStatus(deps.db, principal.orgId, deps.now()) }), {
      admin: true,
      response: BudgetList,
      detail: { tags, summary: "Budgets with what was spent in the current period" },
    })
    .post(
      "/organizations/:org/budgets",
      async ({ principal, body, set }) => {
        const row = await createBudget(deps.db, principal.orgId, body, acting(deps, principal));
        set.status = 201;
        return (await budgetsWithStatus(deps.db, principal.orgId, deps.now())).find((b) => b.id === row.id)!;
      },
      { admin: true, body: BudgetCreate, response: { 201: Budget }, detail: { tags, summary: "Create a budget on a user, a group or an agent" } },
    )
    .delete(
      "/organizations/:org/budgets/:id",
      async ({ principal, params }) => {
        const row = await deleteBudget(deps.db, principal.orgId, params.id, acting(deps, principal));
        return { deleted: row.id, name: row.name };
      },
      { admin: true, params: t.Object({ org: t.String(), id: t.String({ minLength: 1, maxLength: 200 }) }), response: BudgetDeleted, detail: { tags, summary: "Delete a budget by id or name" } },
    )
    .get("/runtime/limits", async ({ runtime }) => ({ budgets: await budgetsForRuntime(deps.db, runtime, deps.now()), as_of: new Date(deps.now()).toISOString() }), {
      runtime: true,
      response: LimitsResponse,
      detail: { tags: ["runtime"], summary: "The budgets this runtime enforces, with their spend in the current period" },
    })
    .post(
      "/runtime/budget-leases",
      async ({ runtime, body }) => {
        const now = deps.now();
        return { leases: await grantLeases(deps.db, runtime, body, now), as_of: new Date(now).toISOString() };
      },
      {
        runtime: true,
        body: BudgetLeaseRequest,
        response: BudgetLeaseResponse,
        detail: { tags: ["runtime"], summary: "Settle this replica's finished budget leases and reserve a share of what remains of each wanted budget" },
      },
    );
}
