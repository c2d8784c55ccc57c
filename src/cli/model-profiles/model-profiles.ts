// `svc model-profiles create|list|assignment|readiness|assign` (spec §2 "Model profile").
// The endpoint is checked here with the control plane's rule (contract/model-endpoint.ts).
// With `--auth-type api_key` the key is read from stdin and sealed here to the scope's runtimes;
// only the ciphertext and the replica ids it was sealed to reach the control plane.
import { UsageError, command, listFlag } from "../../command/index.ts";
import { checkEndpoint } from "../../contract/model-endpoint.ts";
import { ApiError, type OrgClient, connect, seg } from "../shared/client.ts";
import { jsonFlag, note, out, printJson, printList, renderFields, renderTable } from "../shared/output.ts";
import { type ModelProfile, findModelProfile } from "../shared/scope.ts";
import { type RuntimeRecipient, apiKeyFromStdinText, sealApiKey, usableRecipients } from "../shared/sealing.ts";
import { type StdinSecret, readStdinSecret, refuseTerminalStdin } from "../shared/stdin-secret.ts";

export const AUTH_TYPES = ["none", "api_key"] as const;
const API_KEY_ON_STDIN: StdinSecret = { reader: "--auth-type api_key", what: "the API key", example: 'printf %s "$KEY" | svc model-profiles create … --auth-type api_key' };
const workspaceArg = { type: "string", required: true, description: "workspace id or name", valueHint: "workspace" } as const;

function profileFields(p: ModelProfile) {
  return renderFields([
    ["profile", p.id],
    ["display name", p.display_name],
    ["endpoint", p.endpoint],
    ["auth type", p.auth_type],
    ["default model", p.default_model],
    ["models", (p.models ?? []).join(", ")],
    ["workspace", p.workspace_id],
    ["api key", p.auth_type === "api_key" ? (p.has_api_key ? `sealed to ${(p.sealed_to ?? []).join(", ") || "-"}` : "missing") : "not used"],
  ]);
}

async function sealFromStdin(client: OrgClient, workspace: string, agent: string | undefined) {
  const scope = `workspace ${workspace}${agent ? ` (agent ${agent})` : ""}`;
  const { recipients } = await client.json<{ recipients: RuntimeRecipient[] }>("GET", client.org("/runtime-recipients"), { query: { workspace, agent_id: agent } });
  const usable = usableRecipients(recipients ?? []);
  if (usable.length === 0) {
    throw client.fail(
      `no runtime in ${scope} can receive the API key (none has registered a credential-sync key); start a runtime for this scope first so it registers its key, then run this command again`,
      "no_runtime_recipient",
    );
  }
  const key = apiKeyFromStdinText(await readStdinSecret(API_KEY_ON_STDIN));
  if (!key) throw new UsageError("stdin holds more than one line; pipe only the API key, on one line");
  const sealed = await sealApiKey(key, usable);
  note(`Sealed the API key to ${usable.length} runtime replica(s): ${sealed.sealed_to.join(", ")}.`);
  return sealed;
}

