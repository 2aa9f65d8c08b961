  // ---- one session: picker, summary, timeline lanes, miss table ----
  function drawPicker() {
    var picker = document.getElementById("session-picker");
    SESSIONS.forEach(function (s, i) {
      var misses = s.events.filter(function (e) { return e.outcome === "miss"; }).length;
      var cost = s.cost ? groupUsd(s.cost.cost_usd, s.totals.requests, s.cost.unpriced_requests) : usd(null);
      var label = utc(s.first_at, true).slice(0, 16) + " · " + isoText(s.session_id.slice(0, 8)) +
        ((OV.agents || []).length > 1 ? " · " + s.agent : "") +
        (s.project ? " · " + isoText(s.project) : "") + " · " + cost +
        " · " + misses + " miss" + (misses === 1 ? "" : "es");
      picker.appendChild(el("option", { value: String(i), text: label }));
    });
    picker.addEventListener("change", function () {
      location.hash = "session=" + picker.value;
    });
  }

  function drawSession(n, focus) {
    var s = SESSIONS[n];
    document.getElementById("session-picker").value = String(n);
    markListed(n);
    var meta = document.getElementById("session-meta");
    meta.textContent = "";
    [bdi(s.session_id), " · ", bdi(s.source), " · " + s.agent + " (" + s.format + ")",
     s.project ? " · project " : null, s.project ? bdi(s.project) : null,
     " · " + utc(s.first_at, true).slice(0, 16) + " - " + utc(s.last_at, true).slice(0, 16) + " UTC"
    ].forEach(function (part) {
      if (part !== null) meta.appendChild(typeof part === "string" ? document.createTextNode(part) : part);
    });
    var summary = document.getElementById("session-summary");
    summary.textContent = "";
    var folded = null;
    s.summaries.forEach(function (line, i) {
      var row = el("div", { class: i ? "sub" : "", text: line });
      if (i > 4 && s.summaries.length > 7) {
        if (!folded) {
          folded = el("details", { class: "sub" }, [
            el("summary", { text: (s.summaries.length - 5) + " more streams" })]);
          summary.appendChild(folded);
        }
        folded.appendChild(row);
      } else {
        summary.appendChild(row);
      }
      if (i === 0 && s.cost_line) summary.appendChild(el("div", { text: s.cost_line }));
    });
    var notes = [];
    if (s.notes.api_errors) notes.push(s.notes.api_errors + " API error line(s) not counted");
    if (s.notes.replayed_responses) notes.push(s.notes.replayed_responses + " response(s) counted in an earlier session's file");
    if (s.notes.non_model_calls) notes.push(s.notes.non_model_calls + " non-model call(s) passed over");
    if (s.notes.skipped_lines) notes.push(s.notes.skipped_lines + " line(s) skipped");
    if (s.notes.unreadable_files) notes.push(s.notes.unreadable_files + " file(s) could not be read");
    if (notes.length) summary.appendChild(el("div", { class: "sub", text: notes.join("; ") }));
    drawTimeline(s);
    drawMissTable(s, focus);
  }

  function drawMissTable(s, focus) {
    var table = document.getElementById("miss-table");
    var empty = !s.events.length;
    table.hidden = empty;
    document.getElementById("miss-table-empty").hidden = !empty;
    var focused = null;
    var shownAdvice = {};
    var rows = s.events.map(function (e) {
      var named = e.outcome === "expected" || (e.causes && e.causes.length && e.causes[0] !== "unknown");
      var tr = el("tr", {
        class: e.outcome + (named ? "" : " unnamed"), id: "miss-" + e.stream + "-" + e.index,
        "data-stream": e.stream, "data-index": String(e.index), "data-at": String(e.at),
        "data-outcome": e.outcome, "data-causes": (e.causes || []).join(",")
      }, [
        el("td", { text: e.stream }),
        el("td", { class: "num", text: String(e.index) }),
        el("td", { class: "time", text: utc(e.at, true) }),
        el("td", { class: "num", text: duration(e.gap_s) }),
        el("td", { class: "num", text: tokens(e.reprocessed_tokens) }),
        el("td", { class: "num", text: usd(e.miss_cost_usd) }),
        causeCell(s, e, shownAdvice),
        el("td", { text: e.read_tokens == null ? "" : tokens(e.read_tokens) + "/" + tokens(e.prev_cached_tokens) +
          (e.model_before && e.model_before !== e.model ? "; model " + e.model_before + " -> " + e.model : "") })
      ]);
      if (focus && focus === e.stream + ":" + e.index) { tr.classList.add("focus"); focused = tr; }
      return tr;
    });
    fillTable(table, [["stream"], ["#", "num"], ["time (UTC)"], ["gap", "num"], ["re-processed tokens", "num"],
                      ["re-cache cost", "num"], ["cause"], ["read/cached"]], rows);
    if (focused) focused.scrollIntoView({ block: "center" });
  }

  // The cause, and under it what to do about it (fitted to the miss: the TTL in force,
  // the kind of stream), once per distinct advice in the table.
  function causeCell(s, e, shown) {
    var td = el("td", { class: "cause" }, [el("span", { text: causeText(e) })]);
    if (e.advice != null && s.advice && !shown[e.advice]) {
      shown[e.advice] = true;
      td.appendChild(el("div", { class: "advice-line", text: "What to do: " + s.advice[e.advice] }));
    }
    return td;
  }

  // Every label of a lane (the cause of a miss, a compaction announced, a model switch,
  // how long the cache stayed cold) goes into laneLabels[k]; report-labels.js places
  // them in rows at the top of the lane where none covers another (the vendored
  // "common" build of ECharts has no labelLayout: its hideOverlap does nothing).
  function laneSeries(lane, k, s) {
    var c = lane.columns;
    var series = [];
    function bars(name, key, color) {
      return {
        name: name, type: "bar", stack: "lane" + k, xAxisIndex: k, yAxisIndex: k,
        color: color, barMaxWidth: 10, barMinWidth: 1, large: c.at.length > 3000,
        data: c.at.map(function (at, i) { return [at * 1000, c[key][i], i]; })
      };
    }
    var labels = [];
    var read = bars("read", "read", COLORS.read);
    read.markArea = {
      silent: false, label: { show: false },
      data: lane.windows.map(function (w) {
        // A pause wide enough to hold it says how long the cache stayed cold.
        if (w[2] === "expired" && (w[1] - w[0]) > 0.06 * (s.last_at - s.first_at)) {
          labels.push({ at: (w[0] + w[1]) / 2, text: "cache cold " + duration(w[1] - w[0]), rank: 1,
                        color: "#a40e26", tip: "cache expired: pause of " + duration(w[1] - w[0]) });
        }
        return [{ xAxis: w[0] * 1000, name: w[2] + " " + w[0] + " " + w[1],
                  itemStyle: { color: w[2] === "alive" ? COLORS.alive : COLORS.expired } },
                { xAxis: w[1] * 1000 }];
      })
    };
    var marks = [];
    lane.announced.forEach(function (a) {
      marks.push({ xAxis: a[0] * 1000, name: "announced " + a[1],
                   lineStyle: { color: COLORS.expected, type: "dashed" } });
      labels.push({ at: a[0], text: a[1], color: COLORS.expected, tip: "announced " + a[1], rank: 2 });
    });
    s.switches.forEach(function (sw) {
      if (!laneHas(lane, sw.stream)) return;
      var name = "model " + (sw.before || "?") + " -> " + (sw.after || "?");
      marks.push({ xAxis: sw.at * 1000, name: name, lineStyle: { color: COLORS.model } });
      labels.push({ at: sw.at, text: "model: " + (sw.after || "?"), color: COLORS.model, tip: name, rank: 2 });
    });
    var uncached = bars("uncached", "input", COLORS.uncached);
    uncached.markLine = {
      symbol: ["none", "none"], silent: false, animation: false, label: { show: false }, data: marks
    };
    series.push(read, bars("written", "written", COLORS.written), uncached);
    var events = s.events.filter(function (e) { return laneHas(lane, e.stream); });
    var pos = {};
    c.index.forEach(function (idx, i) { pos[(c.stream ? c.stream[i] : lane.id) + ":" + idx] = i; });
    events.forEach(function (e) {
      labels.push({ at: e.at, text: causeText(e), color: e.outcome === "miss" ? "#a40e26" : COLORS.expected,
                    tip: (e.outcome === "miss" ? "miss: " : "") + causeText(e),
                    rank: 3 + (e.outcome === "miss" ? 0 : 1), cost: e.miss_cost_usd || 0 });
    });
    series.push({
      name: "events", type: "scatter", xAxisIndex: k, yAxisIndex: k, symbol: "pin", symbolSize: 26, z: 5,
      data: events.map(function (e) {
        var i = pos[e.stream + ":" + e.index];
        var total = c.read[i] + c.written[i] + c.input[i];
        return { value: [e.at * 1000, total, s.events.indexOf(e)],
                 itemStyle: { color: e.outcome === "miss" ? COLORS.miss : COLORS.expected } };
      })
    });
    laneLabels[k] = labels;
    series.push(labelSeries(k));
    return series;
  }

  function tooltipFor(s) {
    return function (p) {
      if (p.componentType === "markArea") {
        var parts = String(p.name).split(" ");
        var start = Number(parts[1]), end = Number(parts[2]);
        return (parts[0] === "alive" ? "cache alive" : "<b>cache expired</b> (pause past the TTL)") +
          "<br>" + utc(start) + " - " + utc(end) + " UTC · " + duration(end - start);
      }
      if (p.componentType === "markLine") return escIso(p.name) + "<br>" + utc(p.data.xAxis / 1000, true) + " UTC";
      if (p.seriesName === "marks") return escIso(p.name) + "<br>" + utc(p.value[2], true) + " UTC";
      if (p.seriesName === "events") {
        var e = s.events[p.value[2]];
        return "<b>" + esc(e.outcome === "miss" ? "miss" : "expected rebuild") + "</b> · " + escIso(e.stream) +
          " #" + e.index + "<br>" + utc(e.at, true) + " UTC, after " + duration(e.gap_s) +
          "<br>cause: " + escIso(causeText(e)) + "<br>re-processed " + tokens(e.reprocessed_tokens) +
          " tokens · re-cache cost " + usd(e.miss_cost_usd) +
          (e.advice != null && s.advice ? "<br>What to do: " + esc(s.advice[e.advice]) : "");
      }
      var lane = s.lanes[p.seriesIndex === undefined ? 0 : laneOfSeries[p.seriesIndex]];
      var c = lane.columns, i = p.data[2];
      return "<b>" + escIso(c.stream ? c.stream[i] : lane.label) + " #" + c.index[i] + "</b> · " +
        esc(c.outcome[i]) + "<br>" +
        utc(c.at[i], true) + " UTC · " + escIso(s.models[c.model[i]] || "(no model)") +
        "<br>read " + tokens(c.read[i]) + " · written " + tokens(c.written[i]) + " · uncached " +
        tokens(c.input[i]) + "<br>output " + tokens(c.output[i]) + " · cost " + usd(c.cost[i], 4) +
        (i && !c.stream ? "<br>" + duration(c.at[i] - c.at[i - 1]) + " after the previous request" : "");
    };
  }
  var laneOfSeries = [];

  function laneHas(lane, streamId) {
    return lane.ids ? lane.ids.indexOf(streamId) >= 0 : lane.id === streamId;
  }

  // Side calls (titles, quota checks: a request or two each) share one lane; every
  // other stream (subagents, compaction agents, sidechains) has its own.
  function viewLanes(s) {
    var out = [], side = [];
    s.lanes.forEach(function (l) {
      if (!l.columns || !l.columns.at.length) return;
      (l.kind === "side_call" ? side : out).push(l);
    });
    if (side.length > 1) out.push(mergeLanes(side));
    else out = out.concat(side);
    return out;
  }

  function mergeLanes(lanes) {
    var keys = ["at", "index", "input", "read", "written", "output", "cost", "model", "outcome"];
    var rows = [], c = { stream: [] };
    keys.forEach(function (k) { c[k] = []; });
    lanes.forEach(function (l) { l.columns.at.forEach(function (_, i) { rows.push([l, i]); }); });
    rows.sort(function (a, b) { return a[0].columns.at[a[1]] - b[0].columns.at[b[1]]; });
    rows.forEach(function (r) {
      keys.forEach(function (k) { c[k].push(r[0].columns[k][r[1]]); });
      c.stream.push(r[0].id);
    });
    return { id: null, ids: lanes.map(function (l) { return l.id; }), kind: "side_call",
             label: "side calls (" + lanes.length + " streams)", columns: c, windows: [], announced: [] };
  }

  function drawTimeline(s) {
    var node = document.getElementById("timeline");
    var note = document.getElementById("timeline-note");
    var lanes = viewLanes(s);
    if (timeline) { timeline.dispose(); charts.splice(charts.indexOf(timeline), 1); timeline = null; }
    if (!lanes.length) {
      node.hidden = true;
      note.textContent = s.lanes.some(function (l) { return !l.columns; })
        ? "Timeline left out to keep the file small (only the most expensive sessions keep every request; see --timelines)."
        : "No requests in the window.";
      return;
    }
    node.hidden = false;
    note.textContent = "Drag or scroll to zoom; hover a bar, a pin, a band or a line for details. Times in UTC.";
    // The gap holds a lane's time labels and, clear of them, the next lane's title.
    var top = 40, mainH = 200, laneH = lanes.length > 8 ? 50 : 70, gap = 58;
    var grids = [], xAxes = [], yAxes = [], series = [];
    var t0 = s.first_at * 1000, t1 = s.last_at * 1000;
    var multiDay = utc(s.first_at, true).slice(0, 10) !== utc(s.last_at, true).slice(0, 10);
    function timeLabel(ms) {
      var text = utc(ms / 1000, true);
      return multiDay ? text.slice(5, 16) : text.slice(11, 16);
    }
    var pad = Math.max(60000, (t1 - t0) * 0.01);
    laneOfSeries = [];
    laneLabels = [];
    laneGrids = grids;
    lanes.forEach(function (lane, k) {
      var h = k ? laneH : mainH;
      grids.push({ left: 70, right: 40, top: top, height: h });
      top += h + gap;
      // containShape off: a lane with one bar would otherwise widen its own axis.
      xAxes.push({ type: "time", gridIndex: k, min: t0 - pad, max: t1 + pad, containShape: false,
                   axisLabel: { hideOverlap: true, fontSize: 10, formatter: timeLabel },
                   splitLine: { show: false } });
      yAxes.push({ type: "value", gridIndex: k, name: lane.label, nameLocation: "end",
                   nameGap: 10, nameTextStyle: { align: "left", fontWeight: "bold", padding: [0, 0, 0, -60] },
                   splitNumber: k ? 2 : 4,
                   // No "0": it would sit on the first time label, in the corner.
                   axisLabel: { formatter: compact, fontSize: 10, showMinLabel: false } });
      laneSeries(lane, k, s).forEach(function (ser) { laneOfSeries.push(k); series.push(ser); });
    });
    var laneRefs = lanes;
    var sView = { lanes: laneRefs, events: s.events, models: s.models, advice: s.advice };
    node.style.height = (top + 40) + "px";
    timeline = newChart(node);
    var all = lanes.map(function (_, k) { return k; });
    timeline.setOption({
      animation: false,
      useUTC: true,
      grid: grids, xAxis: xAxes, yAxis: yAxes, series: series,
      // Wrapped: a miss's advice is a sentence or two.
      tooltip: { trigger: "item", confine: true, formatter: tooltipFor(sView),
                 extraCssText: "white-space: normal; max-width: 440px;" },
      toolbox: { right: 10, top: 0, feature: { dataZoom: { xAxisIndex: all, yAxisIndex: false }, restore: {} } },
      dataZoom: [
        { type: "inside", xAxisIndex: all, filterMode: "none" },
        { type: "slider", xAxisIndex: all, filterMode: "none", bottom: 8, height: 20 }
      ]
    });
    placeLabels();
    // Zooming moves every label: place them again.
    timeline.on("datazoom", placeLabels);
    timeline.on("restore", placeLabels);
  }

