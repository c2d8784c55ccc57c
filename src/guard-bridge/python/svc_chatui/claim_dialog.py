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

# Open WebUI's ConfirmDialog classes (present in its stylesheet because that dialog uses them).
_SCRIPT = """
const d = %(data)s;
document.getElementById(d.id)?.remove();
const back = document.createElement("div");
back.id = d.id;
back.className = "fixed top-0 right-0 left-0 bottom-0 bg-black/60 w-full h-screen max-h-[100dvh] flex justify-center z-99999999 overflow-hidden overscroll-contain";
const box = document.createElement("div");
box.setAttribute("role", "dialog");
box.setAttribute("aria-modal", "true");
box.setAttribute("aria-labelledby", d.id + "-title");
box.setAttribute("aria-describedby", d.id + "-text");
box.className = "m-auto rounded-2xl max-w-full w-[32rem] mx-2 bg-gray-50 dark:bg-gray-950 max-h-[100dvh] shadow-3xl px-[1.75rem] py-6 flex flex-col";
const title = document.createElement("h2");
title.id = d.id + "-title";
title.className = "text-lg font-semibold dark:text-gray-200 mb-2.5";
title.textContent = d.title;
const text = document.createElement("p");
text.id = d.id + "-text";
text.className = "text-sm text-gray-500";
text.textContent = d.text;
const url = document.createElement("p");
url.className = "text-xs text-gray-500 mt-2 break-all select-all";
url.textContent = d.url;
const row = document.createElement("div");
row.className = "mt-6 flex justify-between gap-1.5";
const close = document.createElement("button");
close.type = "button";
close.className = "bg-gray-100 hover:bg-gray-200 text-gray-800 dark:bg-gray-850 dark:hover:bg-gray-800 dark:text-white font-medium w-full py-2.5 rounded-lg transition";
close.textContent = d.close;
const open = document.createElement("a");
open.href = d.url;
open.target = "_blank";
open.rel = "noopener noreferrer";
open.className = "bg-gray-900 hover:bg-gray-850 text-gray-100 dark:bg-gray-100 dark:hover:bg-white dark:text-gray-800 font-medium w-full py-2.5 rounded-lg transition text-center";
open.textContent = d.open;
const onKey = (e) => { if (e.key === "Escape") { e.stopPropagation(); done(); } };
const done = () => { back.remove(); document.removeEventListener("keydown", onKey, true); };
open.addEventListener("click", () => setTimeout(done, 0));
close.addEventListener("click", done);
back.addEventListener("mousedown", (e) => { if (e.target === back) done(); });
document.addEventListener("keydown", onKey, true);
row.append(close, open);
box.append(title, text, url, row);
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
