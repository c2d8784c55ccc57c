import { describe, expect, test } from "bun:test";
import { FORCED_OFF, FORCED_ON, frontendConfig, frontendEnv, newFrontendToken, withoutSecrets } from "./frontend.ts";

const opts = {
  secretKey: "chat-secret",
  dataDir: "/var/lib/svc/chatui",
  staticDir: "/var/lib/svc/chatui-static",
  pythonRoot: "/var/lib/svc/python",
  socketPath: "/var/lib/svc/proxy.sock",
  frontendToken: "svc_fe_1",
};

describe("the front end's environment", () => {
  test("the provider and tool switches are forced off; overrides are reported", () => {
    const { env, ignored } = frontendEnv({ ENABLE_OPENAI_API: "true", ENABLE_OLLAMA_API: "False", ENABLE_TOOL_SERVERS: "false" }, { ...opts, mcpUrl: "http://127.0.0.1:7391/mcp" });
    for (const k of FORCED_OFF) expect(env[k]).toBe("false");
    // tool servers are on, for svc's MCP gateway alone (the seed and the guard see to that)
    for (const k of FORCED_ON) expect(env[k]).toBe("true");
    expect(env.SVC_MCP_GATEWAY_URL).toBe("http://127.0.0.1:7391/mcp");
    expect(ignored).toEqual(["ENABLE_OPENAI_API=true", "ENABLE_TOOL_SERVERS=false"]);
  });

  test("the secret key is CHATUI_SECRET_KEY; the runtime token and the control-plane settings are withheld", () => {
    const { env } = frontendEnv(
      { CHATUI_SECRET_KEY: "chat-secret", SVC_RUNTIME_TOKEN: "svc_rt_1", SVC_RUNTIME_CONTROL_PLANE_URL: "https://cp", SVC_PROXY_EGRESS_PROXY: "http://p:3128", PYTHONPATH: "/app/backend" },
      opts,
    );
    expect(env.WEBUI_SECRET_KEY).toBe("chat-secret");
    for (const k of ["SVC_RUNTIME_TOKEN", "CHATUI_SECRET_KEY", "SVC_RUNTIME_CONTROL_PLANE_URL", "SVC_PROXY_EGRESS_PROXY"]) expect(env[k]).toBeUndefined();
    expect(Object.values(env)).not.toContain("svc_rt_1");
    expect(env.PYTHONPATH).toBe("/var/lib/svc/python:/app/backend");
    // the socket's credential for this boot, not the runtime token
    expect(env).toMatchObject({ DATA_DIR: opts.dataDir, SVC_RUNTIME_SOCKET_PATH: opts.socketPath, SVC_FRONTEND_TOKEN: "svc_fe_1", RAG_EMBEDDING_ENGINE: "openai" });
  });

  test("a front-end credential is new at every boot; the packs' export runs without the secrets", () => {
    const a = newFrontendToken();
    expect(a).toMatch(/^svc_fe_[A-Za-z0-9_-]{43}$/);
    expect(newFrontendToken()).not.toBe(a);
    expect(withoutSecrets({ SVC_RUNTIME_TOKEN: "t", CHATUI_SECRET_KEY: "s", SVC_FRONTEND_TOKEN: "f", PATH: "/bin" })).toEqual({ PATH: "/bin" });
  });

  test("the base image's empty WEBUI_SECRET_KEY is replaced without a warning; another value is reported", () => {
    expect(frontendEnv({ WEBUI_SECRET_KEY: "" }, opts).ignored).toEqual([]);
    expect(frontendEnv({ WEBUI_SECRET_KEY: "chat-secret" }, opts).ignored).toEqual([]);
    const other = frontendEnv({ WEBUI_SECRET_KEY: "other" }, opts);
    expect(other.ignored).toEqual(["WEBUI_SECRET_KEY (CHATUI_SECRET_KEY is used)"]);
    expect(other.env.WEBUI_SECRET_KEY).toBe("chat-secret");
  });

  test("the command's placeholders, and the local URL polled for the first admin", () => {
    const cfg = frontendConfig({ SVC_CHATUI_COMMAND: "uvicorn open_webui.main:app --host {host} --port {port}", SVC_CHATUI_PYTHON: "python3" }, "/var/lib/svc");
    expect(cfg.command).toEqual(["uvicorn", "open_webui.main:app", "--host", "0.0.0.0", "--port", "8080"]);
    expect(cfg.localUrl).toBe("http://127.0.0.1:8080");
    expect(cfg.dataDir).toBe("/var/lib/svc/chatui");
    // Open WebUI's static copies go to the state volume, not into its read-only package.
    expect(cfg.staticDir).toBe("/var/lib/svc/chatui-static");
    expect(frontendConfig({ STATIC_DIR: "/srv/static" }, "/var/lib/svc").staticDir).toBe("/srv/static");
    expect(frontendEnv({}, { ...opts, staticDir: cfg.staticDir }).env.STATIC_DIR).toBe("/var/lib/svc/chatui-static");
    expect(() => frontendConfig({ SVC_CHATUI_PORT: "80a" }, "/s")).toThrow("SVC_CHATUI_PORT must be a port number");
  });
});
