/* Live figures inside the chapters: small pictures computed in the browser by the explorer's own
   engine (explorer-math.js, explorer-frame.js, explorer-draw.js) from its data file, each with only
   the controls its idea needs. A chapter's page holds <div class="mhattn-live-figure"
   data-figure="NAME"> where its text invites the reader to try (book/build.py writes it in place
   of the notebook's <!-- live-figure: NAME --> marker, which JupyterLab and GitHub do not show):

   - mask (chapter 2): one head with Q = K = V = the tokens, under no mask, a causal mask, padding
     at the end, or padding at the start with a causal mask, whose filler queries may see nothing;
   - heads (chapter 4): every head of the explorer's untrained layer, side by side;
   - rope (chapter 8): the layer's weights with RoPE on and off, and one query's scores against
     the offset j - i.

   Each figure is state -> numbers (MhattnExplorer.figures[NAME](state, data), which draws nothing),
   then a drawing of them. Pointing at (or tapping) a heatmap's cell reads out its weight and its
   row's sum. For tests, the numbers drawn last are in window.__liveFigures[NAME], the cell read
   last in window.__liveCell. */
(function (ns) {
  "use strict";
  const M = ns.math, SEED = 123;
  const INK = "#222", BLUE = "#1f4e99", GREY = "#8a8a8a";

  function range(n) { return Array.from({ length: n }, (_, i) => i); }
  function sums(weights) { return weights.map((w) => w.map((row) => row.reduce((a, b) => a + b, 0))); }
  function f2(values) { return values.map((v) => v.toFixed(2)).join(" "); }

  /* The common frame of a figure: a lead, the controls, the readout, the cell readout, the canvases.
     redraw() returns what it drew ({ frame, panels, record }); the record goes to __liveFigures. */
  function figure(root, name, lead, controls, canvases, redraw) {
    const { element } = ns.ui;
    const readout = element("div", { class: "mhx-readout" });
    const cell = element("p", { class: "mhx-cell", "aria-live": "polite" },
      ["Point at a cell of a heatmap (or tap it, or Tab to the heatmaps and use the arrow keys; "
        + "Page Up/Down changes head) to read its exact weight and its row's sum."]);
    root.replaceChildren(element("div", { class: "mhx mhx-figure" }, [
      element("p", { class: "mhx-lead" }, [lead]), element("div", { class: "mhx-group" }, controls),
      readout, cell, element("div", { class: "mhx-pictures" }, canvases)]));
    let last = null, redraws = 0;
    ns.draw.readCells(canvases[0], () => last, (text, read) => {
      cell.textContent = text;
      window.__liveCell = { figure: name, ...read };
    });
    function update() {
      const width = Math.min(460, Math.max(260, root.clientWidth || 460));
      last = redraw(width, readout);
      redraws += 1;
      const { frame, panels, record } = last;
      window.__liveFigures = window.__liveFigures || {};
      window.__liveFigures[name] = { ...record, weights: frame.weights.map((w) => w.map((row) => Array.from(row))),
        allowed: frame.allowed, labels: frame.labels, row_sums: sums(frame.weights), panels, redraws };
    }
    root.querySelectorAll("[data-control]").forEach((control) => control.addEventListener(
      control.tagName === "SELECT" ? "change" : "input", update));
    update();
  }

  function lines(readout, texts) {
    readout.replaceChildren(...texts.map((text) => ns.ui.element("code", {}, [text])));
  }

  function heatmapCanvas(label) {
    return ns.ui.element("canvas", { class: "mhx-heads", role: "img", "aria-label": label });
  }

  function slider(name, min, max, value, label) {
    return ns.ui.element("input", { type: "range", "data-control": name, min, max, value, "aria-label": label });
  }

  // ---------------------------------------------------------------- chapter 2: the mask

  const MASK = { n: 6, d: 8 };

  /* Whether query i may see key j: mhattn.causal_mask, and mhattn.padding_mask for padding at the end
     (at the start, the same comparison flipped), as chapter 2 combines them. */
  function maskAllowed(mask, n, fillers) {
    if (mask === "causal") return (i, j) => j <= i;
    if (mask === "padding") return (i, j) => j < n - fillers;  // the last `fillers` tokens are padding
    if (mask === "left") return (i, j) => j <= i && j >= fillers;  // the first ones are, and causal
    return () => true;
  }

  function identityLayer(d) {  // W_qkv = [I I I], W_o = I: Q = K = V = the tokens, as chapter 2 draws them
    const Wqkv = new Float64Array(3 * d * d), Wo = new Float64Array(d * d);
    for (let c = 0; c < d; c++) {
      for (let part = 0; part < 3; part++) Wqkv[c * 3 * d + part * d + c] = 1;
      Wo[c * d + c] = 1;
    }
    return { Wqkv, Wo };
  }

  /* The figure's numbers for a state { mask, fillers } (fillers: 0 unless the mask pads). */
  function maskNumbers(state, data) {
    const { n, d } = MASK, allowed = maskAllowed(state.mask, n, state.fillers);
    const x = ns.frame.randomTokens(data, SEED, n, d)[data.limits.shown];
    const { weights } = M.attention(x, n, d, 1, identityLayer(d), allowed, 0);
    return { weights, allowed: range(n).map((i) => range(n).map((j) => allowed(i, j))) };
  }

  function maskFigure(root, data) {
    const { select, labelled } = ns.ui, { n } = MASK;
    const mask = select("mask", [["no mask", "none"], ["causal", "causal"], ["padding at the end", "padding"],
      ["causal + padding at the start", "left"]], "left");
    const fillers = slider("fillers", 0, n - 1, 2, "filler tokens"), shown = ns.ui.element("output", {}, ["2"]);
    const fillerControl = labelled("filler tokens", fillers, [shown]);
    const heat = heatmapCanvas("attention weights under the chosen mask");
    figure(root, "mask", "Live in this page: choose a mask and how many tokens are fillers. With padding at the "
      + "start and a causal mask, the filler queries may see nothing: their rows are all grey, weight 0, sum 0.",
    [labelled("mask", mask), fillerControl], [heat],
    (width, readout) => {
      const k = Number(fillers.value), padded = mask.value === "padding" || mask.value === "left";
      shown.textContent = fillers.value;
      fillerControl.hidden = !padded;
      const state = { mask: mask.value, fillers: padded ? k : 0 }, { weights, allowed } = maskNumbers(state, data);
      const frame = { weights, allowed, labels: range(n).map(String), padded: mask.value === "padding" ? n - k : n };
      const panels = ns.draw.drawHeads(heat, frame, ["attention weights, Q = K = V = 6 random tokens",
        "row = query, column = key · grey = masked"], width);
      const rowSums = sums(weights)[0], empty = range(n).filter((i) => !frame.allowed[i].some(Boolean));
      lines(readout, [`mask=${mask.value === "left" ? "causal + padding at the start" : mask.value}`
        + (padded ? ` · ${k} filler token${k === 1 ? "" : "s"}` : ""), `row sums: ${f2(rowSums)}`,
      empty.length ? `queries ${empty.join(", ")} may attend to nothing: their weights and outputs are 0`
        : "every query may attend to at least one key"]);
      return { frame, panels, record: { state, empty } };
    });
  }

  // ---------------------------------------------------------------- chapter 4: heads side by side

  const HEADS = { n: 6, d: 64 };

  /* Every head's weights for a state { num_heads, seed }: the explorer's frame of that layer. */
  function headsNumbers(state, data) {
    const { n, d } = HEADS;
    return ns.frame.compute({ trained: false, seqLen: n, dModel: d, numHeads: state.num_heads, seed: state.seed,
      mask: "none", positions: "none" }, data, null);
  }

  function headsFigure(root, data) {
    const { select, labelled } = ns.ui, L = data.limits, { n, d } = HEADS;
    const same = (values) => values.map((v) => [String(v), v]);
    const numHeads = select("numHeads", same(ns.frame.headChoices(d, L.maxHeads)), 4);
    const seed = select("seed", same(L.seeds), L.seeds[0]), heat = heatmapCanvas("attention weights per head");
    figure(root, "heads", "Live in this page: change the number of heads, or the seed that draws the layer's "
      + "weights and the tokens. Every head gets the same tokens; each attends in its own way.",
    [labelled("num_heads", numHeads), labelled("seed", seed)], [heat],
    (width, readout) => {
      const state = { num_heads: Number(numHeads.value), seed: Number(seed.value) };
      const frame = headsNumbers(state, data);
      frame.padded = n;
      const panels = ns.draw.drawHeads(heat, frame, [`attention weights of one untrained layer, per head`,
        `${n} tokens · d_model = ${d} · d_k = ${d / state.num_heads}`], width);
      lines(readout, [`num_heads=${state.num_heads} · d_k=${d / state.num_heads} · seed=${state.seed}`,
        ...sums(frame.weights).map((row, h) => `row sums, head ${h}: ${f2(row)}`)]);
      return { frame, panels, record: { state } };
    });
  }

  // ---------------------------------------------------------------- chapter 8: RoPE on and off

  const ROPE = { n: 12, d: 16 };

  function tile(vector, n) {  // the same vector at every position, (n, d_k)
    const out = new Float64Array(n * vector.length);
    for (let p = 0; p < n; p++) out.set(vector, p * vector.length);
    return out;
  }

  /* scores[i][j] = (q turned to position i) . (k turned to position j), with q the query and k the key
     of token 0 in the layer's one head: the chapter's picture with the explorer's weights. */
  function offsetScores(x, n, d, W, base) {
    const qkv = M.matmul(x, n, d, W.Wqkv, 3 * d);
    let Q = tile(qkv.subarray(0, d), n), K = tile(qkv.subarray(d, 2 * d), n);
    if (base) { Q = M.rope(Q, n, d, base); K = M.rope(K, n, d, base); }
    return range(n).map((i) => range(n).map((j) => {
      let s = 0;
      for (let c = 0; c < d; c++) s += Q[i * d + c] * K[j * d + c];
      return s;
    }));
  }

  /* The weights of one head with RoPE on or off for a state { rope, query }, and the scores of token 0's
     query and key turned to every position (scores[i][j]), and along the offset j - i (curve[j - i + n - 1]). */
  function ropeNumbers(state, data) {
    const { n, d } = ROPE, base = state.rope ? data.limits.ropeBase : 0;
    const frame = ns.frame.compute({ trained: false, seqLen: n, dModel: d, numHeads: 1, seed: SEED, mask: "none",
      positions: state.rope ? "rope" : "none" }, data, null);
    const x = ns.frame.randomTokens(data, SEED, n, d)[data.limits.shown];
    const scores = offsetScores(x, n, d, M.layerWeights(d, SEED, Math.max(...data.limits.dModels)), base);
    const curve = range(2 * n - 1).map((k) => k - (n - 1)).map((o) => scores[Math.max(0, -o)][Math.max(0, o)]);
    return { ...frame, scores, curve };
  }

  function drawOffsets(canvas, scores, curveScores, query, width) {  // the scores against j - i; query's own in blue
    const n = scores.length, height = 260, ctx = ns.draw.prepare(canvas, width, height);
    const box = { x: 52, y: 40, w: width - 64, h: height - 84 };
    const curve = curveScores.map((s, k) => [k - (n - 1), s]);
    const values = scores.flat(), lo = Math.min(...values), hi = Math.max(...values), pad = (hi - lo) * 0.1 + 0.05;
    const at = ([o, s]) => [box.x + (o + n - 1) / (2 * n - 2) * box.w, box.y + (hi + pad - s) / (hi - lo + 2 * pad) * box.h];
    ctx.textAlign = "center";
    ctx.fillText(`score of the query at position ${query} with every key, against j - i`, width / 2, 16);
    ctx.strokeRect(box.x, box.y, box.w, box.h);
    ctx.strokeStyle = GREY; ctx.lineWidth = 1.5; ctx.beginPath();
    curve.forEach((point, k) => { const [px, py] = at(point); if (k) ctx.lineTo(px, py); else ctx.moveTo(px, py); });
    ctx.stroke();
    ctx.fillStyle = BLUE;
    scores[query].forEach((s, j) => { const [px, py] = at([j - query, s]); ctx.beginPath(); ctx.arc(px, py, 4, 0, 2 * Math.PI); ctx.fill(); });
    ctx.fillStyle = INK;
    [[-(n - 1), String(-(n - 1))], [0, "0"], [n - 1, String(n - 1)]].forEach(([o, text]) => {
      ctx.fillText(text, at([o, lo])[0], box.y + box.h + 14);
    });
    ctx.fillText("offset j - i (key position - query position)", box.x + box.w / 2, height - 10);
    ctx.textAlign = "right";
    [hi, lo].forEach((s) => ctx.fillText(s.toFixed(2), box.x - 4, at([0, s])[1] + 4));
    ctx.save(); ctx.translate(14, box.y + box.h / 2); ctx.rotate(-Math.PI / 2); ctx.textAlign = "center";
    ctx.fillText("score q · k", 0, 0); ctx.restore();
    ctx.textAlign = "left";
    ctx.fillStyle = GREY; ctx.fillText("— every pair", box.x + 6, box.y + 16);
    ctx.fillStyle = BLUE; ctx.fillText("● this query", box.x + 100, box.y + 16);
  }

  function ropeFigure(root, data) {
    const { select, labelled, element } = ns.ui, { n, d } = ROPE;
    const rope = select("rope", [["off", "off"], ["on", "on"]], "on");
    const query = slider("query", 0, n - 1, 5, "query position"), shown = element("output", {}, ["5"]);
    const heat = heatmapCanvas("attention weights with RoPE on or off"), scoreCanvas = element("canvas", { class: "mhx-offsets", role: "img",
      "aria-label": "one query's scores against the offset j - i" });
    figure(root, "rope", "Live in this page: turn RoPE on and off, and move the query. With RoPE on, the "
      + "query's scores (blue) always sit on the same curve: they depend only on the offset j - i.",
    [labelled("RoPE", rope), labelled("query position", query, [shown])],
    [heat, scoreCanvas],
    (width, readout) => {
      const on = rope.value === "on", i = Number(query.value);
      shown.textContent = query.value;
      const frame = ropeNumbers({ rope: on, query: i }, data), { scores, curve } = frame;
      frame.padded = n;
      const panels = ns.draw.drawHeads(heat, frame, [`attention weights, RoPE ${on ? "on" : "off"}`,
        `${n} random tokens · one head · d_k = ${d}`], width);
      drawOffsets(scoreCanvas, scores, curve, i, width);
      lines(readout, [`RoPE ${on ? "on" : "off"} · query at position ${i}`,
        `its scores with keys 0..${n - 1}: ${f2(scores[i])}`, `row sums: ${f2(sums(frame.weights)[0])}`]);
      return { frame, panels, record: { state: { rope: on, query: i }, scores, curve } };
    });
  }

  // ---------------------------------------------------------------- chapter 10: a real model's heads

  /* One stored head of SmolLM2 on chapter 10's sentence: { head index } -> its weights, computed by the
     model when the book was built (smollm_heads.json), not in the page. */
  function smollmNumbers(state, data) {
    const stored = data.smollm.heads[state.index], n = data.smollm.tokens.length;
    return { weights: [stored.weights], allowed: range(n).map((i) => range(n).map((j) => j <= i)),
      labels: data.smollm.tokens, names: [`layer ${stored.layer}, head ${stored.head}`], padded: n };
  }

  function smollmFigure(root, data) {
    const { select, labelled } = ns.ui, heads = data.smollm.heads;
    const choice = select("index", heads.map((h, k) => [`layer ${h.layer}, head ${h.head} (${h.kind})`, k]), 0);
    const heat = heatmapCanvas("one head of SmolLM2 on a sentence");
    figure(root, "smollm", "In this page: choose one of SmolLM2's heads. The weights were computed by the "
      + "model; the page only draws them. Induction heads look at the token after an earlier copy of the "
      + "current one, previous-token heads one step back, sink heads at the first token.",
    [labelled("head", choice)], [heat],
    (width, readout) => {
      const index = Number(choice.value), stored = heads[index], frame = smollmNumbers({ index }, data);
      const panels = ns.draw.drawHeads(heat, frame, [`SmolLM2, layer ${stored.layer}, head ${stored.head}: `
        + `${stored.kind}`, `${data.smollm.tokens.length} tokens · the weights the model computed`], width);
      const first = stored.weights.slice(1).map((row) => row[0]);
      lines(readout, [`layer ${stored.layer} · head ${stored.head} · ${stored.kind}`,
        `mean weight on the first token: ${(first.reduce((a, b) => a + b, 0) / first.length).toFixed(2)}`]);
      return { frame, panels, record: { state: { index, layer: stored.layer, head: stored.head } } };
    });
  }

  const FIGURES = { mask: maskFigure, heads: headsFigure, rope: ropeFigure, smollm: smollmFigure };
  ns.figures = { mask: maskNumbers, heads: headsNumbers, rope: ropeNumbers, smollm: smollmNumbers };

  function init() {
    if (!window.MHATTN_EXPLORER || !ns.ui) return;
    document.querySelectorAll(".mhattn-live-figure[data-figure]").forEach((root) => {
      const make = FIGURES[root.dataset.figure];
      if (make) make(root, window.MHATTN_EXPLORER);
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})(window.MhattnExplorer = window.MhattnExplorer || {});
