/* The book's small page fixes (loaded on every page, after the theme's scripts).

   1. Sidebar buttons. The page has two buttons of each kind: the theme's
      header bar (hidden by sphinx-book-theme) and the article header (the one a
      reader sees). pydata-sphinx-theme 0.17 and sphinx-book-theme 1.3 attach
      their handlers to the FIRST `.primary-toggle` / `.secondary-toggle` only,
      the hidden one, so on a phone the visible menu button did nothing. A click
      on any other button of the kind is passed on to the first.
   2. Sideways scrolling with a cue. A code block, a display equation or a
      table wider than the column scrolls sideways; it gets the attribute
      data-dpsum-more="right" | "left" | "both" (where more content hides),
      which dpsum.css turns into a fade at that edge. */
(function () {
  "use strict";

  function forwardToggles() {
    ["primary-toggle", "secondary-toggle"].forEach(function (kind) {
      var buttons = document.querySelectorAll("button." + kind);
      if (buttons.length < 2) return;
      var wired = buttons[0];
      Array.prototype.slice.call(buttons, 1).forEach(function (button) {
        button.addEventListener("click", function (event) {
          event.preventDefault();
          event.stopPropagation();
          wired.click();
        });
      });
    });
  }

  var SCROLLERS = [
    ".bd-article div.highlight pre",
    ".bd-article div.math",
    ".bd-article mjx-container[display='true']",
    ".bd-article .pst-scrollable-table-container",
    ".bd-article .table-wrapper"
  ].join(",");

  function mark(el) {
    var hidden = el.scrollWidth - el.clientWidth;
    var more = "";
    if (hidden > 1) {
      var left = el.scrollLeft > 1;
      var right = el.scrollLeft < hidden - 1;
      more = left && right ? "both" : left ? "left" : right ? "right" : "";
    }
    if (more) el.setAttribute("data-dpsum-more", more);
    else el.removeAttribute("data-dpsum-more");
  }

  function markAll() {
    document.querySelectorAll(SCROLLERS).forEach(mark);
  }

  function watchScrolling() {
    document.addEventListener("scroll", function (event) {
      var el = event.target;
      if (el && el.nodeType === 1 && el.matches(SCROLLERS)) mark(el);
    }, true);
    window.addEventListener("resize", markAll);
    markAll();
    // MathJax typesets after load: mark the equations again when it is done
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
      MathJax.startup.promise.then(markAll);
    }
    window.setTimeout(markAll, 1500);
  }

  function ready(fn) {
    if (document.readyState !== "loading") fn();
    else document.addEventListener("DOMContentLoaded", fn);
  }

  ready(forwardToggles);
  window.addEventListener("load", watchScrolling);
})();
