// Matrix page behaviour: show a cell's evidence on click, filter rows by backend and probe.
(function () {
  "use strict";
  var panel = document.getElementById("evidence-panel");
  var selected = null;
  function closePanel() {
    if (!panel) return;
    panel.hidden = true;
    if (selected) selected.classList.remove("selected");
    selected = null;
  }
  function show(button) {
    var id = button.getAttribute("data-ev");
    var blocks = panel.querySelectorAll(".evidence");
    for (var i = 0; i < blocks.length; i++) blocks[i].hidden = blocks[i].id !== id;
    if (selected) selected.classList.remove("selected");
    selected = button;
    button.classList.add("selected");
    panel.hidden = false;
  }
  document.addEventListener("click", function (ev) {
    var button = ev.target.closest ? ev.target.closest("button.cell") : null;
    if (button && panel) { show(button); return; }
    if (ev.target.closest && ev.target.closest("#evidence-panel .close")) closePanel();
  });
  document.addEventListener("keydown", function (ev) { if (ev.key === "Escape") closePanel(); });

  var filters = document.querySelectorAll("select[data-filter]");
  function applyFilters() {
    var want = {};
    for (var i = 0; i < filters.length; i++) want[filters[i].getAttribute("data-filter")] = filters[i].value;
    var rows = document.querySelectorAll("table.matrix tbody tr");
    var shown = 0;
    for (var j = 0; j < rows.length; j++) {
      var ok = true;
      for (var key in want) {
        if (want[key] && rows[j].getAttribute("data-" + key) !== want[key]) ok = false;
      }
      rows[j].hidden = !ok;
      if (ok) shown++;
    }
    // Name each probe on the first row still shown, so filtered tables stay readable.
    var lastProbe = null;
    for (var r = 0; r < rows.length; r++) {
      if (rows[r].hidden) continue;
      var name = rows[r].querySelector("th.probe-name");
      var probe = rows[r].getAttribute("data-probe");
      if (name) name.classList.toggle("repeat", probe === lastProbe);
      rows[r].classList.toggle("group-start", probe !== lastProbe);
      lastProbe = probe;
    }
    var count = document.getElementById("row-count");
    if (count) count.textContent = shown + " of " + rows.length + " rows";
  }
  for (var k = 0; k < filters.length; k++) filters[k].addEventListener("change", applyFilters);
  if (filters.length) applyFilters();
})();
