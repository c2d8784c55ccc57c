// A stand-in for Open WebUI in supervisor tests: GET /api/config answers onboarding:true until
// the file FAKE_ADMIN_FILE exists. Writes its environment (JSON) to FAKE_FRONTEND_ENVFILE and
// its pid to FAKE_FRONTEND_PIDFILE. With FAKE_FRONTEND_ORPHANFILE, leaves an orphan (a
// `sleep` whose shell exits) and writes its pid there, as uvicorn workers and tool
// subprocesses may.
import { existsSync, writeFileSync } from "node:fs";

const port = Number(process.argv[2]);
if (process.env.FAKE_FRONTEND_ENVFILE) writeFileSync(process.env.FAKE_FRONTEND_ENVFILE, JSON.stringify({ ...process.env, CWD: process.cwd() }));
if (process.env.FAKE_FRONTEND_PIDFILE) writeFileSync(process.env.FAKE_FRONTEND_PIDFILE, String(process.pid));
if (process.env.FAKE_FRONTEND_ORPHANFILE) {
  Bun.spawnSync(["sh", "-c", 'sleep 600 >/dev/null 2>&1 & echo $! > "$FAKE_FRONTEND_ORPHANFILE"'], { env: process.env });
}
Bun.serve({
  hostname: "127.0.0.1",
  port,
  fetch(req) {
    if (new URL(req.url).pathname === "/api/config") {
      const admin = existsSync(process.env.FAKE_ADMIN_FILE ?? "/nonexistent");
      return Response.json({ name: "Fake WebUI", ...(admin ? {} : { onboarding: true }) });
    }
    return new Response("not found", { status: 404 });
  },
});
