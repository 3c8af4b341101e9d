// The report's behaviour: tooltips, sortable tables, zoomable timelines. The page is complete
// without it (the engine writes every chart as SVG); this only makes it interactive.
(function () {
  "use strict";
  var errors = [];
  window.addEventListener("error", function (e) {
    errors.push(String(e.message));
    document.body.setAttribute("data-js-errors", errors.join(" | "));
  });

  function data(id) {
    var el = document.getElementById(id);
    return el ? JSON.parse(el.textContent) : null;
  }
  var kernels = data("kernel-data") || [];
  var tiers = ["not replayable", "copy/memset", "gemm", "dispatcher op", "collective"];
  var tip = document.getElementById("tip");

  function fmt(x, digits) {
    if (x === null || x === undefined || !isFinite(x)) return "n/a";
    return Number(x).toFixed(digits === undefined ? 2 : digits);
  }
  function show(text, ev) {
    tip.textContent = text;
    tip.style.display = "block";
    var x = Math.min(ev.clientX + 14, window.innerWidth - 580);
    tip.style.left = Math.max(4, x) + "px";
    tip.style.top = ev.clientY + 14 + "px";
  }
  function hide() { tip.style.display = "none"; }

  function kernelText(k) {
    if (!k) return "";
    return k.name + "\nid " + k.id + ", tier " + k.tier + " (" + tiers[k.tier] + "), " + k.count +
      " recorded\nrecorded median " + fmt(k.rec, 3) + " us, replayed median " + fmt(k.rep, 3) +
      " us, error " + fmt(k.err, 1) + " %";
  }

  // Hover: scatter points and bars carry data-k (a kernel index) or data-tip (their own text).
  document.addEventListener("mouseover", function (ev) {
    var t = ev.target;
    if (!t.getAttribute) return;
    if (t.hasAttribute("data-tip")) return show(t.getAttribute("data-tip"), ev);
    if (t.classList.contains("act")) return show(activityText(t), ev);
    if (t.hasAttribute("data-k")) return show(kernelText(kernels[+t.getAttribute("data-k")]), ev);
  });
  document.addEventListener("mouseout", function (ev) {
    if (ev.target.getAttribute && (ev.target.hasAttribute("data-k") ||
        ev.target.hasAttribute("data-tip") || ev.target.classList.contains("act"))) hide();
  });

  // Sortable tables: cells carry their sort key in data-v (numbers) or their text.
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, col) {
      th.addEventListener("click", function () {
        var asc = !th.classList.contains("sorted-asc");
        Array.prototype.forEach.call(heads, function (h) { h.classList.remove("sorted-asc", "sorted-desc"); });
        th.classList.add(asc ? "sorted-asc" : "sorted-desc");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        function key(row) {
          var c = row.cells[col];
          var v = c.getAttribute("data-v");
          return v !== null ? parseFloat(v) : c.textContent.toLowerCase();
        }
        rows.sort(function (a, b) {
          var x = key(a), y = key(b);
          if (typeof x === "number" && isNaN(x)) return 1;
          if (typeof y === "number" && isNaN(y)) return -1;
          return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1);
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });

  // Timelines: both sides share one view of [x0, x0 + width) microseconds; wheel zooms around
  // the cursor, dragging pans, a double click shows everything again.
  var timeline = data("timeline-data");
  function activityText(rect) {
    var side = rect.closest("svg").getAttribute("data-side");
    var names = timeline ? timeline[side] : [];
    var n = +rect.getAttribute("data-n");
    var k = kernels[+rect.getAttribute("data-k")];
    var x = +rect.getAttribute("x"), w = +rect.getAttribute("width");
    var text = (names[n] || "") + "\n" + side + ": start " + fmt(x, 3) + " us, duration " + fmt(w, 3) + " us";
    if (rect.hasAttribute("data-e")) text += ", error " + rect.getAttribute("data-e") + " %";
    if (k) text += "\nkernel " + k.id + ", tier " + k.tier + " (" + tiers[k.tier] + ")";
    return text;
  }
  var gantts = Array.prototype.slice.call(document.querySelectorAll("svg.gantt"));
  if (gantts.length) {
    var full = +gantts[0].getAttribute("data-span");
    var view = { x: 0, w: full };
    var axis = document.getElementById("gantt-axis");
    var apply = function () {
      view.w = Math.max(Math.min(view.w, full), full / 1e6, 0.001);
      view.x = Math.max(0, Math.min(view.x, full - view.w));
      gantts.forEach(function (svg) {
        var vb = svg.viewBox.baseVal;
        svg.setAttribute("viewBox", view.x + " 0 " + view.w + " " + vb.height);
      });
      if (!axis) return;
      var step = Math.pow(10, Math.floor(Math.log10(view.w / 5)));
      if (view.w / step > 12) step *= 2;
      if (view.w / step > 12) step *= 2.5;
      var html = "";
      for (var t = Math.ceil(view.x / step) * step; t <= view.x + view.w; t += step) {
        var pct = (t - view.x) / view.w * 100;
        var label = t >= 1000 ? fmt(t / 1000, step >= 1000 ? 0 : 2) + " ms" : fmt(t, step >= 1 ? 0 : 2) + " us";
        html += '<span style="left:' + pct + '%">' + label + "</span>";
      }
      axis.innerHTML = html;
    };
    gantts.forEach(function (svg) {
      svg.addEventListener("wheel", function (ev) {
        ev.preventDefault();
        var box = svg.getBoundingClientRect();
        var at = view.x + (ev.clientX - box.left) / box.width * view.w;
        var f = ev.deltaY < 0 ? 0.8 : 1.25;
        view.w *= f;
        view.x = at - (at - view.x) * f;
        apply();
      }, { passive: false });
      var drag = null;
      svg.addEventListener("mousedown", function (ev) { drag = { x: ev.clientX, v: view.x }; });
      window.addEventListener("mouseup", function () { drag = null; });
      window.addEventListener("mousemove", function (ev) {
        if (!drag) return;
        var box = svg.getBoundingClientRect();
        view.x = drag.v - (ev.clientX - drag.x) / box.width * view.w;
        apply();
      });
      svg.addEventListener("dblclick", function () { view = { x: 0, w: full }; apply(); });
    });
    apply();
  }

  document.body.setAttribute("data-ready-ms", String(Math.round(performance.now())));
  document.body.setAttribute("data-ready", "1");
})();
