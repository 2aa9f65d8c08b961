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
      ["misses", tokens(t.misses) + " · " + rowUsd(t, t.miss_cost_usd)],
      ["expected rebuilds", tokens(t.expected_rebuilds) + " · " + rowUsd(t, t.rebuild_cost_usd)],
      ["re-caching share of spend", share(t.recache_share)],
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
    drawWhatIf();
    drawTopMisses();
  }

  function moneyAxis() {
    return { type: "value", axisLabel: { formatter: function (v) { return "$" + v; } } };
  }

  function drawByCause() {
    var rows = OV.by_cause.slice().reverse();
    var chart = newChart(document.getElementById("chart-cause"));
    function part(row, recache) {
      var re = row.miss_cost_usd + row.rebuild_cost_usd;
      return recache ? re : Math.max(0, row.cost_usd - re);
    }
    chart.setOption({
      animation: false,
      grid: { left: 150, right: 24, top: 30, bottom: 24 },
      legend: { top: 0, data: ["re-caching", "other spend"] },
      tooltip: {
        trigger: "axis", axisPointer: { type: "shadow" }, confine: true,
        formatter: function (ps) {
          var row = rows[ps[0].dataIndex];
          return "<b>" + escIso(row.key) + "</b><br>" + tokens(row.requests) + " requests · " +
            tokens(row.misses) + " misses<br>cost " + rowUsd(row, row.cost_usd) + "<br>re-caching " +
            rowUsd(row, row.miss_cost_usd + row.rebuild_cost_usd) + " (" + share(row.recache_share) + ")";
        }
      },
      xAxis: moneyAxis(),
      yAxis: { type: "category", data: rows.map(function (r) { return r.key; }),
               axisLabel: { width: 140, overflow: "truncate" } },
      series: [
        { name: "re-caching", type: "bar", stack: "c", color: COLORS.miss,
          data: rows.map(function (r) { return part(r, true); }) },
        { name: "other spend", type: "bar", stack: "c", color: COLORS.rest,
          data: rows.map(function (r) { return part(r, false); }) }
      ]
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
      tooltip: {
        trigger: "axis", axisPointer: { type: "shadow" }, confine: true,
        formatter: function (ps) {
          var row = rows[ps[0].dataIndex];
          return "<b>" + esc(row.key) + "</b> (" + esc(OV.days_in) + ")<br>" + tokens(row.requests) + " requests<br>cost " +
            rowUsd(row, row.cost_usd) + "<br>misses " + tokens(row.misses) + ": " + rowUsd(row, row.miss_cost_usd) +
            "<br>rebuilds " + tokens(row.expected_rebuilds) + ": " + rowUsd(row, row.rebuild_cost_usd);
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
    var rows = OV.top_misses.map(function (m) {
      var n = sessionLink(m.session_id);
      var link = el("a", { href: "#session=" + n + "&miss=" + encodeURIComponent(m.stream + ":" + m.index),
                           text: m.session_id.slice(0, 8), title: m.session_id });
      return el("tr", {}, [
        el("td", { class: "num", text: usd(m.cost_usd) }),
        el("td", { class: "time", text: utc(m.at, true).slice(0, 16) }),
        el("td", {}, [link]),
        el("td", { text: m.stream }),
        el("td", { class: "num", text: duration(m.gap_s) }),
        el("td", { class: "num", text: tokens(m.reprocessed_tokens) }),
        el("td", { text: m.causes.join(", ") })
      ]);
    });
    fillTable(table, [["cost", "num"], ["time (UTC)"], ["session"], ["stream"], ["gap", "num"],
                      ["re-processed", "num"], ["cause"]], rows);
  }

