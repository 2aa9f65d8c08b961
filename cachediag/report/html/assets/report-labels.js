  // ---- timeline labels: placed in rows at the top of each lane, none over another ----
  // A label sits above the moment it names; where it would cover a label already placed
  // it goes one row down, and where no row is free it is left out (its pin, line or band
  // still shows it on hover). Placed again after every zoom.
  var laneLabels = [];
  var laneGrids = [];
  var LABEL_ROW = 14, LABEL_FONT = 10, LABEL_GAP = 6;
  var measure = null;

  function labelWidth(text) {
    if (!measure) {
      measure = document.createElement("canvas").getContext("2d");
      measure.font = LABEL_FONT + "px sans-serif";
    }
    return measure.measureText(text).width + 4;  // + the background's padding
  }

  function labelSeries(k) {
    return {
      id: "labels" + k, name: "marks", type: "scatter", xAxisIndex: k, yAxisIndex: k,
      symbolSize: 1, z: 6, itemStyle: { color: "rgba(0,0,0,0)" }, data: [],
      label: { show: true, position: "inside", fontSize: LABEL_FONT, padding: [1, 2],
               backgroundColor: "rgba(255,255,255,0.8)" }
    };
  }

  // Which labels go first: marks of the session (cold spans, compactions, model
  // switches), then misses by their re-cache cost, then expected rebuilds.
  function labelOrder(a, b) { return a.rank - b.rank || (b.cost || 0) - (a.cost || 0) || a.at - b.at; }

  function placeLabels() {
    if (!timeline) return;
    var width = timeline.getWidth();
    var updates = laneLabels.map(function (labels, k) {
      var g = laneGrids[k];
      var left = g.left, right = width - g.right;
      var rows = Math.max(1, Math.min(4, Math.floor(g.height * 0.6 / LABEL_ROW)));
      var taken = [];
      for (var r = 0; r < rows; r++) taken.push([]);
      var data = [];
      labels.slice().sort(labelOrder).forEach(function (m) {
        var x = timeline.convertToPixel({ xAxisIndex: k }, m.at * 1000);
        var w = labelWidth(m.text);
        var x0 = Math.max(left, x - w / 2), x1 = x0 + w;
        if (x1 > right) { x1 = right; x0 = right - w; }  // near the right edge: shifted left
        if (x < left || x > right || x0 < left) return;  // zoomed out of view, or no room
        for (var row = 0; row < rows; row++) {
          var free = taken[row].every(function (t) { return x1 + LABEL_GAP <= t[0] || t[1] + LABEL_GAP <= x0; });
          if (!free) continue;
          taken[row].push([x0, x1]);
          var y = timeline.convertFromPixel({ yAxisIndex: k }, g.top + 1 + LABEL_ROW * (row + 0.5));
          var xValue = timeline.convertFromPixel({ xAxisIndex: k }, (x0 + x1) / 2);
          data.push({ value: [xValue, y, m.at], name: m.tip,
                      label: { color: m.color, formatter: literal(m.text) } });
          return;
        }
      });
      return { id: "labels" + k, data: data };
    });
    timeline.setOption({ series: updates });
  }

