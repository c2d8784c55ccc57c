// Import cycles (issue 36): `bunx depcruise src` fails on any cycle not in
// .dependency-cruiser-known-violations.json, the cycles the tree had when the check came in.
// That list only shrinks: a change that breaks a cycle regenerates it
// (`bunx depcruise src --output-type baseline > .dependency-cruiser-known-violations.json`).
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "A module must not import, directly or through others, a module that imports it.",
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "\\.test\\.ts$" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { extensions: [".ts", ".js"] },
  },
};
