// KernelJudge pages: live submission status (its progress and running time), the submit
// form's GPU choices, copy buttons, and a confirmation before a button that cannot be taken
// back.
(function () {
  "use strict";

  // While a submission is queued or running, re-fetch its result section every second.
  function followLive(container) {
    var url = container.getAttribute("data-live-url");
    var stopped = false;
    function poll() {
      if (stopped) return;
      fetch(url, { headers: { Accept: "text/html" }, credentials: "same-origin" })
        .then(function (response) { return response.ok ? response.text() : null; })
        .then(function (html) {
          if (html !== null) {
            container.innerHTML = html;
            var section = container.querySelector("[data-live]");
            if (section && section.getAttribute("data-live") === "false") {
              stopped = true;
              container.removeAttribute("data-live-url");
              return;
            }
          }
          window.setTimeout(poll, 1000);
        })
        .catch(function () { window.setTimeout(poll, 3000); });
    }
    window.setTimeout(poll, 1000);
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
    document.querySelectorAll("[data-live-url]").forEach(followLive);
    tickRunningTimes();
    document.querySelectorAll("form[data-gpus]").forEach(linkGpuChoices);
    linkCopyButtons();
    linkConfirmations();
  });
})();
