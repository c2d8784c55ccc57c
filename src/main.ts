// The one svc binary: every mode is a subcommand (ARCHITECTURE.md "One binary, several modes").
// Modes load lazily so `svc proxy serve` does not pay for the control plane's imports.
import { command, runCommandTree } from "./command/index.ts";
import { VERSION, VERSION_TEXT } from "./version.ts";

export const main = command({
  meta: { name: "svc", version: VERSION, description: "svc: governed chat runtime — control plane, proxy, runtime and admin CLI" },
  args: { version: { type: "boolean", description: "print the version and exit" } },
  examples: ["svc --version", "svc login --url https://svc.example.com", "svc controlplane serve"],
  subCommands: {
    // admin CLI
    login: async () => import("./cli/login/login.ts").then((m) => m.loginCommand),
    bot: async () => import("./cli/bot/bot.ts").then((m) => m.botCommand),
    "model-profiles": async () => import("./cli/model-profiles/model-profiles.ts").then((m) => m.modelProfilesCommand),
    "tool-servers": async () => import("./cli/tool-servers/tool-servers.ts").then((m) => m.toolServersCommand),
    policies: async () => import("./cli/policies/policies.ts").then((m) => m.policiesCommand),
    "directory-sync": async () => import("./cli/directory-sync/directory-sync.ts").then((m) => m.directorySyncCommand),
    users: async () => import("./cli/users/users.ts").then((m) => m.usersCommand),
    audit: async () => import("./cli/audit/audit.ts").then((m) => m.auditCommand),
    harness: async () => import("./cli/harness/harness.ts").then((m) => m.harnessCommand),
    usage: async () => import("./cli/usage/usage.ts").then((m) => m.usageCommand),
    budgets: async () => import("./cli/budgets/budgets.ts").then((m) => m.budgetsCommand),
    version: async () => import("./cli/version/version.ts").then((m) => m.versionCommand),
    // runtime and service modes
    run: async () => import("./supervisor/command.ts").then((m) => m.runCommand),
    proxy: async () => import("./proxy/command.ts").then((m) => m.proxyCommand),
    policy: async () => import("./proxy/policy-show.ts").then((m) => m.policyCommand),
    boot: async () => import("./boot/command.ts").then((m) => m.bootCommand),
    controlplane: async () => import("./controlplane/command.ts").then((m) => m.controlplaneCommand),
  },
  run({ args }) {
    if (args.version) process.stdout.write(`${VERSION_TEXT}\n`);
  },
});

if (import.meta.main) {
  const argv = process.argv.slice(2);
  const code = await runCommandTree(main, argv);
  // Let piped stdout/stderr flush before exiting: process.exit() would cut large output short.
  await Promise.all([process.stdout, process.stderr].map(async (s) => new Promise<void>((done) => s.write("", () => done()))));
  process.exit(code);
}
