// Lint: the promise rules the type checker cannot give. `promise-function-async` makes every
// function that returns a promise `async`: Elysia's composer awaits a handler only when its
// source text looks async (FACTS.md), and a rejected promise it does not await skips onError
// and answers a bare 500. `no-floating-promises` catches a promise nobody awaits or handles
// (`void p` only where fire-and-forget is meant, with the reason beside it).
// What a TypeScript maintainer expects besides (issue 36): `consistent-type-imports` (an import
// used only as a type says so, so it is erased and never loads a module at run time; `typeof
// import("x")` stays allowed for lazily required modules), and `no-unused-vars` (no dead
// imports or locals; `_name` marks a parameter kept for its position). Over the whole tree,
// type-aware: about 1 min of CPU (2–3 min on the shared machine).
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "test-artifacts/**", "**/*.js", "**/*.mjs", "**/*.cjs"] },
  {
    files: ["src/**/*.ts", "test/**/*.ts", "scripts/**/*.ts", "bench/**/*.ts"],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { "@typescript-eslint": tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/promise-function-async": "error",
      "@typescript-eslint/consistent-type-imports": ["error", { fixStyle: "inline-type-imports", disallowTypeAnnotations: false }],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none", ignoreRestSiblings: true }],
    },
  },
);
