"""matrix (page assets): the CSS and JavaScript inlined into every HTML matrix.

Kept apart from the markup (``matrix/html.py``) so each stays readable. The
script reads the page's embedded JSON (``<script type="application/json"
id="matrix-data">``), never the network: it switches between the per-release
tables and the history, shows or hides the choices for other platforms, and
fills the detail panel of a cell (its evidence chain, field reports and the
``explain`` command) or of a change (the deciding line on each side). It only
ever sets ``textContent``, so nothing from a scanned tree becomes markup. A
fragment (``#cell:sglang_0.5.23:--moe-runner-backend:triton:sm120``,
``#history``, ``#change-3``) opens that cell, view or change on load.
"""

from __future__ import annotations

__all__ = ["CSS", "SCRIPT"]

CSS = """
:root { --blocked: #d9534f; --unsupported: #f0ad4e; --supported: #4cae4c; --unknown: #d6d6d6;
  --ink: #1d1d1f; --muted: #666; --line: #ddd; font-family: system-ui, -apple-system,
  "Segoe UI", Roboto, sans-serif; color: var(--ink); }
body { margin: 0; padding: 0 1.2rem 2rem; }
header h1 { font-size: 1.3rem; margin: 1rem 0 .2rem; }
header p { margin: .1rem 0; color: var(--muted); font-size: .9rem; }
nav { display: flex; flex-wrap: wrap; gap: .4rem; align-items: center; margin: .8rem 0; }
nav button { border: 1px solid var(--line); background: #fafafa; padding: .3rem .7rem;
  border-radius: 4px; cursor: pointer; font: inherit; font-size: .9rem; }
nav button.active { background: var(--ink); color: #fff; border-color: var(--ink); }
nav label { margin-left: 1rem; font-size: .85rem; color: var(--muted); }
.legend { display: flex; flex-wrap: wrap; gap: 1rem; font-size: .85rem; margin: .4rem 0 1rem; }
.legend span.sw { display: inline-block; width: .9rem; height: .9rem; border-radius: 2px;
  vertical-align: -2px; margin-right: .3rem; }
.failed { color: var(--blocked); font-size: .9rem; }
.js .view:not(.active) { display: none; }
h2 { font-size: 1.1rem; margin: 1rem 0 .3rem; }
h2 small { font-weight: normal; color: var(--muted); }
.notes { font-size: .8rem; color: var(--muted); margin: 0 0 .5rem; padding-left: 1.2rem; }
table.grid { border-collapse: collapse; font-size: .85rem; }
table.grid th, table.grid td { border: 1px solid var(--line); padding: .15rem .45rem; }
table.grid thead th { background: #f3f3f3; position: sticky; top: 0; }
table.grid th.opt { text-align: left; font-family: ui-monospace, monospace; background: #eef1f5;
  padding-top: .35rem; }
table.grid td.choice { font-family: ui-monospace, monospace; padding-left: 1.2rem; }
td.cell { text-align: center; cursor: pointer; min-width: 6.5rem; }
td.cell:focus, td.cell.open { outline: 2px solid var(--ink); outline-offset: -2px; }
.v-blocked { background: var(--blocked); color: #fff; }
.v-unsupported { background: var(--unsupported); }
.v-supported { background: var(--supported); color: #fff; }
.v-unknown { background: var(--unknown); }
.v-absent { background: #fff; color: #bbb; }
tr.other-platform td.choice::after { content: " (" attr(data-platform) ")"; color: var(--muted); }
body:not(.show-other) tr.other-platform { display: none; }
td.hist { white-space: nowrap; }
.chip { display: inline-block; min-width: 2.6rem; text-align: center; margin: 1px;
  padding: 0 .2rem; border-radius: 3px; font-size: .75rem; cursor: pointer; }
.chip.changed { outline: 2px solid var(--ink); font-weight: bold; }
.chip.changed::before { content: "\\25B2 "; }
ol.changes { font-size: .85rem; }
ol.changes li { cursor: pointer; margin: .15rem 0; }
ol.changes li:hover { text-decoration: underline; }
#detail { position: fixed; top: 0; right: 0; width: min(44rem, 50vw); height: 100vh;
  overflow: auto; background: #fff; border-left: 2px solid var(--ink); padding: .8rem 1.1rem;
  box-shadow: -4px 0 12px rgba(0,0,0,.15); box-sizing: border-box; }
#detail[hidden] { display: none; }
#detail .close { float: right; font-size: 1.2rem; border: none; background: none;
  cursor: pointer; }
#detail h3 { margin: .2rem 0; font-family: ui-monospace, monospace; font-size: 1rem; }
#detail .verdict { display: inline-block; padding: .05rem .5rem; border-radius: 3px; }
#detail ol.chain { padding-left: 1.6rem; font-size: .82rem; }
#detail ol.chain li { margin: .35rem 0; }
#detail li.st-decides { border-left: 4px solid var(--ink); padding-left: .4rem; }
#detail li.st-caveat { border-left: 4px dashed var(--unsupported); padding-left: .4rem; }
#detail code, #detail pre { font-family: ui-monospace, monospace; }
#detail pre { margin: .1rem 0; white-space: pre-wrap; background: #f6f6f6; padding: .15rem .3rem; }
#detail .note { color: #333; }
#detail .badge { font-size: .7rem; background: var(--ink); color: #fff; border-radius: 3px;
  padding: 0 .3rem; margin-left: .3rem; }
#detail .sides { display: grid; grid-template-columns: 1fr 1fr; gap: .8rem; font-size: .82rem; }
#detail .cmd { font-size: .8rem; background: #f6f6f6; padding: .3rem; font-family: ui-monospace,
  monospace; word-break: break-all; }
"""

