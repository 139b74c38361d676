// TorchTPU compatibility: small progressive enhancements. The site works
// without this file; it only makes filtering quicker and adds copy buttons.
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
