// report.html's own script: builds the summary and the charts from the
// embedded JSON (#data) with uPlot. No network: everything is in the page.
(function () {
  "use strict";
  var errors = [];
  window.addEventListener("error", function (e) {
    errors.push(String(e.message || e));
    showErrors();
  });
  function showErrors() {
    var pre = document.getElementById("errors");
    pre.textContent = errors.join("\n");
    pre.hidden = errors.length === 0;
  }

  var D = JSON.parse(document.getElementById("data").textContent);

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }
  function fmt(v) {
    if (v === null || v === undefined) return "–";
    if (typeof v !== "number") return String(v);
    if (Number.isInteger(v)) return v.toLocaleString("en-US");
    var a = Math.abs(v);
    return v.toLocaleString("en-US", { maximumFractionDigits: a >= 100 ? 1 : a >= 1 ? 2 : 4 });
  }

  // Header and summary.
  document.title = D.title;
  document.getElementById("title").textContent = D.title;
  document.getElementById("subtitle").textContent = D.subtitle || "";

  var facts = document.getElementById("facts");
  (D.facts || []).forEach(function (f) {
    var tr = el("tr");
    tr.appendChild(el("th", {}, f[0]));
    tr.appendChild(el("td", {}, f[1]));
    facts.appendChild(tr);
  });

  var verdict = document.getElementById("verdict");
  if (D.validity) {
    verdict.textContent = D.validity.valid
      ? "scenario " + D.validity.scenario + ": submission valid"
      : "scenario " + D.validity.scenario + ": submission NOT valid (" + (D.validity.reasons || []).join(", ") + ")";
    verdict.className = D.validity.valid ? "ok" : "bad";
  } else {
    verdict.hidden = true;
  }

  var warn = document.getElementById("warnings");
  (D.warnings || []).forEach(function (w) { warn.appendChild(el("li", {}, w)); });
  warn.hidden = !(D.warnings || []).length;

  var mt = document.getElementById("metrics");
  var cols = ["avg", "p50", "p90", "p99", "min", "max", "count"];
  var head = el("tr");
  head.appendChild(el("th", {}, "metric"));
  cols.forEach(function (c) { head.appendChild(el("th", {}, c)); });
  mt.appendChild(head);
  (D.metrics || []).forEach(function (m) {
    var tr = el("tr", { "data-metric": m.tag });
    tr.appendChild(el("th", {}, m.name + (m.unit ? " (" + m.unit + ")" : "")));
    cols.forEach(function (c) { tr.appendChild(el("td", {}, fmt(m.stats[c]))); });
    mt.appendChild(tr);
  });

  var sc = document.getElementById("scalars");
  (D.scalars || []).forEach(function (s) {
    var tr = el("tr", { "data-metric": s.tag });
    tr.appendChild(el("th", {}, s.name + (s.unit ? " (" + s.unit + ")" : "")));
    tr.appendChild(el("td", {}, fmt(s.value)));
    sc.appendChild(tr);
  });

  // Charts.
  var F = D.figure;
  var charts = [];
  var syncKey = uPlot.sync("agentperf").key;
  var zooming = false;

  function seriesOpts(s) {
    var o = { label: s.name, stroke: s.color, width: 1.5, spanGaps: false, scale: s.right ? "r" : "y" };
    switch (s.style) {
      case "dashed": o.dash = [6, 4]; break;
      case "fill": o.fill = s.color + "cc"; o.width = 1; break;
      case "points":
        o.paths = function () { return null; };
        o.points = { show: true, size: 4, stroke: s.color, fill: s.color + "99", width: 1 };
        break;
      case "rings":
        o.paths = function () { return null; };
        o.points = { show: true, size: 9, stroke: s.color, fill: "#ffffff00", width: 1.5 };
        break;
    }
    return o;
  }

  // yScale is the left axis: percentages end at 100; a panel whose
  // profiling values set the scale (ymax) ends there (warmup points above
  // it are drawn on the top edge); others end 5 % above their data.
  function yScale(p) {
    if (p.percent) return { range: [0, 100] };
    if (p.ymax > 0) return { range: [0, p.ymax] };
    return { range: function (u, lo, hi) { return [Math.min(0, lo), hi > 0 ? hi * 1.05 : 1]; } };
  }

  // The warmup region is shaded and the start of profiling marked.
  function markProfiling(u) {
    if (!F.has_profiling_start) return;
    var ctx = u.ctx, x = Math.round(u.valToPos(F.profiling_start, "x", true));
    var top = u.bbox.top, h = u.bbox.height, left = u.bbox.left;
    if (x < left || x > left + u.bbox.width) return;
    ctx.save();
    ctx.fillStyle = "rgba(120,120,120,0.08)";
    ctx.fillRect(left, top, x - left, h);
    ctx.strokeStyle = "#555";
    ctx.setLineDash([6, 4]);
    ctx.lineWidth = 1.5 * devicePixelRatio;
    ctx.beginPath();
    ctx.moveTo(x, top);
    ctx.lineTo(x, top + h);
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.fillStyle = "#555";
    ctx.font = (11 * devicePixelRatio) + "px sans-serif";
    ctx.fillText("profiling \u2192", x + 4 * devicePixelRatio, top + 12 * devicePixelRatio);
    ctx.restore();
  }

  // compact formats an axis tick: 1.5k, 300k, 2M.
  function compact(v) {
    var a = Math.abs(v);
    if (a >= 1e6) return +(v / 1e6).toFixed(2) + "M";
    if (a >= 1e4) return +(v / 1e3).toFixed(1) + "k";
    return +v.toFixed(2) + "";
  }

  function width(div) { return Math.max(300, div.clientWidth - 8); }

  // Every chart shows the same time range, from 0 to the last point.
  var XMAX = 1;
  F.panels.forEach(function (p) {
    p.series.forEach(function (s) { s.x.forEach(function (x) { if (x > XMAX) XMAX = x; }); });
  });
  function showRange(mn, mx) {
    zooming = true;
    charts.forEach(function (u) { u.setScale("x", { min: mn, max: mx }); });
    zooming = false;
  }
  function showAll() {
    showRange(0, XMAX);
    if (history.replaceState && location.hash) history.replaceState(null, "", location.pathname + location.search);
  }

  var grid = document.getElementById("panels");
  F.panels.forEach(function (p, i) {
    var div = el("div", { "class": "panel", id: "panel-" + i });
    div.appendChild(el("h3", {}, p.title));
    grid.appendChild(div);
    var withData = p.series.filter(function (s) { return s.x.length > 0; });
    if (withData.length === 0) {
      div.appendChild(el("div", { "class": "nodata" }, "no data"));
      div.setAttribute("data-rendered", "nodata");
      return;
    }
    var data = uPlot.join(withData.map(function (s) { return [s.x, s.y]; }), withData.map(function () { return [1]; }));
    var opts = {
      width: width(div),
      height: 260,
      series: [{ label: "time (s)", value: function (u, v) { return v == null ? "–" : v.toFixed(1) + " s"; } }]
        .concat(withData.map(seriesOpts)),
      axes: [{ label: "time (s)" }, { label: p.ylabel, size: 64, values: function (u, ticks) { return ticks.map(compact); } }]
        .concat(p.right_label ? [{ scale: "r", side: 1, label: p.right_label, size: 64, grid: { show: false }, values: function (u, ticks) { return ticks.map(compact); } }] : []),
      scales: { x: { time: false }, y: yScale(p), r: { range: function (u, lo, hi) { return [Math.min(0, lo), hi > 0 ? hi * 1.05 : 1]; } } },
      cursor: { sync: { key: syncKey }, drag: { x: true, y: false } },
      // A series' legend marker has its style: dashed for a dashed line.
      legend: { live: true, markers: { width: 2, dash: function (u, i) { return u.series[i].dash ? "dashed" : "solid"; } } },
      hooks: {
        draw: [markProfiling],
        setScale: [function (u, key) {
          if (key !== "x") return;
          var mn = u.scales.x.min, mx = u.scales.x.max;
          u.root.parentNode.setAttribute("data-range", mn.toFixed(1) + "-" + mx.toFixed(1));
          // Zooming one chart zooms every chart to the same time range, and
          // the range goes into the address (#t=from-to) to be shared.
          if (zooming) return;
          zooming = true;
          charts.forEach(function (c) { if (c !== u) c.setScale("x", { min: mn, max: mx }); });
          zooming = false;
          if (history.replaceState) history.replaceState(null, "", "#t=" + mn.toFixed(1) + "-" + mx.toFixed(1));
        }]
      }
    };
    var u = new uPlot(opts, data, div);
    charts.push(u);
    div.setAttribute("data-rendered", "chart");
    if (p.note) div.appendChild(el("p", { "class": "note" }, p.note));
  });

  window.addEventListener("resize", function () {
    charts.forEach(function (u) { u.setSize({ width: width(u.root.parentNode), height: 260 }); });
  });
  document.getElementById("reset").addEventListener("click", showAll);
  var m = /^#t=([0-9.]+)-([0-9.]+)$/.exec(location.hash);
  if (m && +m[2] > +m[1]) {
    showRange(+m[1], +m[2]);
  } else {
    showRange(0, XMAX);
  }
  document.body.setAttribute("data-charts", String(charts.length));
  document.body.setAttribute("data-ready", "1");
  showErrors();
})();
