// cpersona ui: progressive enhancement only; every page works without this script.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  // Filter selects apply as soon as they change.
  document.querySelectorAll("select.autosubmit").forEach(function (select) {
    select.addEventListener("change", function () { select.form.submit(); });
  });
  // "/" focuses the search box, as in many tools.
  var q = document.getElementById("q");
  document.addEventListener("keydown", function (event) {
    var typing = event.target && /^(INPUT|TEXTAREA|SELECT)$/.test(event.target.tagName);
    if (q && event.key === "/" && !typing) { event.preventDefault(); q.focus(); }
  });
});
