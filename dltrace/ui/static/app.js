// The lineage explorer's page: plain JavaScript over the JSON API (dltrace/ui/app.py), no build step.
// Views by the URL's hash: #/ (pipeline, impact), #/result/NAME, #/table/NAME, #/why/NAME/ROW.
"use strict";

const TOKEN = new URLSearchParams(location.search).get("token");
const view = document.getElementById("view");
const SOURCE_PAGE = 20; // source rows per table and page in the why view
let inFlight = null; // the AbortController of the answers the current view waits for

// ---- talking to the server: one line per error, a spinner and Cancel while it works ----

function showError(message) {
  const box = document.getElementById("error");
  box.textContent = message ? String(message).split("\n")[0] : "";
  box.title = box.textContent;
  box.style.display = message ? "block" : "none";
}

let busyCount = 0, busyStarted = 0, busyTimer = null;
function busy(on, what) {
  busyCount += on ? 1 : -1;
  const box = document.getElementById("busy");
  if (busyCount > 0 && !busyTimer) {
    busyStarted = Date.now();
    box.style.display = "flex";
    busyTimer = setInterval(() => {
      document.getElementById("busy-text").textContent =
        `${what || "working"}… ${((Date.now() - busyStarted) / 1000).toFixed(1)} s`;
    }, 100);
  } else if (busyCount <= 0) {
    busyCount = 0;
    clearInterval(busyTimer);
    busyTimer = null;
    box.style.display = "none";
  }
}

document.getElementById("cancel").addEventListener("click", () => {
  if (inFlight) inFlight.abort();
  inFlight = null;
  showError("cancelled: the server stopped its Spark work for it");
});

function withToken(path) {
  return TOKEN ? path + (path.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(TOKEN) : path;
}

async function api(path, what) {
  if (!inFlight) inFlight = new AbortController();
  const signal = inFlight.signal;
  busy(true, what);
  try {
    const headers = TOKEN ? {"X-Dltrace-Token": TOKEN} : {};
    const response = await fetch(path, {headers, signal});
    const text = await response.text();
    let body;
    try { body = JSON.parse(text); } catch (e) { body = {error: `${response.status} ${response.statusText}`}; }
    if (!response.ok) throw new Error(body.error || `${response.status} ${response.statusText}`);
    return body;
  } finally {
    busy(false);
  }
}

function settle(promise) {
  // an answer's failure as the one error line (a cancel is said by the Cancel button)
  return promise.catch(error => { if (error.name !== "AbortError") showError(error.message); return null; });
}

// ---- small DOM helpers ----

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "onclick") node.addEventListener("click", v);
    else if (k === "class") node.className = v;
    else node.setAttribute(k, v);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function show(box, ...children) {
  // box's children replaced, the absent (null) ones left out
  box.replaceChildren(...children.flat().filter(c => c !== null && c !== undefined));
}

