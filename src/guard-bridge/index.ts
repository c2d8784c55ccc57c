// The Python package svc_chatui, embedded in the svc binary and written out at start, so the
// front end's Python imports exactly the version that matches the binary (in dev and compiled
// alike). The supervisor puts the written directory first on the front end's PYTHONPATH.
import { mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import initPy from "./python/svc_chatui/__init__.py" with { type: "text" };
import localPy from "./python/svc_chatui/_local.py" with { type: "text" };
import bootPy from "./python/svc_chatui/boot.py" with { type: "text" };
import claimDialogPy from "./python/svc_chatui/claim_dialog.py" with { type: "text" };
import governorPy from "./python/svc_chatui/governor.py" with { type: "text" };
import guardPy from "./python/svc_chatui/guard.py" with { type: "text" };
import manifestPy from "./python/svc_chatui/manifest.py" with { type: "text" };
import pipePy from "./python/svc_chatui/pipe.py" with { type: "text" };
import seedPy from "./python/svc_chatui/seed.py" with { type: "text" };
import toolkitPy from "./python/svc_chatui/toolkit.py" with { type: "text" };

export const PACKAGE = "svc_chatui";

/** Every module of the package, by file name. A test checks this matches the folder. */
export const PACKAGE_FILES: Readonly<Record<string, string>> = {
  "__init__.py": initPy,
  "_local.py": localPy,
  "boot.py": bootPy,
  "claim_dialog.py": claimDialogPy,
  "governor.py": governorPy,
  "guard.py": guardPy,
  "manifest.py": manifestPy,
  "pipe.py": pipePy,
  "seed.py": seedPy,
  "toolkit.py": toolkitPy,
};

/**
 * Write the package to `<root>/svc_chatui` (replacing an older copy in one rename) and return
 * `root`, the directory to put on PYTHONPATH.
 */
export function writePythonPackage(root: string): string {
  mkdirSync(root, { recursive: true, mode: 0o755 });
  const staging = join(root, `.${PACKAGE}.${process.pid}`);
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { mode: 0o755 });
  for (const [name, text] of Object.entries(PACKAGE_FILES)) writeFileSync(join(staging, name), text, { mode: 0o644 });
  const target = join(root, PACKAGE);
  rmSync(target, { recursive: true, force: true });
  renameSync(staging, target);
  return root;
}

/** PYTHONPATH with `first` in front of what was there. */
export function prependPythonPath(first: string[], existing: string | undefined): string {
  return [...first, ...(existing ? existing.split(":").filter(Boolean) : [])].join(":");
}
