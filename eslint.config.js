// Lint: the promise rules the type checker cannot give. `promise-function-async` makes every
// function that returns a promise `async`: Elysia's composer awaits a handler only when its
// source text looks async (FACTS.md), and a rejected promise it does not await skips onError
// and answers a bare 500. `no-floating-promises` catches a promise nobody awaits or handles.
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
    },
  },
);