function text(value) {
  if (value === null || value === undefined) return "NULL";
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

function dlCounts(counts) {
  const parts = Object.entries(counts || {}).map(([t, n]) => `${t} ${n}`);
  const total = Object.values(counts || {}).reduce((a, b) => a + b, 0);
  return total ? `${total} ids: ${parts.join(", ")}` : "∅";
}

// A table of more rows than this draws only the rows in view and those near it, and the others
// as they scroll into view: laid out at once, a 1,000-row page took 200-350 ms (docs/ui.md).
const DRAWN_AT_ONCE = 200;
const NEAR_VIEW = 40; // rows drawn above and below the view

function rowsTable(columns, rows, options) {
  // rows: list of objects; options.extra: [header, (row) => cell]; options.onRow: click handler;
  // options.sort: {column, descending, by: column => ...}, headers that sort when clicked.
  // The table sits in a frame that scrolls sideways, so that a wide one never widens the page.
  const extra = (options && options.extra) || [];
  const onRow = options && options.onRow;
  const sort = options && options.sort;
  const header = c => {
    if (!sort) return el("th", {}, c);
    const mark = sort.column === c ? (sort.descending ? " ▼" : " ▲") : "";
    return el("th", {class: "sortable", "data-column": c, title: "sort by this column (again: the other way)",
                     onclick: () => sort.by(c)}, c, mark);
  };
  const head = el("tr", {}, columns.map(header), extra.map(([h]) => el("th", {}, h)));
  const drawRow = row => {
    const tr = el("tr", onRow ? {class: "clickable"} : {},
      columns.map(c => el("td", {}, text(row[c]))), extra.map(([, cell]) => el("td", {}, cell(row))));
    if (onRow) tr.addEventListener("click", () => onRow(row));
    return tr;
  };
  const body = el("tbody", {});
  const table = el("table", {class: "rows", "data-rows": rows.length}, el("thead", {}, head), body);
  if (rows.length <= DRAWN_AT_ONCE) body.append(...rows.map(drawRow));
  else drawInView(table, body, rows, drawRow, columns.length + extra.length);
  return el("div", {class: "frame"}, table);
}

function drawInView(table, body, rows, drawRow, width) {
  // The rows outside the view are two empty rows of their height.  Once on the page, the
  // drawn rows give the row height and the column widths, which stay fixed while it scrolls.
  const gap = () => el("tr", {class: "gap"}, el("td", {colspan: width}));
  const above = gap(), below = gap();
  let height = 22, first = 0, last = 0, pending = false;
  const gaps = () => {
    above.firstChild.style.height = `${first * height}px`;
    below.firstChild.style.height = `${(rows.length - last) * height}px`;
  };
  const draw = (from, to) => {
    [first, last] = [from, to];
    body.replaceChildren(above, ...rows.slice(from, to).map(drawRow), below);
    gaps();
  };
  const onScroll = () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      if (!table.isConnected) { removeEventListener("scroll", onScroll); return; }
      const top = body.getBoundingClientRect().top;
      const within = n => Math.max(0, Math.min(rows.length, n));
      const [viewFrom, viewTo] = [Math.floor(-top / height), Math.ceil((innerHeight - top) / height)];
      // redrawn when the rows in view come within half the margin of the drawn rows' ends
      if (within(viewFrom - NEAR_VIEW / 2) < first || within(viewTo + NEAR_VIEW / 2) > last) {
        draw(within(viewFrom - NEAR_VIEW), Math.max(within(viewFrom - NEAR_VIEW), within(viewTo + NEAR_VIEW)));
      }
    });
  };
  draw(0, Math.min(rows.length, Math.ceil(innerHeight / height))); // a screenful first, the margin after it is shown
  requestAnimationFrame(() => {
    if (!table.isConnected) return;
    const drawn = body.querySelectorAll("tr:not(.gap)");
    height = (drawn[drawn.length - 1].getBoundingClientRect().bottom - drawn[0].getBoundingClientRect().top) / drawn.length;
    const heads = [...table.querySelectorAll("th")];
    heads.map(th => th.getBoundingClientRect().width).forEach((w, i) => { heads[i].style.width = `${w}px`; });
    table.style.width = `${table.getBoundingClientRect().width}px`;
    table.style.tableLayout = "fixed";
    gaps();
    addEventListener("scroll", onScroll, {passive: true});
    onScroll();
  });
}

function pager(total, offset, limit, go) {
  const last = Math.min(total, offset + limit);
  return el("div", {class: "pager"},
    el("button", {onclick: () => go(Math.max(0, offset - limit)), ...(offset === 0 ? {disabled: ""} : {})}, "◀ previous"),
    el("span", {}, total ? `rows ${offset + 1}–${last} of ${total}` : "no rows"),
    el("button", {onclick: () => go(offset + limit), ...(last >= total ? {disabled: ""} : {})}, "next ▶"));
}

// ---- the pipeline view: the graph, its stale marks, and impact questions highlighted on it ----

