// TorchTPU compatibility: small progressive enhancements. The site works
// without this file; it only makes filtering quicker, adds copy buttons and
// reloads the pages that change on their own.
(function () {
  "use strict";

  // Submit the filter form as soon as a select changes.
  document.querySelectorAll("select[data-autosubmit]").forEach(function (el) {
    el.addEventListener("change", function () {
      if (el.form) {
        el.form.requestSubmit ? el.form.requestSubmit() : el.form.submit();
      }
    });
  });

  // A page that changes on its own (the first scan, a queued test request)
  // reloads every data-refresh seconds until the reader stops it (WCAG
  // 2.2.1: a time limit can be turned off; a meta refresh cannot).
  var every = parseInt(document.body.getAttribute("data-refresh"), 10);
  if (every > 0) {
    var reload = setTimeout(function () { location.reload(); }, every * 1000);
    document.querySelectorAll("[data-refresh-note]").forEach(function (note) {
      note.textContent = "this page reloads every " + every + " seconds.";
    });
    document.querySelectorAll("button[data-stop-refresh]").forEach(function (btn) {
      btn.hidden = false;
      btn.addEventListener("click", function () {
        clearTimeout(reload);
        btn.hidden = true;
        document.querySelectorAll("[data-refresh-note]").forEach(function (note) {
          note.textContent = "reloading stopped: reload the page to see the latest.";
        });
      });
    });
  }

  // Copy buttons: data-copy names the element whose text to copy.
  function textOf(el) {
    return el.value !== undefined && el.tagName !== "PRE" ? el.value : el.textContent;
  }

  function fallbackCopy(text) {
    var ta = document.createElement("textarea");
    ta.value = text;
    ta.setAttribute("readonly", "");
    ta.style.position = "fixed";
    ta.style.opacity = "0";
    document.body.appendChild(ta);
    ta.select();
    var ok = false;
    try {
      ok = document.execCommand("copy");
    } catch (e) {
      ok = false;
    }
    document.body.removeChild(ta);
    return ok ? Promise.resolve() : Promise.reject(new Error("copy failed"));
  }

  function copy(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text).catch(function () {
        return fallbackCopy(text);
      });
    }
    return fallbackCopy(text);
  }

  document.querySelectorAll("button.copy[data-copy]").forEach(function (btn) {
    var label = btn.textContent;
    var timer = null;
    btn.addEventListener("click", function () {
      var src = document.getElementById(btn.getAttribute("data-copy"));
      if (!src) {
        return;
      }
      copy(textOf(src)).then(function () {
        btn.textContent = "Copied";
        btn.setAttribute("data-copied", "true");
      }, function () {
        // Leave the text selected so that Ctrl+C works.
        if (src.select) {
          src.select();
        }
        btn.textContent = "Press Ctrl+C to copy";
        btn.setAttribute("data-copied", "false");
      }).then(function () {
        clearTimeout(timer);
        timer = setTimeout(function () {
          btn.textContent = label;
          btn.removeAttribute("data-copied");
        }, 4000);
      });
    });
  });
})();
