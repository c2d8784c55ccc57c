// Wire types shared by the runtime (proxy, boot, supervisor) and the control plane.
export * from "./age-recipient.ts";
export * from "./audit.ts";
export * from "./bundle.ts";
export * from "./errors.ts";
export * from "./ids.ts";
export * from "./manifest.ts";
export * from "./model-endpoint.ts";
export * from "./patterns.ts";
export * from "./runtime-api.ts";
export * from "./local-api.ts";