function layout(graph) {
  // Layers by longest path from a source. An edge that spans layers passes each layer between
  // in a lane of its own, a slot no box takes, and bends only in the gaps between layers, so
  // that no edge passes behind a box. Each layer is ordered by the mean place of what feeds
  // it (name order first), which keeps edges short and few of them crossed.
  const inputs = {};
  graph.nodes.forEach(n => { inputs[n.id] = []; });
  graph.edges.forEach(e => { if (inputs[e.to] && inputs[e.from]) inputs[e.to].push(e.from); });
  const depth = {};
  const depthOf = (id, seen) => {
    if (depth[id] !== undefined) return depth[id];
    if (seen.has(id)) return 0;
    seen.add(id);
    depth[id] = inputs[id].length ? 1 + Math.max(...inputs[id].map(i => depthOf(i, seen))) : 0;
    return depth[id];
  };
  graph.nodes.forEach(n => depthOf(n.id, new Set()));
  const layers = [];
  const item = {}; // node id -> its slot
  graph.nodes.forEach(n => { (layers[depth[n.id]] = layers[depth[n.id]] || []).push(item[n.id] = {node: n, feeds: []}); });
  const edges = graph.edges.filter(e => item[e.from] && item[e.to]).map(e => ({...e, lanes: []}));
  for (const e of edges) {
    let previous = item[e.from];
    for (let x = depth[e.from] + 1; x < depth[e.to]; x++) { // a lane in each layer it passes
      const lane = {feeds: [previous]};
      layers[x].push(lane);
      e.lanes.push(lane);
      previous = lane;
    }
    if (depth[e.to] > depth[e.from]) item[e.to].feeds.push(previous);
  }
  const W = 240, H = 54, GAPX = 80, GAPY = 16, LANE = 14;
  const place = new Map();
  layers.forEach(layer => {
    const mean = it => it.feeds.length ? it.feeds.reduce((sum, f) => sum + place.get(f), 0) / it.feeds.length : -1;
    layer.map((it, k) => [mean(it), k, it]).sort((a, b) => a[0] - b[0] || a[1] - b[1])
      .forEach(([, , it], k) => { layer[k] = it; place.set(it, k); });
  });
  const at = {};
  let height = 0;
  layers.forEach((layer, x) => {
    let y = 10;
    for (const it of layer) {
      it.x = 10 + x * (W + GAPX);
      it.y = y;
      if (it.node) at[it.node.id] = {x: it.x, y};
      y += it.node ? H + GAPY : LANE;
    }
    height = Math.max(height, y + 10);
  });
  const routes = edges.map(e => ({from: e.from, to: e.to, d: edgePath(at[e.from], e.lanes, at[e.to], W, H, LANE)}));
  return {at, W, H, width: 20 + layers.length * (W + GAPX), height, routes};
}

function edgePath(a, lanes, b, W, H, LANE) {
  // from a box's right side, through its lanes (straight across their layers), to b's left side;
  // each bend a curve within the gap between two layers
  const points = [[a.x + W, a.y + H / 2], ...lanes.flatMap(l => [[l.x, l.y + LANE / 2], [l.x + W, l.y + LANE / 2]]),
                  [b.x, b.y + H / 2]];
  let d = `M${points[0][0]},${points[0][1]}`;
  for (let i = 0; i + 1 < points.length; i += 2) {
    const [[x1, y1], [x2, y2]] = [points[i], points[i + 1]], mid = (x1 + x2) / 2;
    d += ` C${mid},${y1} ${mid},${y2} ${x2},${y2}`;
    if (i + 2 < points.length) d += ` L${points[i + 2][0]},${points[i + 2][1]}`;
  }
  return d;
}

