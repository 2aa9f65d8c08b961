  // ---- navigation: #session=N&miss=stream:index ----
  // Anyone can write a link's fragment: a part that is not well-formed (#miss=%E0%A4%A)
  // is passed over, the rest still read.
  function fromHash() {
    var params = Object.create(null);
    location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
      var i = kv.indexOf("=");
      if (i <= 0) return;
      try {
        params[kv.slice(0, i)] = decodeURIComponent(kv.slice(i + 1));
      } catch (e) {
        if (!(e instanceof URIError)) throw e;
      }
    });
    var n = parseInt(params.session, 10);
    return { n: n >= 0 && n < SESSIONS.length ? n : null, miss: params.miss || null };
  }

  function mostExpensive() {
    var best = 0;
    SESSIONS.forEach(function (s, i) {
      var c = s.cost ? s.cost.cost_usd : 0, b = SESSIONS[best].cost ? SESSIONS[best].cost.cost_usd : 0;
      if (c > b) best = i;
    });
    return best;
  }

  document.getElementById("generator").textContent = DATA.generator || "cachediag";
  drawOverview();
  if (SESSIONS.length === 1) {
    // One session: its story first, the totals after.
    var overview = document.getElementById("overview");
    overview.parentNode.insertBefore(document.getElementById("session"), overview);
    document.getElementById("sessions").hidden = true;  // a list of one says nothing
  }
  if (SESSIONS.length) {
    drawSessionList();
    drawPicker();
    var h = fromHash();
    drawSession(h.n === null ? mostExpensive() : h.n, h.miss);
    window.addEventListener("hashchange", function () {
      var hh = fromHash();
      if (hh.n !== null) drawSession(hh.n, hh.miss);
    });
  } else {
    document.getElementById("session").hidden = true;
    document.getElementById("sessions").hidden = true;
  }
  window.addEventListener("resize", function () { charts.forEach(function (c) { c.resize(); }); });
  document.body.setAttribute("data-ready", "1");
