  // ---- the session list: sortable by any column, filtered by what is typed ----
  // Each row links to #session=N, which draws that session's summary, timeline and
  // misses below. Project names and causes come from logs: put in as text only.
  var LIST = DATA.session_list || [];
  var LIST_COLUMNS = [
    { key: "project", label: "project", text: function (r) { return r.project || "-"; } },
    { key: "first_at", label: "date (UTC)", cls: "time", text: function (r) { return utc(r.first_at, true).slice(0, 16); } },
    { key: "session_id", label: "session", text: function (r) { return r.session_id.slice(0, 8); } },
    { key: "cost_usd", label: "cost", cls: "num", num: true,
      text: function (r) { return groupUsd(r.cost_usd, r.requests, r.unpriced_requests); } },
    { key: "recache_cost_usd", label: "re-cache cost", cls: "num", num: true,
      text: function (r) { return groupUsd(r.recache_cost_usd, r.requests, r.unpriced_requests); } },
    { key: "misses", label: "misses", cls: "num", num: true, text: function (r) { return String(r.misses); } },
    { key: "top_cause", label: "top cause", text: function (r) { return r.top_cause || "-"; } }
  ];
  // Whose session each is, where the report holds more than one agent's.
  if ((OV.agents || []).length > 1) {
    LIST_COLUMNS.splice(1, 0, { key: "agent", label: "agent", text: function (r) { return r.agent; } });
  }
  var listSort = { key: "first_at", desc: true };

  var currentSession = null;

  function listValue(r, key) { return r[key] == null ? null : r[key]; }

  function compareRows(a, b) {
    var va = listValue(a, listSort.key), vb = listValue(b, listSort.key);
    // Missing values (no price, no cause) sort last either way.
    if (va === null || vb === null) return va === vb ? a.n - b.n : (va === null ? 1 : -1);
    var c = typeof va === "number" ? va - vb : String(va).localeCompare(String(vb));
    return (listSort.desc ? -c : c) || a.n - b.n;
  }

  function drawSessionList() {
    var table = document.getElementById("session-list");
    var filter = document.getElementById("session-filter");
    var head = el("tr");
    LIST_COLUMNS.forEach(function (col) {
      var button = el("button", { type: "button", text: col.label, "data-key": col.key });
      button.addEventListener("click", function () {
        listSort = { key: col.key, desc: listSort.key === col.key ? !listSort.desc : !!col.num };
        fillSessionList();
      });
      head.appendChild(el("th", { scope: "col", class: col.cls || "", "data-key": col.key }, [button]));
    });
    table.textContent = "";
    table.appendChild(el("thead", {}, [head]));
    table.appendChild(el("tbody"));
    filter.addEventListener("input", fillSessionList);
    fillSessionList();
  }

  function rowMatches(r, words) {
    var hay = [r.project || "", r.agent, r.session_id, r.top_cause || "", utc(r.first_at, true)].join(" ").toLowerCase();
    return words.every(function (w) { return hay.indexOf(w) >= 0; });
  }

  function fillSessionList() {
    var table = document.getElementById("session-list");
    var words = document.getElementById("session-filter").value.toLowerCase().split(/\s+/).filter(Boolean);
    var rows = LIST.filter(function (r) { return rowMatches(r, words); }).sort(compareRows);
    var body = table.querySelector("tbody");
    body.textContent = "";
    rows.forEach(function (r) {
      var tr = el("tr", { "data-n": String(r.n), "data-session": r.session_id });
      LIST_COLUMNS.forEach(function (col) {
        var td = el("td", { class: col.cls || "", "data-key": col.key });
        if (col.key === "session_id") {
          td.appendChild(el("a", { href: "#session=" + r.n, text: col.text(r), title: r.session_id }));
        } else if (col.key === "project") {
          td.appendChild(bdi(col.text(r)));
        } else {
          td.textContent = col.text(r);
        }
        tr.appendChild(td);
      });
      // Opening a session from the list brings its timeline into view (a link to a
      // miss scrolls to the miss's row instead).
      tr.addEventListener("click", function (ev) {
        if (ev.target.tagName !== "A") location.hash = "session=" + r.n;
        document.getElementById("session").scrollIntoView({ block: "start" });
      });
      if (r.n === currentSession) tr.classList.add("current");
      body.appendChild(tr);
    });
    table.querySelectorAll("th").forEach(function (th) {
      var key = th.getAttribute("data-key");
      th.setAttribute("aria-sort", key === listSort.key ? (listSort.desc ? "descending" : "ascending") : "none");
    });
    document.getElementById("session-count").textContent =
      rows.length === LIST.length ? LIST.length + " session(s)" : rows.length + " of " + LIST.length + " session(s)";
  }

  function markListed(n) {
    currentSession = n;
    document.querySelectorAll("#session-list tbody tr").forEach(function (tr) {
      tr.classList.toggle("current", tr.getAttribute("data-n") === String(n));
    });
  }
