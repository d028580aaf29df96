// The report page: reads the JSON data embedded in the page (report_data.h
// documents it) and draws the summary, the tables, the timeline and the
// memory plot. No library: the plots are two canvases drawn here.
//
// Large plans: every lane is an array of steps in time order, so the visible
// ones are found by binary search (culling) and steps narrower than a pixel
// are summed into per-column coverage (aggregation); a redraw visits only the
// visible steps and draws at most a few rectangles per pixel column.
(function () {
  "use strict";

  const scriptStart = performance.now();
  const D = JSON.parse(document.getElementById("sa-data").textContent);
  const S = D.summary;
  const $ = (id) => document.getElementById(id);

  // ---------------------------------------------------------------- formatting

  function fmtBytes(b) {
    const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let v = Math.abs(b), i = 0;
    while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    if (i === 0) return (b < 0 ? "-" : "") + v.toFixed(0) + " B";
    const digits = v >= 100 ? 0 : v >= 10 ? 1 : 2;
    return (b < 0 ? "-" : "") + v.toFixed(digits) + " " + units[i];
  }
  function fmtUs(us) {
    const a = Math.abs(us);
    if (a === 0) return "0";
    if (a < 1) return (us * 1000).toFixed(a < 0.1 ? 1 : 0) + " ns";
    if (a < 1000) return us.toFixed(a < 10 ? 2 : a < 100 ? 1 : 0) + " µs";
    if (a < 1e6) return (us / 1e3).toFixed(a < 1e4 ? 2 : 1) + " ms";
    return (us / 1e6).toFixed(2) + " s";
  }
  function fmtNs(ns) { return fmtUs(ns * 1e-3); }
  function fmtPct(x) { return (100 * x).toFixed(x < 0.1 ? 2 : 1) + "%"; }
  function fmtInt(n) { return Math.round(n).toLocaleString("en-US"); }
  function esc(s) {
    return String(s).replace(/[&<>"']/g, (c) =>
      ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
  }
  function el(tag, attrs, html) {
    const e = document.createElement(tag);
    if (attrs) for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (html !== undefined) e.innerHTML = html;
    return e;
  }

  // -------------------------------------------------------------- decoding data

  // Delta-encoded integers -> absolute values. Plot times stay in integer
  // nanoseconds (exact in a double), so a step that starts when the previous
  // one ends compares equal to it.
  function undelta(a) {
    const out = new Float64Array(a.length);
    let acc = 0;
    for (let i = 0; i < a.length; i++) { acc += a[i]; out[i] = acc; }
    return out;
  }
  function lane(raw) {
    const start = undelta(raw.start);
    const end = new Float64Array(start.length);
    for (let i = 0; i < start.length; i++) end[i] = start[i] + raw.dur[i];
    return { start: start, end: end, subject: Int32Array.from(raw.subject), n: start.length };
  }
  const T = Math.max(1, Math.round(S.iteration_us * 1e3));  // ns, as every plot time
  const ops = D.ops, tensors = D.tensors;
  const compute = lane(D.lanes.compute), h2d = lane(D.lanes.h2d), d2h = lane(D.lanes.d2h);
  const drops = { time: undelta(D.drops.time), subject: Int32Array.from(D.drops.subject) };
  drops.n = drops.time.length;
  const mem = { time: undelta(D.memory.time), bytes: undelta(D.memory.bytes) };
  mem.n = mem.time.length;
  const PERSISTENT = new Set(["param", "buffer", "optimizer_state"]);
  const tensorPersistent = Uint8Array.from(tensors.kind, (k) => PERSISTENT.has(D.kinds[k]) ? 1 : 0);

  function opLabel(o) {
    const n = ops.name[o];
    return n ? n : D.types[ops.type[o]] + " #" + o;
  }
  function tensorLabel(i) {
    const n = tensors.name[i];
    return n ? n : "tensor #" + tensors.id[i];
  }
  const phaseName = (o) => D.phases[ops.phase[o]] || "";

  // ------------------------------------------------------------------- summary

  function renderSummary() {
    $("title").textContent = S.graph;
    const dev = S.device + " (" + fmtBytes(S.device_memory_bytes) + ", " + S.h2d_gbps + " GB/s in, " +
      S.d2h_gbps + " GB/s out)";
    $("subtitle").textContent = dev + " · budget " + fmtBytes(S.budget) + " (" +
      fmtPct(S.budget / S.peak_live) + " of peak live " + fmtBytes(S.peak_live) + ") · " +
      S.method + " plan, " + S.origin;
    const vsIdeal = S.ideal_us / S.iteration_us;
    const stallShare = S.stall_us / S.iteration_us;
    $("headline").innerHTML = "One training iteration takes <b>" + fmtUs(S.iteration_us) +
      "</b>, <b>" + fmtPct(vsIdeal) + "</b> of the ideal throughput (" + fmtUs(S.ideal_us) +
      " with unlimited memory). It copies " + fmtBytes(S.swap_in_bytes) + " to the device and " +
      fmtBytes(S.swap_out_bytes) + " back, and the compute stream " +
      (S.stall_us > 0 ? "waits on copies for " + fmtUs(S.stall_us) + " (" + fmtPct(stallShare) + " of the iteration)."
                      : "never waits on a copy.");
    const cards = [
      ["Iteration time", fmtUs(S.iteration_us), S.batch ? (S.batch / (S.iteration_us * 1e-6)).toFixed(1) + " samples/s (batch " + S.batch + ")" : "simulated"],
      ["Of ideal", fmtPct(vsIdeal), "ideal " + fmtUs(S.ideal_us) + " (sum of op times)"],
      ["Memory budget", fmtBytes(S.budget), fmtPct(S.budget / S.peak_live) + " of peak live " + fmtBytes(S.peak_live)],
      ["Device memory peak", fmtBytes(S.peak_device_bytes), "pool " + fmtBytes(S.pool_bytes) + " in " + fmtInt(S.classes) + " size classes"],
      ["Swapped in", fmtBytes(S.swap_in_bytes), fmtInt(S.swap_ins) + " copies host → device"],
      ["Swapped out", fmtBytes(S.swap_out_bytes), fmtInt(S.swap_outs) + " copies device → host, " + fmtInt(S.drops) + " drops"],
      ["Compute stall", fmtUs(S.stall_us), fmtPct(stallShare) + " of the iteration"],
      ["Graph", fmtInt(S.ops) + " ops", fmtInt(S.tensors) + " tensors, " + fmtInt(S.steps) + " plan steps"],
    ];
    const box = $("cards");
    for (const [k, v, d] of cards) {
      const c = el("div", { class: "card" });
      c.appendChild(el("div", { class: "k" }, esc(k)));
      c.appendChild(el("div", { class: "v" }, esc(v)));
      c.appendChild(el("div", { class: "d" }, esc(d)));
      box.appendChild(c);
    }
    $("footer").innerHTML = "Generated by " + esc(S.generator) + " from " + esc(S.source || S.graph) +
      ". Times are the simulator's prediction (three streams: compute, host→device, device→host).";
  }

  // ---------------------------------------------------------------- comparison

  function renderComparison() {
    const t = $("compare");
    const ms = D.methods;
    const best = Math.max.apply(null, ms.filter((m) => m.feasible).map((m) => S.ideal_us / m.iteration_us));
    $("compare-note").textContent = ms.length > 1
      ? "Every method planned for the same graph, device and budget, and timed by the same simulator."
      : "Only this plan was given. Add --baselines, or give compare's options instead of a plan, to compare methods.";
    let h = "<thead><tr><th>Method</th><th class=num>Iteration</th><th>Throughput vs ideal</th>" +
      (S.batch ? "<th class=num>Samples/s</th>" : "") +
      "<th class=num>Swapped in</th><th class=num>Swapped out</th><th class=num>Compute stall</th>" +
      "<th class=num>Memory peak</th><th class=num>Planning</th></tr></thead><tbody>";
    for (const m of ms) {
      const cls = m.main ? "main" : m.feasible ? "" : "off";
      h += "<tr class='" + cls + "'><td>" + esc(m.name) + (m.main ? "<span class=tag>shown below</span>" : "") + "</td>";
      if (!m.feasible) {
        h += "<td colspan=" + (S.batch ? 8 : 7) + ">infeasible: " + esc(m.why) + "</td></tr>";
        continue;
      }
      const v = S.ideal_us / m.iteration_us;
      h += "<td class=num>" + fmtUs(m.iteration_us) + "</td>" +
        "<td><div class=bar-cell><div class=bar-track><div class=bar style='width:" +
        (100 * v / Math.max(best, 1)).toFixed(2) + "%;" + (m.main ? "" : "background:#9fb3c8") +
        "'></div></div><span>" + fmtPct(v) + "</span></div></td>" +
        (S.batch ? "<td class=num>" + (S.batch / (m.iteration_us * 1e-6)).toFixed(1) + "</td>" : "") +
        "<td class=num>" + fmtBytes(m.swap_in_bytes) + "</td><td class=num>" + fmtBytes(m.swap_out_bytes) +
        "</td><td class=num>" + fmtUs(m.stall_us) + "</td><td class=num>" + fmtBytes(m.peak_device_bytes) +
        "</td><td class=num>" + (m.planning_seconds >= 0.05 ? m.planning_seconds.toFixed(1) + " s" : "&lt; 0.1 s") +
        (m.evaluations > 1 ? " (" + fmtInt(m.evaluations) + " plans)" : "") + "</td></tr>";
    }
    t.innerHTML = h + "</tbody>";
  }

  // ------------------------------------------------------------------ tables

  let selectedTensor = -1;  // index into tensors, marked on the timeline

  function kindTag(i) { return "<span class=kind>" + esc(D.kinds[tensors.kind[i]]) + "</span>"; }

  function renderTensorTable(limit) {
    const tr = D.traffic;
    const n = Math.min(limit, tr.tensor.length);
    let h = "<thead><tr><th class=num>#</th><th>Tensor</th><th>Kind</th><th class=num>Size</th>" +
      "<th class=num>Swap-ins</th><th class=num>Swap-outs</th><th class=num>Drops</th>" +
      "<th class=num>Bytes moved</th></tr></thead><tbody>";
    for (let r = 0; r < n; r++) {
      const i = tr.tensor[r];
      h += "<tr data-tensor='" + i + "'" + (i === selectedTensor ? " class=selected" : "") + "><td class=num>" + (r + 1) +
        "</td><td class=name title='" + esc(tensorLabel(i)) + "'>" + esc(tensorLabel(i)) + "</td><td>" + kindTag(i) +
        "</td><td class=num>" + fmtBytes(tensors.bytes[i]) + "</td><td class=num>" + tr.in[r] +
        "</td><td class=num>" + tr.out[r] + "</td><td class=num>" + tr.drops[r] +
        "</td><td class=num>" + fmtBytes(tr.bytes[r]) + "</td></tr>";
    }
    if (n === 0) h += "<tr><td colspan=8 class=empty>The plan copies nothing.</td></tr>";
    $("tensors").innerHTML = h + "</tbody>";
    const more = $("tensors-more");
    if (tr.tensor.length > 15) {
      more.hidden = false;
      more.textContent = limit > 15 ? "Show fewer" : "Show " + tr.tensor.length + (tr.total > tr.tensor.length ? " of " + fmtInt(tr.total) : "");
      more.onclick = () => renderTensorTable(limit > 15 ? 15 : tr.tensor.length);
    }
  }

  function renderStalls() {
    const st = D.stalls;
    const share = S.iteration_us > 0 ? st.total_us / S.iteration_us : 0;
    if (st.count === 0) {
      $("stall-summary").textContent = "The compute stream never waits: every copy finishes before the op that needs it starts.";
    } else {
      $("stall-summary").innerHTML = "The compute stream sits idle <b>" + fmtInt(st.count) + "</b> times for <b>" +
        fmtUs(st.total_us) + "</b> in all (" + fmtPct(share) + " of the iteration). Each stall is blamed on the step the op " +
        "waited for that finished last: a swap-in still copying its input, or a swap-out freeing the memory it needs " +
        "(that copy may itself have queued behind others on its stream)." +
        (st.unattributed_us > 0 ? " " + fmtUs(st.unattributed_us) + " has no copy to blame." : "") +
        " Click a row to see it on the timeline.";
    }
    const top = st.top;
    let h = "<thead><tr><th>Op that waited</th><th class=num>At</th><th class=num>Idle</th><th>Waiting for</th>" +
      "<th class=num>Size</th></tr></thead><tbody>";
    for (let r = 0; r < Math.min(12, top.op.length); r++) {
      const k = top.culprit_kind[r], ti = top.culprit_tensor[r];
      const what = ti >= 0 ? (k === 1 ? "swap-in of " : "swap-out of ") + esc(tensorLabel(ti)) : "—";
      h += "<tr data-stall='" + r + "'><td class=name title='" + esc(opLabel(top.op[r])) + "'>" + esc(opLabel(top.op[r])) +
        "</td><td class=num>" + fmtNs(top.start_ns[r]) + "</td><td class=num><b>" + fmtNs(top.idle_ns[r]) +
        "</b></td><td class=name title='" + what + "'>" + what + "</td><td class=num>" +
        (ti >= 0 ? fmtBytes(tensors.bytes[ti]) : "") + "</td></tr>";
    }
    if (top.op.length === 0) h += "<tr><td colspan=5 class=empty>No stalls.</td></tr>";
    $("stalls").innerHTML = h + "</tbody>";

    const bt = st.by_tensor;
    h = "<thead><tr><th>Tensor</th><th>Kind</th><th>Via</th><th class=num>Stalls</th><th class=num>Idle</th>" +
      "<th class=num>Share</th></tr></thead><tbody>";
    for (let r = 0; r < Math.min(12, bt.tensor.length); r++) {
      const i = bt.tensor[r];
      const via = bt.via_in[r] && bt.via_out[r] ? "both" : bt.via_out[r] ? "swap-out" : "swap-in";
      h += "<tr data-tensor='" + i + "'><td class=name title='" + esc(tensorLabel(i)) + "'>" + esc(tensorLabel(i)) +
        "</td><td>" + kindTag(i) + "</td><td>" + via + "</td><td class=num>" + bt.stalls[r] + "</td><td class=num><b>" +
        fmtNs(bt.idle_ns[r]) + "</b></td><td class=num>" + fmtPct(bt.idle_ns[r] * 1e-3 / Math.max(st.total_us, 1e-9)) +
        "</td></tr>";
    }
    if (bt.tensor.length === 0) h += "<tr><td colspan=6 class=empty>No copy held compute back.</td></tr>";
    $("stall-tensors").innerHTML = h + "</tbody>";
  }

  function wireTables() {
    $("stalls").addEventListener("click", (e) => {
      const row = e.target.closest("tr[data-stall]");
      if (!row) return;
      const r = +row.dataset.stall, top = D.stalls.top;
      const a = Math.min(top.culprit_start_ns[r], top.start_ns[r] - top.idle_ns[r]);
      const b = top.start_ns[r] + Math.max(top.idle_ns[r], 1000);
      const pad = (b - a) * 0.25 + 1000;
      selectTensor(top.culprit_tensor[r], false);
      setView(a - pad, b + pad);
      $("timeline-section").scrollIntoView({ behavior: "smooth" });
    });
    const pick = (e) => {
      const row = e.target.closest("tr[data-tensor]");
      if (row) selectTensor(+row.dataset.tensor, true);
    };
    $("stall-tensors").addEventListener("click", pick);
    $("tensors").addEventListener("click", pick);
  }

  function selectTensor(i, toggle) {
    selectedTensor = toggle && selectedTensor === i ? -1 : i;
    for (const tr of document.querySelectorAll("tr[data-tensor]"))
      tr.classList.toggle("selected", +tr.dataset.tensor === selectedTensor);
    renderLegend();
    requestDraw();
  }

  // ------------------------------------------------------------------- plots

  const COLORS = {
    forward: "#4e79a7", backward: "#8e6bb0", update: "#59a14f", other: "#8c959f",
    h2d: "#f28e2b", h2dPersistent: "#b5651d", d2h: "#3f9a94", d2hPersistent: "#23615c",
    drop: "#8c959f", stall: "#d1493f", mark: "#d62728", mem: "#4e79a7", budget: "#d1493f", pool: "#9c755f",
    grid: "#eef1f4", axis: "#57606a", text: "#3d444d", lane: "#f6f8fa",
  };
  const PHASE_COLOR = [COLORS.other, COLORS.forward, COLORS.backward, COLORS.update];
  const GUTTER = 128, RIGHT = 14;   // CSS pixels left of and right of the plots' time axis
  const OVERVIEW_H = 26, AXIS_H = 24, LANE_H = 30, LANE_GAP = 8, DROP_H = 16, STALL_H = 4;
  const MEM_H = 230, MEM_TOP = 14, MEM_BOTTOM = 26;

  const view = { t0: 0, t1: T };
  let hover = null;  // {lane, index} or {memory: t}

  function setView(t0, t1) {
    const minSpan = Math.min(50, T);    // ns
    let span = Math.max(t1 - t0, minSpan);
    span = Math.min(span, T);
    t0 = Math.max(0, Math.min(t0, T - span));
    view.t0 = t0;
    view.t1 = t0 + span;
    requestDraw();
  }

  let drawQueued = false;
  function requestDraw() {
    if (drawQueued) return;
    drawQueued = true;
    requestAnimationFrame(() => { drawQueued = false; drawAll(); });
  }

  function setupCanvas(c, cssH) {
    const dpr = window.devicePixelRatio || 1;
    const w = c.parentElement.clientWidth - 2;
    if (c.width !== Math.round(w * dpr) || c.height !== Math.round(cssH * dpr)) {
      c.width = Math.round(w * dpr);
      c.height = Math.round(cssH * dpr);
      c.style.height = cssH + "px";
    }
    const ctx = c.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, cssH);
    return { ctx: ctx, w: w, h: cssH, plotW: Math.max(10, w - GUTTER - RIGHT) };
  }

  // First index whose end is >= t; ends are non-decreasing within a stream.
  function firstEnding(end, n, t) {
    let lo = 0, hi = n;
    while (lo < hi) { const m = (lo + hi) >> 1; if (end[m] < t) lo = m + 1; else hi = m; }
    return lo;
  }
  // Last index with a[i] <= t, or -1.
  function lastAtOrBefore(a, n, t) {
    let lo = 0, hi = n;
    while (lo < hi) { const m = (lo + hi) >> 1; if (a[m] <= t) lo = m + 1; else hi = m; }
    return lo - 1;
  }

  function niceStep(span, target) {
    const raw = span / target, p = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / p;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
  }
  function drawTimeAxis(ctx, x0, w, y, h, withLabels) {
    const k = w / (view.t1 - view.t0);
    const step = niceStep(view.t1 - view.t0, Math.max(2, w / 110));
    ctx.font = "11px system-ui, 'DejaVu Sans', sans-serif";
    ctx.textBaseline = "middle";
    ctx.textAlign = "center";
    for (let t = Math.ceil(view.t0 / step) * step; t <= view.t1 + 1e-9; t += step) {
      const x = Math.round(x0 + (t - view.t0) * k) + 0.5;
      ctx.fillStyle = COLORS.grid;
      ctx.fillRect(x - 0.5, y, 1, h);
      if (withLabels) {
        ctx.fillStyle = COLORS.axis;
        ctx.fillText(fmtNs(t), Math.min(Math.max(x, x0 + 18), x0 + w - 18), withLabels);
      }
    }
  }

  // Draws one stream's steps in [y, y+h). colorOf(i) gives a step's colour;
  // colorKey(i) the index of that colour among `palette` for aggregation.
  function drawLane(ctx, L, x0, w, y, h, palette, colorKey, label) {
    const t0 = view.t0, t1 = view.t1, k = w / (t1 - t0);
    const cols = Math.ceil(w);
    const cov = palette.map(() => new Float32Array(cols + 1));
    let visited = 0;
    ctx.font = "11px system-ui, 'DejaVu Sans', sans-serif";
    ctx.textBaseline = "middle";
    ctx.textAlign = "left";
    for (let i = firstEnding(L.end, L.n, t0); i < L.n && L.start[i] <= t1; i++) {
      visited++;
      const a = (Math.max(L.start[i], t0) - t0) * k, b = (Math.min(L.end[i], t1) - t0) * k;
      const c = colorKey(i);
      if (b - a >= 2) {
        ctx.fillStyle = palette[c];
        ctx.fillRect(x0 + a, y, Math.max(1, b - a - (b - a >= 5 ? 1 : 0)), h);
        if (b - a > 46 && label) {
          ctx.save();
          ctx.beginPath();
          ctx.rect(x0 + a + 3, y, b - a - 6, h);
          ctx.clip();
          ctx.fillStyle = "#fff";
          ctx.fillText(label(i), x0 + a + 4, y + h / 2 + 0.5);
          ctx.restore();
        }
      } else {
        // Sub-pixel: add the covered fraction of each column.
        let ca = Math.floor(a);
        const cb = Math.min(Math.floor(b), cols);
        const cv = cov[c];
        if (ca === cb) cv[ca] += b - a;
        else {
          cv[ca] += ca + 1 - a;
          for (let x = ca + 1; x < cb; x++) cv[x] += 1;
          cv[cb] += b - cb;
        }
      }
    }
    for (let x = 0; x <= cols; x++) {
      let tot = 0, best = 0, bi = 0;
      for (let c = 0; c < cov.length; c++) {
        const v = cov[c][x];
        tot += v;
        if (v > best) { best = v; bi = c; }
      }
      if (tot <= 0) continue;
      ctx.globalAlpha = 0.3 + 0.7 * Math.min(1, tot);
      ctx.fillStyle = palette[bi];
      ctx.fillRect(x0 + x, y, 1, h);
    }
    ctx.globalAlpha = 1;
    return visited;
  }

  // Stall gaps on the compute stream: a red band under the lane.
  function drawStalls(ctx, x0, w, y, h) {
    const t0 = view.t0, t1 = view.t1, k = w / (t1 - t0), L = compute;
    ctx.fillStyle = COLORS.stall;
    let prevEnd = 0;
    let i = firstEnding(L.end, L.n, t0);
    if (i > 0) prevEnd = L.end[i - 1];
    for (; i < L.n; i++) {
      const s = L.start[i];
      if (prevEnd > t1) break;
      if (s > prevEnd) {
        const a = (Math.max(prevEnd, t0) - t0) * k, b = (Math.min(s, t1) - t0) * k;
        if (b > 0 && a < w) ctx.fillRect(x0 + a, y, Math.max(b - a, 0.75), h);
      }
      prevEnd = L.end[i];
    }
  }

  function markTensor(ctx, L, x0, w, y, h) {
    if (selectedTensor < 0) return;
    const k = w / (view.t1 - view.t0);
    ctx.strokeStyle = COLORS.mark;
    ctx.lineWidth = 2;
    for (let i = firstEnding(L.end, L.n, view.t0); i < L.n && L.start[i] <= view.t1; i++) {
      if (L.subject[i] !== selectedTensor) continue;
      const a = (Math.max(L.start[i], view.t0) - view.t0) * k, b = (Math.min(L.end[i], view.t1) - view.t0) * k;
      ctx.strokeRect(x0 + a - 1, y - 2, Math.max(b - a, 1) + 2, h + 4);
    }
  }

  const LANES = [];  // [{name, y, h, L}] filled by drawTimeline, used by hit tests
  const ovCache = { w: 0, data: null };

  function drawOverview(ctx, x0, w, y, h) {
    // Compute busy fraction per column over the whole iteration (cached per width).
    const cols = Math.ceil(w);
    if (ovCache.w !== cols) {
      const busy = new Float32Array(cols + 1), k = w / T;
      for (let i = 0; i < compute.n; i++) {
        const a = compute.start[i] * k, b = compute.end[i] * k;
        let ca = Math.floor(a); const cb = Math.min(Math.floor(b), cols);
        if (ca === cb) busy[ca] += b - a;
        else { busy[ca] += ca + 1 - a; for (let x = ca + 1; x < cb; x++) busy[x] += 1; busy[cb] += b - cb; }
      }
      ovCache.w = cols;
      ovCache.data = busy;
    }
    ctx.fillStyle = COLORS.lane;
    ctx.fillRect(x0, y, w, h);
    for (let x = 0; x < cols; x++) {
      const v = Math.min(1, ovCache.data[x]);
      ctx.fillStyle = v > 0.98 ? "#c5d3e2" : "#e8c1bd";
      const bh = Math.max(1, v * (h - 2));
      ctx.fillRect(x0 + x, y + h - 1 - bh, 1, bh);
    }
    const a = x0 + view.t0 / T * w, b = x0 + view.t1 / T * w;
    ctx.fillStyle = "rgba(78,121,167,0.16)";
    ctx.fillRect(a, y, Math.max(2, b - a), h);
    ctx.strokeStyle = COLORS.mem;
    ctx.lineWidth = 1.5;
    ctx.strokeRect(a, y + 0.75, Math.max(2, b - a), h - 1.5);
    ctx.fillStyle = COLORS.text;
    ctx.font = "11px system-ui, 'DejaVu Sans', sans-serif";
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    ctx.fillText("whole iteration", x0 - 10, y + h / 2);
  }

  function drawTimeline() {
    const c = $("timeline");
    const H = OVERVIEW_H + 10 + AXIS_H + 3 * (LANE_H + LANE_GAP) + STALL_H + DROP_H + 10;
    const { ctx, w, plotW } = setupCanvas(c, H);
    const x0 = GUTTER;
    drawOverview(ctx, x0, plotW, 6, OVERVIEW_H - 6);
    const axisY = OVERVIEW_H + 10;
    const lanesTop = axisY + AXIS_H;
    drawTimeAxis(ctx, x0, plotW, lanesTop, H - lanesTop - 4, axisY + AXIS_H / 2);
    LANES.length = 0;
    let y = lanesTop, visited = 0;
    const lanes = [
      { name: "Compute", L: compute, palette: PHASE_COLOR, key: (i) => ops.phase[compute.subject[i]],
        label: (i) => opLabel(compute.subject[i]) },
      { name: "Host → device", L: h2d, palette: [COLORS.h2d, COLORS.h2dPersistent],
        key: (i) => tensorPersistent[h2d.subject[i]], label: (i) => tensorLabel(h2d.subject[i]) },
      { name: "Device → host", L: d2h, palette: [COLORS.d2h, COLORS.d2hPersistent],
        key: (i) => tensorPersistent[d2h.subject[i]], label: (i) => tensorLabel(d2h.subject[i]) },
    ];
    ctx.textBaseline = "middle";
    for (const ln of lanes) {
      ctx.fillStyle = COLORS.lane;
      ctx.fillRect(x0, y, plotW, LANE_H);
      visited += drawLane(ctx, ln.L, x0, plotW, y, LANE_H, ln.palette, ln.key, ln.label);
      if (ln.L !== compute) markTensor(ctx, ln.L, x0, plotW, y, LANE_H);
      ctx.fillStyle = COLORS.text;
      ctx.font = "600 12px system-ui, 'DejaVu Sans', sans-serif";
      ctx.textAlign = "right";
      ctx.fillText(ln.name, x0 - 10, y + LANE_H / 2);
      LANES.push({ name: ln.name, y: y, h: LANE_H, L: ln.L });
      if (ln.L === compute) {
        drawStalls(ctx, x0, plotW, y + LANE_H + 1, STALL_H);
        ctx.font = "10.5px system-ui, 'DejaVu Sans', sans-serif";
        ctx.fillStyle = COLORS.stall;
        ctx.fillText("stalls", x0 - 10, y + LANE_H + 3);
        y += STALL_H + 2;
      }
      y += LANE_H + LANE_GAP;
    }
    // Drops: ticks, at most one per pixel column.
    ctx.fillStyle = COLORS.lane;
    ctx.fillRect(x0, y, plotW, DROP_H);
    ctx.fillStyle = COLORS.drop;
    const k = plotW / (view.t1 - view.t0);
    let lastX = -1;
    for (let i = Math.max(0, lastAtOrBefore(drops.time, drops.n, view.t0)); i < drops.n && drops.time[i] <= view.t1; i++) {
      if (drops.time[i] < view.t0) continue;
      const x = Math.floor((drops.time[i] - view.t0) * k);
      if (x === lastX) continue;
      lastX = x;
      ctx.fillRect(x0 + x, y + 3, 1, DROP_H - 6);
    }
    if (selectedTensor >= 0) {
      ctx.fillStyle = COLORS.mark;
      for (let i = 0; i < drops.n; i++)
        if (drops.subject[i] === selectedTensor && drops.time[i] >= view.t0 && drops.time[i] <= view.t1)
          ctx.fillRect(x0 + (drops.time[i] - view.t0) * k - 1, y, 3, DROP_H);
    }
    ctx.fillStyle = COLORS.text;
    ctx.font = "600 12px system-ui, 'DejaVu Sans', sans-serif";
    ctx.fillText("Drops", x0 - 10, y + DROP_H / 2);
    LANES.push({ name: "Drops", y: y, h: DROP_H, L: null });
    // Hover outline.
    if (hover && hover.lane !== undefined && hover.lane < 3) {
      const ln = LANES[hover.lane], L = ln.L, i = hover.index;
      const a = (L.start[i] - view.t0) * k, b = (L.end[i] - view.t0) * k;
      ctx.strokeStyle = "#111";
      ctx.lineWidth = 1.5;
      ctx.strokeRect(x0 + a - 0.5, ln.y - 1.5, Math.max(b - a, 1) + 1, ln.h + 3);
    }
    if (hover && hover.time !== undefined) drawCursor(ctx, x0, plotW, lanesTop, y + DROP_H - lanesTop, hover.time);
    c.setAttribute("data-drawn", String(visited));
    return visited;
  }

  function drawCursor(ctx, x0, w, y, h, t) {
    if (t < view.t0 || t > view.t1) return;
    const x = Math.round(x0 + (t - view.t0) * w / (view.t1 - view.t0)) + 0.5;
    ctx.strokeStyle = "rgba(31,35,40,0.45)";
    ctx.lineWidth = 1;
    ctx.setLineDash([3, 3]);
    ctx.beginPath(); ctx.moveTo(x, y); ctx.lineTo(x, y + h); ctx.stroke();
    ctx.setLineDash([]);
  }

  function drawMemory() {
    const c = $("memory");
    const { ctx, plotW } = setupCanvas(c, MEM_H);
    const x0 = GUTTER, w = plotW, top = MEM_TOP, ph = MEM_H - MEM_TOP - MEM_BOTTOM;
    const ymax = Math.max(S.budget, S.peak_device_bytes, S.pool_bytes, 1) * 1.08;
    const yOf = (b) => top + ph - b / ymax * ph;
    // Grid and y labels.
    const gstep = niceStep(ymax / 1073741824, 4) * 1073741824;
    ctx.font = "11px system-ui, 'DejaVu Sans', sans-serif";
    ctx.textBaseline = "middle";
    ctx.textAlign = "right";
    for (let b = 0; b <= ymax; b += gstep) {
      const y = Math.round(yOf(b)) + 0.5;
      ctx.fillStyle = COLORS.grid;
      ctx.fillRect(x0, y - 0.5, w, 1);
      ctx.fillStyle = COLORS.axis;
      ctx.fillText(fmtBytes(b), x0 - 10, y);
    }
    drawTimeAxis(ctx, x0, w, top, ph, MEM_H - MEM_BOTTOM / 2);
    // Per column: the most bytes in use at any moment of the column (peaks stay visible).
    const cols = Math.ceil(w), k = w / (view.t1 - view.t0);
    const colMax = new Float64Array(cols + 1).fill(-1);
    let visited = 0;
    for (let i = Math.max(0, lastAtOrBefore(mem.time, mem.n, view.t0)); i < mem.n && mem.time[i] <= view.t1; i++) {
      visited++;
      const tEnd = i + 1 < mem.n ? mem.time[i + 1] : T;
      if (tEnd < view.t0) continue;
      const ca = Math.max(0, Math.floor((mem.time[i] - view.t0) * k));
      const cb = Math.min(cols, Math.floor((Math.min(tEnd, view.t1) - view.t0) * k));
      const v = mem.bytes[i];
      for (let x = ca; x <= cb; x++) if (v > colMax[x]) colMax[x] = v;
    }
    ctx.beginPath();
    let started = false, lastX = 0;
    for (let x = 0; x <= cols; x++) {
      if (colMax[x] < 0) continue;
      const y = yOf(colMax[x]);
      if (!started) { ctx.moveTo(x0 + x, top + ph); ctx.lineTo(x0 + x, y); started = true; }
      else ctx.lineTo(x0 + x, y);
      ctx.lineTo(x0 + x + 1, y);
      lastX = x + 1;
    }
    if (started) {
      ctx.lineTo(x0 + lastX, top + ph);
      ctx.closePath();
      ctx.fillStyle = "rgba(78,121,167,0.22)";
      ctx.fill();
      ctx.beginPath();
      let first = true;
      for (let x = 0; x <= cols; x++) {
        if (colMax[x] < 0) continue;
        const y = yOf(colMax[x]);
        if (first) { ctx.moveTo(x0 + x, y); first = false; } else ctx.lineTo(x0 + x, y);
        ctx.lineTo(x0 + x + 1, y);
      }
      ctx.strokeStyle = COLORS.mem;
      ctx.lineWidth = 1.25;
      ctx.stroke();
    }
    // Reference lines.
    const hline = (b, color, dash, text, below) => {
      const y = Math.round(yOf(b)) + 0.5;
      ctx.strokeStyle = color;
      ctx.lineWidth = 1.5;
      ctx.setLineDash(dash);
      ctx.beginPath(); ctx.moveTo(x0, y); ctx.lineTo(x0 + w, y); ctx.stroke();
      ctx.setLineDash([]);
      ctx.fillStyle = color;
      ctx.textAlign = "right";
      ctx.font = "600 11px system-ui, 'DejaVu Sans', sans-serif";
      ctx.fillText(text, x0 + w - 6, y + (below ? 9 : -8));
    };
    hline(S.budget, COLORS.budget, [6, 4], "budget " + fmtBytes(S.budget), false);
    if (S.pool_bytes < S.budget * 0.985) hline(S.pool_bytes, COLORS.pool, [2, 3], "pool " + fmtBytes(S.pool_bytes), true);
    if (hover && hover.time !== undefined) drawCursor(ctx, x0, w, top, ph, hover.time);
    c.setAttribute("data-drawn", String(visited));
    return visited;
  }

  function drawAll() {
    const t = performance.now();
    drawTimeline();
    drawMemory();
    document.body.setAttribute("data-last-draw-ms", (performance.now() - t).toFixed(1));
  }

  function renderLegend() {
    const items = [
      ["Forward", COLORS.forward], ["Backward", COLORS.backward], ["Update", COLORS.update],
      ["Swap-in (activation)", COLORS.h2d], ["Swap-in (param/state)", COLORS.h2dPersistent],
      ["Swap-out (activation)", COLORS.d2h], ["Swap-out (param/state)", COLORS.d2hPersistent],
      ["Compute stall", COLORS.stall],
    ];
    let h = items.map(([n, c]) => "<span><i style='background:" + c + "'></i>" + esc(n) + "</span>").join("");
    h += "<span><i class=line style='border-color:" + COLORS.budget + "'></i>Budget</span>";
    if (selectedTensor >= 0) h += "<span><i style='background:none;border:2px solid " + COLORS.mark + "'></i>Copies of " +
      esc(tensorLabel(selectedTensor)) + " <button type=button id=clear-mark>clear</button></span>";
    $("legend").innerHTML = h;
    const cl = $("clear-mark");
    if (cl) cl.onclick = () => selectTensor(-1, false);
  }

  // ------------------------------------------------------------- interaction

  const tip = $("tooltip");
  function showTip(e, html) {
    tip.innerHTML = html;
    tip.hidden = false;
    const r = tip.getBoundingClientRect();
    let x = e.clientX + 14, y = e.clientY + 14;
    if (x + r.width > window.innerWidth - 8) x = e.clientX - r.width - 14;
    if (y + r.height > window.innerHeight - 8) y = e.clientY - r.height - 14;
    tip.style.left = x + "px";
    tip.style.top = y + "px";
  }
  function hideTip() { tip.hidden = true; }

  function timeAt(canvas, clientX) {
    const r = canvas.getBoundingClientRect();
    const w = Math.max(10, canvas.clientWidth - GUTTER - RIGHT);
    return { t: view.t0 + (clientX - r.left - GUTTER) / w * (view.t1 - view.t0), x: clientX - r.left, w: w };
  }

  function hitLane(L, t, slack) {
    let i = firstEnding(L.end, L.n, t - slack);
    let best = -1, bestD = Infinity;
    for (; i < L.n && L.start[i] <= t + slack; i++) {
      const d = t < L.start[i] ? L.start[i] - t : t > L.end[i] ? t - L.end[i] : 0;
      if (d < bestD) { bestD = d; best = i; }
      if (d === 0) break;
    }
    return best;
  }

  function timelineTip(e) {
    const c = $("timeline");
    const { t, x, w } = timeAt(c, e.clientX);
    const y = e.clientY - c.getBoundingClientRect().top;
    if (x < GUTTER || x > GUTTER + w) { hover = null; hideTip(); requestDraw(); return; }
    const slack = 3 * (view.t1 - view.t0) / w;
    hover = { time: t };
    for (let li = 0; li < LANES.length; li++) {
      const ln = LANES[li];
      if (y < ln.y - 2 || y > ln.y + ln.h + 2) continue;
      if (ln.L === null) {
        const j = lastAtOrBefore(drops.time, drops.n, t + slack);
        if (j >= 0 && drops.time[j] >= t - slack) {
          const ti = drops.subject[j];
          showTip(e, "<b>drop " + esc(tensorLabel(ti)) + "</b><br><span class=m>" + esc(D.kinds[tensors.kind[ti]]) + ", " +
            fmtBytes(tensors.bytes[ti]) + " · at " + fmtNs(drops.time[j]) + "</span><br>frees its object without a copy");
          requestDraw();
          return;
        }
        break;
      }
      const i = hitLane(ln.L, t, slack);
      if (i < 0) break;
      hover = { lane: li, index: i, time: t };
      const L = ln.L, dur = L.end[i] - L.start[i];
      let h;
      if (L === compute) {
        const o = L.subject[i];
        const gap = L.start[i] - (i > 0 ? L.end[i - 1] : 0);
        h = "<b>" + esc(opLabel(o)) + "</b><br><span class=m>" + esc(D.types[ops.type[o]]) + " · op " + o +
          (phaseName(o) ? " · " + phaseName(o) : "") + "</span><br>" + fmtNs(L.start[i]) + " → " + fmtNs(L.end[i]) +
          " (" + fmtNs(dur) + ")" + (gap > 0 ? "<br><span style='color:#ff9b93'>stalled " + fmtNs(gap) +
          " waiting for copies</span>" : "");
      } else {
        const ti = L.subject[i], b = tensors.bytes[ti];
        h = "<b>" + (L === h2d ? "swap-in " : "swap-out ") + esc(tensorLabel(ti)) + "</b><br><span class=m>" +
          esc(D.kinds[tensors.kind[ti]]) + ", " + fmtBytes(b) + " · tensor " + tensors.id[ti] + "</span><br>" +
          fmtNs(L.start[i]) + " → " + fmtNs(L.end[i]) + " (" + fmtNs(dur) + ", " +
          (dur > 0 ? (b / dur).toFixed(1) : "∞") + " GB/s)";
      }
      showTip(e, h);
      requestDraw();
      return;
    }
    hideTip();
    requestDraw();
  }

  function memoryTip(e) {
    const c = $("memory");
    const { t, x, w } = timeAt(c, e.clientX);
    if (x < GUTTER || x > GUTTER + w || t < 0 || t > T) { hover = null; hideTip(); requestDraw(); return; }
    hover = { time: t };
    const j = lastAtOrBefore(mem.time, mem.n, t);
    const b = j >= 0 ? mem.bytes[j] : 0;
    showTip(e, "<b>" + fmtBytes(b) + "</b> in use at " + fmtNs(t) + "<br><span class=m>" + fmtPct(b / S.budget) +
      " of the budget · peak " + fmtBytes(S.peak_device_bytes) + "</span>");
    requestDraw();
  }

  function wirePlot(canvas, onHover) {
    let drag = null;
    canvas.addEventListener("wheel", (e) => {
      e.preventDefault();
      const { t, w } = timeAt(canvas, e.clientX);
      const dx = Math.abs(e.deltaX) > Math.abs(e.deltaY) ? e.deltaX : e.shiftKey ? e.deltaY : 0;
      if (dx !== 0) {
        const shift = dx / w * (view.t1 - view.t0);
        setView(view.t0 + shift, view.t1 + shift);
        return;
      }
      const f = Math.exp(Math.max(-1, Math.min(1, e.deltaY * (e.deltaMode === 1 ? 0.05 : 0.0018))));
      const anchor = Math.max(view.t0, Math.min(view.t1, t));
      setView(anchor - (anchor - view.t0) * f, anchor + (view.t1 - anchor) * f);
    }, { passive: false });
    canvas.addEventListener("pointerdown", (e) => {
      const r = canvas.getBoundingClientRect();
      const inOverview = canvas.id === "timeline" && e.clientY - r.top < OVERVIEW_H + 4;
      drag = { x: e.clientX, t0: view.t0, t1: view.t1, overview: inOverview, moved: false };
      try { canvas.setPointerCapture(e.pointerId); } catch (err) { /* a synthetic pointer */ }
      canvas.classList.add("dragging");
      if (inOverview) centerOn(canvas, e.clientX);
    });
    canvas.addEventListener("pointermove", (e) => {
      if (!drag) { onHover(e); return; }
      hideTip();
      drag.moved = true;
      if (drag.overview) { centerOn(canvas, e.clientX); return; }
      const w = Math.max(10, canvas.clientWidth - GUTTER - RIGHT);
      const shift = -(e.clientX - drag.x) / w * (drag.t1 - drag.t0);
      setView(drag.t0 + shift, drag.t1 + shift);
    });
    const end = () => { drag = null; canvas.classList.remove("dragging"); };
    canvas.addEventListener("pointerup", end);
    canvas.addEventListener("pointercancel", end);
    canvas.addEventListener("pointerleave", () => { if (!drag) { hover = null; hideTip(); requestDraw(); } });
    canvas.addEventListener("dblclick", () => setView(0, T));
  }
  function centerOn(canvas, clientX) {
    const r = canvas.getBoundingClientRect();
    const w = Math.max(10, canvas.clientWidth - GUTTER - RIGHT);
    const t = (clientX - r.left - GUTTER) / w * T, span = view.t1 - view.t0;
    setView(t - span / 2, t + span / 2);
  }
  function zoomBy(f) {
    const mid = (view.t0 + view.t1) / 2, half = (view.t1 - view.t0) / 2 * f;
    setView(mid - half, mid + half);
  }

  function selfTest() {
    const c = $("timeline"), m = $("memory");
    const fire = (target, type, x, y, extra) => {
      const init = Object.assign({ clientX: x, clientY: y, bubbles: true, cancelable: true, pointerId: 1 }, extra);
      target.dispatchEvent(type === "wheel" ? new WheelEvent(type, init) : new PointerEvent(type, init));
    };
    const r = c.getBoundingClientRect(), w = c.clientWidth - GUTTER - RIGHT;
    const at = (f) => r.left + GUTTER + f * w;
    fire(c, "wheel", at(0.5), r.top + OVERVIEW_H + 40, { deltaY: -400 });
    fire(c, "wheel", at(0.3), r.top + OVERVIEW_H + 40, { deltaX: 120 });
    let tips = 0;
    for (const ln of LANES.slice())
      for (let f = 0.05; f < 1; f += 0.1) {
        fire(c, "pointermove", at(f), r.top + ln.y + ln.h / 2);
        if (!tip.hidden) tips++;
      }
    fire(c, "pointerdown", at(0.6), r.top + OVERVIEW_H + 60);
    fire(c, "pointermove", at(0.4), r.top + OVERVIEW_H + 60);
    fire(c, "pointerup", at(0.4), r.top + OVERVIEW_H + 60);
    fire(c, "pointerdown", at(0.2), r.top + 10);  // the overview
    fire(c, "pointerup", at(0.2), r.top + 10);
    const rm = m.getBoundingClientRect();
    fire(m, "pointermove", rm.left + GUTTER + 0.5 * w, rm.top + 100);
    if (!tip.hidden) tips++;
    const more = $("tensors-more");
    if (!more.hidden) { more.click(); more.click(); }
    const tensorRow = document.querySelector("#tensors tr[data-tensor]");
    if (tensorRow) tensorRow.click();
    const stallRow = document.querySelector("#stalls tr[data-stall]");
    if (stallRow) stallRow.click();
    // Undo the click's smooth scroll, then hover a swap-in for a tooltip.
    window.scrollTo({ top: 0, behavior: "instant" });
    const r2 = c.getBoundingClientRect();
    fire(c, "pointermove", at(0.5) - r.left + r2.left, r2.top + LANES[1].y + LANES[1].h / 2);
    drawAll();
    document.body.setAttribute("data-selftest", "ok tooltips:" + tips);
  }

  // -------------------------------------------------------------------- start

  renderSummary();
  renderComparison();
  renderTensorTable(15);
  renderStalls();
  renderLegend();
  wireTables();
  $("memory-note").textContent = "The most bytes in use at any moment within each pixel column, so that short peaks stay visible. " +
    "An object counts from the start of the step that fills it until its tensor's last step on it ends.";
  wirePlot($("timeline"), timelineTip);
  wirePlot($("memory"), memoryTip);
  $("zoom-in").onclick = () => zoomBy(1 / 2);
  $("zoom-out").onclick = () => zoomBy(2);
  $("zoom-fit").onclick = () => setView(0, T);
  window.addEventListener("resize", () => { ovCache.w = 0; requestDraw(); });

  // The first draw is synchronous, so that the page is complete at load.
  const steps = drawTimeline(), points = drawMemory();
  document.body.setAttribute("data-drawn", "timeline:" + steps + " memory:" + points);
  document.body.setAttribute("data-draw-ms", performance.now().toFixed(0));
  document.body.setAttribute("data-script-ms", scriptStart.toFixed(0));
  // report.html#selftest: drive the page as a person would (zoom, hover every
  // lane and the memory plot, drag, click a stall and a tensor) so that a
  // headless test sees any error these paths throw; sets data-selftest.
  if (location.hash === "#selftest") selfTest();
  // report.html#bench: time 21 redraws at zoom levels from half the iteration
  // to all of it (tests/report/measure_draw.sh reads data-redraw-ms).
  if (location.hash === "#bench") {
    const t = performance.now();
    for (let i = 0; i < 20; i++) {
      view.t0 = T * i / 40;
      view.t1 = view.t0 + T * (0.5 + i / 40);
      drawAll();
    }
    view.t0 = 0;
    view.t1 = T;
    drawAll();
    document.body.setAttribute("data-redraw-ms", ((performance.now() - t) / 21).toFixed(1));
  }
})();