const create = command({
  meta: { name: "create", description: "Create a model profile (API key read from stdin and sealed to the scope's runtimes)" },
  args: {
    "display-name": { type: "string", required: true, description: "name shown in the front end", valueHint: "name" },
    endpoint: { type: "string", required: true, description: "https chat-completions base URL; no credentials, query or fragment", valueHint: "url" },
    "auth-type": { type: "string", required: true, description: "none or api_key (api_key: the key is read from stdin)", valueHint: "none|api_key" },
    "default-model": { type: "string", required: true, description: "model id used by default", valueHint: "model" },
    models: { type: "string", description: "comma-separated model ids offered (default: the default model)", valueHint: "ids" },
    agent: { type: "string", description: "also assign the profile to this agent (agt_…)", valueHint: "agent_id" },
    workspace: workspaceArg,
    ...jsonFlag,
  },
  examples: [
    "svc model-profiles create --display-name 'GPT' --endpoint https://api.openai.com/v1 --auth-type none --default-model gpt-4o --agent agt_01J... --workspace default",
    'printf %s "$OPENAI_API_KEY" | svc model-profiles create --display-name GPT --endpoint https://api.openai.com/v1 --auth-type api_key --default-model gpt-4o --agent agt_01J... --workspace default',
  ],
  async run({ args }) {
    const authType = args["auth-type"];
    if (!(AUTH_TYPES as readonly string[]).includes(authType)) throw new UsageError(`--auth-type must be "none" or "api_key", not "${authType}"`);
    // The control plane's own rule and words, checked before any call and before the API key
    // is read from stdin, so a bad URL never costs the admin a key.
    const endpoint = checkEndpoint(args.endpoint);
    if (!endpoint.ok) throw new UsageError(endpoint.message.includes("; ") ? endpoint.message : `${endpoint.message}; fix --endpoint and run it again`, endpoint.code);
    const models = args.models === undefined ? undefined : listFlag("models", args.models, "gpt-4o,gpt-4o-mini");
    // The control plane's rule too, checked here so an API key is not read and sealed for nothing.
    if (models && !models.includes(args["default-model"].trim())) {
      throw new UsageError(`--models "${args.models}" does not include the default model "${args["default-model"]}"; add it, e.g. --models ${[args["default-model"].trim(), ...models].join(",")}`);
    }
    // A terminal needs no read to refuse: before any call.
    if (authType === "api_key") refuseTerminalStdin(API_KEY_ON_STDIN);
    const client = await connect("svc model-profiles create");
    // An unknown --agent is refused before the profile exists, not after (a half-done create,
    // and with api_key a misleading "no runtime can receive the key").
    if (args.agent) await client.json("GET", client.org("/model-profile-assignments"), { query: { workspace: args.workspace, agent_id: args.agent } });
    const sealed = authType === "api_key" ? await sealFromStdin(client, args.workspace, args.agent) : {};
    const profile = await client.json<ModelProfile>("POST", client.org("/model-profiles"), {
      body: {
        display_name: args["display-name"],
        endpoint: endpoint.endpoint,
        auth_type: authType,
        default_model: args["default-model"],
        workspace: args.workspace,
        ...(models ? { models } : {}),
        ...sealed,
      },
    });
    let assignment: { agent_id: string; profile_id: string } | null = null;
    if (args.agent) {
      try {
        assignment = await client.json("POST", client.org(`/model-profiles/${seg(profile.id)}/assign`), { body: { agent_id: args.agent } });
      } catch (e) {
        if (!(e instanceof ApiError)) throw e;
        const why = e.message
          .replace(/^[^:]+: /, "")
          .replace(/ \([a-z0-9_]+\)$/, "")
          .split("; ")[0];
        throw client.fail(
          `created model profile ${profile.id} (${profile.display_name}) but could not assign it to agent ${args.agent} (${why}); assign it with \`svc model-profiles assign ${profile.id} --workspace ${args.workspace} --agent <agent_id>\` rather than creating it again`,
          e.code,
        );
      }
    }
    if (args.json) return printJson({ ...profile, ...(assignment ? { assigned_to: assignment.agent_id } : {}) });
    out(`Created model profile ${profile.id} (${profile.display_name}).`);
    out(profileFields(profile));
    if (assignment) out(`Assigned to agent ${assignment.agent_id}.`);
    else note(`Next: svc model-profiles assign ${profile.id} --workspace ${args.workspace} --agent <agent_id>`);
  },
});

const list = command({
  meta: { name: "list", description: "List the model profiles of a workspace" },
  args: { workspace: workspaceArg, ...jsonFlag },
  examples: ["svc model-profiles list --workspace default"],
  async run({ args }) {
    const client = await connect("svc model-profiles list");
    const { model_profiles } = await client.json<{ model_profiles: ModelProfile[] }>("GET", client.org("/model-profiles"), { query: { workspace: args.workspace } });
    printList(
      model_profiles ?? [],
      [
        { header: "ID", value: (p) => p.id },
        { header: "NAME", value: (p) => p.display_name },
        { header: "ENDPOINT", value: (p) => p.endpoint },
        { header: "AUTH", value: (p) => p.auth_type },
        { header: "DEFAULT MODEL", value: (p) => p.default_model },
        { header: "SEALED TO", value: (p) => (p.auth_type === "api_key" ? (p.sealed_to ?? []).length : null) },
      ],
      { json: !!args.json, empty: `No model profiles in workspace ${args.workspace}.`, jsonValue: { model_profiles: model_profiles ?? [] } },
    );
  },
});

const assignment = command({
  meta: { name: "assignment", description: "Show which model profile an agent uses" },
  args: { workspace: workspaceArg, agent: { type: "string", required: true, description: "agent id (agt_…)", valueHint: "agent_id" }, ...jsonFlag },
  examples: ["svc model-profiles assignment --workspace default --agent agt_01J..."],
  async run({ args }) {
    const client = await connect("svc model-profiles assignment");
    const a = await client.json<{ agent_id: string; profile: ModelProfile | null }>("GET", client.org("/model-profile-assignments"), { query: { workspace: args.workspace, agent_id: args.agent } });
    if (args.json) return printJson(a);
    if (!a.profile) {
      out(`Agent ${args.agent} has no model profile: the front end shows no models.`);
      note(`Assign one with: svc model-profiles assign <profile> --workspace ${args.workspace} --agent ${args.agent}`);
      return;
    }
    out(`Agent ${a.agent_id} uses model profile ${a.profile.id} (${a.profile.display_name}).`);
    out(profileFields(a.profile));
  },
});

