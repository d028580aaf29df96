// The report page: reads the JSON data embedded in the page (report_data.h
// documents it) and draws the summary, the tables, the budget sweep, the
// timeline, the memory plot and the arena. No library: the plots are
// canvases drawn here.
//
// Large plans: every lane is an array of steps in time order, so the visible
// ones are found by binary search (culling) and steps narrower than a pixel
// are summed into per-column coverage (aggregation); a redraw visits only the
// visible steps and draws at most a few rectangles per pixel column. The
// arena paints its tenancies into a pixel buffer, each pixel the blend of
// what covers it, as runs along the rows: a redraw costs the visible
// tenancies times the rows each touches, plus the plot's pixels.
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
  // A table cell for a name of any length: one line, cut with an ellipsis
  // at the column's width (report.css, td.name .ell), the whole name in its
  // title (shown on hover).
  function nameCell(text, tail) {
    return "<td class=name><span class=ell title='" + esc(text) + "'>" + esc(text) + "</span>" + (tail || "") + "</td>";
  }
  function el(tag, attrs, html) {
    const e = document.createElement(tag);
    if (attrs) for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (html !== undefined) e.innerHTML = html;
    return e;
  }

  // -------------------------------------------------------------- decoding data

  // Delta-encoded integers -> absolute values. Plot times are nanoseconds:
  // the data counts them in UNIT ns (1 unless the plan lasts past 2^53 ns;
  // Note [Report data]), so they are added up as integers (exact in a
  // double) and scaled after, and a step that starts when the previous one
  // ends still compares equal to it.
  const UNIT = D.time_unit_ns || 1;
  function undelta(a, unit) {
    const out = new Float64Array(a.length);
    let acc = 0;
    for (let i = 0; i < a.length; i++) { acc += a[i]; out[i] = acc; }
    if (unit !== undefined && unit !== 1) for (let i = 0; i < out.length; i++) out[i] *= unit;
    return out;
  }
  const undeltaTime = (a) => undelta(a, UNIT);
  // Start and end times (ns) of intervals given as Δstart and duration.
  function intervals(rawStart, rawDur) {
    const start = undelta(rawStart), end = new Float64Array(start.length);
    for (let i = 0; i < start.length; i++) {
      end[i] = (start[i] + rawDur[i]) * UNIT;
      start[i] *= UNIT;
    }
    return { start: start, end: end };
  }
  // The stall tables' times, in ns.
  if (UNIT !== 1) {
    const top = D.stalls.top, bt = D.stalls.by_tensor;
    for (const k of ["start_ns", "idle_ns", "culprit_start_ns"]) top[k] = top[k].map((v) => v * UNIT);
    bt.idle_ns = bt.idle_ns.map((v) => v * UNIT);
  }
  function lane(raw) {
    const { start, end } = intervals(raw.start, raw.dur);
    return { start: start, end: end, subject: Int32Array.from(raw.subject), n: start.length };
  }
  const T = Math.max(1, Math.round(S.iteration_us * 1e3));  // ns, as every plot time
  const ops = D.ops, tensors = D.tensors;
  const compute = lane(D.lanes.compute), h2d = lane(D.lanes.h2d), d2h = lane(D.lanes.d2h);
  // Data-parallel plans: the collective stream (empty otherwise).
  const coll = lane(D.lanes.collective || { start: [], dur: [], subject: [] });
  compute.recompute = Uint8Array.from(D.lanes.compute.recompute || []);
  const isRecompute = (i) => i < compute.recompute.length && compute.recompute[i] === 1;
  const drops = { time: undeltaTime(D.drops.time), subject: Int32Array.from(D.drops.subject) };
  drops.n = drops.time.length;
  const mem = { time: undeltaTime(D.memory.time), bytes: undelta(D.memory.bytes) };
  mem.n = mem.time.length;
  // Host memory and NVMe over time (Note [Host memory over time]); null when
  // the plan keeps nothing on the host.
  const host = D.host ? {
    time: undeltaTime(D.host.time), bytes: undelta(D.host.bytes), nvme: undelta(D.host.nvme),
    n: D.host.time.length, arena: D.host.arena_bytes, budget: D.host.budget,
    nvmeTensors: D.host.nvme_tensors, nvmeBytes: D.host.nvme_bytes,
  } : null;
  // The arena: objects (address ranges) and their tenancies, sorted by begin.
  // maxEnd[i] is the latest end among tenancies 0..i (non-decreasing), so the
  // first one that can be visible from t0 on is found by binary search.
  const arena = (function () {
    const O = D.arena.objects, R = D.arena.tenancies;
    const { start: begin, end } = intervals(R.begin, R.dur), maxEnd = new Float64Array(begin.length);
    for (let i = 0, m = 0; i < begin.length; i++) {
      m = Math.max(m, end[i]);
      maxEnd[i] = m;
    }
    return {
      offset: undelta(O.offset), bytes: Float64Array.from(O.bytes), cls: Int32Array.from(O.cls),
      object: Int32Array.from(R.object), tenant: Int32Array.from(R.tenant),
      begin: begin, end: end, maxEnd: maxEnd, n: begin.length,
    };
  })();
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
      ", the sum of op times). It copies " + fmtBytes(S.swap_in_bytes) + " to the device and " +
      fmtBytes(S.swap_out_bytes) + " back, and the compute stream " +
      (S.stall_us > 0 ? "waits on copies for " + fmtUs(S.stall_us) + " (" + fmtPct(stallShare) + " of the iteration)."
                      : "never waits on a copy.");
    const cards = [
      ["Iteration time", fmtUs(S.iteration_us), S.batch ? (S.batch / (S.iteration_us * 1e-6)).toFixed(1) + " samples/s (batch " + S.batch + ")" : "simulated"],
      ["Of ideal", fmtPct(vsIdeal), "ideal " + fmtUs(S.ideal_us) + " (sum of op times)"],
      ["Memory budget", fmtBytes(S.budget), fmtPct(S.budget / S.peak_live) + " of peak live " + fmtBytes(S.peak_live)],
      ["Device memory peak", fmtBytes(S.peak_device_bytes), S.allocator === "arena"
        ? "arena " + fmtBytes(S.arena_bytes) + ", planned offsets, " + fmtInt(S.objects) + " objects"
        : "pool " + fmtBytes(S.pool_bytes) + " in " + fmtInt(S.classes) + " size classes"],
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

  // The `ideal` method is no ideal: it plans with unlimited memory in
  // program order and still copies to the device what the host holds (the
  // batch), so it can take longer than the ideal iteration, the sum of op
  // times, under which it would be listed. Shown as no-limit, with a note
  // (swapadvisor compare does the same).
  const methodLabel = (name) => name === "ideal" ? "no-limit" : name;
  const NO_LIMIT_NOTE = "no-limit: the ideal method (--method ideal), unlimited memory in program order: its memory " +
    "peak may pass the budget, and it still copies the batch to the device, so it can take longer than the ideal.";

  function renderComparison() {
    const t = $("compare");
    const ms = D.methods;
    const best = Math.max.apply(null, ms.filter((m) => m.feasible).map((m) => S.ideal_us / m.iteration_us));
    const noLimit = ms.some((m) => m.name === "ideal" && m.feasible);
    $("compare-note").textContent = (ms.length > 1
      ? "Every method planned for the same graph, device and budget, and timed by the same simulator."
      : "Only this plan was given. Add --baselines, or give compare's options instead of a plan, to compare methods.") +
      " Throughput vs ideal is the ideal iteration (" + fmtUs(S.ideal_us) + ", the sum of op times) over the method's." +
      (noLimit ? " " + NO_LIMIT_NOTE : "");
    let h = "<thead><tr><th>Method</th><th class=num>Iteration</th><th>Throughput vs ideal</th>" +
      (S.batch ? "<th class=num>Samples/s</th>" : "") +
      "<th class=num>Swapped in</th><th class=num>Swapped out</th><th class=num>Compute stall</th>" +
      "<th class=num>Memory peak</th><th class=num>Planning</th></tr></thead><tbody>";
    for (const m of ms) {
      const cls = m.main ? "main" : m.feasible ? "" : "off";
      h += "<tr class='" + cls + "'>" + nameCell(methodLabel(m.name), m.main ? "<span class=tag>shown below</span>" : "");
      if (!m.feasible) {
        h += "<td colspan=" + (S.batch ? 8 : 7) + " class=why>infeasible: " + esc(m.why) + "</td></tr>";
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
        "</td>" + nameCell(tensorLabel(i)) + "<td>" + kindTag(i) +
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
      const what = ti >= 0 ? (k === 1 ? "swap-in of " : "swap-out of ") + tensorLabel(ti) : "—";
      h += "<tr data-stall='" + r + "'>" + nameCell(opLabel(top.op[r])) +
        "<td class=num>" + fmtNs(top.start_ns[r]) + "</td><td class=num><b>" + fmtNs(top.idle_ns[r]) +
        "</b></td>" + nameCell(what) + "<td class=num>" +
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
      h += "<tr data-tensor='" + i + "'>" + nameCell(tensorLabel(i)) +
        "<td>" + kindTag(i) + "</td><td>" + via + "</td><td class=num>" + bt.stalls[r] + "</td><td class=num><b>" +
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
    forward: "#4e79a7", backward: "#8e6bb0", update: "#59a14f", other: "#8c959f", recompute: "#e15759",
    collective: "#9c6ade", h2d: "#f28e2b", h2dPersistent: "#b5651d", d2h: "#3f9a94", d2hPersistent: "#23615c",
    drop: "#8c959f", stall: "#d1493f", mark: "#d62728", mem: "#4e79a7", budget: "#d1493f", pool: "#9c755f",
    host: "#59a14f", nvme: "#9c6ade",
    grid: "#eef1f4", axis: "#57606a", text: "#3d444d", lane: "#f6f8fa",
  };
  // The compute lane's colours: by phase, and the recompute steps apart.
  const PHASE_COLOR = [COLORS.other, COLORS.forward, COLORS.backward, COLORS.update, COLORS.recompute];
  const GUTTER = 128, RIGHT = 14;   // CSS pixels left of and right of the plots' time axis
  const OVERVIEW_H = 26, AXIS_H = 24, LANE_H = 30, LANE_GAP = 8, DROP_H = 16, STALL_H = 4;
  const MEM_H = 230, MEM_TOP = 14, MEM_BOTTOM = 26;

  const view = { t0: 0, t1: T };
  let hover = null;  // {lane, index} or {memory: t}

  function setView(t0, t1) {
    // At least 50 ns, and at least a 10^-12 of the iteration: a double holds
    // about 16 digits, so a narrower view of a very long one could not tell
    // its ends apart.
    const minSpan = Math.max(Math.min(50, T), T * 1e-12);  // ns
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
    // Ticks by index: t += step would stop moving where step is below a
    // double's resolution of t (a very long iteration).
    for (let j = Math.ceil(view.t0 / step), n = 0; j * step <= view.t1 + 1e-9 && n < 1000; j++, n++) {
      const t = j * step;
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
    const H = OVERVIEW_H + 10 + AXIS_H + (coll.n > 0 ? 4 : 3) * (LANE_H + LANE_GAP) + STALL_H + DROP_H + 10;
    const { ctx, w, plotW } = setupCanvas(c, H);
    const x0 = GUTTER;
    drawOverview(ctx, x0, plotW, 6, OVERVIEW_H - 6);
    const axisY = OVERVIEW_H + 10;
    const lanesTop = axisY + AXIS_H;
    drawTimeAxis(ctx, x0, plotW, lanesTop, H - lanesTop - 4, axisY + AXIS_H / 2);
    LANES.length = 0;
    let y = lanesTop, visited = 0;
    const lanes = [
      { name: "Compute", L: compute, palette: PHASE_COLOR, key: (i) => isRecompute(i) ? 4 : ops.phase[compute.subject[i]],
        label: (i) => opLabel(compute.subject[i]) },
      { name: "Host → device", L: h2d, palette: [COLORS.h2d, COLORS.h2dPersistent],
        key: (i) => tensorPersistent[h2d.subject[i]], label: (i) => tensorLabel(h2d.subject[i]) },
      { name: "Device → host", L: d2h, palette: [COLORS.d2h, COLORS.d2hPersistent],
        key: (i) => tensorPersistent[d2h.subject[i]], label: (i) => tensorLabel(d2h.subject[i]) },
    ];
    if (coll.n > 0)
      lanes.push({ name: "Collective", L: coll, palette: [COLORS.collective], key: () => 0,
        label: (i) => opLabel(coll.subject[i]) });
    ctx.textBaseline = "middle";
    for (const ln of lanes) {
      ctx.fillStyle = COLORS.lane;
      ctx.fillRect(x0, y, plotW, LANE_H);
      visited += drawLane(ctx, ln.L, x0, plotW, y, LANE_H, ln.palette, ln.key, ln.label);
      if (ln.L !== compute && ln.L !== coll) markTensor(ctx, ln.L, x0, plotW, y, LANE_H);
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

  // A step for n or so grid lines up to max bytes: 1, 2 or 5 times a power
  // of ten of max's unit (B, KiB, MiB, GiB, ...), at least a byte.
  function byteStep(max, n) {
    const unit = Math.pow(1024, Math.max(0, Math.floor(Math.log(Math.max(max, 1)) / Math.log(1024))));
    return Math.max(1, niceStep(max / unit, n) * unit);
  }
  // Horizontal grid lines every byteStep, labelled left of x0.
  function drawByteGrid(ctx, x0, w, ymax, yOf) {
    const gstep = byteStep(ymax, 4);
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
  }
  // A labelled reference line at height y across [x0, x0 + w).
  function hline(ctx, x0, w, y, color, dash, text, below) {
    y = Math.round(y) + 0.5;
    ctx.strokeStyle = color;
    ctx.lineWidth = 1.5;
    ctx.setLineDash(dash);
    ctx.beginPath(); ctx.moveTo(x0, y); ctx.lineTo(x0 + w, y); ctx.stroke();
    ctx.setLineDash([]);
    ctx.fillStyle = color;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    ctx.font = "600 11px system-ui, 'DejaVu Sans', sans-serif";
    ctx.fillText(text, x0 + w - 6, y + (below ? 9 : -8));
  }
  // What the objects are called: planned offsets make an arena, size classes a pool.
  const spaceName = S.allocator === "arena" ? "arena" : "pool";

  // A step series (values[i] from times[i] on) per pixel column: the most
  // it reaches at any moment of the column (peaks stay visible), -1 where
  // the view shows none of it. visited: points read.
  function stepColumns(times, values, n, w) {
    const cols = Math.ceil(w), k = w / (view.t1 - view.t0);
    const colMax = new Float64Array(cols + 1).fill(-1);
    let visited = 0;
    for (let i = Math.max(0, lastAtOrBefore(times, n, view.t0)); i < n && times[i] <= view.t1; i++) {
      visited++;
      const tEnd = i + 1 < n ? times[i + 1] : T;
      if (tEnd < view.t0) continue;
      const ca = Math.max(0, Math.floor((times[i] - view.t0) * k));
      const cb = Math.min(cols, Math.floor((Math.min(tEnd, view.t1) - view.t0) * k));
      const v = values[i];
      for (let x = ca; x <= cb; x++) if (v > colMax[x]) colMax[x] = v;
    }
    return { colMax: colMax, visited: visited };
  }
  // The columns as a stepped line, filled down to the axis when fill is given.
  function drawColumns(ctx, colMax, x0, yOf, base, fill, stroke) {
    const trace = (closed) => {
      ctx.beginPath();
      let started = false, lastX = 0;
      for (let x = 0; x < colMax.length; x++) {
        if (colMax[x] < 0) continue;
        const y = yOf(colMax[x]);
        if (!started) { if (closed) { ctx.moveTo(x0 + x, base); ctx.lineTo(x0 + x, y); } else ctx.moveTo(x0 + x, y); started = true; }
        else ctx.lineTo(x0 + x, y);
        ctx.lineTo(x0 + x + 1, y);
        lastX = x + 1;
      }
      if (started && closed) { ctx.lineTo(x0 + lastX, base); ctx.closePath(); }
      return started;
    };
    if (fill && trace(true)) { ctx.fillStyle = fill; ctx.fill(); }
    if (trace(false)) { ctx.strokeStyle = stroke; ctx.lineWidth = 1.25; ctx.stroke(); }
  }

  function drawMemory() {
    const c = $("memory");
    const { ctx, plotW } = setupCanvas(c, MEM_H);
    const x0 = GUTTER, w = plotW, top = MEM_TOP, ph = MEM_H - MEM_TOP - MEM_BOTTOM;
    const ymax = Math.max(S.budget, S.peak_device_bytes, S.pool_bytes, 1) * 1.08;
    const yOf = (b) => top + ph - b / ymax * ph;
    drawByteGrid(ctx, x0, w, ymax, yOf);
    drawTimeAxis(ctx, x0, w, top, ph, MEM_H - MEM_BOTTOM / 2);
    const { colMax, visited } = stepColumns(mem.time, mem.bytes, mem.n, w);
    drawColumns(ctx, colMax, x0, yOf, top + ph, "rgba(78,121,167,0.22)", COLORS.mem);
    // Reference lines.
    hline(ctx, x0, w, yOf(S.budget), COLORS.budget, [6, 4], "budget " + fmtBytes(S.budget), false);
    if (S.pool_bytes < S.budget * 0.985)
      hline(ctx, x0, w, yOf(S.pool_bytes), COLORS.pool, [2, 3], spaceName + " " + fmtBytes(S.pool_bytes), true);
    if (hover && hover.time !== undefined) drawCursor(ctx, x0, w, top, ph, hover.time);
    c.setAttribute("data-drawn", String(visited));
    return visited;
  }

  // Host memory held by values, the NVMe tier's, the host arena and the
  // host budget; -1 when the plan keeps nothing on the host.
  function drawHost() {
    if (!host) return -1;
    const c = $("host-memory");
    const { ctx, plotW } = setupCanvas(c, MEM_H);
    const x0 = GUTTER, w = plotW, top = MEM_TOP, ph = MEM_H - MEM_TOP - MEM_BOTTOM;
    let most = Math.max(host.arena, host.budget, 1);
    for (let i = 0; i < host.n; i++) most = Math.max(most, host.bytes[i], host.nvme[i]);
    const ymax = most * 1.08;
    const yOf = (b) => top + ph - b / ymax * ph;
    drawByteGrid(ctx, x0, w, ymax, yOf);
    drawTimeAxis(ctx, x0, w, top, ph, MEM_H - MEM_BOTTOM / 2);
    const held = stepColumns(host.time, host.bytes, host.n, w);
    drawColumns(ctx, held.colMax, x0, yOf, top + ph, "rgba(89,161,79,0.22)", COLORS.host);
    if (host.nvmeTensors > 0)
      drawColumns(ctx, stepColumns(host.time, host.nvme, host.n, w).colMax, x0, yOf, top + ph, null, COLORS.nvme);
    if (host.budget > 0)
      hline(ctx, x0, w, yOf(host.budget), COLORS.budget, [6, 4], "host budget " + fmtBytes(host.budget), false);
    if (host.budget <= 0 || host.arena < host.budget * 0.985)
      hline(ctx, x0, w, yOf(host.arena), COLORS.pool, [2, 3], "host arena " + fmtBytes(host.arena), true);
    if (hover && hover.time !== undefined) drawCursor(ctx, x0, w, top, ph, hover.time);
    c.setAttribute("data-drawn", String(held.visited));
    return held.visited;
  }

  // ------------------------------------------------------------------ arena

  // Tenancies are coloured by their tensor's kind; workspaces have their own.
  const KIND_COLOR = {
    param: "#4e79a7", buffer: "#76b7b2", optimizer_state: "#9c755f", input: "#edc948",
    activation: "#f28e2b", gradient: "#b07aa1", temp: "#bab0ac",
  };
  const WORKSPACE_COLOR = "#8cd17d";
  const rgbOf = (hex) => [1, 3, 5].map((k) => parseInt(hex.substr(k, 2), 16));
  const KIND_RGB = D.kinds.map((k) => rgbOf(KIND_COLOR[k] || "#8c959f"));
  const WORKSPACE_RGB = rgbOf(WORKSPACE_COLOR);
  const ARENA_H = 300, ARENA_TOP = 14, ARENA_BOTTOM = 26;
  const ARENA_OUTLINE = 5;  // CSS pixels: tenancies at least this wide and tall get an outline
  const arenaMax = Math.max(S.budget, S.arena_bytes, 1) * 1.04;  // bytes at the top of the plot
  // The pixel buffer, per device pixel of the plot: the colour weighted by
  // the area covered (r, g, b) and that area (a), stored as differences
  // along each row: a tenancy adds its coverage of a run of columns where
  // the run begins and takes it off after it ends, and one pass adds the
  // rows up. So a tenancy costs the rows it touches, not its width (zoomed
  // out, most are far thinner than a pixel and hundreds of pixels wide).
  const arenaBuf = { w: 0, h: 0, dif: null, canvas: null, ctx: null, img: null };

  // Pixel box of tenancy i in the visible window: x in [xa, xb) from the
  // plot's left, y in [ya, yb) from its bottom, in units of kx per ns, ky per byte.
  function tenancyBox(i, kx, ky) {
    const o = arena.object[i];
    return {
      xa: (Math.max(arena.begin[i], view.t0) - view.t0) * kx,
      xb: (Math.min(arena.end[i], view.t1) - view.t0) * kx,
      ya: arena.offset[o] * ky,
      yb: (arena.offset[o] + arena.bytes[o]) * ky,
    };
  }

  // Adds the box [xa, xb) x [ya, yb) (device pixels, y from the bottom) in
  // colour rgb to the buffer.
  function paintBox(B, xa, xb, ya, yb, rgb) {
    const PW = B.w, PH = B.h, dif = B.dif;
    if (xb - xa < 0.05) { const m = (xa + xb) / 2; xa = m - 0.025; xb = m + 0.025; }  // instants stay visible
    xa = Math.max(xa, 0); xb = Math.min(xb, PW); ya = Math.max(ya, 0); yb = Math.min(yb, PH);
    if (xb <= xa || yb <= ya) return;
    const ca = Math.floor(xa), cb = Math.ceil(xb) - 1;  // the columns touched
    const fa = ca === cb ? xb - xa : ca + 1 - xa, fb = xb - cb;  // their edge columns' coverage
    for (let ry = Math.floor(ya), rb = Math.ceil(yb); ry < rb; ry++) {
      const fy = Math.min(yb, ry + 1) - Math.max(ya, ry);
      const at = (PH - 1 - ry) * (PW + 1);  // the row's first column
      addRun(dif, at + ca, at + ca + 1, fy * fa, rgb);
      if (cb === ca) continue;
      addRun(dif, at + cb, at + cb + 1, fy * fb, rgb);
      if (cb > ca + 1) addRun(dif, at + ca + 1, at + cb, fy, rgb);
    }
  }
  // Coverage f of colour rgb on the pixels [a, b) of one row of the differences.
  function addRun(dif, a, b, f, rgb) {
    a *= 4; b *= 4;
    dif[a] += f * rgb[0]; dif[a + 1] += f * rgb[1]; dif[a + 2] += f * rgb[2]; dif[a + 3] += f;
    dif[b] -= f * rgb[0]; dif[b + 1] -= f * rgb[1]; dif[b + 2] -= f * rgb[2]; dif[b + 3] -= f;
  }

  // The tenancies that overlap [t0, t1], in begin order: calls fn(i).
  // (drawArena's loop is this one, inlined.)
  function forVisibleTenancies(t0, t1, fn) {
    for (let i = firstEnding(arena.maxEnd, arena.n, t0); i < arena.n && arena.begin[i] <= t1; i++)
      if (arena.end[i] >= t0) fn(i);
  }

  function drawArena() {
    const c = $("arena");
    const { ctx, plotW } = setupCanvas(c, ARENA_H);
    const dpr = window.devicePixelRatio || 1;
    const x0 = GUTTER, w = plotW, top = ARENA_TOP, ph = ARENA_H - ARENA_TOP - ARENA_BOTTOM;
    const yOf = (b) => top + ph - b / arenaMax * ph;
    ctx.fillStyle = COLORS.lane;
    ctx.fillRect(x0, top, w, ph);
    drawByteGrid(ctx, x0, w, arenaMax, yOf);
    drawTimeAxis(ctx, x0, w, top, ph, ARENA_H - ARENA_BOTTOM / 2);
    const PW = Math.max(1, Math.round(w * dpr)), PH = Math.max(1, Math.round(ph * dpr));
    const B = arenaBuf;
    if (B.w !== PW || B.h !== PH) {
      B.w = PW; B.h = PH;
      B.dif = new Float64Array((PW + 1) * PH * 4);  // doubles: the + and - must cancel
      B.canvas = document.createElement("canvas");
      B.canvas.width = PW; B.canvas.height = PH;
      B.ctx = B.canvas.getContext("2d");
      B.img = B.ctx.createImageData(PW, PH);
    } else B.dif.fill(0);
    const dif = B.dif;
    const kx = PW / (view.t1 - view.t0), ky = PH / arenaMax, t0 = view.t0, t1 = view.t1;
    const outlined = [], marked = [], big = ARENA_OUTLINE * dpr;
    let visited = 0;
    for (let i = firstEnding(arena.maxEnd, arena.n, t0); i < arena.n && arena.begin[i] <= t1; i++) {
      if (arena.end[i] < t0) continue;
      visited++;
      const o = arena.object[i], t = arena.tenant[i];
      const xa = (Math.max(arena.begin[i], t0) - t0) * kx, xb = (Math.min(arena.end[i], t1) - t0) * kx;
      const ya = arena.offset[o] * ky, yb = (arena.offset[o] + arena.bytes[o]) * ky;
      paintBox(B, xa, xb, ya, yb, t >= 0 ? KIND_RGB[tensors.kind[t]] : WORKSPACE_RGB);
      if (xb - xa >= big && yb - ya >= big) outlined.push(i);
      if (t >= 0 && t === selectedTensor) marked.push(i);
    }
    // Each pixel: the blend of what covers it (its row's running sums);
    // partly covered pixels fade, as the lanes' do.
    const px = B.img.data;
    for (let y = 0; y < PH; y++) {
      let r = 0, g = 0, bl = 0, a = 0;
      for (let x = 0, p = y * PW * 4, q = y * (PW + 1) * 4; x < PW; x++, p += 4, q += 4) {
        r += dif[q]; g += dif[q + 1]; bl += dif[q + 2]; a += dif[q + 3];
        if (a <= 1e-9) { px[p + 3] = 0; continue; }
        px[p] = r / a; px[p + 1] = g / a; px[p + 2] = bl / a;
        px[p + 3] = a >= 0.999 ? 255 : 255 * (0.3 + 0.7 * a);
      }
    }
    B.ctx.putImageData(B.img, 0, 0);
    ctx.drawImage(B.canvas, x0, top, PW / dpr, PH / dpr);
    // Outlines in CSS pixels: the large tenancies apart, the selected tensor's, the hovered one.
    const box = (i) => {
      const b = tenancyBox(i, kx / dpr, ky / dpr);
      return { x: x0 + b.xa, y: top + ph - b.yb, w: b.xb - b.xa, h: b.yb - b.ya };
    };
    ctx.strokeStyle = "rgba(255,255,255,0.85)";
    ctx.lineWidth = 1;
    for (const i of outlined) {
      const r = box(i);
      ctx.strokeRect(r.x + 0.5, r.y + 0.5, r.w - 1, r.h - 1);
    }
    const ring = (i, color, lw) => {
      const r = box(i);
      ctx.strokeStyle = color;
      ctx.lineWidth = lw;
      ctx.strokeRect(r.x - 1, r.y - 1, Math.max(r.w, 1) + 2, Math.max(r.h, 1) + 2);
    };
    for (const i of marked) ring(i, COLORS.mark, 2);
    if (hover && hover.tenancy !== undefined) ring(hover.tenancy, "#111", 1.5);
    hline(ctx, x0, w, yOf(S.budget), COLORS.budget, [6, 4], "budget " + fmtBytes(S.budget), false);
    if (S.arena_bytes < S.budget * 0.96)
      hline(ctx, x0, w, yOf(S.arena_bytes), COLORS.pool, [2, 3], spaceName + " " + fmtBytes(S.arena_bytes), false);
    ctx.fillStyle = COLORS.text;
    ctx.font = "600 12px system-ui, 'DejaVu Sans', sans-serif";
    ctx.textAlign = "right";
    ctx.fillText("address", x0 - 10, ARENA_H - ARENA_BOTTOM / 2);
    if (hover && hover.time !== undefined) drawCursor(ctx, x0, w, top, ph, hover.time);
    c.setAttribute("data-drawn", String(visited));
    return visited;
  }

  // The tenancy under the pointer, or the nearest one within 3 pixels; -1 if none.
  function hitTenancy(t, addr, nsPerPx, bytesPerPx) {
    let best = -1, bestD = 3;
    forVisibleTenancies(t - 3 * nsPerPx, t + 3 * nsPerPx, (i) => {
      if (bestD === 0) return;
      const o = arena.object[i], lo = arena.offset[o], hi = lo + arena.bytes[o];
      const dx = (t < arena.begin[i] ? arena.begin[i] - t : t > arena.end[i] ? t - arena.end[i] : 0) / nsPerPx;
      const dy = (addr < lo ? lo - addr : addr >= hi ? addr - hi : 0) / bytesPerPx;
      const d = Math.max(dx, dy);
      if (d < bestD || (d === bestD && best < 0)) { bestD = d; best = i; }
    });
    return best;
  }

  function arenaAt(e) {
    const c = $("arena");
    const { t, x, w } = timeAt(c, e.clientX);
    const ph = ARENA_H - ARENA_TOP - ARENA_BOTTOM;
    const y = e.clientY - c.getBoundingClientRect().top - ARENA_TOP;
    if (x < GUTTER || x > GUTTER + w || y < 0 || y > ph) return null;
    const bytesPerPx = arenaMax / ph;
    return { t: t, i: hitTenancy(t, (ph - y) * bytesPerPx, (view.t1 - view.t0) / w, bytesPerPx) };
  }

  function arenaTip(e) {
    const at = arenaAt(e);
    if (!at) { hover = null; hideTip(); requestDraw(); return; }
    const i = at.i;
    hover = i >= 0 ? { time: at.t, tenancy: i } : { time: at.t };
    if (i < 0) { hideTip(); requestDraw(); return; }
    const o = arena.object[i], tn = arena.tenant[i];
    const what = tn >= 0
      ? "<b>" + esc(tensorLabel(tn)) + "</b><br><span class=m>" + esc(D.kinds[tensors.kind[tn]]) + ", " +
        fmtBytes(tensors.bytes[tn]) + " · tensor " + tensors.id[tn] + "</span>"
      : "<b>workspace of " + esc(opLabel(-1 - tn)) + "</b><br><span class=m>op " + (-1 - tn) + "</span>";
    showTip(e, what + "<br>object " + o + (arena.cls[o] >= 0 ? " (class " + arena.cls[o] + ")" : "") + ": offset " +
      fmtBytes(arena.offset[o]) + " (" + fmtInt(arena.offset[o]) + "), " + fmtBytes(arena.bytes[o]) + "<br>" +
      fmtNs(arena.begin[i]) + " → " + fmtNs(arena.end[i]) + " (" + fmtNs(arena.end[i] - arena.begin[i]) + ")" +
      (tn >= 0 ? "<br><span class=m>click to mark this tensor</span>" : ""));
    requestDraw();
  }

  function arenaClick(e) {
    const at = arenaAt(e);
    if (at && at.i >= 0 && arena.tenant[at.i] >= 0) selectTensor(arena.tenant[at.i], true);
  }

  function renderArenaLegend() {
    const used = new Set();
    let workspace = false;
    for (let i = 0; i < arena.n; i++) {
      const t = arena.tenant[i];
      if (t >= 0) used.add(tensors.kind[t]); else workspace = true;
    }
    let h = "";
    D.kinds.forEach((k, ki) => {
      if (used.has(ki)) h += "<span><i style='background:" + (KIND_COLOR[k] || "#8c959f") + "'></i>" + esc(k) + "</span>";
    });
    if (workspace) h += "<span><i style='background:" + WORKSPACE_COLOR + "'></i>op workspace</span>";
    h += "<span><i class=line style='border-color:" + COLORS.budget + "'></i>Budget</span>";
    $("arena-legend").innerHTML = h;
    $("arena-note").textContent = "Each rectangle is one tenancy: a tensor (or an op's workspace) in an object, a range " +
      "of the device arena, from the start of the step that fills it to the end of its last step there. " +
      (S.allocator === "arena"
        ? "Planned offsets: objects overlap in the arena where their tenancies follow one another in time. "
        : "Size classes: the pool's objects lie class by class, one after the other. ") +
      "Zoomed out, a pixel blends what covers it and fades where it is partly covered. Click a tensor to mark it.";
  }

  function drawAll() {
    const t = performance.now();
    drawTimeline();
    drawMemory();
    drawHost();
    drawArena();
    document.body.setAttribute("data-last-draw-ms", (performance.now() - t).toFixed(1));
  }

  function renderLegend() {
    const items = [
      ["Forward", COLORS.forward], ["Backward", COLORS.backward], ["Update", COLORS.update],
      ["Recompute", COLORS.recompute],
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

  // -------------------------------------------------------------- budget sweep

  // D.sweep: the budget sweep (methods/sweep.h), when the report was given one.
  const SW = D.sweep || null;
  const SWEEP_H = 270, SWEEP_TOP = 34, SWEEP_BOTTOM = 30;
  const SWEEP_COLOR = { floor: "#9c755f", peak: "#57606a", min: "#8e6bb0", target: "#f28e2b", infeasible: "#d1493f" };
  let sweepMarks = [];  // [{x, y, i (point) | target: true}] in CSS pixels, for hit tests
  const sweepOrder = SW ? SW.points.budget.map((b, i) => i).sort((a, b) => SW.points.budget[a] - SW.points.budget[b]) : [];

  function renderSweep() {
    if (!SW) return;
    $("sweep-section").hidden = false;
    const P = SW.points;
    const feasible = P.feasible.filter((f) => f).length;
    $("sweep-note").innerHTML = "The search at " + P.budget.length + " budgets (" + feasible + " feasible), from the smallest " +
      "feasible budget (" + fmtBytes(SW.min_budget) + ") to the peak live bytes (" + fmtBytes(SW.peak_live) + "). Without " +
      "swapping the graph needs " + fmtBytes(SW.no_swap_floor) + " (the no-swap floor, " + esc(SW.floor_order) + " order)." +
      (SW.target !== null ? " Target " + fmtPct(SW.target) + " of ideal: " + (SW.target_budget !== null
        ? "the smallest budget found to reach it is <b>" + fmtBytes(SW.target_budget) + "</b>."
        : "no budget tried reaches it.") : "") + " Hover a point for its numbers.";
    const items = [["% of ideal", COLORS.mem, ""], ["smallest feasible", SWEEP_COLOR.min, "vline"],
      ["no-swap floor", SWEEP_COLOR.floor, "vline"], ["peak live", SWEEP_COLOR.peak, "vline"]];
    if (SW.target !== null) items.push(["target", SWEEP_COLOR.target, "line"]);
    if (feasible < P.budget.length) items.push(["infeasible (on the axis)", SWEEP_COLOR.infeasible, ""]);
    $("sweep-legend").innerHTML = items.map(([n, c, k]) => "<span><i" + (k ? " class=" + k : "") + " style='" +
      (k ? "border-color:" : "background:") + c + "'></i>" + esc(n) + "</span>").join("");
    let h = "<thead><tr><th class=num>Budget</th><th class=num>Of peak live</th><th class=num>Of ideal</th>" +
      "<th class=num>Iteration</th><th class=num>GB in</th><th class=num>GB out</th></tr></thead><tbody>";
    for (const i of sweepOrder) {
      const b = P.budget[i];
      h += "<tr" + (b === SW.target_budget ? " class=main" : "") + "><td class=num>" + fmtBytes(b) +
        (b === SW.target_budget ? "<span class=tag>target</span>" : "") + "</td><td class=num>" + fmtPct(b / SW.peak_live) + "</td>";
      h += P.feasible[i]
        ? "<td class=num>" + fmtPct(P.throughput[i]) + "</td><td class=num>" + fmtUs(P.iteration_us[i]) + "</td><td class=num>" +
          (P.swap_in_bytes[i] / 1e9).toFixed(2) + "</td><td class=num>" + (P.swap_out_bytes[i] / 1e9).toFixed(2) + "</td></tr>"
        : "<td colspan=4 class=why>infeasible: " + esc(P.why[i]) + "</td></tr>";
    }
    $("sweep-table").innerHTML = h + "</tbody>";
  }

  function drawSweep() {
    if (!SW) return -1;
    const c = $("sweep");
    const { ctx, plotW } = setupCanvas(c, SWEEP_H);
    const P = SW.points;
    const x0 = GUTTER, w = plotW, top = SWEEP_TOP, ph = SWEEP_H - SWEEP_TOP - SWEEP_BOTTOM;
    const xmax = Math.max(SW.peak_live, SW.no_swap_floor, SW.min_budget, ...P.budget, 1) * 1.05;
    const ymax = Math.max(1, ...P.throughput);
    const xOf = (b) => x0 + b / xmax * w, yOf = (v) => top + ph - v / ymax * ph;
    ctx.font = "11px system-ui, 'DejaVu Sans', sans-serif";
    ctx.textBaseline = "middle";
    ctx.textAlign = "right";
    for (let v = 0; v <= ymax + 1e-9; v += 0.2) {
      const y = Math.round(yOf(v)) + 0.5;
      ctx.fillStyle = COLORS.grid;
      ctx.fillRect(x0, y - 0.5, w, 1);
      ctx.fillStyle = COLORS.axis;
      ctx.fillText((100 * v).toFixed(0) + "%", x0 - 10, y);
    }
    ctx.textAlign = "center";
    const xstep = byteStep(xmax, Math.max(2, Math.round(w / 110)));
    for (let b = 0; b <= xmax; b += xstep) {
      const x = Math.round(xOf(b)) + 0.5;
      ctx.fillStyle = COLORS.grid;
      ctx.fillRect(x - 0.5, top, 1, ph);
      ctx.fillStyle = COLORS.axis;
      ctx.fillText(fmtBytes(b), Math.min(Math.max(x, x0 + 18), x0 + w - 18), SWEEP_H - SWEEP_BOTTOM / 2);
    }
    ctx.fillStyle = COLORS.text;
    ctx.font = "600 12px system-ui, 'DejaVu Sans', sans-serif";
    ctx.textAlign = "right";
    ctx.fillText("of ideal", x0 - 10, top - 14);
    ctx.fillText("budget", x0 - 10, SWEEP_H - SWEEP_BOTTOM / 2);
    // Vertical reference lines, labelled above the plot on two rows.
    const vline = (b, color, text, row) => {
      const x = Math.round(xOf(b)) + 0.5;
      ctx.strokeStyle = color;
      ctx.lineWidth = 1.5;
      ctx.setLineDash([5, 4]);
      ctx.beginPath(); ctx.moveTo(x, top - 4 - 12 * row); ctx.lineTo(x, top + ph); ctx.stroke();
      ctx.setLineDash([]);
      ctx.fillStyle = color;
      ctx.font = "600 11px system-ui, 'DejaVu Sans', sans-serif";
      ctx.textAlign = x > x0 + w - 160 ? "right" : "left";
      ctx.fillText(text + " " + fmtBytes(b), x + (ctx.textAlign === "left" ? 4 : -4), top - 10 - 12 * row);
    };
    vline(SW.min_budget, SWEEP_COLOR.min, "smallest feasible", 1);
    vline(SW.no_swap_floor, SWEEP_COLOR.floor, "no-swap floor", 0);
    vline(SW.peak_live, SWEEP_COLOR.peak, "peak live", 1);
    if (SW.target !== null) hline(ctx, x0, w, yOf(SW.target), SWEEP_COLOR.target, [6, 4], "target " + fmtPct(SW.target), true);
    // The feasible points, joined in budget order; the infeasible ones on the axis.
    sweepMarks = [];
    ctx.strokeStyle = COLORS.mem;
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    let first = true;
    for (const i of sweepOrder) {
      if (!P.feasible[i]) continue;
      const x = xOf(P.budget[i]), y = yOf(P.throughput[i]);
      if (first) { ctx.moveTo(x, y); first = false; } else ctx.lineTo(x, y);
    }
    ctx.stroke();
    let drawn = 0;
    for (const i of sweepOrder) {
      const x = xOf(P.budget[i]);
      if (P.feasible[i]) {
        const y = yOf(P.throughput[i]);
        ctx.fillStyle = COLORS.mem;
        ctx.beginPath(); ctx.arc(x, y, 4, 0, 2 * Math.PI); ctx.fill();
        sweepMarks.push({ x: x, y: y, i: i });
        drawn++;
      } else {
        const y = top + ph;
        ctx.strokeStyle = SWEEP_COLOR.infeasible;
        ctx.lineWidth = 2;
        ctx.beginPath(); ctx.moveTo(x - 4, y - 4); ctx.lineTo(x + 4, y + 4); ctx.moveTo(x + 4, y - 4); ctx.lineTo(x - 4, y + 4); ctx.stroke();
        sweepMarks.push({ x: x, y: y, i: i });
      }
    }
    if (SW.target_budget !== null) {
      const j = sweepOrder.find((i) => P.budget[i] === SW.target_budget && P.feasible[i]);
      const x = xOf(SW.target_budget), y = yOf(j !== undefined ? P.throughput[j] : SW.target);
      ctx.strokeStyle = SWEEP_COLOR.target;
      ctx.lineWidth = 2.5;
      ctx.beginPath(); ctx.moveTo(x, y - 8); ctx.lineTo(x + 8, y); ctx.lineTo(x, y + 8); ctx.lineTo(x - 8, y); ctx.closePath(); ctx.stroke();
      sweepMarks.push({ x: x, y: y, i: j !== undefined ? j : -1, target: true });
    }
    c.setAttribute("data-drawn", String(drawn));
    return drawn;
  }

  function sweepTip(e) {
    const c = $("sweep"), r = c.getBoundingClientRect();
    const x = e.clientX - r.left, y = e.clientY - r.top;
    let best = null, bestD = 10;
    for (const m of sweepMarks) {
      const d = Math.hypot(m.x - x, m.y - y);
      if (d < bestD || (best && d === bestD && m.target)) { bestD = d; best = m; }
    }
    if (!best) { hideTip(); return; }
    const P = SW.points, i = best.i;
    const b = i >= 0 ? P.budget[i] : SW.target_budget;
    let h = "<b>budget " + fmtBytes(b) + "</b> <span class=m>(" + fmtPct(b / SW.peak_live) + " of peak live)</span>";
    if (best.target) h += "<br>the smallest budget found to reach " + fmtPct(SW.target) + " of ideal";
    if (i >= 0 && P.feasible[i])
      h += "<br>" + fmtPct(P.throughput[i]) + " of ideal · " + fmtUs(P.iteration_us[i]) + " per iteration<br>" +
        (P.swap_in_bytes[i] / 1e9).toFixed(2) + " GB in, " + (P.swap_out_bytes[i] / 1e9).toFixed(2) + " GB out" +
        "<br><span class=m>searched for " + P.search_seconds[i].toFixed(1) + " s</span>";
    else if (i >= 0) h += "<br><span style='color:#ff9b93'>infeasible: " + esc(P.why[i]) + "</span>";
    showTip(e, h);
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
      if (L === coll) {
        const o = L.subject[i];
        h = "<b>" + esc(opLabel(o)) + "</b><br><span class=m>" + esc(D.types[ops.type[o]]) + " · op " + o +
          "</span><br>" + fmtNs(L.start[i]) + " → " + fmtNs(L.end[i]) + " (" + fmtNs(dur) + ")";
      } else if (L === compute) {
        const o = L.subject[i];
        const gap = L.start[i] - (i > 0 ? L.end[i - 1] : 0);
        h = "<b>" + (isRecompute(i) ? "recompute " : "") + esc(opLabel(o)) + "</b><br><span class=m>" + esc(D.types[ops.type[o]]) + " · op " + o +
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

  function hostTip(e) {
    const c = $("host-memory");
    const { t, x, w } = timeAt(c, e.clientX);
    if (x < GUTTER || x > GUTTER + w || t < 0 || t > T) { hover = null; hideTip(); requestDraw(); return; }
    hover = { time: t };
    const j = lastAtOrBefore(host.time, host.n, t);
    const b = j >= 0 ? host.bytes[j] : 0, v = j >= 0 ? host.nvme[j] : 0;
    showTip(e, "<b>" + fmtBytes(b) + "</b> held in host memory at " + fmtNs(t) +
      (host.nvmeTensors > 0 ? "<br><b>" + fmtBytes(v) + "</b> on NVMe" : "") +
      "<br><span class=m>host arena " + fmtBytes(host.arena) +
      (host.budget > 0 ? " · budget " + fmtBytes(host.budget) : " · no host budget") + "</span>");
    requestDraw();
  }

  // Wheel zooms, drag pans, double-click fits; onClick (optional) gets a
  // press and release that did not move.
  function wirePlot(canvas, onHover, onClick) {
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
      drag = { x: e.clientX, y: e.clientY, t0: view.t0, t1: view.t1, overview: inOverview, moved: false };
      try { canvas.setPointerCapture(e.pointerId); } catch (err) { /* a synthetic pointer */ }
      canvas.classList.add("dragging");
      if (inOverview) centerOn(canvas, e.clientX);
    });
    canvas.addEventListener("pointermove", (e) => {
      if (!drag) { onHover(e); return; }
      if (!drag.moved && Math.abs(e.clientX - drag.x) + Math.abs(e.clientY - drag.y) < 4) return;
      hideTip();
      drag.moved = true;
      if (drag.overview) { centerOn(canvas, e.clientX); return; }
      const w = Math.max(10, canvas.clientWidth - GUTTER - RIGHT);
      const shift = -(e.clientX - drag.x) / w * (drag.t1 - drag.t0);
      setView(drag.t0 + shift, drag.t1 + shift);
    });
    const end = () => { drag = null; canvas.classList.remove("dragging"); };
    canvas.addEventListener("pointerup", (e) => {
      const click = drag && !drag.moved && !drag.overview;
      end();
      if (click && onClick) onClick(e);
    });
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

  // Whether the page fits its window's width and every table stays within
  // the page's column (long names are cut or wrap, wide tables scroll in
  // their box): "ok", or "overflow:" and what does not ("page" for the
  // whole), for the browser test (data-layout on <body>).
  function layoutCheck() {
    const main = document.querySelector("main").getBoundingClientRect();
    const out = [];
    const root = document.documentElement;
    if (root.scrollWidth > root.clientWidth + 1) out.push("page");
    for (const w of document.querySelectorAll(".table-wrap")) {
      const r = w.getBoundingClientRect();
      if (r.width > 0 && (r.left < main.left - 1 || r.right > main.right + 1))
        out.push(w.firstElementChild ? w.firstElementChild.id : "?");
    }
    return out.length ? "overflow:" + out.join(",") : "ok";
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
    if (host) {
      const hm = $("host-memory"), rh = hm.getBoundingClientRect();
      fire(hm, "pointermove", rh.left + GUTTER + 0.5 * w, rh.top + 100);
      if (!tip.hidden) tips++;
    }
    const more = $("tensors-more");
    if (!more.hidden) { more.click(); more.click(); }
    const tensorRow = document.querySelector("#tensors tr[data-tensor]");
    if (tensorRow) tensorRow.click();
    const stallRow = document.querySelector("#stalls tr[data-stall]");
    if (stallRow) stallRow.click();
    // Undo the click's smooth scroll, then hover a swap-in for a tooltip.
    window.scrollTo({ top: 0, behavior: "instant" });
    // The arena, whole iteration: hover a grid of points, then hover and
    // click the largest tensor tenancy, which must select its tensor. (No
    // tensor selected first: the legend above says which one is, and its
    // height moves the arena.)
    setView(0, T);
    selectTensor(-1, false);
    const a = $("arena"), ra = a.getBoundingClientRect(), aph = ARENA_H - ARENA_TOP - ARENA_BOTTOM;
    let arenaTips = 0, click = "none";
    for (let f = 0.05; f < 1; f += 0.1)
      for (let g = 0.1; g < 1; g += 0.2) {
        fire(a, "pointermove", ra.left + GUTTER + f * w, ra.top + ARENA_TOP + g * aph);
        if (!tip.hidden) arenaTips++;
      }
    let big = -1, bigArea = -1;
    const kx = w / T, ky = aph / arenaMax;
    forVisibleTenancies(0, T, (i) => {
      const b = tenancyBox(i, kx, ky), area = (b.xb - b.xa) * (b.yb - b.ya);
      if (arena.tenant[i] >= 0 && area > bigArea) { big = i; bigArea = area; }
    });
    if (big >= 0) {
      const b = tenancyBox(big, kx, ky);
      const x = ra.left + GUTTER + (b.xa + b.xb) / 2, y = ra.top + ARENA_TOP + aph - (b.ya + b.yb) / 2;
      fire(a, "pointermove", x, y);
      if (!tip.hidden) arenaTips++;
      fire(a, "pointerdown", x, y);
      fire(a, "pointerup", x, y);
      click = selectedTensor === arena.tenant[big] ? "ok" : "missed";
    }
    fire(a, "pointerleave", 0, 0);
    let sweepTips = 0;
    if (SW) {
      const rs = $("sweep").getBoundingClientRect();
      for (const mk of sweepMarks) {
        fire($("sweep"), "pointermove", rs.left + mk.x, rs.top + mk.y);
        if (!tip.hidden) sweepTips++;
      }
    }
    const r2 = c.getBoundingClientRect();
    fire(c, "pointermove", at(0.5) - r.left + r2.left, r2.top + LANES[1].y + LANES[1].h / 2);
    drawAll();
    document.body.setAttribute("data-selftest", "ok tooltips:" + tips + " arena:" + arenaTips + " click:" + click +
      " sweep:" + (SW ? sweepTips : "none"));
  }

  // -------------------------------------------------------------------- start

  renderSummary();
  renderSweep();
  renderComparison();
  renderTensorTable(15);
  renderStalls();
  renderLegend();
  wireTables();
  $("memory-note").textContent = "The most bytes in use at any moment within each pixel column, so that short peaks stay visible. " +
    "An object counts from the start of the step that fills it until its tensor's last step on it ends.";
  wirePlot($("timeline"), timelineTip);
  wirePlot($("memory"), memoryTip);
  if (host) {
    $("host-section").hidden = false;
    $("host-note").textContent = "Host memory held by values (green): a tensor's host slot holds a value from the start of " +
      "its first swap-out to the end of its last swap-in, or all iteration when its home is the host; the NVMe staging " +
      "counts all iteration. The runtime reserves the host arena (dotted) for the whole run" +
      (host.nvmeTensors > 0 ? "; " + fmtInt(host.nvmeTensors) + " tensors (" + fmtBytes(host.nvmeBytes) +
        ") live on NVMe (purple: bytes held there)" : "") + ".";
    wirePlot($("host-memory"), hostTip);
  }
  wirePlot($("arena"), arenaTip, arenaClick);
  renderArenaLegend();
  if (SW) {
    $("sweep").addEventListener("pointermove", sweepTip);
    $("sweep").addEventListener("pointerleave", hideTip);
  }
  $("zoom-in").onclick = () => zoomBy(1 / 2);
  $("zoom-out").onclick = () => zoomBy(2);
  $("zoom-fit").onclick = () => setView(0, T);
  window.addEventListener("resize", () => { ovCache.w = 0; requestDraw(); drawSweep(); });

  // The first draw is synchronous, so that the page is complete at load.
  const steps = drawTimeline(), points = drawMemory(), hostPoints = drawHost();
  const arenaStart = performance.now(), tenancies = drawArena(), arenaFirstDrawMs = performance.now() - arenaStart;
  const sweepPoints = drawSweep();
  document.body.setAttribute("data-drawn", "timeline:" + steps + " memory:" + points + " arena:" + tenancies +
    " sweep:" + (sweepPoints < 0 ? "none" : sweepPoints) + " host:" + (hostPoints < 0 ? "none" : hostPoints));
  document.body.setAttribute("data-layout", layoutCheck());
  document.body.setAttribute("data-draw-ms", performance.now().toFixed(0));
  document.body.setAttribute("data-script-ms", scriptStart.toFixed(0));
  // report.html#selftest: drive the page as a person would (zoom, hover every
  // lane, the memory plot, the arena and the sweep, drag, click a stall, a
  // tensor and a tenancy) so that a
  // headless test sees any error these paths throw; sets data-selftest.
  if (location.hash === "#selftest") selfTest();
  // report.html#bench: time 21 redraws at zoom levels from half the iteration
  // to all of it, then the arena alone the same way (tests/report/measure_draw.sh
  // reads data-redraw-ms, data-arena-draw-ms and data-arena-redraw-ms).
  if (location.hash === "#bench") {
    const redraws = (draw) => {
      const t = performance.now();
      for (let i = 0; i < 20; i++) {
        view.t0 = T * i / 40;
        view.t1 = view.t0 + T * (0.5 + i / 40);
        draw();
      }
      view.t0 = 0;
      view.t1 = T;
      draw();
      return ((performance.now() - t) / 21).toFixed(1);
    };
    document.body.setAttribute("data-redraw-ms", redraws(drawAll));
    document.body.setAttribute("data-arena-redraw-ms", redraws(drawArena));
    document.body.setAttribute("data-arena-draw-ms", arenaFirstDrawMs.toFixed(1));
  }
})();