SCRIPT = r"""
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("matrix-data").textContent);
  var panel = document.getElementById("detail");
  var body = document.getElementById("detail-body");
  document.documentElement.classList.add("js");

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }
  function add(parent) {
    for (var i = 1; i < arguments.length; i++) {
      if (arguments[i]) { parent.appendChild(arguments[i]); }
    }
    return parent;
  }
  function verdictBadge(verdict) { return el("span", "verdict v-" + verdict, verdict); }
  function evidence(index) {
    var e = data.evidence[index];
    return {path: e[0], line: e[1], role: e[2], text: e[3], note: e[4], status: e[5],
            kind: e[6], tier: e[7], args: e[8]};
  }
  function where(ev) { return ev.path + ":" + ev.line; }
  function hop(ev) {
    var li = el("li", "st-" + ev.status);
    add(li, el("span", "role", "[" + ev.role + "] "), el("code", null, where(ev)));
    if (ev.status === "decides") { add(li, el("span", "badge", "deciding")); }
    if (ev.status === "caveat") { add(li, el("span", "badge", "caveat")); }
    if (ev.text) { add(li, el("pre", null, ev.text)); }
    if (ev.note) { add(li, el("div", "note", ev.note)); }
    return li;
  }
  function fieldReport(ev) {
    var li = el("li", null, ev.note || ev.text);
    var url = ev.args && (ev.args.url || ev.args.source);
    if (url) {
      var a = el("a", null, " " + url);
      a.href = url; a.rel = "noreferrer"; a.target = "_blank";
      add(li, a);
    }
    return li;
  }
  function show(title) {
    body.textContent = "";
    add(body, el("h3", null, title));
    panel.hidden = false;
    return body;
  }
  function markOpen(node) {
    var open = document.querySelectorAll(".open");
    for (var i = 0; i < open.length; i++) { open[i].classList.remove("open"); }
    if (node) { node.classList.add("open"); }
  }
  function openCell(index, node) {
    var c = data.cells[index];
    var release = data.releases[c.r];
    var target = show(c.o + " " + c.c);
    var line = el("p");
    add(line, el("span", null, c.a + " \u00b7 " + release.label +
        (release.kernels ? " (with " + release.kernels + ")" : "") + ": "),
        verdictBadge(c.v),
        el("span", null, " \u00b7 safe to try: " + (c.v === "supported" || c.v === "unknown"
            ? "yes" : "no")));
    add(target, line);
    if (c.p) { add(target, el("p", null, "documented for another platform: " + c.p)); }
    if (c.k && c.k.length) {
      var conds = el("ul", "conditions");
      add(target, conds);
      c.k.forEach(function (text) { add(conds, el("li", null, text)); });
    }
    var chain = data.chains[c.e] || [];
    var hops = [], reports = [];
    chain.forEach(function (i) {
      var ev = evidence(i);
      (ev.kind === "field" ? reports : hops).push(ev);
    });
    add(target, el("h4", null, "Evidence chain (" + hops.length + " lines)"));
    var list = el("ol", "chain");
    add(target, list);
    if (!hops.length) { add(list, el("li", null, "no architecture evidence on its path")); }
    hops.forEach(function (ev) { add(list, hop(ev)); });
    if (reports.length) {
      add(target, el("h4", null, "Field reports (beside the verdict, never deciding it)"));
      var fl = el("ul", "field");
      add(target, fl);
      reports.forEach(function (ev) { add(fl, fieldReport(ev)); });
    }
    add(target, el("p", "cmd", "guardscan explain " + c.c + " --option " + c.o + " --arch " +
        c.a + " " + release.target));
    markOpen(node);
  }
  function side(label, cellIndex) {
    var box = el("div");
    var c = data.cells[cellIndex];
    add(box, el("strong", null, label + " "), verdictBadge(c.v));
    var chain = data.chains[c.e] || [];
    var deciding = null;
    chain.forEach(function (i) { var ev = evidence(i); if (ev.status === "decides") { deciding = ev; } });
    if (deciding) {
      add(box, add(el("ol", "chain"), hop(deciding)));
    } else {
      add(box, el("p", null, "nothing decides it (no architecture evidence either way)"));
    }
    var more = el("button", "more", "whole chain");
    more.addEventListener("click", function () { openCell(cellIndex, null); });
    add(box, more);
    return box;
  }
  function openChange(index, node) {
    var ch = data.changes[index];
    var before = data.cells[ch.old], after = data.cells[ch["new"]];
    var target = show(after.o + " " + after.c + " on " + after.a);
    add(target, el("p", null, data.releases[before.r].label + " \u2192 " +
        data.releases[after.r].label + ": " + before.v + " \u2192 " + after.v +
        " (" + ch.direction + ")"));
    add(target, add(el("div", "sides"), side(data.releases[before.r].label, ch.old),
        side(data.releases[after.r].label, ch["new"])));
    markOpen(node);
  }
  function activate(name) {
    var views = document.querySelectorAll(".view");
    for (var i = 0; i < views.length; i++) {
      views[i].classList.toggle("active", views[i].id === "view-" + name);
    }
    var buttons = document.querySelectorAll("nav button[data-view]");
    for (var j = 0; j < buttons.length; j++) {
      buttons[j].classList.toggle("active", buttons[j].getAttribute("data-view") === name);
    }
  }
  document.addEventListener("click", function (event) {
    var node = event.target.closest("[data-cell],[data-change],[data-view]");
    if (!node) { return; }
    if (node.hasAttribute("data-view")) { activate(node.getAttribute("data-view")); return; }
    if (node.hasAttribute("data-change")) {
      openChange(Number(node.getAttribute("data-change")), node); return;
    }
    openCell(Number(node.getAttribute("data-cell")), node);
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape") { panel.hidden = true; markOpen(null); }
    if (event.key === "Enter" && document.activeElement &&
        document.activeElement.hasAttribute("data-cell")) { document.activeElement.click(); }
  });
  document.getElementById("detail-close").addEventListener("click", function () {
    panel.hidden = true; markOpen(null);
  });
  var other = document.getElementById("show-other");
  other.addEventListener("change", function () {
    document.body.classList.toggle("show-other", other.checked);
  });
  function fromHash() {
    var name = decodeURIComponent(location.hash.slice(1));
    if (!name) { return; }
    if (name === "history") { activate("history"); return; }
    if (name.indexOf("change-") === 0) {
      activate("history");
      var chip = document.querySelector('[data-change="' + Number(name.slice(7)) + '"]');
      openChange(Number(name.slice(7)), chip);
      return;
    }
    var cell = document.getElementById(name);
    if (cell && cell.hasAttribute("data-cell")) {
      activate(cell.closest(".view").id.slice(5));
      openCell(Number(cell.getAttribute("data-cell")), cell);
      cell.scrollIntoView({block: "center"});
    }
  }
  activate(data.initial);
  fromHash();
  window.addEventListener("hashchange", fromHash);
  document.body.setAttribute("data-ready", "1");
})();
"""
