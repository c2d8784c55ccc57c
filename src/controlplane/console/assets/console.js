// svc console enhancements. Every page works without this script; it only adds:
// - a friendly browser-side message for the age1 prefix check on audit-key forms,
// - auto-submit for the organization switcher (its button is hidden when scripts run),
// - times shown in the browser's local time zone, named (UTC stays in the title),
(function () {
  "use strict";
  document.querySelectorAll("[data-hide-with-js]").forEach(function (el) {
    el.hidden = true;
  });
  document.querySelectorAll("select[data-autosubmit]").forEach(function (sel) {
    sel.addEventListener("change", function () {
      if (sel.form) sel.form.requestSubmit();
    });
  });
  document.querySelectorAll("input[data-age-recipient]").forEach(function (input) {
    var check = function () {
      var v = input.value.trim();
      input.setCustomValidity(v === "" || v.indexOf("age1") === 0 ? "" : "An age public key starts with \u201cage1\u201d. Paste the recipient line printed by age-keygen, not the private key.");
    };
    input.addEventListener("input", check);
    check();
  });
  document.querySelectorAll("time[datetime]").forEach(function (t) {
    var d = new Date(t.getAttribute("datetime"));
    if (isNaN(d.getTime())) return;
    t.title = t.textContent;
    t.textContent = d.toLocaleString(undefined, { year: "numeric", month: "short", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit", timeZoneName: "short" });
  });
})();
