// Matrix pages: a cell opens its evidence in a panel (focus moves in, and back on close);
// filters and a free-text search narrow the rows; the address keeps the cell and the filters,
// so that any view is a permalink. Without JavaScript the cells are links to <details>.
(function () {
  "use strict";
  var panel = document.getElementById("evidence-panel");
  var table = document.querySelector("table.matrix");
  var selected = null;
  var current = null;
  var controls = document.querySelectorAll("[data-filter]");
  var permalink = document.getElementById("permalink");

  // A cell's evidence id is its link's fragment (probes/x.html#ev-..., or #ev-... here).
  function evOf(cell) { var h = cell.getAttribute("href") || ""; return h.slice(h.indexOf("#") + 1); }
  function cellFor(id) { return document.querySelector('.cell[href$="#' + id + '"]'); }

  function closePanel(restore) {
    if (!panel) return;
    panel.classList.remove("open");
    if (current) { current.classList.remove("current"); current = null; }
    var back = selected;
    if (selected) selected.classList.remove("selected");
    selected = null;
    writeState();
    if (restore && back) back.focus();
  }
  function show(id, cell, focus) {
    var block = document.getElementById(id);
    if (!panel || !block || !panel.contains(block)) return false;
    if (current) current.classList.remove("current");
    current = block;
    block.classList.add("current");
    block.open = true;
    if (selected) selected.classList.remove("selected");
    selected = cell || cellFor(id);
    if (selected) selected.classList.add("selected");
    panel.classList.add("open");
    writeState();
    if (focus) document.getElementById("evidence-heading").focus();
    return true;
  }
  document.addEventListener("click", function (ev) {
    var t = ev.target.closest ? ev.target : null;
    if (!t) return;
    var cell = t.closest("a.cell");
    if (cell && panel) { ev.preventDefault(); show(evOf(cell), cell, true); return; }
    if (t.closest("#evidence-panel .close")) closePanel(true);
    if (t.closest("#evidence-panel .evidence > summary")) ev.preventDefault();
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape" && panel && panel.classList.contains("open")) closePanel(true);
    // role=button: Space activates like Enter does for a link.
    if (ev.key === " " && ev.target.classList && ev.target.classList.contains("cell") &&
        ev.target.getAttribute("role") === "button") {
      ev.preventDefault(); ev.target.click();
    }
  });

  function state() {
    var s = {};
    for (var i = 0; i < controls.length; i++) {
      var c = controls[i], key = c.getAttribute("data-filter");
      var v = c.type === "checkbox" ? (c.checked ? "1" : "") : c.value;
      if (v) s[key] = v;
    }
    if (current) s.cell = current.id;
    return s;
  }
  function encode(s) {
    var parts = [];
    for (var k in s) parts.push(encodeURIComponent(k) + "=" + encodeURIComponent(s[k]));
    return parts.join("&");
  }
  function writeState() {
    var text = encode(state());
    if (history.replaceState) history.replaceState(null, "", text ? "#" + text : location.pathname);
    if (permalink) permalink.href = "#" + text;
  }
  function readState() {
    var h = decodeURIComponent(location.hash.replace(/^#/, ""));
    var s = {};
    if (/^ev-/.test(h)) { s.cell = h; return s; }
    location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
      var i = kv.indexOf("=");
      if (i > 0) s[decodeURIComponent(kv.slice(0, i))] = decodeURIComponent(kv.slice(i + 1));
    });
    return s;
  }

  var searchText = null;
  function rowText(row) {
    // Probe, column and every cell's evidence: what the search looks through.
    var text = row.getAttribute("data-probe") + " " + row.textContent;
    var cells = row.querySelectorAll(".cell");
    for (var i = 0; i < cells.length; i++) {
      var ev = document.getElementById(evOf(cells[i]));
      // The matrix page has no evidence of its own (it is on the probes' pages): the cell's
      // tooltip (status and detail) is what it can search there.
      text += " " + (ev ? ev.textContent : cells[i].getAttribute("title") || "");
    }
    return text.toLowerCase();
  }
  function applyFilters() {
    if (!table) return;
    var s = state();
    var rows = table.querySelectorAll("tbody tr");
    if (s.q && searchText === null) {
      searchText = [];
      for (var i = 0; i < rows.length; i++) searchText.push(rowText(rows[i]));
    }
    var words = (s.q || "").toLowerCase().split(/\s+/).filter(Boolean);
    var shown = 0;
    for (var j = 0; j < rows.length; j++) {
      var r = rows[j], ok = true;
      if (s.backend && r.getAttribute("data-backend") !== s.backend) ok = false;
      if (s.probe && r.getAttribute("data-probe") !== s.probe) ok = false;
      if (s.problems && r.getAttribute("data-problem") !== "1") ok = false;
      if (s.changes && r.getAttribute("data-changes") !== "1") ok = false;
      if (s.measured && r.getAttribute("data-measured") !== "1") ok = false;
      for (var w = 0; ok && w < words.length; w++) if (searchText[j].indexOf(words[w]) < 0) ok = false;
      r.hidden = !ok;
      if (ok) shown++;
    }
    // Name each probe on the first row still shown, so filtered tables stay readable.
    var lastProbe = null;
    for (var k = 0; k < rows.length; k++) {
      if (rows[k].hidden) continue;
      var name = rows[k].querySelector("th.probe-name");
      var probe = rows[k].getAttribute("data-probe");
      if (name) name.classList.toggle("repeat", probe === lastProbe);
      rows[k].classList.toggle("group-start", probe !== lastProbe);
      lastProbe = probe;
    }
    var count = document.getElementById("row-count");
    if (count) count.textContent = shown + " of " + rows.length + " rows";
    writeState();
  }
  function load() {
    var s = readState();
    for (var i = 0; i < controls.length; i++) {
      var c = controls[i], key = c.getAttribute("data-filter");
      if (c.type === "checkbox") c.checked = !!s[key]; else c.value = s[key] || "";
    }
    applyFilters();
    // A cell's old permalink on a page without the evidence (the matrix page's cells link to
    // their probe's page): follow the cell's own link there.
    var linked = s.cell && !panel ? cellFor(s.cell) : null;
    if (linked) { location.replace(linked.href); return; }
    if (s.cell) { if (!show(s.cell, null, true)) closePanel(false); }
    else if (current) closePanel(false);
  }
  for (var k = 0; k < controls.length; k++) {
    controls[k].addEventListener(controls[k].type === "search" ? "input" : "change", applyFilters);
  }
  window.addEventListener("hashchange", load);
  load();

  // The grid is one tab stop (a roving tabindex): Tab enters at the last link focused in it
  // (first: the first cell), the arrow keys move between its links (cells, probe names,
  // release headers; Up/Down keep the column), Home/End go to a row's ends.
  if (table) {
    var links = table.querySelectorAll("a");
    var rover = table.querySelector("a.cell") || links[0] || null;
    for (var c = 0; c < links.length; c++) links[c].tabIndex = links[c] === rover ? 0 : -1;
    // The grid's box needs no tab stop of its own once its links move focus (and scroll) in it.
    var wrap = table.closest(".tablewrap");
    if (wrap && rover) wrap.removeAttribute("tabindex");
    function moveTo(link) {
      if (!link) return;
      if (rover) rover.tabIndex = -1;
      rover = link; link.tabIndex = 0; link.focus();
    }
    function rowLinks(tr) { return Array.prototype.slice.call(tr.querySelectorAll("a")); }
    function nextRow(tr, step) {
      var rows = table.rows, i = Array.prototype.indexOf.call(rows, tr) + step;
      while (i >= 0 && i < rows.length && (rows[i].hidden || !rows[i].querySelector("a"))) i += step;
      return i >= 0 && i < rows.length ? rows[i] : null;
    }
    table.addEventListener("focusin", function (ev) {
      var link = ev.target.closest && ev.target.closest("a");
      if (link && link !== rover) { if (rover) rover.tabIndex = -1; rover = link; link.tabIndex = 0; }
    });
    table.addEventListener("keydown", function (ev) {
      var link = ev.target.closest && ev.target.closest("a");
      if (!link) return;
      var tr = link.closest("tr"), list = rowLinks(tr), i = list.indexOf(link);
      if (ev.key === "ArrowRight") moveTo(list[i + 1]);
      else if (ev.key === "ArrowLeft") moveTo(list[i - 1]);
      else if (ev.key === "Home") moveTo(list[0]);
      else if (ev.key === "End") moveTo(list[list.length - 1]);
      else if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
        var target = nextRow(tr, ev.key === "ArrowDown" ? 1 : -1);
        if (!target) return;
        var box = link.closest("td, th").getBoundingClientRect(), x = box.left + box.width / 2;
        var best = null, dist = Infinity;
        rowLinks(target).forEach(function (other) {
          var b = other.closest("td, th").getBoundingClientRect();
          var d = x < b.left ? b.left - x : x > b.right ? x - b.right : 0;
          if (d < dist) { dist = d; best = other; }
        });
        moveTo(best);
      } else return;
      ev.preventDefault();
    });
  }
})();
