// The release version of the one svc binary (all modes share it).
import pkg from "../package.json" with { type: "json" };

export const VERSION: string = pkg.version;
