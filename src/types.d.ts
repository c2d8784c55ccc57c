// Text imports (`with { type: "text" }`) of embedded files: migrations, console assets, the Python package.
declare module "*.sql" {
  const text: string;
  export default text;
}
declare module "*.py" {
  const text: string;
  export default text;
}
declare module "*.css" {
  const text: string;
  export default text;
}
