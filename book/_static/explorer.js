/* The live explorer on the book's page: controls that redraw every head's attention weights and
   the PCA picture in the browser, from the numbers of explorer-frame.js. No server, no network.
   Fills <div id="mhattn-live-explorer"> (if the page has one) and hides the page's still frame
   (a cell tagged mhattn-still-frame). Pointing at a heatmap's cell reads out its weight and its
   row's sum. For tests, the numbers of the last drawing are in window.__explorerFrame, the
   cell read last in window.__explorerCell. */
(function (ns) {
  "use strict";
  const ROOT_ID = "mhattn-live-explorer";

  function element(tag, attributes, children) {
    const node = document.createElement(tag);
    Object.entries(attributes || {}).forEach(([key, value]) => node.setAttribute(key, value));
    (children || []).forEach((child) => node.append(child));
    return node;
  }

  function select(name, options, value) {
    const node = element("select", { "data-control": name });
    options.forEach(([label, v]) => node.append(element("option", { value: String(v) }, [label])));
    node.value = String(value);
    return node;
  }

  function labelled(text, control, extra) {
    return element("label", { class: "mhx-control" }, [element("span", {}, [text]), control, ...(extra || [])]);
  }

  function build(root, data) {
    const L = data.limits, same = (values) => values.map((v) => [String(v), v]);
    const c = {
      trained: select("trained", [["untrained", 0], ["trained (induction)", 1]], 0),
      seqLen: element("input", { type: "range", "data-control": "seqLen", min: L.minSeqLen, max: L.maxSeqLen,
        value: 8, "aria-label": "seq_len" }),
      dModel: select("dModel", same(L.dModels), 64),
      numHeads: select("numHeads", same(ns.frame.headChoices(64, L.maxHeads)), 4),
      mask: select("mask", same(L.masks), "none"),
      seed: select("seed", same(L.seeds), L.seeds[0]),
      rope: select("rope", [["off", "off"], ["on", "on"]], "off"),
      tokens: element("input", { type: "text", "data-control": "tokens", value: L.defaultTokens, size: 24,
        spellcheck: "false", "aria-label": "tokens" }),
      layer: select("layer", [["layer 0", 0], ["layer 1", 1]], 1),
      positions: select("positions", [["learned", "learned"], ["none", "none"]], "learned"),
    };
    const seqLenShown = element("output", {}, ["8"]);
    const untrained = element("div", { class: "mhx-group", "data-group": "untrained" }, [
      labelled("seq_len", c.seqLen, [seqLenShown]), labelled("d_model", c.dModel), labelled("num_heads", c.numHeads),
      labelled("mask", c.mask), labelled("seed", c.seed), ...(L.rope ? [labelled("RoPE", c.rope)] : [])]);
    const trained = element("div", { class: "mhx-group", "data-group": "trained" }, [
      labelled("tokens", c.tokens), labelled("layer", c.layer), labelled("positions", c.positions)]);
    const readout = element("div", { class: "mhx-readout" });
    const cell = element("p", { class: "mhx-cell", "aria-live": "polite" },
      ["Point at a cell of a heatmap (or tap it, or Tab to the heatmaps and use the arrow keys; "
        + "Page Up/Down changes head) to read its exact weight and its row's sum."]);
    const heads = element("canvas", { class: "mhx-heads", role: "img", "aria-label": "attention weights per head" });
    const pca = element("canvas", { class: "mhx-pca", role: "img", "aria-label": "PCA of inputs and outputs" });
    root.replaceChildren(element("div", { class: "mhx" }, [
      element("p", { class: "mhx-lead" }, ["Live in this page: move a control and the pictures redraw in your "
        + "browser, from the chapter's own weights and random streams (no kernel, nothing downloaded)."]),
      labelled("weights", c.trained), untrained, trained, readout, cell,
      element("div", { class: "mhx-pictures" }, [heads, pca])]));
    return { c, seqLenShown, untrained, trained, readout, cell, heads, pca };
  }

  function start(root, data) {
    const ui = build(root, data), c = ui.c, L = data.limits;
    let drawnTokens = L.defaultTokens, redraws = 0;

    function state() {
      const trained = c.trained.value === "1", dModel = Number(c.dModel.value), numHeads = Number(c.numHeads.value);
      const parsed = ns.frame.parseTokens(c.tokens.value, L.maxSeqLen);
      let note = null;
      if (trained && parsed.error) note = `tokens: ${parsed.error}; still showing the tokens below`;
      else if (trained) drawnTokens = c.tokens.value;
      let positions = trained ? c.positions.value : "none";
      if (!trained && c.rope.value === "on") {
        if ((dModel / numHeads) % 2 === 0) positions = "rope";
        else note = `RoPE is off: it turns pairs of coordinates, and d_k = ${dModel / numHeads} is odd`;
      }
      return { trained, seq_len: Number(c.seqLen.value), d_model: dModel, num_heads: numHeads,
        seed: Number(c.seed.value), mask: c.mask.value, tokens: drawnTokens, layer: Number(c.layer.value),
        positions, note };
    }

    function readout(s, frame) {
      const f2 = (values) => values.map((v) => v.toFixed(2)).join(" ");
      const lines = s.note ? [s.note] : [];
      const numHeads = frame.weights.length, n = frame.labels.length;
      if (s.trained) {
        lines.push(`trained model · layer ${s.layer} of 2 · num_heads=${numHeads} · d_k=${data.trained.dModel / numHeads}`
          + ` · mask=causal · positions=${s.positions} · ${n} tokens: ${frame.labels.join(" ")}`);
        lines.push(`previous-token score per head: ${f2(frame.scores.previous_token)}`);
        lines.push(frame.scores.prefix_matching ? `prefix-matching score per head: ${f2(frame.scores.prefix_matching)}`
          : "prefix-matching score per head: no letter repeats yet (type one twice)");
        const letters = (ids) => ids.map((t) => (t < 26 ? "abcdefghijklmnopqrstuvwxyz"[t] : `<${t}>`)).join(" ");
        lines.push(`the model's guess for the next letter, after each token: ${letters(frame.predictions)}`);
        if (frame.continuation && frame.continuation.length) {
          lines.push(`the model writes on, one letter at a time (greedy): ${letters(frame.continuation)}`);
        }
      } else {
        lines.push(`seq_len=${n} · num_heads=${numHeads} · d_k=${s.d_model / numHeads} · mask=${s.mask}`
          + ` · positions=${s.positions} · seed=${s.seed}`);
        frame.rowSums.forEach((sums, h) => lines.push(`row sums, head ${h}: ${f2(sums)}`));
      }
      ui.readout.replaceChildren(...lines.map((line, i) => element("code",
        { class: i === 0 && s.note ? "mhx-note" : "" }, [line])));
    }

    let last = null;  // the frame and panels drawn last, for the cell readout
    ns.draw.readCells(ui.heads, () => last, (text, cell) => { ui.cell.textContent = text; window.__explorerCell = cell; });

    function redraw() {
      const started = performance.now(), s = state();
      ui.untrained.hidden = s.trained; ui.trained.hidden = !s.trained;
      ui.seqLenShown.textContent = c.seqLen.value;
      const tokens = s.trained ? ns.frame.parseTokens(s.tokens, L.maxSeqLen).ids : null;
      const frame = ns.frame.compute({ trained: s.trained, seqLen: s.seq_len, dModel: s.d_model, numHeads: s.num_heads,
        seed: s.seed, mask: s.mask, layer: s.layer, positions: s.positions }, data, tokens);
      frame.padded = !s.trained && s.mask === "padding" ? ns.frame.paddedLength(s.seq_len) : frame.labels.length;
      const width = Math.max(280, ui.heads.parentElement.clientWidth || 760);
      const headsWidth = Math.min(460, width), pcaWidth = Math.min(290, width);
      const headsTitle = s.trained ? [`attention weights, layer ${s.layer} of the trained model`,
        "row = query, column = key · grey = masked (causal)"]
        : [`attention weights, sequence ${L.shown + 1} of a batch of 2 (untrained)`,
          "row = query, column = key" + (s.mask === "none" ? "" : " · grey = masked")];
      const panels = ns.draw.drawHeads(ui.heads, frame, headsTitle, headsWidth);
      const what = s.trained ? `layer ${s.layer} moved each token` : "the layer moved each token";
      const total = 100 * (frame.explained[0] + frame.explained[1]);
      const plane = ns.draw.drawPca(ui.pca, frame, [`where ${what}`, `(PCA: ${total.toFixed(0)}% of the variance)`],
        pcaWidth);
      frame.rowSums = frame.weights.map((w) => w.map((row) => row.reduce((a, b) => a + b, 0)));
      readout(s, frame);
      last = { frame, panels };
      redraws += 1;
      window.__explorerFrame = { state: s, weights: frame.weights.map((w) => w.map((row) => Array.from(row))),
        allowed: frame.allowed, inputs_2d: frame.inputs2d, outputs_2d: frame.outputs2d, explained: frame.explained,
        labels: frame.labels, real: frame.real, predictions: frame.predictions, continuation: frame.continuation, scores: frame.scores, panels, plane,
        row_sums: frame.rowSums,
        redraws, ms: performance.now() - started };
    }

    c.dModel.addEventListener("change", () => {  // offer only the head counts that divide d_model
      const choices = ns.frame.headChoices(Number(c.dModel.value), L.maxHeads), old = Number(c.numHeads.value);
      const keep = choices.includes(old) ? old : Math.max(...choices.filter((h) => h <= old));
      c.numHeads.replaceChildren(...choices.map((h) => element("option", { value: String(h) }, [String(h)])));
      c.numHeads.value = String(keep);
    });
    Object.values(c).forEach((control) => control.addEventListener(
      control.tagName === "SELECT" ? "change" : "input", redraw));
    redraw();
  }

  function init() {
    const root = document.getElementById(ROOT_ID);
    if (!root || !window.MHATTN_EXPLORER) return;
    start(root, window.MHATTN_EXPLORER);
    // the stored still frame and its note are for renderers without JavaScript
    document.querySelectorAll(".tag_mhattn-still-frame").forEach((cell) => { cell.hidden = true; cell.style.display = "none"; });
  }

  ns.ui = { element, select, labelled };  // for the chapters' live figures (live-figures.js)

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})(window.MhattnExplorer = window.MhattnExplorer || {});