function nodeLabel(n) {
  if (n.kind === "table") return `${n.rows} rows · v${n.version}`;
  if (n.kind === "result" && n.run) return `${n.rows} rows · run ${n.run.number} of ${n.run.output} · ${new Date(n.run.written_at * 1000).toISOString().slice(0, 16).replace("T", " ")}`;
  if (n.kind === "result") return `${n.rows} rows · saved ${new Date(n.created_at * 1000).toISOString().slice(0, 16).replace("T", " ")}`;
  return "view";
}

function drawGraph(graph, hits) {
  const NS = "http://www.w3.org/2000/svg";
  const {at, W, H, width, height, routes} = layout(graph);
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  svg.setAttribute("id", "graph");
  const make = (tag, attrs, parent) => {
    const node = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    parent.append(node);
    return node;
  };
  for (const r of routes) make("path", {class: "edge", d: r.d, "data-from": r.from, "data-to": r.to}, svg);
  for (const n of graph.nodes) {
    const p = at[n.id];
    const hit = hits && hits[n.id] !== undefined && hits[n.id] > 0;
    const g = make("g", {class: `node ${n.kind}${n.stale ? " stale" : ""}${hit ? " hit" : ""}`,
                         transform: `translate(${p.x},${p.y})`, "data-name": n.id}, svg);
    make("rect", {width: W, height: H}, g);
    make("text", {x: 8, y: 18, "font-weight": 600}, g).textContent = `${n.kind === "result" ? "▣" : n.kind === "view" ? "◇" : "▤"} ${n.id}`;
    make("text", {x: 8, y: 34}, g).textContent = nodeLabel(n);
    if (n.stale || n.pruned_at) make("text", {x: 8, y: 49, class: "stale"}, g).textContent = n.pruned_at ? "PAST RETENTION" : "STALE";
    if (hits && hits[n.id] !== undefined) {
      make("text", {x: W - 8, y: 18, "text-anchor": "end", class: "badge"}, g).textContent = `${hits[n.id]} hit`;
    }
    make("title", {}, g).textContent = n.stale ? `${n.id}: stale: ${n.stale}` : (n.query || n.source || n.id);
    g.addEventListener("click", () => {
      if (n.kind === "result") location.hash = `#/result/${encodeURIComponent(n.id)}`;
      else if (n.kind === "table") location.hash = `#/table/${encodeURIComponent(n.id)}`;
    });
  }
  return svg;
}

function sourceExample(graph) {
  // an impact source from this catalog: a table a result reads, by its key and its first row's value
  const read = new Set(graph.edges.map(e => e.from));
  const tables = graph.nodes.filter(n => n.kind === "table");
  const best = tables.find(t => t.example && read.has(t.id)) || tables.find(t => t.example) || tables[0];
  if (!best) return "TABLE WHERE PREDICATE";
  if (!best.example) return `${best.id} WHERE ${(best.key && best.key[0]) || best.columns[0]} = …`;
  return `${best.id} WHERE ${Object.entries(best.example).map(([c, v]) => `${c} = ${sqlLiteral(v)}`).join(" AND ")}`;
}

