/* cachediag report: draws the embedded data with ECharts. Every string that came from a
   log is put into the page with textContent, or through esc() into tooltip markup; where
   it sits inside the report's own text it is isolated (bdi(), isoText(), escIso()), so
   right-to-left text in it cannot reorder what surrounds it. Bidi controls from logs are
   neutralised before the data is embedded (report/html/page.py). */
  var DATA = JSON.parse(document.getElementById("cachediag-data").textContent);
  var OV = DATA.overview;
  var SESSIONS = DATA.sessions;
  var COLORS = {
    read: "#2da44e", written: "#e16f24", uncached: "#8c959f", miss: "#cf222e",
    expected: "#8250df", model: "#0969da", alive: "rgba(45,164,78,0.10)",
    expired: "rgba(207,34,46,0.13)", rest: "#54aeff", rebuild: "#8250df"
  };
  var charts = [];
  var timeline = null;

  // ---- formatting (the same shapes as the terminal tables) ----
  function esc(value) {
    return String(value).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }
  // A log string inside the report's text: its own bidi paragraph, in markup (escIso),
  // in a node (bdi) or where only text goes, such as an <option> (isoText: FSI ... PDI).
  function escIso(value) { return "<bdi>" + esc(value) + "</bdi>"; }
  function bdi(value) { return el("bdi", { text: String(value) }); }
  function isoText(value) { return "\u2068" + value + "\u2069"; }
  // A label formatter that shows its text as it is: ECharts reads a formatter string as
  // a template ({a}, {b}, {c} replaced), and a model name could hold one.
  function literal(text) { return function () { return text; }; }
  function tokens(n) { return n == null ? "-" : Number(n).toLocaleString("en-US"); }
  function usd(v, digits) {
    if (v == null) return "unpriced";
    return "$" + Number(v).toLocaleString("en-US", {
      minimumFractionDigits: digits || 2, maximumFractionDigits: digits || 2
    });
  }
  // A group's money (a row of the audit, a session's cost): "unpriced" when it has
  // requests and none of them had a price, as the terminal tables say; never $0.00.
  function groupUsd(v, requests, unpriced) {
    return requests && unpriced >= requests ? "unpriced" : usd(v);
  }
  function rowUsd(row, v) { return groupUsd(v, row.requests, row.unpriced_requests); }
  function share(v) { return v == null ? "-" : (v * 100).toFixed(1) + "%"; }
  function pad(n) { return (n < 10 ? "0" : "") + n; }
  function duration(s) {
    if (s == null) return "-";
    s = Math.round(s);
    if (s < 60) return s + "s";
    if (s < 3600) return Math.floor(s / 60) + "m" + pad(s % 60) + "s";
    if (s < 172800) return Math.floor(s / 3600) + "h" + pad(Math.floor((s % 3600) / 60)) + "m";
    return Math.floor(s / 86400) + "d" + pad(Math.floor((s % 86400) / 3600)) + "h";
  }
  function utc(at, withDate) {
    if (at == null) return "-";
    var iso = new Date(at * 1000).toISOString();
    return withDate ? iso.slice(0, 10) + " " + iso.slice(11, 19) : iso.slice(11, 19);
  }
  function compact(n) {
    if (n >= 1e6) return (n / 1e6).toFixed(n >= 1e7 ? 0 : 1) + "M";
    if (n >= 1e3) return (n / 1e3).toFixed(n >= 1e4 ? 0 : 1) + "k";
    return String(n);
  }
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") node.textContent = attrs[k];
      else if (k === "class") node.className = attrs[k];
      else node.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { if (c != null) node.appendChild(c); });
    return node;
  }
  function fillTable(table, head, rows) {
    table.textContent = "";
    var tr = el("tr");
    head.forEach(function (h) {
      tr.appendChild(el("th", { text: h[0], class: h[1] || "", scope: "col" }));
    });
    table.appendChild(el("thead", {}, [tr]));
    var body = el("tbody");
    rows.forEach(function (r) { body.appendChild(r); });
    table.appendChild(body);
  }
  function causeText(e) {
    if (e.outcome === "expected") return "expected (" + (e.announced || "rebuild") + ")";
    var text = (e.causes && e.causes.length) ? e.causes.join(", ") : "unknown";
    var extras = [];
    if (e.tools_added_names && e.tools_added_names.length) extras.push("+" + e.tools_added_names.join(","));
    if (e.tools_removed_names && e.tools_removed_names.length) extras.push("-" + e.tools_removed_names.join(","));
    if (e.system_char_delta != null) {
      extras.push("system " + (e.system_char_delta >= 0 ? "+" : "") + e.system_char_delta + " chars");
    }
    if (e.first_rewritten_message != null) extras.push("first rewritten message " + e.first_rewritten_message);
    if (extras.length) text += " (" + extras.join("; ") + ")";
    if (e.cause_source && e.cause_source !== "inferred") text += " [" + e.cause_source + "]";
    return text;
  }
  function newChart(node) {
    var chart = echarts.init(node, null, { renderer: "canvas" });
    charts.push(chart);
    return chart;
  }