const readiness = command({
  meta: { name: "readiness", description: "Check whether a model profile can serve (exit 1 when not ready)" },
  args: { profile: { type: "positional", required: true, description: "profile id (mp_…) or display name", valueHint: "profile" }, workspace: workspaceArg, ...jsonFlag },
  examples: ["svc model-profiles readiness mp_01J... --workspace default", "svc model-profiles readiness GPT --workspace default --json"],
  async run({ args }) {
    const client = await connect("svc model-profiles readiness");
    const { profile } = await findModelProfile(client, args.profile, args.workspace);
    const r = await client.json<{ ready: boolean; checks: { name: string; ok: boolean; detail?: string }[] }>("GET", client.org(`/model-profiles/${seg(profile.id)}/readiness`));
    if (args.json) printJson({ profile_id: profile.id, ...r });
    else {
      out(
        renderTable(r.checks ?? [], [
          { header: "CHECK", value: (c) => c.name },
          { header: "OK", value: (c) => (c.ok ? "yes" : "no") },
          { header: "DETAIL", value: (c) => c.detail },
        ]),
      );
      out(r.ready ? `Model profile ${profile.id} is ready.` : `Model profile ${profile.id} is not ready.`);
    }
    if (!r.ready) {
      const failed = (r.checks ?? []).filter((c) => !c.ok).map((c) => c.name);
      throw client.fail(`model profile ${profile.id} is not ready (failed: ${failed.join(", ") || "unknown"}); fix the failed checks and run it again`, "not_ready");
    }
  },
});

const assign = command({
  meta: { name: "assign", description: "Assign a model profile to an agent" },
  args: {
    profile: { type: "positional", required: true, description: "profile id (mp_…) or display name", valueHint: "profile" },
    workspace: workspaceArg,
    agent: { type: "string", required: true, description: "agent id (agt_…)", valueHint: "agent_id" },
    ...jsonFlag,
  },
  examples: ["svc model-profiles assign mp_01J... --workspace default --agent agt_01J..."],
  async run({ args }) {
    const client = await connect("svc model-profiles assign");
    const { profile } = await findModelProfile(client, args.profile, args.workspace);
    const r = await client.json<{ agent_id: string; profile_id: string }>("POST", client.org(`/model-profiles/${seg(profile.id)}/assign`), { body: { agent_id: args.agent } });
    if (args.json) return printJson(r);
    out(`Assigned model profile ${r.profile_id} (${profile.display_name}) to agent ${r.agent_id}.`);
  },
});

/** `gpt-4o=2.5/10,gpt-4o-mini=0.15/0.6` → {model: {prompt, completion}} per 1M tokens. */
export function parsePrices(text: string): Record<string, { prompt: number; completion: number }> {
  const prices: Record<string, { prompt: number; completion: number }> = {};
  for (const item of text
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)) {
    const m = /^([^=]+)=([0-9.]+)\/([0-9.]+)$/.exec(item);
    const prompt = Number(m?.[2]);
    const completion = Number(m?.[3]);
    if (!m || !Number.isFinite(prompt) || !Number.isFinite(completion)) throw new UsageError(`--prices item "${item}" is not model=prompt/completion (per 1M tokens), e.g. gpt-4o=2.5/10`);
    prices[m[1]!.trim()] = { prompt, completion };
  }
  return prices;
}

const prices = command({
  meta: { name: "prices", description: "Set the per-model prices (per 1M tokens) usage cost is computed with" },
  args: {
    profile: { type: "positional", required: true, description: "profile id (mp_…) or display name", valueHint: "profile" },
    workspace: workspaceArg,
    prices: { type: "string", required: true, description: 'model=prompt/completion per 1M tokens, comma-separated; "" removes them', valueHint: "list" },
    ...jsonFlag,
  },
  examples: ["svc model-profiles prices GPT --workspace default --prices gpt-4o=2.5/10,gpt-4o-mini=0.15/0.6"],
  async run({ args }) {
    const parsed = parsePrices(args.prices);
    const client = await connect("svc model-profiles prices");
    const { profile } = await findModelProfile(client, args.profile, args.workspace);
    const p = await client.json<ModelProfile & { prices?: Record<string, { prompt: number; completion: number }> }>("PUT", client.org(`/model-profiles/${seg(profile.id)}/prices`), {
      body: { prices: parsed },
    });
    if (args.json) return printJson(p);
    const n = Object.keys(p.prices ?? {}).length;
    out(n ? `Model profile ${p.id} prices ${n} model(s); runtimes use them from their next bundle.` : `Model profile ${p.id} has no prices now: usage is counted in tokens only.`);
  },
});

export const modelProfilesCommand = command({
  meta: { name: "model-profiles", description: "Model profiles: the chat-completions endpoint an agent's models come from" },
  examples: [
    'printf %s "$OPENAI_API_KEY" | svc model-profiles create --display-name GPT --endpoint https://api.openai.com/v1 --auth-type api_key --default-model gpt-4o --agent agt_01J... --workspace default',
    "svc model-profiles readiness GPT --workspace default",
  ],
  subCommands: { create, list, assignment, readiness, assign, prices },
});
