// Text imports of the console's embedded script (`with { type: "text" }`), so the compiled
// binary carries it. *.css is declared in src/types.d.ts.
declare module "*.js" {
  const text: string;
  export default text;
}