async function pipelineView(params) {
  const graph = await settle(api("/api/pipeline", "reading the catalog"));
  if (!graph) return;
  document.getElementById("catalog").textContent = `${graph.catalog} · catalog version ${graph.version}`;
  const results = graph.nodes.filter(n => n.kind === "result");
  const source = el("input", {type: "text", id: "source", placeholder: sourceExample(graph),
                              value: params.get("source") || ""});
  const only = el("select", {id: "impact-result"}, el("option", {value: ""}, "every saved result"),
    results.map(r => el("option", {value: r.id, ...(params.get("result") === r.id ? {selected: ""} : {})}, r.id)));
  const form = el("form", {class: "impact"}, el("b", {}, "What did this source row touch?"), source, only,
                  el("button", {type: "submit", id: "impact-run"}, "Impact"));
  form.addEventListener("submit", event => {
    event.preventDefault();
    const query = new URLSearchParams({source: source.value});
    if (only.value) query.set("result", only.value);
    location.hash = `#/?${query}`;
  });
  const graphBox = el("div", {id: "graph-box"}, drawGraph(graph, null));
  const answerBox = el("div", {id: "impact-answer"});
  const staleList = Object.entries(graph.stale);
  show(view, 
    el("h2", {}, "Pipeline"),
    el("p", {class: "note"}, "Tables ▤ → saved results ▣ and views ◇, each with what it reads. Click a result or a table for its rows."),
    form, graphBox,
    staleList.length ? el("div", {id: "stale"}, el("h3", {}, "Stale results"),
      el("ul", {}, staleList.map(([n, why]) => el("li", {class: "stale"}, el("b", {}, n), ": ", why)))) : null,
    answerBox,
    el("h3", {}, "Nodes"),
    rowsTable(["name", "kind", "rows", "run", "version or save", "status"], graph.nodes.map(n => ({
      name: n.id, kind: n.kind, rows: n.rows ?? "", run: n.run ? `run ${n.run.number} of ${n.run.output}` : "",
      status: n.pruned_at ? "PAST RETENTION: lineage dropped, rows kept" : n.stale ? `STALE: ${n.stale}` : (n.kind === "view" ? "" : "current"),
      "version or save": n.kind === "table" ? `v${n.version}` : n.kind === "result" ? n.stamp : ""})),
      {onRow: r => { if (r.kind !== "view") location.hash = `#/${r.kind}/${encodeURIComponent(r.name)}`; }}));
  if (params.get("source")) await impactInSteps(graph, params, graphBox, answerBox);
}

function hitsOf(answer) {
  return Object.fromEntries(Object.entries(answer.results).map(([n, r]) => [n, r.count]));
}

async function impactInSteps(graph, params, graphBox, answerBox) {
  // Asked result after result (the server keeps the bad ids for the next), so that the page
  // shows how far it got, each answer as it comes, and Cancel stops what is left.
  const source = params.get("source");
  const table = ((source.match(/^\s*([A-Za-z_]\w*)/) || [])[1] || "").toLowerCase();
  const reached = graph.nodes.filter(n => n.kind === "result" && (n.lineage_tables || []).includes(table));
  const targets = params.get("result") ? [params.get("result")] : reached.map(n => n.id);
  if (!targets.length) { // no result to search: the server says why, or that nothing is reached
    const answer = await settle(api(`/api/impact?${params}`, "tracing the source rows forward"));
    if (answer) answerBox.replaceChildren(impactAnswer(answer, params));
    return;
  }
  const merged = {source, results: {}, warnings: []};
  const bar = el("progress", {max: targets.length, value: 0});
  const said = el("span", {id: "impact-status"});
  const cancel = el("button", {id: "impact-cancel", onclick: () => { if (inFlight) inFlight.abort(); inFlight = null; }},
                    "Cancel");
  const progress = el("div", {id: "impact-progress", class: "pager"}, bar, said, cancel);
  answerBox.replaceChildren(progress);
  for (const [i, name] of targets.entries()) {
    said.textContent = `searching ${name}: ${i} of ${targets.length} results searched`;
    let answer;
    try {
      answer = await api(`/api/impact?${new URLSearchParams({source, result: name})}`, `tracing the source rows into ${name}`);
    } catch (error) {
      const cancelled = error.name === "AbortError";
      said.textContent = `${cancelled ? "cancelled" : "stopped"}: ${i} of ${targets.length} results searched`;
      cancel.remove();
      showError(cancelled ? "cancelled: the server stopped its Spark work for it" : error.message);
      return;
    }
    Object.assign(merged.results, answer.results);
    answer.warnings.forEach(w => { if (!merged.warnings.includes(w)) merged.warnings.push(w); });
    bar.value = i + 1;
    graphBox.replaceChildren(drawGraph(graph, hitsOf(merged)));
    answerBox.replaceChildren(progress, impactAnswer(merged, params));
  }
  said.textContent = `all ${targets.length} results searched`;
  cancel.remove();
}

