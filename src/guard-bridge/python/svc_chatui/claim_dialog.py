"""The dialog that brings an unlinked user their one-time claim link.

Open WebUI's own dialog event (``confirmation``) has one primary button, "Confirm", that only
closes it, and a Markdown link in its message opens in the chat's own tab, replacing the chat.
So the dialog is drawn with Open WebUI's ``execute`` event instead: a few lines of script its
chat page runs for that user's open sessions (the event goes to the room ``user:<id>`` and is
stored nowhere: not in the chat, not in the model's context). The dialog looks like Open
WebUI's own (the same classes), is announced as a dialog named by its title, and its primary
action is a real link that opens the claim page in a new tab (a click on a link, so no popup
blocker stands in the way); "Close", Escape or a click outside dismiss it. The page is built
with DOM calls from JSON-encoded text, never parsed as HTML, so nothing in the text or the link
can become markup or script.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

TITLE = "Link your chat account"
TEXT = "Your chat account is not linked to a service user yet, so governed calls are refused. Open the one-time link below and sign in there, then come back and ask again."
OPEN = "Open the link in a new tab"
CLOSE = "Close"
DIALOG_ID = "svc-claim-dialog"

# Open WebUI 0.12.4's ConfirmDialog markup and classes (in its stylesheet because that dialog
# uses them); where a class may be missing, a style property (the page has no CSP).
_SCRIPT = """
const d = %(data)s;
document.getElementById(d.id)?.remove();
const back = document.createElement("div");
back.id = d.id;
back.className = "modal fixed top-0 right-0 left-0 bottom-0 bg-black/60 w-full h-screen max-h-[100dvh] flex justify-center z-99999999 overflow-hidden overscroll-contain";
const box = document.createElement("div");
box.setAttribute("role", "dialog");
box.setAttribute("aria-modal", "true");
box.setAttribute("tabindex", "-1");
box.setAttribute("aria-labelledby", d.id + "-title");
box.setAttribute("aria-describedby", d.id + "-text");
box.className = "m-auto max-w-full w-[32rem] mx-2 bg-white dark:bg-gray-950 rounded-3xl max-h-[100dvh] shadow-3xl border border-white dark:border-gray-900";
const inner = document.createElement("div");
inner.className = "px-5 py-5 flex flex-col";
const title = document.createElement("h2");
title.id = d.id + "-title";
title.className = "text-sm font-medium dark:text-gray-200 mb-2.5";
title.textContent = d.title;
const text = document.createElement("p");
text.id = d.id + "-text";
text.className = "text-sm text-gray-500 flex-1";
text.textContent = d.text;
const url = document.createElement("p");
url.className = "w-full mt-2 rounded-lg px-4 py-2 text-sm dark:text-gray-300 dark:bg-gray-900";
url.style.wordBreak = "break-all";
url.style.userSelect = "all";
url.textContent = d.url;
const row = document.createElement("div");
row.className = "mt-5 flex justify-between gap-1.5";
const close = document.createElement("button");
close.type = "button";
close.className = "flex h-7 items-center justify-center gap-1.5 rounded-lg px-2.5 text-xs font-normal transition disabled:opacity-60 bg-gray-100 hover:bg-gray-100/70 text-gray-800 dark:bg-gray-850 dark:hover:bg-gray-850/60 dark:text-white w-full";
close.textContent = d.close;
const open = document.createElement("a");
open.href = d.url;
open.target = "_blank";
open.rel = "noopener noreferrer";
open.className = "flex h-7 items-center justify-center gap-1.5 rounded-lg bg-gray-900 px-2.5 text-xs font-normal text-white transition hover:bg-black disabled:opacity-60 dark:bg-gray-100 dark:text-gray-900 dark:hover:bg-white w-full";
open.textContent = d.open;
const onKey = (e) => { if (e.key === "Escape") { e.stopPropagation(); done(); } };
const done = () => { back.remove(); document.removeEventListener("keydown", onKey, true); };
open.addEventListener("click", () => setTimeout(done, 0));
close.addEventListener("click", done);
back.addEventListener("mousedown", (e) => { if (e.target === back) done(); });
document.addEventListener("keydown", onKey, true);
row.append(close, open);
inner.append(title, text, url, row);
box.append(inner);
back.append(box);
document.body.append(back);
open.focus();
"""


def claim_dialog_event(claim_url: str) -> dict:
    """The ``execute`` event drawing the dialog; ``data.url`` and ``data.title`` carry the link
    and title as data too (Open WebUI ignores them; tests and listeners read them)."""
    parts = urlsplit(claim_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("a claim link is an http(s) URL")
    data = {"id": DIALOG_ID, "title": TITLE, "text": TEXT, "url": claim_url, "open": OPEN, "close": CLOSE}
    # JSON in a script: "</" and the line separators JSON allows but JavaScript source once did not, escaped.
    encoded = json.dumps(data, ensure_ascii=True).replace("</", "<\\/")
    return {"type": "execute", "data": {"code": _SCRIPT % {"data": encoded}, "title": TITLE, "url": claim_url}}
