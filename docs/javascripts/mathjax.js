// MathJax settings for pymdownx.arithmatex (generic mode); loaded before MathJax.
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true,
  },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex",
    // A formula is not a control: out of the Tab order (lesson 02 had 174
    // Tab stops that were formulas). Its menu still opens on right-click,
    // and screen readers still read its hidden MathML.
    menuOptions: { settings: { inTabOrder: false } },
  },
};

// Material swaps pages without a full reload (instant navigation), so each new
// page is typeset again. MathJax may not have finished loading on the first
// page, where it typesets by itself.
if (typeof document$ !== "undefined") {
  document$.subscribe(() => {
    if (window.MathJax && typeof MathJax.typesetPromise === "function") {
      MathJax.typesetClear();
      MathJax.texReset();
      MathJax.typesetPromise();
    }
  });
}
