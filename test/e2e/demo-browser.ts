// Real Chromium on the real Open WebUI and the console, as a person uses them (issue 19's
// Done-when script, test/e2e/demo-mode.test.ts): sign in to the chat, pick the model and tools,
// type a message, read the tool calls Open WebUI draws (a green check for a completed call, a
// red cross for a failed one), and the claim-link dialog. Screenshots go to a temporary
// directory (SVC_TEST_SCREENSHOTS, or test-artifacts/ … as the console tests do), never to git.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Locator, Page } from "playwright-core";
import { waitFor } from "../support/controlplane-process.ts";
import { SCREENSHOTS } from "../integration/console-browser.ts";

export const DEMO_SCREENSHOTS = process.env.SVC_TEST_SCREENSHOTS ?? join(SCREENSHOTS, "demo-mode");

export async function shot(page: Page, name: string): Promise<string> {
  mkdirSync(DEMO_SCREENSHOTS, { recursive: true });
  const file = join(DEMO_SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/** Signs in on Open WebUI's own sign-in page. */
export async function chatSignIn(page: Page, base: string, email: string, password: string): Promise<void> {
  await page.goto(`${base}/auth`);
  await page.getByPlaceholder("Enter Your Email").fill(email);
  await page.getByPlaceholder("Enter Your Password").fill(password);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.waitForURL((u) => !u.pathname.startsWith("/auth"), { timeout: 60_000 });
}

/** Closes Open WebUI's "what's new" dialog when it shows (first sign-in of a version). */
async function dismissChangelog(page: Page): Promise<void> {
  const ok = page.getByRole("button", { name: /Okay, Let's Go!/ });
  if (await ok.isVisible().catch(() => false)) await ok.click();
}

/**
 * A new chat with `model` and the tools `toolIds` selected (Open WebUI's own ?models= and
 * ?tools= parameters, as a shared link sets them), then `text` typed into the message box and
 * sent with Enter.
 */
export async function sendInNewChat(page: Page, base: string, o: { model: string; toolIds: string[]; text: string }): Promise<void> {
  await page.goto(`${base}/?models=${encodeURIComponent(o.model)}&tools=${encodeURIComponent(o.toolIds.join(","))}`);
  const input = page.locator("#chat-input");
  await input.waitFor({ state: "visible", timeout: 60_000 });
  await dismissChangelog(page);
  await input.click();
  await page.keyboard.type(o.text);
  await page.keyboard.press("Enter");
  await page.waitForURL(/\/c\//, { timeout: 60_000 });
}

/** The tool call Open WebUI draws for `name` in the last answer, once it is done ("View Result from …"). */
export async function doneToolCall(page: Page, name: string | RegExp): Promise<Locator> {
  const done = typeof name === "string" ? `View Result from ${name}` : new RegExp(`View Result from \\S*${name.source}`);
  const call = page.locator('div[role="button"]', { hasText: name }).filter({ hasText: done }).last();
  await call.waitFor({ state: "visible", timeout: 90_000 });
  return call;
}

/** How Open WebUI marks a finished call: "failed" (red cross), "completed" (green check). */
export async function callState(call: Locator): Promise<"failed" | "completed" | "other"> {
  if ((await call.locator(".text-red-500").count()) > 0) return "failed";
  if ((await call.locator(".text-emerald-500").count()) > 0) return "completed";
  return "other";
}

/** Opens a finished call and gives the text under "Output". */
export async function callOutput(call: Locator): Promise<string> {
  await call.click();
  // the call's box holds the button and, once opened, the panel (its labels in capitals)
  const box = call.locator("xpath=..");
  await waitFor(async () => /output/i.test(await box.innerText().catch(() => "")), "the call's output to open", 10_000);
  return box.innerText();
}

/** The text of the last assistant message once it shows `expected`. */
export async function answerShows(page: Page, expected: string | RegExp): Promise<void> {
  const matches = (t: string) => (typeof expected === "string" ? t.includes(expected) : expected.test(t));
  await waitFor(
    async () =>
      matches(
        await page
          .locator("#messages-container")
          .innerText()
          .catch(() => ""),
      ),
    `the chat to show ${String(expected)}`,
    90_000,
  );
}

/** Open WebUI's chat page, fresh: a new chat with the model Open WebUI picks itself (what a person sees after signing in). */
export async function newChat(page: Page, base: string): Promise<void> {
  await page.goto(`${base}/`);
  await page.locator("#chat-input").waitFor({ state: "visible", timeout: 60_000 });
  await dismissChangelog(page);
}

/** Switches a toolkit on as the README says: the message box's `button`, then `item`, then the toolkit's switch. */
export async function switchOnToolkit(page: Page, o: { button: string; item: string; toolkit: string }): Promise<void> {
  await page.getByRole("button", { name: o.button, exact: true }).click();
  await page.getByRole("menuitem", { name: new RegExp(`^${o.item}\\b`) }).click();
  const toolkit = page.getByRole("menuitemcheckbox", { name: o.toolkit, exact: true });
  if ((await toolkit.getAttribute("aria-checked")) !== "true") await toolkit.click();
  await waitFor(async () => (await toolkit.getAttribute("aria-checked")) === "true", `"${o.toolkit}" to be switched on`, 10_000);
  await page.keyboard.press("Escape");
}

/** Types a message into the message box of the chat open now and sends it with Enter. */
export async function send(page: Page, text: string): Promise<void> {
  const input = page.locator("#chat-input");
  await input.click();
  await page.keyboard.type(text);
  await page.keyboard.press("Enter");
  await page.waitForURL(/\/c\//, { timeout: 60_000 });
}
