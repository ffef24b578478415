/* The live explorer's frame: state -> numbers, as mhattn.explorer.frame.compute_frame computes them.
   Depends on explorer-math.js and the data file (window.MHATTN_EXPLORER). */
(function (ns) {
  "use strict";
  const M = ns.math, LETTERS = "abcdefghijklmnopqrstuvwxyz";
  const cache = { weights: {}, tokens: {}, model: null };

  function paddedLength(seqLen) { return seqLen - Math.floor(seqLen / 2); }

  function headChoices(dModel, maxHeads) {
    const choices = [];
    for (let h = 1; h <= maxHeads; h++) if (dModel % h === 0) choices.push(h);
    return choices;
  }

  function parseTokens(text, longest) {  // mhattn.explorer.frame.parse_tokens (mhattn.learn.letters.encode_letters)
    const letters = text.toLowerCase().replace(/\s+/g, "");
    const bad = [...new Set(letters.split("").filter((c) => !LETTERS.includes(c)))].sort();
    if (bad.length) return { error: `tokens must hold only letters a-z and spaces; got ${bad.join(" ")}` };
    if (letters.length < 2 || letters.length > longest) {
      return { error: `tokens must hold 2 to ${longest} letters; got ${letters.length}` };
    }
    return { ids: letters.split("").map((c) => LETTERS.indexOf(c)) };
  }

  function randomTokens(data, seed, seqLen, dModel) {  // mhattn.explorer.frame.random_tokens, shipped
    const key = String(seed);
    if (!cache.tokens[key]) cache.tokens[key] = data.random.tokens[key].map(M.decode);
    return cache.tokens[key].map((stream) => stream.subarray(0, seqLen * dModel));
  }

  function model(data) {
    if (!cache.model) {
      const t = data.trained;
      cache.model = { ...t, embed: M.decode(t.embed), pos: M.decode(t.pos), unembed: M.decode(t.unembed),
        layers: t.layers.map((layer) => ({ Wqkv: M.decode(layer.W_qkv), Wo: M.decode(layer.W_o) })) };
    }
    return cache.model;
  }

  function untrainedFrame(state, data) {
    const { seqLen: n, dModel: d, numHeads, seed, mask } = state, shown = data.limits.shown;
    const key = `${d}:${seed}`;
    if (!cache.weights[key]) cache.weights[key] = M.layerWeights(d, seed, Math.max(...data.limits.dModels));
    const x = randomTokens(data, seed, n, d);
    const real = mask === "padding" ? [n, paddedLength(n)] : [n, n];
    const allowedIn = (b) => (i, j) => (mask === "causal" ? j <= i : j < real[b]);
    const ropeBase = state.positions === "rope" ? data.limits.ropeBase : 0;
    const run = x.map((seq, b) => M.attention(seq, n, d, numHeads, cache.weights[key], allowedIn(b), ropeBase));
    const { output, weights } = run[shown];
    const pca = M.pca2d(x[shown], output, n, d);
    return { ...pca, weights, allowed: grid(n, allowedIn(shown)), labels: range(n).map(String),
      real: range(n).map((i) => i < real[shown]), tokens: null, predictions: null, scores: null };
  }

  const CONTINUATION = 5;  // mhattn.explorer.frame.CONTINUATION

  function trainedFrame(state, data, tokens) {
    const m = model(data), n = tokens.length, d = m.dModel, causal = (i, j) => j <= i;
    let h = new Float64Array(n * d), before = null, after = null, shownWeights = null;
    tokens.forEach((t, i) => {
      for (let c = 0; c < d; c++) h[i * d + c] = m.embed[t * d + c] + (state.positions === "learned" ? m.pos[i * d + c] : 0);
    });
    m.layers.forEach((layer, index) => {
      const { output, weights } = M.attention(h, n, d, m.numHeads, layer, causal, 0);
      const next = h.map((value, i) => value + output[i]);
      if (index === state.layer) { before = h; after = next; shownWeights = weights; }
      h = next;
    });
    const logits = M.matmul(h, n, d, m.unembed, m.vocab);
    const predictions = range(n).map((i) => {
      let best = 0;
      for (let v = 1; v < m.vocab; v++) if (logits[i * m.vocab + v] > logits[i * m.vocab + best]) best = v;
      return best;
    });
    const pca = M.pca2d(before, after, n, d);
    const learned = state.positions === "learned";
    const continuation = learned ? writeOn(m, tokens, Math.min(CONTINUATION, m.pos.length / d + 1 - n)) : null;
    return { ...pca, weights: shownWeights, allowed: grid(n, causal), labels: tokens.map((t) => LETTERS[t]),
      real: range(n).map(() => true), tokens, predictions, scores: scores(shownWeights, tokens), continuation };
  }

  /* mhattn.learn.generate.generate, greedy: the trained model's next `count` tokens after `tokens`
     (learned positions). Python reuses each layer's keys and values through a KV cache; here the
     whole prefix is recomputed at every step, which gives the same tokens. */
  function writeOn(m, tokens, count) {
    const written = [], d = m.dModel, causal = (i, j) => j <= i;
    for (let step = 0; step < count; step++) {
      const sequence = tokens.concat(written), n = sequence.length;
      let h = new Float64Array(n * d);
      sequence.forEach((t, i) => { for (let c = 0; c < d; c++) h[i * d + c] = m.embed[t * d + c] + m.pos[i * d + c]; });
      m.layers.forEach((layer) => {
        const { output } = M.attention(h, n, d, m.numHeads, layer, causal, 0);
        h = h.map((value, i) => value + output[i]);
      });
      const logits = M.matmul(h.subarray((n - 1) * d), 1, d, m.unembed, m.vocab);  // the last position's
      let best = 0;
      for (let v = 1; v < m.vocab; v++) if (logits[v] > logits[best]) best = v;
      written.push(best);
    }
    return written;
  }

  function scores(weights, tokens) {  // mhattn.learn.circuits.previous_token_score and mhattn.learn.circuits.prefix_matching_score
    const n = tokens.length;
    const previous = weights.map((w) => { let s = 0; for (let t = 1; t < n; t++) s += w[t][t - 1]; return s / (n - 1); });
    const matching = weights.map((w) => {
      let total = 0, count = 0;
      for (let t = 0; t < n; t++) {
        let credited = false, s = 0;
        for (let j = 1; j <= t; j++) if (tokens[j - 1] === tokens[t]) { credited = true; s += w[t][j]; }
        if (credited) { total += s; count += 1; }
      }
      return count ? total / count : null;
    });
    return { previous_token: previous, prefix_matching: matching[0] === null ? null : matching };
  }

  function range(n) { return Array.from({ length: n }, (_, i) => i); }
  function grid(n, allowed) { return range(n).map((i) => range(n).map((j) => allowed(i, j))); }

  function compute(state, data, tokens) {
    return state.trained ? trainedFrame(state, data, tokens) : untrainedFrame(state, data);
  }

  ns.frame = { compute, headChoices, parseTokens, paddedLength, randomTokens };
})(window.MhattnExplorer = window.MhattnExplorer || {});