function impactAnswer(answer, params) {
  const exportLink = fmt => {
    const query = new URLSearchParams(params);
    query.set("format", fmt);
    return el("a", {href: withToken(`/api/impact/export?${query}`), id: `export-${fmt}`, download: ""}, fmt.toUpperCase());
  };
  const sections = Object.entries(answer.results).map(([name, r]) => el("div", {class: "impact-result", "data-result": name},
    el("h3", {}, `${name}${r.run ? ` (${r.run})` : ""}: ${r.count} affected rows`, r.rows.length < r.count ? ` (first ${r.rows.length}; the export has them all)` : ""),
    r.rows.length ? rowsTable(["_row", ...r.columns], r.rows.map(a => ({_row: a._row, ...a.values, DL: a.DL})), {
      extra: [["DL (bad ids)", a => a.DL.join(" ")], ["", a => el("button", {onclick: ev => {
        ev.stopPropagation(); location.hash = `#/why/${encodeURIComponent(name)}/${a._row}`; }}, "why")]]}) : null));
  return el("div", {},
    el("h2", {}, `Impact of ${answer.source}`),
    answer.warnings.map(w => el("p", {class: "note warning"}, "warning: ", w)),
    el("p", {}, "Export: ", exportLink("csv"), " · ", exportLink("json")),
    sections.length ? sections : el("p", {}, "No saved result's lineage reaches this table."));
}

// ---- a result's or a table's rows: paged, filtered, sorted; a result's DL as counts per
// table and a why action, a table's rows an impact action ----

function sqlLiteral(value) {
  return typeof value === "number" ? String(value) : `'${String(value).replace(/'/g, "''")}'`;
}

function filterExample(columns, row) {
  // "column = value" from a row on the page: the first text column's (else the first column's)
  if (!row) return "";
  const column = columns.find(c => typeof row[c] === "string") || columns[0];
  return row[column] === null || row[column] === undefined ? "" : `${column} = ${row[column]}`;
}

