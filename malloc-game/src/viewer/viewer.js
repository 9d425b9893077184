// The mallocGame viewer: draws the inline JSON (one game, or two compared) on canvases.
// Written for this project; no libraries. State `s` is the mapping after `s` turns; the
// cursor is a turn `t`, shown with the mapping after it (state t + 1).
(function () {
  "use strict";
  const D = JSON.parse(document.getElementById("mmz-data").textContent);
  const app = document.getElementById("app");
  const A = prepare(D.a), B = D.b ? prepare(D.b) : null;
  const CMP = D.cmp || null;

  // ---------- formatting ----------
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) {
      if (k === "class") e.className = attrs[k];
      else if (k === "text") e.textContent = attrs[k];
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), attrs[k]);
      else e.setAttribute(k, attrs[k]);
    }
    for (const c of kids) if (c != null) e.append(c);
    return e;
  }
  // Latencies carry seven significant digits: at most three decimals of a microsecond,
  // fewer for a latency of many milliseconds.
  const decimals = (x) => Math.max(0, Math.min(3, 6 - Math.floor(Math.log10(Math.max(Math.abs(x), 1e-9)))));
  const us = (s) => (s * 1e6).toFixed(decimals(s * 1e6)) + " µs";
  const signedUs = (s) => (s > 0 ? "+" : s < 0 ? "−" : "±") + Math.abs(s * 1e6).toFixed(decimals(s * 1e6)) + " µs";
  function bytes(b) {
    if (b >= 1 << 30) return (b / (1 << 30)).toFixed(2) + " GiB";
    if (b >= 1 << 20) return (b / (1 << 20)).toFixed(2) + " MiB";
    if (b >= 1 << 10) return (b / 1024).toFixed(1) + " KiB";
    return b + " B";
  }
  function niceStep(range, target) {
    if (!(range > 0)) return 1;
    const raw = range / Math.max(1, target), mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const n = raw / mag;
    return (n <= 1 ? 1 : n <= 2 ? 2 : n <= 5 ? 5 : 10) * mag;
  }
  function opName(G, op) {
    return G.op_names ? "op " + op + " (" + G.op_names[op] + ")" : "op " + op;
  }

  // ---------- data ----------
  function prepare(G) {
    const a = G.allocations;
    G.T = G.turns.action.length;
    G.al = {
      n: a.buffer.length,
      buffer: Uint32Array.from(a.buffer), level: Uint8Array.from(a.level),
      offset: Float64Array.from(a.offset), start: Uint32Array.from(a.start),
      end: Uint32Array.from(a.end), prefetch: Uint8Array.from(a.prefetch),
      evict: Float64Array.from(a.evict), firstUse: Float64Array.from(a.first_use),
      from: Uint32Array.from(a.from), to: Uint32Array.from(a.to),
    };
    // S(s) for every state: S0 before any turn.
    G.S = new Float64Array(G.T + 1);
    G.S[0] = G.s0;
    for (let t = 0; t < G.T; t++) G.S[t + 1] = G.turns.latency[t];
    // Turn -> its row block in the alternatives (-1: left out).
    G.altOf = new Int32Array(G.T).fill(-1);
    G.alternatives.turn.forEach((t, k) => (G.altOf[t] = k));
    G.levelIndex = {};
    G.levels.forEach((l, i) => (G.levelIndex[l.level] = i));
    return G;
  }

  // ---------- the memory map ----------
  const PAD_L = 62, PAD_R = 12, PANEL_GAP = 50;
  // Draws game G's fast levels as the mapping stands at state `s`, highlighting buffer
  // `hb` (view index, -1: none) and the use op `useOp`.
  function drawMap(canvas, G, s, hb, useOp, label) {
    const css = canvas.clientWidth || 800;
    const nl = Math.max(1, G.levels.length);
    const panelH = nl === 1 ? 300 : 210;
    const top0 = label ? 22 : 6;
    const H = top0 + nl * (panelH + PANEL_GAP);
    const dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(css * dpr);
    canvas.height = Math.round(H * dpr);
    canvas.style.height = H + "px";
    const c = canvas.getContext("2d");
    c.setTransform(dpr, 0, 0, dpr, 0, 0);
    c.fillStyle = "#fff";
    c.fillRect(0, 0, css, H);
    c.font = "12px sans-serif";
    if (label) {
      c.fillStyle = "#111";
      c.font = "bold 13px sans-serif";
      c.fillText(label, PAD_L, 15);
      c.font = "12px sans-serif";
    }
    const W = css - PAD_L - PAD_R, ops = Math.max(1, G.ops);
    const xs = (t) => PAD_L + (t / ops) * W;
    const al = G.al;
    const geo = [];
    G.levels.forEach((lvl, li) => {
      const top = top0 + li * (panelH + PANEL_GAP) + 14;
      let peak = 0;
      for (let i = 0; i < al.n; i++) {
        if (al.level[i] !== lvl.level) continue;
        const e = al.offset[i] + G.buffers.size[al.buffer[i]];
        if (e > peak) peak = e;
      }
      const yMax = Math.max(1, lvl.capacity >= Number.MAX_SAFE_INTEGER ? peak : Math.max(lvl.capacity, peak));
      const ys = (b) => top + panelH - (b / yMax) * panelH;
      c.fillStyle = "#333";
      c.font = "bold 12px sans-serif";
      c.fillText("level " + lvl.level + ": " + lvl.name + " · capacity " + bytes(lvl.capacity), PAD_L, top - 4);
      c.font = "11px sans-serif";
      c.fillStyle = "#fbfbfb";
      c.fillRect(PAD_L, top, W, panelH);
      c.strokeStyle = "#e3e3e3";
      c.lineWidth = 1;
      c.fillStyle = "#555";
      c.textAlign = "center";
      const xstep = Math.max(1, Math.round(niceStep(ops, 10)));
      for (let v = 0; v <= ops; v += xstep) {
        const x = xs(v);
        c.beginPath(); c.moveTo(x, top); c.lineTo(x, top + panelH); c.stroke();
        c.fillText(String(v), x, top + panelH + 12);
      }
      const unit = yMax >= 1 << 20 ? [1 << 20, "MiB"] : yMax >= 1024 ? [1024, "KiB"] : [1, "B"];
      const ystep = niceStep(yMax / unit[0], 5);
      c.textAlign = "right";
      for (let v = 0; v <= yMax / unit[0] + 1e-9; v += ystep) {
        const y = ys(v * unit[0]);
        c.beginPath(); c.moveTo(PAD_L, y); c.lineTo(PAD_L + W, y); c.stroke();
        c.fillText(String(+v.toFixed(6)), PAD_L - 4, y + 4);
      }
      c.save();
      c.translate(14, top + panelH / 2);
      c.rotate(-Math.PI / 2);
      c.textAlign = "center";
      c.fillText("offset (" + unit[1] + ")", 0, 0);
      c.restore();
      c.textAlign = "left";
      if (lvl.capacity < yMax) {
        c.strokeStyle = G.evict_colour; c.setLineDash([6, 3]);
        const y = ys(lvl.capacity);
        c.beginPath(); c.moveTo(PAD_L, y); c.lineTo(PAD_L + W, y); c.stroke();
        c.setLineDash([]);
      }
      const hi = [];
      for (let i = 0; i < al.n; i++) {
        if (al.level[i] !== lvl.level || al.from[i] > s || s >= al.to[i]) continue;
        const b = al.buffer[i];
        if (b === hb) { hi.push(i); continue; }
        rect(c, G, i, xs, ys, false, s);
      }
      for (const i of hi) rect(c, G, i, xs, ys, true, s);
      if (useOp >= 0) {
        const x = xs(useOp + 0.5);
        c.strokeStyle = "#111"; c.setLineDash([3, 3]);
        c.beginPath(); c.moveTo(x, top); c.lineTo(x, top + panelH); c.stroke();
        c.setLineDash([]);
      }
      c.strokeStyle = "#999";
      c.strokeRect(PAD_L, top, W, panelH);
      c.fillStyle = "#333";
      c.textAlign = "center";
      c.fillText("op index (schedule time)", PAD_L + W / 2, top + panelH + 25);
      c.textAlign = "left";
      geo.push({ level: lvl.level, top, panelH, ys, yMax });
    });
    canvas._geo = { G, s, geo, xs, W, ops };
  }
  function rect(c, G, i, xs, ys, hot, s) {
    const al = G.al, b = al.buffer[i], k = G.buffers.kind[b];
    const x0 = xs(al.start[i]), x1 = xs(Math.min(al.end[i] + 1, G.ops));
    const y1 = ys(al.offset[i]), y0raw = ys(al.offset[i] + G.buffers.size[b]);
    const h = Math.max(1, y1 - y0raw), y0 = y1 - h, w = Math.max(1, x1 - x0);
    c.fillStyle = al.prefetch[i] ? G.prefetch_colours[k] : G.colours[k];
    c.globalAlpha = hot ? 1 : 0.85;
    c.fillRect(x0, y0, w, h);
    c.globalAlpha = 1;
    // Marks on a rectangle narrower than a few pixels would hide the map (a large program).
    const marks = hot || w >= 3;
    if (al.prefetch[i] && marks) {
      // The copy in flight, from its issue to the first use it serves: hatched.
      if (al.firstUse[i] > al.start[i]) {
        c.fillStyle = hatch(c);
        c.fillRect(x0, y0, Math.max(0, xs(al.firstUse[i]) - x0), h);
      }
      c.strokeStyle = "#222"; c.lineWidth = 1.2;
      c.beginPath(); c.moveTo(x0, y0 - 2); c.lineTo(x0, y1 + 2); c.stroke();
    }
    if (al.evict[i] >= 0 && marks) {
      const xe = xs(Math.min(al.evict[i] + 1, G.ops));
      c.strokeStyle = G.evict_colour; c.lineWidth = 1.5;
      c.beginPath(); c.moveTo(xe, y0 - 2); c.lineTo(xe, y1 + 2); c.stroke();
    }
    if (hot || al.from[i] === s) {
      c.strokeStyle = hot ? "#000" : "#444"; c.lineWidth = hot ? 2.5 : 1;
      c.strokeRect(x0, y0, w, h);
    }
    c.lineWidth = 1;
  }
  let hatchPattern = null;
  function hatch(c) {
    if (hatchPattern) return hatchPattern;
    const p = document.createElement("canvas");
    p.width = p.height = 6;
    const pc = p.getContext("2d");
    pc.strokeStyle = "rgba(0,0,0,0.45)"; pc.lineWidth = 1.4;
    pc.beginPath(); pc.moveTo(0, 6); pc.lineTo(6, 0); pc.moveTo(-3, 3); pc.lineTo(3, -3); pc.moveTo(3, 9); pc.lineTo(9, 3); pc.stroke();
    hatchPattern = c.createPattern(p, "repeat");
    return hatchPattern;
  }
  // The allocation under the mouse, if any.
  function allocAt(canvas, ev) {
    const g = canvas._geo;
    if (!g) return -1;
    const r = canvas.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
    const G = g.G, al = G.al;
    for (const p of g.geo) {
      if (y < p.top || y > p.top + p.panelH) continue;
      const t = ((x - PAD_L) / g.W) * g.ops, off = ((p.top + p.panelH - y) / p.panelH) * p.yMax;
      let best = -1;
      for (let i = 0; i < al.n; i++) {
        if (al.level[i] !== p.level || al.from[i] > g.s || g.s >= al.to[i]) continue;
        if (t < al.start[i] || t >= al.end[i] + 1) continue;
        const size = G.buffers.size[al.buffer[i]];
        const slack = (3 / p.panelH) * p.yMax;
        if (off >= al.offset[i] - slack && off <= al.offset[i] + size + slack) best = i;
      }
      return best;
    }
    return -1;
  }
  function allocText(G, i) {
    const al = G.al, b = al.buffer[i];
    return G.buffers.name[b] + "\n" + G.kinds[G.buffers.kind[b]] + ", " + bytes(G.buffers.size[b]) +
      "\nlevel " + al.level[i] + " at offset " + al.offset[i] + " (" + (al.offset[i] / (1 << 20)).toFixed(3) + " MiB)" +
      "\nops " + al.start[i] + "..=" + al.end[i] +
      (al.prefetch[i] ? "\nprefetch: copy issued as op " + al.start[i] + " begins" + (al.firstUse[i] >= 0 ? ", first use op " + al.firstUse[i] : "") : "\ndefined by op " + al.start[i]) +
      (al.evict[i] >= 0 ? "\neviction issued after op " + al.evict[i] : "") +
      "\nplaced at turn " + al.from[i] + " (click: its buffer's next turn)";
  }

  // ---------- the latency curve ----------
  // Draws S(state) of each game in `games` against the turn, the rewards of the first as
  // bars below; `cursors` are the states marked. The curves are drawn once, the cursors on
  // a copy.
  function curve(canvas, games, colours) {
    const css = canvas.clientWidth || 800, H = 230, dpr = window.devicePixelRatio || 1;
    const off = document.createElement("canvas");
    off.width = Math.round(css * dpr); off.height = Math.round(H * dpr);
    const c = off.getContext("2d");
    c.setTransform(dpr, 0, 0, dpr, 0, 0);
    c.fillStyle = "#fff"; c.fillRect(0, 0, css, H);
    const W = css - PAD_L - PAD_R, top = 10, ch = 140, rTop = top + ch + 34, rh = 40;
    const N = Math.max(1, ...games.map((g) => g.T));
    let lo = Infinity, hi = -Infinity;
    for (const g of games) for (const v of g.S) { if (v < lo) lo = v; if (v > hi) hi = v; }
    if (!(hi > lo)) { hi = lo + 1e-9; }
    const pad = (hi - lo) * 0.05; lo -= pad; hi += pad;
    const xs = (t) => PAD_L + (t / N) * W, ys = (v) => top + ch - ((v - lo) / (hi - lo)) * ch;
    c.fillStyle = "#fbfbfb"; c.fillRect(PAD_L, top, W, ch);
    c.strokeStyle = "#e3e3e3"; c.fillStyle = "#555"; c.font = "11px sans-serif"; c.textAlign = "right";
    // Microseconds, or milliseconds where the labels would be long.
    const [scale, unit] = hi >= 0.1 ? [1e3, "ms"] : [1e6, "µs"];
    const st = niceStep((hi - lo) * scale, 6);
    for (let v = Math.ceil((lo * scale) / st) * st; v <= hi * scale; v += st) {
      const y = ys(v / scale);
      c.beginPath(); c.moveTo(PAD_L, y); c.lineTo(PAD_L + W, y); c.stroke();
      c.fillText(String(+v.toFixed(3)), PAD_L - 4, y + 4);
    }
    c.textAlign = "center";
    const xst = Math.max(1, Math.round(niceStep(N, 10)));
    for (let v = 0; v <= N; v += xst) c.fillText(String(v), xs(v), top + ch + 12);
    c.fillText("turn", PAD_L + W / 2, top + ch + 25);
    c.save(); c.translate(14, top + ch / 2); c.rotate(-Math.PI / 2); c.fillText("S so far (" + unit + ")", 0, 0); c.restore();
    games.forEach((g, gi) => {
      c.strokeStyle = colours[gi]; c.lineWidth = 1.5; c.beginPath();
      // One vertex per pixel column at most (min and max within it).
      let col = -1, mn = 0, mx = 0;
      const flush = () => { if (col >= 0) { c.lineTo(col, ys(mn)); c.lineTo(col, ys(mx)); } };
      c.moveTo(xs(0), ys(g.S[0]));
      for (let s = 0; s <= g.T; s++) {
        const x = Math.round(xs(s)), v = g.S[s];
        if (x !== col) { flush(); col = x; mn = mx = v; } else { if (v < mn) mn = v; if (v > mx) mx = v; }
      }
      flush(); c.stroke(); c.lineWidth = 1;
    });
    // Rewards of the first game: one bar per pixel column (the largest in magnitude).
    const g0 = games[0];
    let rmax = 0;
    for (const r of g0.turns.reward) rmax = Math.max(rmax, Math.abs(r));
    rmax = rmax || 1;
    c.fillStyle = "#555"; c.textAlign = "right";
    c.fillText("reward", PAD_L - 4, rTop + rh / 2 + 4);
    c.strokeStyle = "#bbb"; c.beginPath(); c.moveTo(PAD_L, rTop + rh / 2); c.lineTo(PAD_L + W, rTop + rh / 2); c.stroke();
    const cols = new Map();
    g0.turns.reward.forEach((r, t) => {
      const x = Math.floor(xs(t + 0.5));
      const o = cols.get(x);
      if (o === undefined || Math.abs(r) > Math.abs(o)) cols.set(x, r);
    });
    for (const [x, r] of cols) {
      const h = (Math.abs(r) / rmax) * (rh / 2);
      c.fillStyle = r >= 0 ? "#1a7f37" : "#c00000";
      c.fillRect(x, r >= 0 ? rTop + rh / 2 - h : rTop + rh / 2, Math.max(1, W / N - 0.5), Math.max(h, r ? 1 : 0));
    }
    canvas.width = off.width; canvas.height = off.height; canvas.style.height = H + "px";
    canvas._curve = { off, xs, ys, games, N, dpr, css, H, top, ch };
  }
  function curveCursor(canvas, states, colours) {
    const k = canvas._curve;
    if (!k) return;
    const c = canvas.getContext("2d");
    c.setTransform(1, 0, 0, 1, 0, 0);
    c.drawImage(k.off, 0, 0);
    c.setTransform(k.dpr, 0, 0, k.dpr, 0, 0);
    k.games.forEach((g, gi) => {
      const s = states[gi];
      if (s == null || s < 0) return;
      const x = k.xs(s), y = k.ys(g.S[s]);
      c.strokeStyle = colours[gi]; c.setLineDash([4, 3]);
      c.beginPath(); c.moveTo(x, k.top); c.lineTo(x, k.H - 8); c.stroke(); c.setLineDash([]);
      c.fillStyle = colours[gi]; c.beginPath(); c.arc(x, y, 4, 0, 7); c.fill();
    });
  }
  function curveTurnAt(canvas, ev) {
    const k = canvas._curve, r = canvas.getBoundingClientRect();
    const t = Math.round(((ev.clientX - r.left - PAD_L) / (k.css - PAD_L - PAD_R)) * k.N) - 1;
    return t;
  }

  // ---------- one turn in words ----------
  function turnPanel(G, t, other) {
    const box = el("div");
    if (t == null || t < 0 || t >= G.T) {
      box.append(el("div", { class: "sub", text: "no such turn in this game" }));
      return box;
    }
    const T = G.turns, b = T.buffer[t], a = T.action[t], lvl = G.levels[T.pass[t]];
    const id = (k) => (other ? undefined : k);
    box.append(
      el("div", { class: "turnline big", id: id("turn-index"), text: "turn " + t + " of " + G.T }),
      el("div", { class: "turnline" }, "buffer ",
        el("span", { class: "buf big", id: id("turn-buffer"), text: G.buffers.name[b] })),
      el("div", { class: "sub", text: G.kinds[G.buffers.kind[b]] + ", " + bytes(G.buffers.size[b]) +
        " · its use at " + opName(G, T.use[t]) + " · pass " + T.pass[t] + " (level " + lvl.level + ", " + lvl.name + ")" }),
      el("div", { class: "turnline" }, "action: ",
        el("span", { class: "big", id: id("turn-action"), text: G.action_names[a] }),
        takenOffset(G, t)),
      el("div", { class: "turnline", id: id("turn-reward"),
        text: "reward " + (T.reward[t] >= 0 ? "+" : "") + T.reward[t].toPrecision(4) +
          " (S changed by " + signedUs(-T.reward[t] * G.s0) + ")" }),
      el("div", { class: "turnline" }, "S so far: ",
        el("span", { class: "big", id: id("turn-latency"), text: us(T.latency[t]) }),
        el("span", { class: "sub", text: " (S0 " + us(G.s0) + ", final " + us(G.final_latency_s) + ")" })));
    box.append(alternatives(G, t, other));
    return box;
  }
  // The rows of turn t's alternatives ([0, 0] when left out).
  function altRows(G, t) {
    const k = G.altOf[t], A = G.alternatives;
    return k < 0 ? [0, 0] : [A.start[k], A.start[k + 1]];
  }
  function takenOffset(G, t) {
    const A = G.alternatives, a = G.turns.action[t], [r0, r1] = altRows(G, t);
    for (let i = r0; i < r1; i++)
      if (A.action[i] === a && A.offset[i] >= 0) return el("span", { class: "sub", text: " at offset " + bytes(A.offset[i]) });
    return null;
  }
  // The legal alternatives of turn t with the S each gives, and the search's visits.
  // `other` (an action of the other game at this decision) is marked.
  function alternatives(G, t, other) {
    const A = G.alternatives, T = G.turns, box = el("div");
    const before = t === 0 ? G.s0 : T.latency[t - 1];
    const visits = new Map();
    let root = null, vmax = 0;
    // A turn the search did not visit (a line replayed, not searched) has no column.
    const searched = !!G.search && G.search.start[t] < G.search.start[t + 1];
    if (searched) {
      const S = G.search;
      root = S.root_value[t];
      for (let i = S.start[t]; i < S.start[t + 1]; i++) { visits.set(S.action[i], S.visits[i]); vmax = Math.max(vmax, S.visits[i]); }
    }
    const [r0, r1] = altRows(G, t);
    if (G.altOf[t] < 0) {
      box.append(el("div", { class: "sub", text: "alternatives of this turn not computed (left out to keep the file small)" }));
      return box;
    }
    let takenDelta = null;
    const deltaOf = (i) => {
      if (A.delta[i] != null) return A.delta[i];
      // Other slots: the slot-0 latency of the same mode (they differ only in offset).
      const name = G.action_names[A.action[i]].replace(/slot \d+$/, "slot 0");
      for (let j = r0; j < r1; j++) if (G.action_names[A.action[j]] === name && A.delta[j] != null) return A.delta[j];
      return null;
    };
    for (let i = r0; i < r1; i++) if (A.action[i] === T.action[t]) takenDelta = deltaOf(i);
    const head = el("tr", {}, el("th", { class: "l", text: "legal action" }), el("th", { text: "offset" }),
      el("th", { text: "S after move" }), el("th", { text: "vs taken" }));
    if (searched) head.append(el("th", { text: "visits" }));
    const body = el("tbody");
    for (let i = r0; i < r1; i++) {
      const a = A.action[i], d = deltaOf(i);
      const cls = a === T.action[t] ? "taken" : a === other ? "other" : "";
      const vs = d == null || takenDelta == null ? "" : signedUs(d - takenDelta);
      const row = el("tr", { class: cls }, el("td", { class: "l", text: G.action_names[a] + (a === T.action[t] ? " ◀ taken" : a === other ? " ◀ other game" : "") }),
        el("td", { text: A.offset[i] >= 0 ? bytes(A.offset[i]) : "level 0" }),
        el("td", { text: d == null ? "?" : us(before + d) + (A.delta[i] == null ? " =" : "") }),
        el("td", { class: d == null || takenDelta == null ? "" : d - takenDelta > 0 ? "neg" : d - takenDelta < 0 ? "pos" : "", text: vs }));
      if (searched) {
        const v = visits.get(a) || 0;
        row.append(el("td", {}, el("span", { class: "bar", style: "width:" + Math.round((40 * v) / Math.max(1, vmax)) + "px" }), " " + v));
      }
      body.append(row);
    }
    box.append(el("div", { class: "sub", text: "legal alternatives: S after the move alone (before what the game does up to the next turn); '=' slots differ from slot 0 only in offset" }),
      el("div", { class: "scroll" }, el("table", { id: other === undefined ? "alts" : null }, el("thead", {}, head), body)));
    if (root != null) box.append(el("div", { class: "turnline", id: "search-root", text: "search: root value " + root.toFixed(4) + ", " + [...visits.values()].reduce((x, y) => x + y, 0) + " visits" }));
    else if (G.search) box.append(el("div", { class: "sub", text: "search: no visits recorded at this turn (a line replayed, not searched)" }));
    return box;
  }

  // ---------- page ----------
  const tip = el("div", { id: "tip" });
  document.body.append(tip);
  function hover(canvas, onClick) {
    canvas.addEventListener("mousemove", (ev) => {
      const g = canvas._geo, i = allocAt(canvas, ev);
      if (i < 0) { tip.style.display = "none"; return; }
      tip.textContent = allocText(g.G, i);
      tip.style.display = "block";
      tip.style.left = ev.clientX + 14 + "px";
      tip.style.top = ev.clientY + 10 + "px";
    });
    canvas.addEventListener("mouseleave", () => (tip.style.display = "none"));
    canvas.addEventListener("click", (ev) => {
      const i = allocAt(canvas, ev);
      if (i >= 0) onClick(canvas._geo.G.al.buffer[i]);
    });
  }
  function legend(G) {
    const l = el("div", { class: "legend sub" });
    G.kinds.forEach((k, i) => l.append(el("span", {}, el("span", { class: "sw", style: "background:" + G.colours[i] }), k)));
    l.append(el("span", {}, el("span", { class: "sw", style: "background:" + G.prefetch_colours[0] + ";border-left:2px solid #222" }), "prefetched (lighter; hatched: copy in flight until the first use; tick: copy issued)"),
      el("span", {}, el("span", { class: "sw", style: "border-right:2px solid " + G.evict_colour }), "eviction issued"),
      el("span", {}, el("span", { class: "sw", style: "outline:2px solid #000" }), "the turn's buffer"),
      el("span", { text: "dashed: the use the turn decides" }));
    return l;
  }
  function header(title, lines, leftOut) {
    const h = el("header", {}, el("h1", { text: title }));
    for (const l of lines) h.append(el("div", { class: "sub", text: l }));
    for (const w of leftOut) h.append(el("div", { class: "warn", text: "left out: " + w }));
    return h;
  }
  function summary(G) {
    return G.player + " (seed " + G.seed + ") · " + G.T + " turns · S0 " + us(G.s0) + " → S " + us(G.final_latency_s) +
      " · return " + G.return.toFixed(5) + " · " + G.reward_kind + " rewards · " + G.ops + " ops";
  }
  // Calls `go(delta | "home" | "end")` for the viewer's keys; the slider's own arrow keys
  // are taken over so that one key press is one step.
  function keys(go, extra) {
    document.addEventListener("keydown", (ev) => {
      const tg = ev.target;
      if (tg && tg.tagName === "INPUT" && tg.type !== "range") return;
      let d = null;
      if (ev.key === "ArrowRight") d = ev.shiftKey ? 10 : 1;
      else if (ev.key === "ArrowLeft") d = ev.shiftKey ? -10 : -1;
      else if (ev.key === "PageDown") d = 100;
      else if (ev.key === "PageUp") d = -100;
      else if (ev.key === "Home") d = "home";
      else if (ev.key === "End") d = "end";
      else if (extra && extra(ev)) { ev.preventDefault(); return; }
      if (d === null) return;
      ev.preventDefault();
      go(d);
    });
  }
  function findBuffer(G, text, from) {
    const q = text.trim().toLowerCase();
    if (!q) return -1;
    for (let k = 1; k <= G.T; k++) {
      const t = (from + k) % G.T;
      if (G.buffers.name[G.turns.buffer[t]].toLowerCase().includes(q)) return t;
    }
    return -1;
  }
  function nextTurnOf(G, b, from) {
    for (let k = 1; k <= G.T; k++) {
      const t = (from + k) % G.T;
      if (G.turns.buffer[t] === b) return t;
    }
    return -1;
  }
  // `#turn=150`, `#difference=3&sort=cost`: a link to one turn or difference.
  function hashParam(name) {
    for (const kv of location.hash.replace(/^#/, "").split("&")) {
      const [k, v] = kv.split("=");
      if (k === name) return decodeURIComponent(v || "");
    }
    return null;
  }
  let raf = 0;
  function schedule(f) {
    if (raf) cancelAnimationFrame(raf);
    raf = requestAnimationFrame(() => { raf = 0; f(); });
  }

  // ---------- one game ----------
  function gameViewer(G) {
    let t = 0;
    const slider = el("input", { type: "range", min: "0", max: String(Math.max(0, G.T - 1)), value: "0", id: "slider", "aria-label": "turn" });
    const turnBox = el("input", { type: "number", min: "0", max: String(Math.max(0, G.T - 1)), id: "goto-turn", "aria-label": "jump to turn" });
    const bufBox = el("input", { type: "text", id: "goto-buffer", placeholder: "buffer name", "aria-label": "jump to buffer" });
    const map = el("canvas", { id: "map" }), cv = el("canvas", { id: "curve" });
    const side = el("div", { id: "turn" });
    app.append(
      header("mallocGame viewer: " + G.workload + " on " + G.hardware, [summary(G)], G.left_out),
      el("div", { id: "controls" },
        el("button", { onclick: () => go(-1), title: "previous turn (←)", text: "◀" }), slider,
        el("button", { onclick: () => go(1), title: "next turn (→)", text: "▶" }),
        el("label", {}, "turn ", turnBox),
        el("label", {}, "buffer ", bufBox),
        el("span", { class: "keys", text: "← → a turn · shift ×10 · PgUp/PgDn ×100 · Home/End · click the map: that buffer's next turn" })),
      el("div", { id: "main" },
        el("div", { class: "card" }, el("h2", { text: "memory map after the turn (fast levels: offset against time)" }), legend(G), map),
        el("div", { id: "side" }, el("div", { class: "card" }, el("h2", { text: "the turn" }), side))),
      el("div", { style: "padding:0 16px 16px" }, el("div", { class: "card" },
        el("h2", { text: "simulated latency of the mapping so far (S after each turn), and each turn's reward" }), cv)));
    slider.addEventListener("input", () => set(+slider.value));
    turnBox.addEventListener("change", () => set(+turnBox.value));
    bufBox.addEventListener("keydown", (ev) => {
      if (ev.key !== "Enter") return;
      const f = findBuffer(G, bufBox.value, t);
      bufBox.style.background = f < 0 ? "#fdd" : "";
      if (f >= 0) set(f);
    });
    hover(map, (b) => { const f = nextTurnOf(G, b, t); if (f >= 0) set(f); });
    cv.addEventListener("click", (ev) => set(curveTurnAt(cv, ev)));
    function go(d) {
      if (d === "home") set(0); else if (d === "end") set(G.T - 1); else set(t + d);
    }
    function set(n) {
      if (!(G.T > 0)) return;
      t = Math.max(0, Math.min(G.T - 1, n | 0));
      slider.value = String(t);
      turnBox.value = String(t);
      side.replaceChildren(turnPanel(G, t));
      schedule(draw);
    }
    function draw() {
      drawMap(map, G, t + 1, G.T ? G.turns.buffer[t] : -1, G.T ? G.turns.use[t] : -1, null);
      curveCursor(cv, [t + 1], ["#4e79a7"]);
    }
    keys(go);
    window.addEventListener("resize", () => { curve(cv, [G], ["#4e79a7"]); schedule(draw); });
    curve(cv, [G], ["#4e79a7"]);
    if (G.T) set(+(hashParam("turn") || 0)); else side.append(el("div", { text: "this game has no turns" }));
    draw();
  }

  // ---------- two games ----------
  function compareViewer(A, B, C) {
    const D0 = C.differences;
    const diffs = D0.cost_s.map((c, i) => ({ a_turn: D0.a_turn[i], b_turn: D0.b_turn[i], cost_s: c }));
    let order = diffs.map((_, i) => i);
    let k = 0;
    const slider = el("input", { type: "range", min: "0", max: String(Math.max(0, diffs.length - 1)), value: "0", id: "slider", "aria-label": "difference" });
    const mapA = el("canvas", { id: "map-a" }), mapB = el("canvas", { id: "map-b" }), cv = el("canvas", { id: "curve" });
    const sideA = el("div"), sideB = el("div"), what = el("div", { id: "diff-what" });
    const faster = C.gap_s < 0 ? A.player + " is faster by " + us(-C.gap_s) : C.gap_s > 0 ? B.player + " is faster by " + us(C.gap_s) : "equally fast";
    let first = "the games are the same, turn for turn";
    if (C.first_difference != null) {
      const f = C.first_difference;
      first = "first difference at turn " + f + ": " +
        (f < A.T ? A.buffers.name[A.turns.buffer[f]] + " (use at op " + A.turns.use[f] + "): " + A.player + " played " + A.action_names[A.turns.action[f]] : A.player + " had ended") + "; " +
        (f < B.T ? B.player + " played " + B.action_names[B.turns.action[f]] + (B.turns.buffer[f] !== undefined && f < A.T && B.buffers.name[B.turns.buffer[f]] !== A.buffers.name[A.turns.buffer[f]] ? " on " + B.buffers.name[B.turns.buffer[f]] : "") : B.player + " had ended");
    }
    const tbody = el("tbody");
    const sortBtn = el("button", { text: "sort by cost", id: "sort" });
    app.append(
      header("mallocGame comparison: " + A.player + " against " + B.player + " · " + A.workload + " on " + A.hardware,
        ["A: " + summary(A), "B: " + summary(B),
          faster + " · " + diffs.length + " decisions made differently; decisions made alike cost " + signedUs(C.same_decisions_s) + " by what came before them",
        ], A.left_out.concat(B.left_out)),
      el("div", { id: "controls" },
        el("button", { onclick: () => go(-1), title: "previous difference (←)", text: "◀" }), slider,
        el("button", { onclick: () => go(1), title: "next difference (→)", text: "▶" }),
        el("span", { id: "diff-index" }), sortBtn,
        el("span", { class: "keys", text: "← → a difference · Home/End · click a row" })),
      el("div", { style: "padding:6px 16px 0" }, el("div", { class: "card", id: "cmp-first", text: first })),
      el("div", { id: "main", class: "cmp" },
        el("div", { class: "card" }, el("h2", { text: "memory maps after the decision, A above B, on one time axis" }), legend(A), mapA, mapB),
        el("div", { id: "side" },
          el("div", { class: "card" }, el("h2", { text: "the difference" }), what),
          el("div", { class: "card" }, el("h2", { text: "every decision made differently (cost: the latency A's choice adds against B's)" }),
            el("div", { class: "scroll" }, el("table", { id: "diffs" }, el("thead", {}, el("tr", {},
              el("th", { text: "A turn" }), el("th", { text: "cost" }), el("th", { class: "l", text: "buffer" }),
              el("th", { class: "l", text: "A" }), el("th", { class: "l", text: "B" }))), tbody))))),
      el("div", { style: "padding:0 16px" }, el("div", { class: "two" },
        el("div", { class: "card" }, el("h2", { text: "A: " + A.player }), sideA),
        el("div", { class: "card" }, el("h2", { text: "B: " + B.player }), sideB))),
      el("div", { style: "padding:10px 16px 16px" }, el("div", { class: "card" },
        el("h2", { text: "S so far: A (blue) and B (orange) against the turn; rewards of A below" }), cv)));
    const name = (G, t) => (t == null ? "—" : G.action_names[G.turns.action[t]]);
    const bufOf = (d) => (d.a_turn != null ? A.buffers.name[A.turns.buffer[d.a_turn]] : B.buffers.name[B.turns.buffer[d.b_turn]]);
    const useOf = (d) => (d.a_turn != null ? A.turns.use[d.a_turn] : B.turns.use[d.b_turn]);
    function rows() {
      tbody.replaceChildren();
      // Only the first 2000 rows are listed (the slider still reaches every difference).
      order.slice(0, 2000).forEach((i, r) => {
        const d = diffs[i];
        tbody.append(el("tr", { "data-r": String(r), onclick: () => set(r) },
          el("td", { text: d.a_turn == null ? "—" : String(d.a_turn) }),
          el("td", { class: d.cost_s > 0 ? "neg" : d.cost_s < 0 ? "pos" : "", text: signedUs(d.cost_s) }),
          el("td", { class: "l buf cut", text: bufOf(d), title: bufOf(d) + " (use at op " + useOf(d) + ")" }),
          el("td", { class: "l", text: name(A, d.a_turn) }), el("td", { class: "l", text: name(B, d.b_turn) })));
      });
    }
    sortBtn.addEventListener("click", () => {
      const byCost = sortBtn.textContent === "sort by cost";
      order = diffs.map((_, i) => i);
      // A's largest savings first (the most negative cost), its largest losses last.
      if (byCost) order.sort((x, y) => diffs[x].cost_s - diffs[y].cost_s);
      sortBtn.textContent = byCost ? "sort by turn" : "sort by cost";
      rows(); set(0);
    });
    // The state of the other game at a decision only one made: after its last turn that
    // came before (by the first game's turn numbers, near enough for a picture).
    const stateOf = (G, t, tOther, Gother) => (t != null ? t + 1 : Math.min(G.T, Math.round(((tOther + 1) * G.T) / Math.max(1, Gother.T))));
    function go(d) { if (d === "home") set(0); else if (d === "end") set(diffs.length - 1); else set(k + d); }
    function set(n) {
      if (!diffs.length) return;
      k = Math.max(0, Math.min(diffs.length - 1, n | 0));
      slider.value = String(k);
      const d = diffs[order[k]];
      document.getElementById("diff-index").textContent = "difference " + (k + 1) + " of " + diffs.length;
      what.replaceChildren(
        el("div", { class: "turnline" }, "buffer ", el("span", { class: "buf big", text: bufOf(d) }), " · its use at " + opName(A, useOf(d))),
        el("div", { class: "turnline", text: "A (" + A.player + "), turn " + (d.a_turn == null ? "— (no such decision)" : d.a_turn) + ": " + name(A, d.a_turn) }),
        el("div", { class: "turnline", text: "B (" + B.player + "), turn " + (d.b_turn == null ? "— (no such decision)" : d.b_turn) + ": " + name(B, d.b_turn) }),
        el("div", { class: "turnline big " + (d.cost_s > 0 ? "neg" : d.cost_s < 0 ? "pos" : ""), id: "diff-cost",
          text: d.cost_s > 0 ? "A's choice costs " + us(d.cost_s) + " against B's" : d.cost_s < 0 ? "A's choice saves " + us(-d.cost_s) + " against B's" : "no latency difference" }));
      sideA.replaceChildren(turnPanel(A, d.a_turn, d.b_turn == null ? undefined : B.turns.action[d.b_turn]));
      sideB.replaceChildren(turnPanel(B, d.b_turn, d.a_turn == null ? undefined : A.turns.action[d.a_turn]));
      for (const tr of tbody.children) tr.classList.toggle("sel", +tr.dataset.r === k);
      const sel = tbody.children[k];
      if (sel && sel.scrollIntoView) sel.scrollIntoView({ block: "nearest" });
      schedule(draw);
    }
    function draw() {
      if (!diffs.length) {
        drawMap(mapA, A, A.T, -1, -1, "A: " + A.player);
        drawMap(mapB, B, B.T, -1, -1, "B: " + B.player);
        curveCursor(cv, [A.T, B.T], ["#4e79a7", "#f28e2b"]);
        return;
      }
      const d = diffs[order[k]];
      const sa = stateOf(A, d.a_turn, d.b_turn, B), sb = stateOf(B, d.b_turn, d.a_turn, A);
      const ha = d.a_turn != null ? A.turns.buffer[d.a_turn] : A.buffers.name.indexOf(bufOf(d));
      const hb = d.b_turn != null ? B.turns.buffer[d.b_turn] : B.buffers.name.indexOf(bufOf(d));
      drawMap(mapA, A, sa, ha, useOf(d), "A: " + A.player + " after turn " + (sa - 1));
      drawMap(mapB, B, sb, hb, useOf(d), "B: " + B.player + " after turn " + (sb - 1));
      curveCursor(cv, [sa, sb], ["#4e79a7", "#f28e2b"]);
    }
    slider.addEventListener("input", () => set(+slider.value));
    hover(mapA, () => {}); hover(mapB, () => {});
    keys(go);
    window.addEventListener("resize", () => { curve(cv, [A, B], ["#4e79a7", "#f28e2b"]); schedule(draw); });
    if (hashParam("sort") === "cost") sortBtn.click(); else rows();
    curve(cv, [A, B], ["#4e79a7", "#f28e2b"]);
    if (diffs.length) set(+(hashParam("difference") || 1) - 1); else what.append(el("div", { text: "no difference" }));
    draw();
  }

  if (D.mode === "compare") compareViewer(A, B, CMP); else gameViewer(A);
  // For tests and for timing: the first picture is drawn.
  window.mmzReady = performance.now();
})();
