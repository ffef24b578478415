/* The live explorer's picture: heatmaps of every head and the PCA plane, on two <canvas>.
   drawHeads and drawPca return where they drew (CSS pixels), for tests to read pixels back. */
(function (ns) {
  "use strict";
  // matplotlib's "Blues" (ColorBrewer's nine blues, interpolated linearly); masked cells grey
  const BLUES = ["#f7fbff", "#deebf7", "#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b"]
    .map((hex) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)));
  const INK = "#222", BLUE = "#1f4e99", GREY = "#a0a0a0", FONT = "12px sans-serif";

  function blues(w) {  // [r, g, b] of a weight in [0, 1]
    const x = Math.min(Math.max(w, 0), 1) * (BLUES.length - 1), i = Math.min(Math.floor(x), BLUES.length - 2);
    const f = x - i;
    return BLUES[i].map((c, k) => Math.round(c + f * (BLUES[i + 1][k] - c)));
  }

  function heatmap(weights, allowed, n) {  // one head as an n x n image, one pixel per cell
    const image = new ImageData(n, n);
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        const rgb = allowed[i][j] ? blues(weights[i][j]) : [200, 200, 200], at = 4 * (i * n + j);
        image.data[at] = rgb[0]; image.data[at + 1] = rgb[1]; image.data[at + 2] = rgb[2]; image.data[at + 3] = 255;
      }
    }
    const canvas = document.createElement("canvas");
    canvas.width = n; canvas.height = n;
    canvas.getContext("2d").putImageData(image, 0, 0);
    return canvas;
  }

  function prepare(canvas, width, height) {  // crisp on high-density screens
    const ratio = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * ratio); canvas.height = Math.round(height * ratio);
    canvas.style.width = width + "px"; canvas.style.height = height + "px";
    const ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, width, height);
    ctx.font = FONT; ctx.fillStyle = INK; ctx.strokeStyle = INK;
    return ctx;
  }

  function ticks(n, labels) {  // every label up to 16 tokens, else every 8th
    const step = n <= 16 ? 1 : 8, out = [];
    for (let i = 0; i < n; i += step) out.push([i, labels[i]]);
    return out;
  }

  function drawHeads(canvas, frame, title, width) {
    const heads = frame.weights.length, n = frame.labels.length, height = 380;
    const ctx = prepare(canvas, width, height);
    const rows = heads <= 3 ? 1 : 2, cols = Math.ceil(heads / rows);
    const left = 46, top = 44, bar = 50, gap = 10, titleH = 16, bottom = 34;
    const side = Math.floor(Math.min((width - left - bar - (cols - 1) * gap) / cols,
      (height - top - bottom - rows * titleH - (rows - 1) * gap) / rows));
    const cell = side / n, panels = [];
    ctx.textAlign = "center";
    title.forEach((line, i) => ctx.fillText(line, width / 2, 16 + 15 * i));
    for (let h = 0; h < heads; h++) {
      const row = Math.floor(h / cols), col = h % cols;
      const x0 = left + col * (side + gap), y0 = top + titleH + row * (side + titleH + gap);
      ctx.textAlign = "center"; ctx.fillStyle = INK;
      ctx.fillText(frame.names ? frame.names[h] : `head ${h}`, x0 + side / 2, y0 - 4);
      ctx.imageSmoothingEnabled = false;  // square cells, scaled from one pixel each
      ctx.drawImage(heatmap(frame.weights[h], frame.allowed, n), x0, y0, side, side);
      ctx.strokeStyle = INK; ctx.lineWidth = 1; ctx.strokeRect(x0, y0, side, side);
      if (frame.padded < n) {  // the padding queries are below the dashes
        ctx.setLineDash([4, 3]); ctx.beginPath();
        ctx.moveTo(x0, y0 + frame.padded * cell); ctx.lineTo(x0 + side, y0 + frame.padded * cell); ctx.stroke();
        ctx.setLineDash([]);
      }
      ctx.fillStyle = INK;
      if (col === 0) {
        ctx.textAlign = "right";
        ticks(n, frame.labels).forEach(([i, label]) => ctx.fillText(label, x0 - 3, y0 + (i + 0.5) * cell + 4));
      }
      if (h + cols >= heads) {
        ctx.textAlign = "center";
        ticks(n, frame.labels).forEach(([j, label]) => ctx.fillText(label, x0 + (j + 0.5) * cell, y0 + side + 13));
      }
      panels.push({ x: x0, y: y0, size: side, cell });
    }
    ctx.textAlign = "center";
    const last = panels[panels.length - 1], gridBottom = last.y + side;
    ctx.fillText("key", left + (cols * (side + gap) - gap) / 2, gridBottom + 28);
    ctx.save(); ctx.translate(12, (top + titleH + gridBottom) / 2); ctx.rotate(-Math.PI / 2);
    ctx.fillText("query", 0, 0); ctx.restore();
    const bx = left + cols * (side + gap) + 2, by = top + titleH, bh = gridBottom - by;  // the colour bar
    const gradient = ctx.createLinearGradient(0, by + bh, 0, by);  // Blues' nine colours, evenly spaced
    BLUES.forEach((rgb, k) => gradient.addColorStop(k / (BLUES.length - 1), `rgb(${rgb.join(",")})`));
    ctx.fillStyle = gradient; ctx.fillRect(bx, by, 12, bh); ctx.strokeRect(bx, by, 12, bh); ctx.fillStyle = INK; ctx.textAlign = "left";
    [[1, "1"], [0.5, "0.5"], [0, "0"]].forEach(([v, s]) => ctx.fillText(s, bx + 16, by + (1 - v) * bh + 4));
    return panels;
  }

  function arrow(ctx, x0, y0, x1, y1, color) {
    const dx = x1 - x0, dy = y1 - y0, length = Math.hypot(dx, dy);
    ctx.strokeStyle = color; ctx.fillStyle = color; ctx.lineWidth = 1.2;
    ctx.beginPath(); ctx.moveTo(x0, y0); ctx.lineTo(x1, y1); ctx.stroke();
    if (length < 1) return;
    const ux = dx / length, uy = dy / length, head = Math.min(7, length / 2);
    ctx.beginPath(); ctx.moveTo(x1, y1);
    ctx.lineTo(x1 - head * ux + head * 0.45 * uy, y1 - head * uy - head * 0.45 * ux);
    ctx.lineTo(x1 - head * ux - head * 0.45 * uy, y1 - head * uy + head * 0.45 * ux);
    ctx.closePath(); ctx.fill();
  }

  function drawPca(canvas, frame, title, width) {
    const height = 380, ctx = prepare(canvas, width, height), n = frame.labels.length;
    const box = { x: 20, y: 48, w: width - 28, h: height - 70 };
    const all = frame.inputs2d.concat(frame.outputs2d), xs = all.map((p) => p[0]), ys = all.map((p) => p[1]);
    const lo = [Math.min(...xs), Math.min(...ys)], hi = [Math.max(...xs), Math.max(...ys)];
    const span = Math.max(hi[0] - lo[0], hi[1] - lo[1]) * 1.16 + 1e-9;
    const scale = Math.min(box.w, box.h) / span, mid = [(lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2];
    const at = (p) => [box.x + box.w / 2 + (p[0] - mid[0]) * scale, box.y + box.h / 2 - (p[1] - mid[1]) * scale];
    ctx.textAlign = "center";
    title.forEach((line, i) => ctx.fillText(line, width / 2, 16 + 15 * i));
    ctx.strokeRect(box.x, box.y, box.w, box.h);
    ctx.fillText("principal component 1", box.x + box.w / 2, height - 6);
    ctx.save(); ctx.translate(box.x - 4, box.y + box.h / 2); ctx.rotate(-Math.PI / 2);
    ctx.fillText("principal component 2", 0, 0); ctx.restore();
    const every = n <= 16 ? 1 : 4;
    for (let i = 0; i < n; i++) {
      const color = frame.real[i] ? BLUE : GREY, [x0, y0] = at(frame.inputs2d[i]), [x1, y1] = at(frame.outputs2d[i]);
      arrow(ctx, x0, y0, x1, y1, color);
      ctx.lineWidth = 1.3; ctx.fillStyle = "#fff";
      ctx.beginPath(); ctx.arc(x0, y0, 3.5, 0, 2 * Math.PI); ctx.fill(); ctx.stroke();
      ctx.fillStyle = color; ctx.beginPath(); ctx.arc(x1, y1, 3, 0, 2 * Math.PI); ctx.fill();
      if (i % every === 0) {
        const length = Math.hypot(x1 - x0, y1 - y0) || 1;
        ctx.fillText(frame.labels[i], x1 + 9 * (x1 - x0) / length, y1 + 9 * (y1 - y0) / length + 4);
      }
    }
    ctx.textAlign = "left"; ctx.fillStyle = INK;
    ctx.fillText("○ input   ● output", box.x + 6, box.y + 16);
    return { box, scale, mid };
  }

  function cellAt(canvas, panels, n, event) {  // the heatmap cell under a pointer: { head, i, j } or null
    const box = canvas.getBoundingClientRect(), x = event.clientX - box.left, y = event.clientY - box.top;
    for (let h = 0; h < panels.length; h++) {
      const p = panels[h], i = Math.floor((y - p.y) / p.cell), j = Math.floor((x - p.x) / p.cell);
      if (i >= 0 && j >= 0 && i < n && j < n) return { head: h, i, j };
    }
    return null;
  }

  /* Pointing at (or tapping) a cell of a canvas drawn by drawHeads reads out its exact weight and
     its row's sum; so does the keyboard: the canvas takes the focus (Tab), the arrow keys move a
     marked cell, Page Up and Page Down go to the previous and next head. current() gives
     { frame, panels } drawn last; show(text, cell) gets the words and the numbers
     ({ head, i, j, weight, rowSum }). */
  function readCells(canvas, current, show) {
    const marker = document.createElement("div"), KEYS = {
      ArrowUp: [0, -1, 0], ArrowDown: [0, 1, 0], ArrowLeft: [0, 0, -1], ArrowRight: [0, 0, 1],
      PageUp: [-1, 0, 0], PageDown: [1, 0, 0] };
    let cursor = null;  // the cell the keyboard reads: { head, i, j }
    marker.className = "mhx-cell-marker"; marker.hidden = true;
    canvas.after(marker);
    canvas.tabIndex = 0;
    canvas.setAttribute("aria-keyshortcuts", "ArrowUp ArrowDown ArrowLeft ArrowRight PageUp PageDown");
    function read(last, at) {
      const { head, i, j } = at, labels = last.frame.labels, row = last.frame.weights[head][i];
      const sum = row.reduce((a, b) => a + b, 0), masked = last.frame.allowed[i][j] ? "" : " (masked)";
      show(`head ${head}, query ${labels[i]}, key ${labels[j]}: weight ${row[j].toPrecision(6)}${masked}; `
        + `row ${labels[i]} sums to ${sum.toPrecision(6)}`, { head, i, j, weight: row[j], rowSum: sum });
    }
    function mark(last, at) {  // outline the cell, over the canvas, where the canvas sits in its parent
      const p = last.panels[at.head], scale = canvas.getBoundingClientRect().width / parseFloat(canvas.style.width);
      Object.assign(marker.style, { left: `${canvas.offsetLeft + (p.x + at.j * p.cell) * scale}px`,
        top: `${canvas.offsetTop + (p.y + at.i * p.cell) * scale}px`, width: `${p.cell * scale}px`,
        height: `${p.cell * scale}px` });
      marker.hidden = false;
    }
    function point(event) {
      const last = current(), at = last && cellAt(canvas, last.panels, last.frame.labels.length, event);
      if (at) read(last, at);
    }
    function key(event) {
      const last = current(), move = KEYS[event.key];
      if (!last || !move) return;
      event.preventDefault();  // the arrows move the cell, not the page
      const n = last.frame.labels.length, heads = last.panels.length;
      const clamp = (v, top) => Math.min(Math.max(v, 0), top - 1);
      const from = cursor && cursor.head < heads && cursor.i < n && cursor.j < n ? cursor : { head: 0, i: 0, j: 0 };
      cursor = { head: clamp(from.head + move[0], heads), i: clamp(from.i + move[1], n), j: clamp(from.j + move[2], n) };
      read(last, cursor);
      mark(last, cursor);
    }
    canvas.addEventListener("pointermove", point);
    canvas.addEventListener("pointerdown", point);
    canvas.addEventListener("keydown", key);
    canvas.addEventListener("blur", () => { marker.hidden = true; });
  }

  ns.draw = { drawHeads, drawPca, blues, readCells, prepare };
})(window.MhattnExplorer = window.MhattnExplorer || {});
