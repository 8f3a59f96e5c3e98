// KernelJudge pages: live submission status (its progress and running time), the admin
// problems' validation state, the submit form's GPU and mode choices, copy buttons, and a
// confirmation before a button that cannot be taken back.
(function () {
  "use strict";

  // Re-fetch an element's data-live-url and hand each answer's HTML to `apply`, which says
  // what of it marks the end (data-live="false": the element then loses its URL). Waits:
  // `every` between polls, `refused` after an answer other than 200, `failed` after none.
  function pollLive(element, waits, apply) {
    var url = element.getAttribute("data-live-url");
    function poll() {
      fetch(url, { headers: { Accept: "text/html" }, credentials: "same-origin" })
        .then(function (response) { return response.ok ? response.text() : null; })
        .then(function (html) {
          if (html === null) { window.setTimeout(poll, waits.refused); return; }
          var state = apply(html);
          if (state && state.getAttribute("data-live") === "false") {
            element.removeAttribute("data-live-url");
            return;
          }
          window.setTimeout(poll, waits.every);
        })
        .catch(function () { window.setTimeout(poll, waits.failed); });
    }
    window.setTimeout(poll, waits.every);
  }

  // While a submission is queued or running, re-fetch its result section every second.
  function followLive(container) {
    pollLive(container, { every: 1000, refused: 1000, failed: 3000 }, function (html) {
      container.innerHTML = html;
      return container.querySelector("[data-live]");
    });
  }

  // While a problem's validation awaits a device's report, re-fetch its row's changing parts
  // (data-live-part: the version, the validation state) every two seconds and swap in those
  // that changed; the row's settings form, perhaps half filled in, is left alone.
  function followRowParts(row) {
    pollLive(row, { every: 2000, refused: 5000, failed: 5000 }, function (html) {
      var fresh = document.createElement("template");
      fresh.innerHTML = html;
      fresh.content.querySelectorAll("[data-live-part]").forEach(function (part) {
        var name = part.getAttribute("data-live-part");
        var shown = row.querySelector('[data-live-part="' + name + '"]');
        if (shown && shown.innerHTML !== part.innerHTML) shown.innerHTML = part.innerHTML;
      });
      return fresh.content.querySelector("[data-live]");
    });
  }

  // A time as server/client/errors.py's span() says it: 45 s, 4 min 12 s, 2 h 5 min.
  function span(seconds) {
    var whole = Math.max(0, Math.round(seconds));
    if (whole < 60) return whole + " s";
    var minutes = Math.floor(whole / 60), secs = whole % 60;
    if (minutes < 60) return secs ? minutes + " min " + secs + " s" : minutes + " min";
    var hours = Math.floor(minutes / 60);
    minutes = minutes % 60;
    return minutes ? hours + " h " + minutes + " min" : hours + " h";
  }

  // A running submission's time since it started ticks between polls: the server's figure
  // when the part was rendered (data-running-s), plus the time it has been on the page.
  function tickRunningTimes() {
    window.setInterval(function () {
      var now = Date.now();
      document.querySelectorAll("[data-running-s]").forEach(function (element) {
        if (!element.hasAttribute("data-shown-at")) element.setAttribute("data-shown-at", now);
        var since = Number(element.getAttribute("data-shown-at"));
        var seconds = Number(element.getAttribute("data-running-s")) + (now - since) / 1000;
        element.textContent = span(seconds);
      });
    }, 1000);
  }

  // Offer only the GPU types of the chosen problem.
  function linkGpuChoices(form) {
    var byProblem = JSON.parse(form.getAttribute("data-gpus") || "{}");
    var problem = form.querySelector("#problem");
    var gpu = form.querySelector("#gpu");
    if (!problem || !gpu) return;
    var allOptions = Array.prototype.slice.call(gpu.options, 1);
    function update() {
      var offered = byProblem[problem.value];
      allOptions.forEach(function (option) {
        var ok = !offered || offered.indexOf(option.value) >= 0;
        option.hidden = !ok;
        option.disabled = !ok;
        if (!ok && option.selected) gpu.value = "";
      });
    }
    problem.addEventListener("change", update);
    update();
  }

  // Offer leaderboard mode only for a problem that takes it now; for one that does not, say
  // why beside the mode control (data-leaderboard-closed: the reason by problem name).
  function linkModeChoices(form) {
    var closedBy = JSON.parse(form.getAttribute("data-leaderboard-closed") || "{}");
    var problem = form.querySelector("#problem");
    var ranked = form.querySelector("#mode-leaderboard");
    var label = form.querySelector('label[for="mode-leaderboard"]');
    var reason = form.querySelector("#leaderboard-closed");
    if (!problem || !ranked || !label || !reason) return;
    // The page comes as the server rendered it for its problem; a change of problem redraws.
    problem.addEventListener("change", function () {
      var closed = closedBy[problem.value];
      ranked.disabled = Boolean(closed);
      ranked.hidden = Boolean(closed);
      label.hidden = Boolean(closed);
      if (closed && ranked.checked) form.querySelector("#mode-test").checked = true;
      reason.textContent = closed ? "No leaderboard mode: " + closed + "." : "";
      reason.hidden = !closed;
      var refused = form.querySelector("#mode-error");  // said of the problem chosen before
      if (refused) refused.hidden = true;
    });
  }

  function linkCopyButtons() {
    document.querySelectorAll("[data-copy]").forEach(function (button) {
      button.addEventListener("click", function () {
        var source = document.querySelector(button.getAttribute("data-copy"));
        if (!source || !navigator.clipboard) return;
        navigator.clipboard.writeText(source.textContent.trim()).then(function () {
          button.textContent = "Copied";
        });
      });
    });
  }

  // A destructive button asks first; its question is in data-confirm.
  function linkConfirmations() {
    document.addEventListener("click", function (event) {
      var button = event.target.closest ? event.target.closest("[data-confirm]") : null;
      if (button && !window.confirm(button.getAttribute("data-confirm"))) {
        event.preventDefault();
      }
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("#result[data-live-url]").forEach(followLive);
    document.querySelectorAll("tr[data-live-url]").forEach(followRowParts);
    tickRunningTimes();
    document.querySelectorAll("form[data-gpus]").forEach(linkGpuChoices);
    document.querySelectorAll("form[data-leaderboard-closed]").forEach(linkModeChoices);
    linkCopyButtons();
    linkConfirmations();
  });
})();
