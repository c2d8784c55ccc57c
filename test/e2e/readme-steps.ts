// The README's "Try it (demo mode)" steps, read from README.md itself: every name the
// end-to-end demo test clicks, types or looks for comes from there (test/e2e/demo-mode.test.ts),
// so a step that no longer matches the screens fails the test. A step whose wording changed so
// that its names cannot be read fails here, naming the step.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO } from "../support/controlplane-process.ts";

export type DemoSteps = {
  /** The numbered steps as written (for the printed-by-start.sh check). */
  text: string;
  model: string;
  profile: string;
  toolsMenu: { button: string; item: string; toolkit: string };
  lookup: { message: string; call: string; policy: string; declared: string };
  write: { message: string; call: string; refusal: string; declared: string };
  audit: { page: string; email: string };
  secondUser: { userMenu: string; adminPanel: string; addUser: string; save: string; refusal: string; dialog: string; open: string; claim: string; policy: string };
};

const README = join(REPO, "README.md");

function section(): string {
  const text = readFileSync(README, "utf8");
  const start = text.indexOf("### Try it (demo mode)\n");
  if (start < 0) throw new Error('README.md has no "### Try it (demo mode)" section');
  const rest = text.slice(start + 1);
  return rest.slice(rest.indexOf("\n1. "), rest.search(/\n### /));
}

/** Step n's text, its lines joined (the README wraps them). */
function step(all: string, n: number): string {
  const m = new RegExp(`\\n${n}\\. ([^]*?)(?=\\n\\d+\\. |\\n\\n|$)`).exec(all);
  if (!m) throw new Error(`README "Try it (demo mode)" has no step ${n}`);
  return m[1]!.replace(/\s*\n\s*/g, " ");
}

function read(stepText: string, n: number, re: RegExp): string[] {
  const m = re.exec(stepText);
  if (!m) throw new Error(`README "Try it (demo mode)" step ${n} no longer reads as the test expects (${re}): ${stepText}`);
  return m.slice(1);
}

export function demoSteps(): DemoSteps {
  const all = section();
  const s = (n: number) => step(all, n);
  const [model, profile] = read(s(2), 2, /The model is "([^"]+)",.*model profile for it is "([^"]+)"/);
  const [button, item, toolkit] = read(s(3), 3, /click "([^"]+)" \(the button right of "\+"\), then "([^"]+)", and switch on "([^"]+)"/);
  const [lMessage, lCall, lPolicy, lDeclared] = read(s(4), 4, /Send `([^`]+)`\. The tool call "([^"]+)" completes .* policy "([^"]+)" permits it\. .* here "([^"]+)"/);
  const [wMessage, wCall, wRefusal, wDeclared] = read(s(5), 5, /Send `([^`]+)`\. The tool call "([^"]+)" fails with "([^"]+)": no policy permits "([^"]+)"/);
  const [page, email] = read(s(6), 6, /open "([^"]+)": both calls are there, .* under `([^`]+)`/);
  const [userMenu, adminPanel, addUser, save, refusal, dialog, open, claim, policy] = read(
    s(7),
    7,
    /"([^"]+)" \(bottom left\), "([^"]+)", "([^"]+)" \(.*then "([^"]+)"\).* refused with "([^"]+)", and a dialog "([^"]+)" opens .* Its button "([^"]+)" opens .* they pick "([^"]+)"\. .* policy "([^"]+)" permits it/,
  );
  return {
    text: all.trim(),
    model: model!,
    profile: profile!,
    toolsMenu: { button: button!, item: item!, toolkit: toolkit! },
    lookup: { message: lMessage!, call: lCall!, policy: lPolicy!, declared: lDeclared! },
    write: { message: wMessage!, call: wCall!, refusal: wRefusal!, declared: wDeclared! },
    audit: { page: page!, email: email! },
    secondUser: { userMenu: userMenu!, adminPanel: adminPanel!, addUser: addUser!, save: save!, refusal: refusal!, dialog: dialog!, open: open!, claim: claim!, policy: policy! },
  };
}
