/* The live explorer's numbers, in plain JavaScript: the same recipe as mhattn.explorer.frame.

   Untrained: MultiHeadAttention's weights from NumPy's legacy RandomState(seed) stream
   (MT19937 and the polar Gaussian), the random tokens shipped by the page's data file.
   Trained: the shipped checkpoint, run layer by layer. Then the 2-D PCA of the shown
   layer's inputs and outputs (symmetric eigenvectors), the scores and the guesses.
   Everything in float64, as NumPy computes it. */
(function (ns) {
  "use strict";

  function decode(b64) {  // little-endian float64 bytes, base64 -> Float64Array
    const text = atob(b64), bytes = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    return new Float64Array(bytes.buffer);
  }

  function randomState(seed) {  // np.random.RandomState(seed): MT19937 and legacy_gauss
    const mt = new Uint32Array(624);
    mt[0] = seed >>> 0;
    for (let i = 1; i < 624; i++) mt[i] = (Math.imul(1812433253, mt[i - 1] ^ (mt[i - 1] >>> 30)) + i) >>> 0;
    let index = 624, cached = null;
    function next() {
      if (index >= 624) {
        for (let k = 0; k < 624; k++) {
          const y = (mt[k] & 0x80000000) | (mt[(k + 1) % 624] & 0x7fffffff);
          mt[k] = mt[(k + 397) % 624] ^ (y >>> 1) ^ ((y & 1) ? 0x9908b0df : 0);
        }
        index = 0;
      }
      let y = mt[index++];
      y ^= y >>> 11; y ^= (y << 7) & 0x9d2c5680; y ^= (y << 15) & 0xefc60000; y ^= y >>> 18;
      return y >>> 0;
    }
    function uniform() { return ((next() >>> 5) * 67108864 + (next() >>> 6)) / 9007199254740992; }
    function gauss() {
      if (cached !== null) { const g = cached; cached = null; return g; }
      let x1, x2, r2;
      do { x1 = 2 * uniform() - 1; x2 = 2 * uniform() - 1; r2 = x1 * x1 + x2 * x2; } while (r2 >= 1 || r2 === 0);
      const f = Math.sqrt(-2 * Math.log(r2) / r2);
      cached = f * x1;
      return f * x2;
    }
    return { gauss };
  }

  const streams = {};  // seed -> the first 4 * 64 * 64 numbers of RandomState(seed).randn

  /* mhattn.MultiHeadAttention(d_model, num_heads, seed): W_qkv, then W_o, from one stream of
     standard normals times sqrt(2 / d_model). Every d_model reads a prefix of the same stream. */
  function layerWeights(dModel, seed, widest) {
    if (!streams[seed]) {
      const rng = randomState(seed), stream = new Float64Array(4 * widest * widest);
      for (let i = 0; i < stream.length; i++) stream[i] = rng.gauss();
      streams[seed] = stream;
    }
    const stream = streams[seed], scale = Math.sqrt(2 / dModel), size = 3 * dModel * dModel;
    return { Wqkv: stream.slice(0, size).map((v) => v * scale),
      Wo: stream.slice(size, size + dModel * dModel).map((v) => v * scale) };
  }

  function matmul(a, rows, inner, b, cols) {  // (rows, inner) @ (inner, cols), row-major
    const out = new Float64Array(rows * cols);
    for (let i = 0; i < rows; i++) {
      for (let k = 0; k < inner; k++) {
        const aik = a[i * inner + k];
        for (let j = 0; j < cols; j++) out[i * cols + j] += aik * b[k * cols + j];
      }
    }
    return out;
  }

  function rope(vectors, n, dk, base) {  // mhattn.core.positions.apply_rope: pairs (c, c + dk/2) turn by p * theta_c
    const half = dk / 2, out = new Float64Array(vectors);
    const theta = Array.from({ length: half }, (_, c) => Math.pow(base, -(2 * c) / dk));
    for (let p = 0; p < n; p++) {
      for (let c = 0; c < half; c++) {
        const angle = p * theta[c], cos = Math.cos(angle), sin = Math.sin(angle);
        const x1 = vectors[p * dk + c], x2 = vectors[p * dk + c + half];
        out[p * dk + c] = x1 * cos - x2 * sin;
        out[p * dk + c + half] = x1 * sin + x2 * cos;
      }
    }
    return out;
  }

  /* One sequence through mhattn.MultiHeadAttention.forward (mhattn.core.projection.project_qkv, then
     mhattn.scaled_dot_product_attention):
     x (n, d) -> output (n, d) and weights[h][i][j].
     allowed(i, j) says whether query i may see key j. */
  function attention(x, n, d, numHeads, W, allowed, ropeBase) {
    const dk = d / numHeads, qkv = matmul(x, n, d, W.Wqkv, 3 * d), root = Math.sqrt(dk);
    const heads = new Float64Array(n * d), weights = [];
    for (let h = 0; h < numHeads; h++) {
      let Q = new Float64Array(n * dk), K = new Float64Array(n * dk);
      for (let i = 0; i < n; i++) {
        for (let c = 0; c < dk; c++) {
          Q[i * dk + c] = qkv[i * 3 * d + h * dk + c];  // scaled below, after any rotation
          K[i * dk + c] = qkv[i * 3 * d + d + h * dk + c];
        }
      }
      if (ropeBase) { Q = rope(Q, n, dk, ropeBase); K = rope(K, n, dk, ropeBase); }
      for (let i = 0; i < Q.length; i++) Q[i] /= root;  // (Q / sqrt(d_k)) @ K^T, as mhattn scales
      const rows = [];
      for (let i = 0; i < n; i++) {
        const row = new Float64Array(n);
        let max = -Infinity;
        for (let j = 0; j < n; j++) {
          if (!allowed(i, j)) { row[j] = -Infinity; continue; }
          let s = 0;
          for (let c = 0; c < dk; c++) s += Q[i * dk + c] * K[j * dk + c];
          row[j] = s;
          if (s > max) max = s;
        }
        let total = 0;
        for (let j = 0; j < n; j++) { row[j] = max === -Infinity ? 0 : Math.exp(row[j] - max); total += row[j]; }
        for (let j = 0; j < n; j++) row[j] = total > 0 ? row[j] / total : 0;
        for (let c = 0; c < dk; c++) {
          let s = 0;
          for (let j = 0; j < n; j++) s += row[j] * qkv[j * 3 * d + 2 * d + h * dk + c];
          heads[i * d + h * dk + c] = s;
        }
        rows.push(row);
      }
      weights.push(rows);
    }
    return { output: matmul(heads, n, d, W.Wo, d), weights };
  }

  /* Eigenvalues and eigenvectors (columns of V) of a symmetric m x m matrix: Householder
     reduction to a tridiagonal matrix, then the implicit QL method (tred2 and tql2 of
     EISPACK, as JAMA writes them). */
  function eigh(A, m) {
    const V = [], d = new Float64Array(m), e = new Float64Array(m);
    for (let i = 0; i < m; i++) V.push(Float64Array.from(A.subarray(i * m, (i + 1) * m)));
    tred2(V, d, e, m);
    tql2(V, d, e, m);
    const flat = new Float64Array(m * m);
    for (let i = 0; i < m; i++) flat.set(V[i], i * m);
    return { values: Array.from(d), V: flat };
  }

  function tred2(V, d, e, n) {
    for (let j = 0; j < n; j++) d[j] = V[n - 1][j];
    for (let i = n - 1; i > 0; i--) {
      let scale = 0, h = 0;
      for (let k = 0; k < i; k++) scale += Math.abs(d[k]);
      if (scale === 0) {
        e[i] = d[i - 1];
        for (let j = 0; j < i; j++) { d[j] = V[i - 1][j]; V[i][j] = 0; V[j][i] = 0; }
      } else {
        for (let k = 0; k < i; k++) { d[k] /= scale; h += d[k] * d[k]; }
        let f = d[i - 1], g = Math.sqrt(h);
        if (f > 0) g = -g;
        e[i] = scale * g; h -= f * g; d[i - 1] = f - g;
        for (let j = 0; j < i; j++) e[j] = 0;
        for (let j = 0; j < i; j++) {
          f = d[j]; V[j][i] = f; g = e[j] + V[j][j] * f;
          for (let k = j + 1; k <= i - 1; k++) { g += V[k][j] * d[k]; e[k] += V[k][j] * f; }
          e[j] = g;
        }
        f = 0;
        for (let j = 0; j < i; j++) { e[j] /= h; f += e[j] * d[j]; }
        const hh = f / (h + h);
        for (let j = 0; j < i; j++) e[j] -= hh * d[j];
        for (let j = 0; j < i; j++) {
          f = d[j]; g = e[j];
          for (let k = j; k <= i - 1; k++) V[k][j] -= f * e[k] + g * d[k];
          d[j] = V[i - 1][j]; V[i][j] = 0;
        }
      }
      d[i] = h;
    }
    for (let i = 0; i < n - 1; i++) {  // accumulate the transformations
      V[n - 1][i] = V[i][i]; V[i][i] = 1;
      const h = d[i + 1];
      if (h !== 0) {
        for (let k = 0; k <= i; k++) d[k] = V[k][i + 1] / h;
        for (let j = 0; j <= i; j++) {
          let g = 0;
          for (let k = 0; k <= i; k++) g += V[k][i + 1] * V[k][j];
          for (let k = 0; k <= i; k++) V[k][j] -= g * d[k];
        }
      }
      for (let k = 0; k <= i; k++) V[k][i + 1] = 0;
    }
    for (let j = 0; j < n; j++) { d[j] = V[n - 1][j]; V[n - 1][j] = 0; }
    V[n - 1][n - 1] = 1; e[0] = 0;
  }

  function tql2(V, d, e, n) {
    for (let i = 1; i < n; i++) e[i - 1] = e[i];
    e[n - 1] = 0;
    let f = 0, tst1 = 0;
    const eps = Math.pow(2, -52);
    for (let l = 0; l < n; l++) {
      tst1 = Math.max(tst1, Math.abs(d[l]) + Math.abs(e[l]));
      let m = l;
      while (m < n - 1 && Math.abs(e[m]) > eps * tst1) m++;
      if (m > l) {
        do {
          let g = d[l], p = (d[l + 1] - g) / (2 * e[l]), r = Math.hypot(p, 1);
          if (p < 0) r = -r;
          d[l] = e[l] / (p + r); d[l + 1] = e[l] * (p + r);
          const dl1 = d[l + 1];
          let h = g - d[l];
          for (let i = l + 2; i < n; i++) d[i] -= h;
          f += h; p = d[m];
          let c = 1, c2 = 1, c3 = 1, s = 0, s2 = 0;
          const el1 = e[l + 1];
          for (let i = m - 1; i >= l; i--) {
            c3 = c2; c2 = c; s2 = s;
            g = c * e[i]; h = c * p; r = Math.hypot(p, e[i]);
            e[i + 1] = s * r; s = e[i] / r; c = p / r;
            p = c * d[i] - s * g;
            d[i + 1] = h + s * (c * g + s * d[i]);
            for (let k = 0; k < n; k++) {
              h = V[k][i + 1];
              V[k][i + 1] = s * V[k][i] + c * h;
              V[k][i] = c * V[k][i] - s * h;
            }
          }
          p = -s * s2 * c3 * el1 * e[l] / dl1;
          e[l] = s * p; d[l] = c * p;
        } while (Math.abs(e[l]) > eps * tst1);
      }
      d[l] += f; e[l] = 0;
    }
  }

  /* mhattn.pictures.embedding_shift.embedding_shift_2d: inputs and outputs (n, d) in one 2-D PCA plane, each component's
     largest-magnitude loading positive. */
  function pca2d(inputs, outputs, n, d) {
    const m = 2 * n, X = new Float64Array(m * d);
    X.set(inputs, 0); X.set(outputs, n * d);
    for (let c = 0; c < d; c++) {
      let mean = 0;
      for (let r = 0; r < m; r++) mean += X[r * d + c];
      mean /= m;
      for (let r = 0; r < m; r++) X[r * d + c] -= mean;
    }
    const gram = m < d, size = gram ? m : d, A = new Float64Array(size * size);
    let trace = 0;
    for (let i = 0; i < m * d; i++) trace += X[i] * X[i];
    for (let i = 0; i < size; i++) {
      for (let j = i; j < size; j++) {
        let s = 0;
        if (gram) for (let c = 0; c < d; c++) s += X[i * d + c] * X[j * d + c];
        else for (let r = 0; r < m; r++) s += X[r * d + i] * X[r * d + j];
        A[i * size + j] = s; A[j * size + i] = s;
      }
    }
    const { values, V } = eigh(A, size);
    const order = values.map((v, i) => i).sort((a, b) => values[b] - values[a]).slice(0, 2);
    const components = order.map((k) => {
      const v = new Float64Array(d);
      if (gram) { for (let r = 0; r < m; r++) for (let c = 0; c < d; c++) v[c] += X[r * d + c] * V[r * size + k]; }
      else for (let c = 0; c < d; c++) v[c] = V[c * size + k];
      let norm = 0, big = 0;
      for (let c = 0; c < d; c++) { norm += v[c] * v[c]; if (Math.abs(v[c]) > Math.abs(v[big])) big = c; }
      const sign = (v[big] < 0 ? -1 : 1) / Math.sqrt(norm);
      for (let c = 0; c < d; c++) v[c] *= sign;
      return v;
    });
    const points = [];
    for (let r = 0; r < m; r++) {
      points.push(components.map((v) => { let s = 0; for (let c = 0; c < d; c++) s += X[r * d + c] * v[c]; return s; }));
    }
    return { inputs2d: points.slice(0, n), outputs2d: points.slice(n), explained: order.map((k) => values[k] / trace) };
  }

  ns.math = { decode, randomState, layerWeights, matmul, rope, attention, pca2d };
})(window.MhattnExplorer = window.MhattnExplorer || {});
