/* Figures, full size on one tap: every figure of a page (a notebook's outputs, the landing
   page's picture) is a button that opens it in a full-screen view at the size it was drawn (its text at the size the notebook chose),
   where the reader pans by dragging or scrolling and zooms with the + and - buttons or
   keys (pinch zoom works too). Escape, the close button or a tap on the picture closes it,
   and the focus goes back to the figure. On a narrow screen a cue under the figure, never on
   it, says that a tap enlarges it. Without JavaScript the figures stay as they are.
   For tests: window.mhattnFigureZoom = {open(img), close(), scale()}. */
(function () {
  "use strict";
  const ZOOMS = [1, 1.5, 2, 3];
  const FIGURES = ".bd-article .cell_output img, .bd-article figure img";
  let view = null, image = null, opener = null, zoom = 0;

  function build() {
    view = document.createElement("div");
    view.className = "figure-zoom-view";
    view.setAttribute("role", "dialog");
    view.setAttribute("aria-modal", "true");
    view.hidden = true;
    const bar = document.createElement("div");
    bar.className = "figure-zoom-bar";
    const label = document.createElement("span");
    label.className = "figure-zoom-label";
    label.id = "figure-zoom-label";
    view.setAttribute("aria-labelledby", label.id);
    const button = (text, name, action) => {
      const b = document.createElement("button");
      b.type = "button"; b.textContent = text; b.setAttribute("aria-label", name);
      b.addEventListener("click", (event) => { event.stopPropagation(); action(); });
      return b;
    };
    bar.append(label, button("−", "Zoom out", () => setZoom(zoom - 1)),
      button("+", "Zoom in", () => setZoom(zoom + 1)), button("✕", "Close the full-size figure", close));
    const pane = document.createElement("div");
    pane.className = "figure-zoom-pane";
    pane.tabIndex = 0;  // arrow keys scroll it
    pane.setAttribute("aria-label", "the figure at full size: drag or scroll to pan");
    image = document.createElement("img");
    pane.append(image);
    pane.addEventListener("click", close);  // a tap (a drag that pans is no click)
    view.append(bar, pane);
    view.addEventListener("keydown", (event) => {
      if (event.key === "Escape") { event.preventDefault(); close(); }
      else if (event.key === "+" || event.key === "=") setZoom(zoom + 1);
      else if (event.key === "-") setZoom(zoom - 1);
      else if (event.key === "Tab") {  // the focus stays in the view while it is open
        const stops = [...view.querySelectorAll("button, [tabindex='0']")];
        const at = stops.indexOf(document.activeElement);
        const next = (at + (event.shiftKey ? -1 : 1) + stops.length) % stops.length;
        event.preventDefault(); stops[next].focus();
      }
    });
    document.body.append(view);
  }

  function setZoom(level) {
    zoom = Math.max(0, Math.min(ZOOMS.length - 1, level));
    image.style.width = image.naturalWidth * ZOOMS[zoom] + "px";
  }

  function open(figure) {
    if (!view) build();
    opener = figure.closest("button") || figure;
    image.src = figure.currentSrc || figure.src;
    image.alt = figure.alt;
    const caption = (figure.closest(".cell_output") || figure.closest("figure"))
      ?.querySelector(".figure-caption .caption-number, figcaption .caption-number");
    view.querySelector(".figure-zoom-label").textContent = (caption ? caption.textContent + " " : "") + "Full size";
    view.hidden = false;
    document.documentElement.classList.add("figure-zoom-open");
    const sized = () => setZoom(0);
    if (image.complete) sized(); else image.addEventListener("load", sized, { once: true });
    view.querySelector("button[aria-label^='Close']").focus();
  }

  function close() {
    if (!view || view.hidden) return;
    view.hidden = true;
    document.documentElement.classList.remove("figure-zoom-open");
    if (opener) opener.focus();
  }

  function install() {
    document.querySelectorAll(FIGURES).forEach((figure) => {
      if (figure.closest("button")) return;
      const button = document.createElement("button");
      button.type = "button";
      button.className = "figure-zoom";
      button.title = "Open the figure full size";
      const cue = document.createElement("span");  // shown on narrow screens only (book.css)
      cue.className = "figure-zoom-cue";
      cue.setAttribute("aria-hidden", "true");  // the button's name stays the figure's alt text
      cue.textContent = "⤢ tap to enlarge";
      figure.replaceWith(button);
      button.append(figure, cue);
      button.addEventListener("click", () => open(figure));
    });
  }

  window.mhattnFigureZoom = { open, close, scale: () => (image && !view.hidden ? image.getBoundingClientRect().width / image.naturalWidth : 0) };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", install);
  else install();
})();