async function rowsView(kind, name, params) {
  // kind: "result" (#/result/NAME) or "table" (#/table/NAME); the state lives in the hash
  const state = {offset: Number(params.get("offset") || 0), limit: Number(params.get("limit") || 100),
                 filter: params.get("filter") || "", sort: params.get("sort") || "", desc: params.get("desc") === "1"};
  const go = change => {
    const next = {...state, ...change};
    const query = new URLSearchParams({offset: next.offset, limit: next.limit});
    if (next.filter) query.set("filter", next.filter);
    if (next.sort) query.set("sort", next.sort);
    if (next.sort && next.desc) query.set("desc", "1");
    location.hash = `#/${kind}/${encodeURIComponent(name)}?${query}`;
  };
  const query = new URLSearchParams({offset: state.offset, limit: state.limit, filter: state.filter, sort: state.sort,
                                     desc: state.desc ? "1" : "0"});
  const path = `/api/${kind === "result" ? "results" : "tables"}/${encodeURIComponent(name)}?${query}`;
  const filter = el("input", {type: "text", id: "filter", value: state.filter});
  const form = el("form", {class: "impact", id: "filter-form"}, el("b", {}, "Find rows"), filter,
    el("button", {type: "submit", id: "filter-run"}, "Filter"),
    state.filter ? el("button", {type: "button", id: "filter-clear", onclick: () => go({filter: "", offset: 0})}, "Clear") : null,
    el("span", {class: "note"}, "column = value (AND …), or any SQL condition on the columns"));
  form.addEventListener("submit", event => { event.preventDefault(); go({filter: filter.value.trim(), offset: 0}); });
  const title = el("h2", {}, `${kind === "result" ? "Result" : "Table"} ${name}`);
  show(view, title, form);
  const page = await settle(api(path, `reading ${name}`));
  if (!page) return;
  const sizes = el("select", {id: "page-size"}, [100, 1000].map(n => el("option", {value: n, ...(n === state.limit ? {selected: ""} : {})}, `${n} per page`)));
  sizes.addEventListener("change", () => go({offset: 0, limit: Number(sizes.value)}));
  const sort = {column: state.sort, descending: state.desc,
                by: c => go({sort: c, desc: state.sort === c ? !state.desc : false, offset: 0})};
  let columns, rows, extra;
  if (kind === "result") {
    columns = ["_row", ...page.columns];
    rows = page.rows.map(r => ({_row: r._row, ...r.values, __dl: r.dl}));
    extra = [["DL", r => el("span", {class: "dl"}, dlCounts(r.__dl))],
             ["", r => el("button", {class: "why", onclick: ev => {
               ev.stopPropagation(); location.hash = `#/why/${encodeURIComponent(name)}/${r._row}`; }}, "why")]];
    if (page.run) title.append(el("span", {class: "note"}, ` — ${page.run}`));
    if (page.pruned_at) title.append(el("span", {class: "stale"}, " — PAST RETENTION: lineage dropped, rows kept"));
    if (page.stale) title.append(el("span", {class: "stale"}, ` — STALE: ${page.stale}`));
    filter.placeholder = filterExample(page.columns, rows[0]);
  } else {
    columns = page.columns;
    rows = page.rows;
    extra = [["", r => el("button", {class: "touched", onclick: () => touched(name, r)}, "impact")]];
    filter.placeholder = rows[0] && page.key.length ? `${page.key[0]} = ${rows[0][page.key[0]]}` : filterExample(page.columns.slice(1), rows[0]);
    title.append(el("span", {class: "note"}, ` v${page.version}, ${page.total} rows`));
  }
  const found = page.matched < page.total ? el("span", {class: "note", id: "matched"}, `${page.matched} of ${page.total} rows match`) : null;
  show(view, title, form,
    el("div", {class: "pager"}, pager(page.matched, state.offset, state.limit, o => go({offset: o})), sizes, found),
    rowsTable(columns, rows, {extra, sort}));
}

// ---- why this row: its summary first, then its source rows per table, the results it went
// through, its UDFs' reasons, and its lineage on attribute values (LINEAGE ON) ----

