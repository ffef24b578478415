/* Search results: snippets of the chapter's text, with math as readable text, not raw TeX.
 *
 * Sphinx's search (searchtools.js) cuts its snippets out of the result page's HTML, where
 * math is still TeX source (MathJax typesets it only when the page itself is shown):
 * "\(\sqrt{d_k}\)" would be printed as is. This wraps Search.htmlToText to turn the text
 * of every math element into plain text first ("√d_k"), and does the same to the section
 * titles in the search index, which hold their math as TeX too.
 */
(function () {
  "use strict";

  const SYMBOLS = {
    cdot: "·", times: "×", le: "≤", leq: "≤", ge: "≥", geq: "≥", ne: "≠", neq: "≠",
    approx: "≈", to: "→", rightarrow: "→", leftarrow: "←", infty: "∞", sum: "Σ", prod: "Π",
    in: "∈", ldots: "…", dots: "…", cdots: "⋯", odot: "⊙", otimes: "⊗", partial: "∂",
    nabla: "∇", top: "ᵀ", pm: "±", mid: "|", lVert: "‖", rVert: "‖", Vert: "‖",
    alpha: "α", beta: "β", gamma: "γ", delta: "δ", epsilon: "ε", varepsilon: "ε",
    eta: "η", theta: "θ", lambda: "λ", mu: "μ", pi: "π", rho: "ρ", sigma: "σ", tau: "τ",
    phi: "φ", psi: "ψ", omega: "ω", Delta: "Δ", Sigma: "Σ", Omega: "Ω",
  };
  const SPACES = ["left", "right", "big", "Big", "bigg", "Bigg", "quad", "qquad", "displaystyle",
                  "limits", "nolimits"];

  function texToText(tex) {
    let text = tex.trim()
      .replace(/^\\\(|\\\)$/g, "").replace(/^\\\[|\\\]$/g, "").replace(/^\$\$?|\$\$?$/g, "")
      .replace(/\\begin\{[^}]*\}|\\end\{[^}]*\}/g, " ")
      .replace(/\\(?:operatorname|text|mathrm|mathbf|mathit|mathsf|mathcal|textbf|textit|boldsymbol)\s*\{([^{}]*)\}/g, "$1")
      .replace(/\\mathbb\s*\{R\}/g, "ℝ")
      .replace(/\^\s*(?:\{(?:T|\\top)\}|\\top|T(?![A-Za-z]))/g, "ᵀ");
    for (let i = 0; i < 3; i++) {  // nested fractions and roots, innermost first
      text = text.replace(/\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}/g, "($1)/($2)")
        .replace(/\\sqrt\s*\{([^{}]*)\}/g, "√($1)");
    }
    text = text
      .replace(/\\([A-Za-z]+)/g, (match, name) => SYMBOLS[name] !== undefined ? SYMBOLS[name]
                                              : SPACES.includes(name) ? " " : name)
      .replace(/\\!/g, "").replace(/\\[,;: ]/g, " ").replace(/\\\\/g, "; ").replace(/&/g, " ")
      .replace(/√\(([\w.]+)\)/g, "√$1").replace(/\((\w+)\)\/\((\w+)\)/g, "$1/$2")
      .replace(/[{}]/g, "");
    return text.replace(/\s+/g, " ").replace(/\(\s+/g, "(").replace(/\s+\)/g, ")").trim();
  }

  function plainTitles(index) {
    if (!index || index.mathAsText) return index;
    const plain = (title) => (title.includes("\\") ? texToText(title) : title);
    index.titles = (index.titles || []).map(plain);
    const all = {};
    for (const [title, found] of Object.entries(index.alltitles || {})) all[plain(title)] = found;
    index.alltitles = all;
    index.mathAsText = true;
    return index;
  }

  function install() {
    if (typeof Search === "undefined" || Search.htmlToText.mathAsText) return;
    plainTitles(Search._index);  // searchindex.js may have loaded already
    const setIndex = Search.setIndex;
    Search.setIndex = (index) => setIndex(plainTitles(index));
    const original = Search.htmlToText;
    const wrapped = (htmlString, anchor) => {
      const page = new DOMParser().parseFromString(htmlString, "text/html");
      // Sphinx cuts snippets from [role="main"], which this theme puts around its own header
      // buttons (download, launch, colour mode) too: the chapter's text is the article.
      const article = page.querySelector("article.bd-article");
      if (article) {
        page.querySelectorAll('[role="main"]').forEach((element) => element.removeAttribute("role"));
        article.setAttribute("role", "main");
      }
      page.querySelectorAll(".math").forEach((element) => {
        element.textContent = " " + texToText(element.textContent) + " ";
      });
      return original(page.documentElement.outerHTML, anchor);
    };
    wrapped.mathAsText = true;
    Search.htmlToText = wrapped;
  }

  window.mhattnTexToText = texToText;  // for the book's tests
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", install);
  } else {
    install();
  }
})();
