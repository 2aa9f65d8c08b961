  // ---- overview: totals, spend by cause and by day, top misses, what-if ----
  function drawOverview() {
    var t = OV.totals;
    var meta = document.getElementById("meta");
    meta.textContent =
      OV.sessions + " session(s), " + utc(OV.first_at, true).slice(0, 16) + " to " +
      utc(OV.last_at, true).slice(0, 16) + " UTC" +
      (OV.since || OV.until ? " · window " + (OV.since || "…") + " to " + (OV.until || "…") : "") +
      " · prices: ";
    meta.appendChild(bdi(OV.pricing_source));
    var cards = [
      ["sessions", String(OV.sessions)], ["requests", tokens(t.requests)],
      ["cost", rowUsd(t, t.cost_usd) + (t.unpriced_requests && t.unpriced_requests < t.requests ? "*" : "")],
      ["re-cache cost (misses and expected rebuilds beyond a hit)", rowUsd(t, t.miss_cost_usd + t.rebuild_cost_usd)],
      ["misses · their re-cache cost", tokens(t.misses) + " · " + rowUsd(t, t.miss_cost_usd)],
      ["expected rebuilds · their re-cache cost", tokens(t.expected_rebuilds) + " · " + rowUsd(t, t.rebuild_cost_usd)],
      ["re-cache cost share of spend", share(t.recache_share)],
      ["tokens read from cache", compact(t.cache_read_tokens)],
      ["tokens written to cache", compact(t.cache_creation_tokens)]
    ];
    var box = document.getElementById("totals");
    cards.forEach(function (c) {
      box.appendChild(el("div", { class: "card" }, [
        el("div", { class: "v", text: c[1] }), el("div", { class: "k", text: c[0] })
      ]));
    });
    if (OV.unpriced_models && OV.unpriced_models.length) {
      box.appendChild(el("p", { class: "dim" }, [
        document.createTextNode("* " + tokens(t.unpriced_requests) + " request(s) unpriced (no price for "),
        bdi(OV.unpriced_models.join(", ")),
        document.createTextNode("): not counted")
      ]));
    }
    drawByCause();
    drawByDay();
    drawSpend("chart-project", OV.by_project, "project");
    drawSpend("chart-model", OV.by_model, "model");
    if ((OV.by_agent || []).length) {
      document.getElementById("agent-panel").hidden = false;
      drawSpend("chart-agent", OV.by_agent, "agent");
    }
    drawAdvice();
    drawWhatIf();
    drawTopMisses();
  }

  function moneyAxis() {
    return { type: "value", axisLabel: { formatter: function (v) { return "$" + v; } } };
  }

  // Requests with no miss have no re-cache cost: their bar would dwarf every cause, so
  // their spend is a total beside the chart, not a bar in it.
  var NO_MISS = "no_miss";

  // A long name keeps its end (a project folder's own name, a model's version).
  function tail(text) { text = String(text); return text.length > 24 ? "\u2026" + text.slice(-23) : text; }

  // Each row's spend in three: the re-cache cost of its misses, that of its expected
  // rebuilds, and the rest (short names, as in the by-day chart: the legend fits one
  // line at 1024 px).
  var SPLIT = ["misses", "expected rebuilds", "other spend"];

  function recacheBars(id, rows, stack) {
    var chart = newChart(document.getElementById(id));
    function rest(row) { return Math.max(0, row.cost_usd - row.miss_cost_usd - row.rebuild_cost_usd); }
    function bars(name, color, value) {
      return { name: name, type: "bar", stack: stack, color: color, data: rows.map(value) };
    }
    chart.setOption({
      animation: false,
      grid: { left: 150, right: 24, top: 30, bottom: 24 },
      legend: { top: 0, data: SPLIT },
      tooltip: {
        trigger: "axis", axisPointer: { type: "shadow" }, confine: true,
        formatter: function (ps) {
          var row = rows[ps[0].dataIndex];
          return "<b>" + escIso(row.key) + "</b><br>" + tokens(row.requests) + " requests<br>cost " +
            rowUsd(row, row.cost_usd) + "<br>re-cache cost " +
            rowUsd(row, row.miss_cost_usd + row.rebuild_cost_usd) + " (" + share(row.recache_share) + "):<br>" +
            "&nbsp;&nbsp;" + tokens(row.misses) + " misses " + rowUsd(row, row.miss_cost_usd) + "<br>" +
            "&nbsp;&nbsp;" + tokens(row.expected_rebuilds) + " expected rebuilds " + rowUsd(row, row.rebuild_cost_usd);
        }
      },
      xAxis: moneyAxis(),
      yAxis: { type: "category", data: rows.map(function (r) { return r.key; }),
               axisLabel: { width: 140, overflow: "truncate", formatter: tail } },
      series: [
        bars(SPLIT[0], COLORS.miss, function (r) { return r.miss_cost_usd; }),
        bars(SPLIT[1], COLORS.rebuild, function (r) { return r.rebuild_cost_usd; }),
        bars(SPLIT[2], COLORS.rest, rest)
      ]
    });
  }

  function drawByCause() {
    var rows = OV.by_cause.filter(function (r) { return r.key !== NO_MISS; }).reverse();
    var rest = OV.by_cause.filter(function (r) { return r.key === NO_MISS; })[0];
    var note = document.getElementById("cause-rest");
    note.textContent = rest
      ? "Not charted: requests with no miss, " + tokens(rest.requests) + " requests, " + rowUsd(rest, rest.cost_usd) + "."
      : "";
    var node = document.getElementById("chart-cause");
    if (!rows.length) {
      node.hidden = true;
      document.getElementById("cause-empty").hidden = false;
      return;
    }
    recacheBars("chart-cause", rows, "c");
  }

  // Spend by project or by model: the costliest first, at most 12 bars (the rest summed
  // into one), each split into its re-cache cost and the rest.
  function drawSpend(id, all, what) {
    var top = all.slice(0, 12);
    if (all.length > 12) {
      var other = { key: (all.length - 12) + " other " + what + "s", requests: 0, misses: 0, expected_rebuilds: 0,
                    cost_usd: 0, miss_cost_usd: 0, rebuild_cost_usd: 0, unpriced_requests: 0 };
      all.slice(12).forEach(function (r) {
        ["requests", "misses", "expected_rebuilds", "cost_usd", "miss_cost_usd", "rebuild_cost_usd",
         "unpriced_requests"].forEach(function (k) { other[k] += r[k] || 0; });
      });
      other.recache_share = other.cost_usd ? (other.miss_cost_usd + other.rebuild_cost_usd) / other.cost_usd : null;
      top.push(other);
    }
    var node = document.getElementById(id);
    node.style.height = Math.max(160, 60 + 28 * top.length) + "px";
    recacheBars(id, top.reverse(), what);
  }

  // What to do about each cause the audit found, from cachediag's one advice table
  // (analysis/advice.py): what usually produces it, the action, its docs page.
  function drawAdvice() {
    var advice = DATA.advice || {};
    var keys = OV.by_cause.map(function (r) { return r.key; }).filter(function (k) { return advice[k]; });
    var box = document.getElementById("advice");
    box.hidden = !keys.length;
    var list = document.getElementById("advice-list");
    keys.forEach(function (k) {
      var a = advice[k];
      list.appendChild(el("dt", { text: k }));
      var dd = el("dd", {}, [el("span", { class: "dim", text: a.produced_by + " " }),
                              el("span", { class: a.actionable ? "action" : "dim", text: a.action })]);
      if (a.doc) {
        dd.appendChild(document.createTextNode(" "));
        dd.appendChild(el("a", { href: a.doc, text: "docs", rel: "noreferrer", target: "_blank" }));
      }
      list.appendChild(dd);
    });
  }

  function drawByDay() {
    var rows = OV.by_day;
    document.getElementById("day-title").textContent = "Spend by day (" + OV.days_in + ")";
    var chart = newChart(document.getElementById("chart-day"));
    chart.setOption({
      animation: false,
      grid: { left: 60, right: 24, top: 30, bottom: 60 },
      legend: { top: 0, data: ["misses", "expected rebuilds", "other spend"] },
      // The re-cache cost of each day, split into misses and expected rebuilds.
      tooltip: {
        trigger: "axis", axisPointer: { type: "shadow" }, confine: true,
        formatter: function (ps) {
          var row = rows[ps[0].dataIndex];
          return "<b>" + esc(row.key) + "</b> (" + esc(OV.days_in) + ")<br>" + tokens(row.requests) + " requests<br>cost " +
            rowUsd(row, row.cost_usd) + "<br>re-cache cost of " + tokens(row.misses) + " misses: " + rowUsd(row, row.miss_cost_usd) +
            "<br>re-cache cost of " + tokens(row.expected_rebuilds) + " expected rebuilds: " +
            rowUsd(row, row.rebuild_cost_usd);
        }
      },
      dataZoom: rows.length > 31 ? [{ type: "inside" }, { type: "slider", height: 18, bottom: 4 }] : [],
      xAxis: { type: "category", data: rows.map(function (r) { return r.key; }) },
      yAxis: moneyAxis(),
      series: [
        { name: "misses", type: "bar", stack: "d", color: COLORS.miss,
          data: rows.map(function (r) { return r.miss_cost_usd; }) },
        { name: "expected rebuilds", type: "bar", stack: "d", color: COLORS.rebuild,
          data: rows.map(function (r) { return r.rebuild_cost_usd; }) },
        { name: "other spend", type: "bar", stack: "d", color: COLORS.rest,
          data: rows.map(function (r) {
            return Math.max(0, r.cost_usd - r.miss_cost_usd - r.rebuild_cost_usd);
          }) }
      ]
    });
  }

  function drawWhatIf() {
    var w = OV.whatif;
    var labels = OV.policy_labels || {};
    var actual = w.policies[0].cost_usd;
    // Every policy prices the same requests: with none priced, no policy has a cost.
    var none = rowUsd(OV.totals, 0) === "unpriced";
    function cost(v) { return none ? "unpriced" : usd(v); }
    var chart = newChart(document.getElementById("chart-whatif"));
    chart.setOption({
      animation: false,
      grid: { left: 200, right: 90, top: 10, bottom: 24 },
      tooltip: {
        trigger: "item", confine: true,
        formatter: function (p) {
          var pol = w.policies[p.dataIndex];
          var delta = pol.cost_usd - actual;
          return "<b>" + esc(labels[pol.policy] || pol.policy) + "</b><br>cost " + cost(pol.cost_usd) +
            (p.dataIndex && !none ? " (" + (delta >= 0 ? "+" : "-") + usd(Math.abs(delta)) + " vs actual)" : "") +
            "<br>misses " + tokens(pol.misses) + "<br>keep-alive requests " +
            tokens(pol.keep_alive_requests);
        }
      },
      xAxis: moneyAxis(),
      yAxis: { type: "category", inverse: true,
               data: w.policies.map(function (p) { return labels[p.policy] || p.policy; }) },
      series: [{
        type: "bar",
        data: w.policies.map(function (p) {
          var color = p.policy === w.best ? COLORS.read : (p.policy === "as_happened" ? COLORS.uncached : COLORS.rest);
          return { value: p.cost_usd, itemStyle: { color: color } };
        }),
        label: { show: true, position: "right", formatter: function (p) { return cost(p.value); } }
      }]
    });
    document.getElementById("recommendation").textContent = "Recommendation: " + w.recommendation;
  }

  function sessionLink(sessionId) {
    for (var i = 0; i < SESSIONS.length; i++) if (SESSIONS[i].session_id === sessionId) return i;
    return -1;
  }

  function drawTopMisses() {
    var table = document.getElementById("top-misses");
    if (!OV.top_misses.length) {
      table.hidden = true;
      document.getElementById("top-misses-empty").hidden = false;
      return;
    }
    // Whose session each miss is in, where the report holds more than one agent's.
    var agents = (OV.agents || []).length > 1;
    var rows = OV.top_misses.map(function (m) {
      var n = sessionLink(m.session_id);
      var link = el("a", { href: "#session=" + n + "&miss=" + encodeURIComponent(m.stream + ":" + m.index),
                           text: m.session_id.slice(0, 8), title: m.session_id });
      var cells = [
        el("td", { class: "num", text: usd(m.cost_usd) }),
        el("td", { class: "time", text: utc(m.at, true).slice(0, 16) }),
        el("td", {}, [link]),
        el("td", { text: m.stream }),
        el("td", { class: "num", text: duration(m.gap_s) }),
        el("td", { class: "num", text: tokens(m.reprocessed_tokens) }),
        el("td", { text: m.causes.join(", ") })
      ];
      if (agents) cells.splice(3, 0, el("td", { text: m.agent }));
      return el("tr", {}, cells);
    });
    var head = [["re-cache cost", "num"], ["time (UTC)"], ["session"], ["stream"], ["gap", "num"],
                ["re-processed tokens", "num"], ["cause"]];
    if (agents) head.splice(3, 0, ["agent"]);
    fillTable(table, head, rows);
  }