async function whyView(name, row) {
  const base = `/api/results/${encodeURIComponent(name)}/${encodeURIComponent(row)}`;
  const summaryBox = el("div", {id: "summary"}, el("p", {class: "note"}, "summarizing…"));
  const sourcesBox = el("div", {id: "sources"});
  const reasonsBox = el("div", {id: "reasons"});
  const granulesBox = el("div", {id: "granules"});
  const on = el("input", {type: "text", id: "lineage-on"});
  const onForm = el("form", {class: "impact"}, el("b", {}, "LINEAGE ON"), on, el("button", {type: "submit"}, "Group"));
  onForm.addEventListener("submit", async event => {
    event.preventDefault();
    const answer = await settle(api(`${base}/granules?on=${encodeURIComponent(on.value)}`, "grouping the source rows"));
    if (answer) granulesBox.replaceChildren(...Object.entries(answer.tables).map(([table, granules]) => el("div", {},
      el("h3", {}, `${table}: ${granules.length} granules`),
      rowsTable([...answer.on, "rows"], granules.map(g => ({...g.values, rows: g.rows}))))));
  });
  show(view, 
    el("h2", {}, `Why row ${row} of `, el("a", {href: `#/result/${encodeURIComponent(name)}`}, name)),
    el("h3", {}, "Summary"), summaryBox, sourcesBox, reasonsBox,
    el("h3", {}, "Its lineage on attribute values"), onForm, granulesBox);
  // its source rows (a page per table, read from the files) are asked beside its summary (Spark's work), not after it
  const summarized = settle(api(`${base}/summary`, "summarizing its lineage")).then(summary => {
    if (summary) summaryBox.replaceChildren(...summary.tables.map(t => el("div", {class: "summary-table"},
      el("p", {}, el("b", {}, t.table), `: ${t.lineage_rows} of its ${t.table_rows} rows`),
      el("ol", {}, t.patterns.map(p => el("li", {}, el("span", {class: "pattern"}, p.predicate),
        ` recall ${(100 * p.recall).toFixed(1)}% (${p.lineage_rows} rows), precision ${(100 * p.precision).toFixed(1)}% (of ${p.table_rows} table rows)`))),
      el("p", {class: "note"}, `together they cover ${(100 * t.covered).toFixed(1)}% of its lineage rows`))));
  });
  const answer = await settle(api(`${base}/why?limit=${SOURCE_PAGE}`, "reading its source rows"));
  if (!answer) return;
  show(sourcesBox, 
    el("h3", {}, "Source rows"),
    el("p", {id: "ids"}, `DL: ${dlCounts(answer.ids)}`),
    answer.through.length ? el("p", {id: "through"}, "computed through saved results: ",
      answer.through.flatMap((r, i) => [i ? " ← " : "", el("a", {href: `#/result/${encodeURIComponent(r)}`}, r)])) : null,
    ...Object.entries(answer.tables).map(([table, page]) => sourceTable(base, table, page)));
  const most = Object.keys(answer.tables).sort((a, b) => answer.ids[b] - answer.ids[a])[0];
  if (most) on.placeholder = groupingExample(answer.tables[most]); // of the table that gave most rows
  await summarized; // then its reasons, Spark's work too (done one request at a time)
  const reasons = await settle(api(`${base}/reasons`, "re-running its UDFs in reasoning mode"));
  if (reasons && reasons.reasons.length) reasonsBox.replaceChildren(el("h3", {}, "Reasons"),
    ...reasons.reasons.map(r => el("div", {}, el("p", {}, `${r.call}: ${r.invocations} invocations on its lineage`),
                                   rowsTable(r.columns, r.rows))));
}

function groupingExample(page) {
  // a LINEAGE ON example from a row's source rows: the year of a date and a short text column
  const row = page.rows[0] || {};
  const columns = page.columns.filter(c => c !== "_dl_id");
  const isDate = v => /^\d{4}-\d{2}-\d{2}/.test(String(v));
  const date = columns.find(c => isDate(row[c]));
  const short = columns.find(c => c !== date && typeof row[c] === "string" && !isDate(row[c]) && row[c].length <= 12);
  return [date && `year(${date})`, short].filter(Boolean).join(", ") || columns[0] || "";
}

function sourceTable(base, table, page) {
  const box = el("div", {class: "source-table", "data-table": table});
  const show = p => {
    const go = async offset => {
      const next = await settle(api(`${base}/sources/${encodeURIComponent(table)}?offset=${offset}&limit=${SOURCE_PAGE}`,
                                    `reading ${table}`));
      if (next) show(next);
    };
    box.replaceChildren(el("h3", {}, `${table}: ${p.total} rows`), pager(p.total, p.offset, SOURCE_PAGE, go),
      rowsTable(p.columns, p.rows, {extra: [["", r => el("button", {onclick: () => touched(table, r)}, "impact")]]}));
  };
  show(page);
  return box;
}

function touched(table, row) {
  // what did this source row touch: its id as the impact source
  location.hash = `#/?${new URLSearchParams({source: `${table} WHERE _dl_id = ${row._dl_id}`})}`;
}

// ---- routing ----

async function route() {
  if (inFlight) inFlight.abort(); // a view left stops waiting for its answers
  inFlight = null;
  showError("");
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, query] = hash.split("?");
  const params = new URLSearchParams(query || "");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  if ((parts[0] === "result" || parts[0] === "table") && parts[1]) return rowsView(parts[0], parts[1], params);
  if (parts[0] === "why" && parts[1] && parts[2] !== undefined) return whyView(parts[1], parts[2]);
  return pipelineView(params);
}

window.addEventListener("hashchange", route);
route();
