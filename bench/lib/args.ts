// Command-line options of the standalone bench scripts: taken out of argv as they are read, so
// what is left is the list of builds or checkouts.

/** The number after `name` in argv (both removed), or `dflt` when absent. */
export function takeNumber(argv: string[], name: string, dflt: number): number {
  const at = argv.indexOf(name);
  if (at < 0) return dflt;
  const v = Number(argv[at + 1]);
  argv.splice(at, 2);
  return v;
}
