// A namespace's topics: every persistent and non-persistent topic (GET /admin/v2/{domain}/{t}/{ns}
// and .../partitioned), a partitioned topic as one row with its partitions under it, searchable,
// sortable by rate, backlog and storage, PAGE rows at a time. Figures come from
// /admin/v2/broker-stats/topics in one request (super-users); other roles get the figures of the
// rows shown, from each topic's own stats, and sort by name only.
import {ApiError, enc, getJson, parseTopic, partitionOf, request, topicPath} from "./api.js";
import {ratesBetween} from "./chart.js";
import {formDialog} from "./dialogs.js";
import {fill, h, refill, table, toast} from "./dom.js";
import {bytes, dash, int, rate} from "./format.js";
import {countersOf, errorBanner, figures, flattenTopicStats, ratesOf, sumFigures} from "./view.js";

const PAGE = 50;
const SORTS = {name: "Topic", rateIn: "Rate in", rateOut: "Rate out", backlog: "Backlog", storage: "Storage"};

export function mount(root, [tenant, namespace]) {
  const banner = errorBanner();
  const state = {query: "", sort: "name", page: 0, open: new Set(), rows: [], brokerStats: true,
    counters: new Map()};
  const search = h("input", {id: "topic-search", type: "search", placeholder: "Search topics",
    "aria-label": "Search topics", oninput: () => { state.query = search.value.trim().toLowerCase(); state.page = 0; draw(); }});
  const listing = h("div", {id: "topic-list"});
  const summary = h("span", {class: "hint", id: "topic-count"});
  fill(root,
    h("div", {class: "crumbs"}, h("a", {href: "#/tenants"}, "Tenants"), ` / ${tenant}`),
    h("h1", {}, `${tenant}/${namespace}`), banner.el,
    h("div", {class: "toolbar"}, search, summary, h("span", {class: "grow"}),
      h("button", {class: "primary", type: "button", onclick: () => createTopic(tenant, namespace, refresh)}, "Create topic")),
    listing);

  async function refresh() {
    const names = await topicNames(tenant, namespace);
    const stats = await topicStats(state);
    state.rows = buildRows(names, stats);
    if (!state.brokerStats) await fillPageFigures(state, visibleRows());
    draw();
  }

  function visibleRows() {
    const matching = state.rows.filter((row) => row.local.toLowerCase().includes(state.query));
    const sorted = sortRows(matching, state.brokerStats ? state.sort : "name");
    return {total: sorted.length, page: sorted.slice(state.page * PAGE, (state.page + 1) * PAGE)};
  }

  function draw() {
    const {total, page} = visibleRows();
    const pages = Math.max(1, Math.ceil(total / PAGE));
    state.page = Math.min(state.page, pages - 1);
    summary.textContent = `${int(total)} topic${total === 1 ? "" : "s"}`;
    const columns = [
      {header: sortButton("name")}, {label: "Kind"}, {label: "Producers", num: true}, {label: "Subscriptions", num: true},
      {label: "Consumers", num: true}, {header: sortButton("backlog"), num: true},
      {header: sortButton("rateIn"), num: true}, {header: sortButton("rateOut"), num: true},
      {header: sortButton("storage"), num: true}];
    const rows = [];
    for (const row of page) {
      rows.push(topicRow(row, state));
      if (row.partitions && state.open.has(row.full)) {
        for (const child of row.children) rows.push({cells: topicRow(child, state), class: "child"});
      }
    }
    refill(listing, table(columns, rows, state.query ? "No topic matches." : "No topics in this namespace yet."),
      h("div", {class: "pager"},
        h("button", {type: "button", disabled: state.page === 0 || null, onclick: () => { state.page -= 1; draw(); }}, "Previous"),
        h("span", {}, `page ${state.page + 1} of ${pages}`),
        h("button", {type: "button", disabled: state.page >= pages - 1 || null, onclick: () => { state.page += 1; draw(); }}, "Next")));
  }

  function sortButton(key) {
    const usable = key === "name" || state.brokerStats;
    const active = state.sort === key;
    return h("button", {class: "sort", type: "button", "aria-disabled": usable ? null : "true", "data-focus-key": `sort:${key}`,
      title: usable ? `Sort by ${SORTS[key].toLowerCase()}` : "Sorting by figures needs broker-stats (a super-user)",
      "aria-sort": active ? (key === "name" ? "ascending" : "descending") : null,
      onclick: () => { if (usable) { state.sort = key; state.page = 0; draw(); } }},
    SORTS[key], active ? (key === "name" ? " \u25b2" : " \u25bc") : "");
  }

  function topicRow(row) {
    const link = h("a", {href: `#/topic/${row.domain}/${enc(row.tenant)}/${enc(row.namespace)}/${enc(row.local)}`,
      class: "topic-link", "data-focus-key": `topic:${row.full}`}, row.local);
    const toggle = row.partitions ? h("button", {class: "link", type: "button", "aria-expanded": String(state.open.has(row.full)),
      "data-focus-key": `open:${row.full}`,
      "aria-label": `partitions of ${row.local}`, onclick: () => {
        if (state.open.has(row.full)) state.open.delete(row.full); else state.open.add(row.full);
        draw();
      }}, state.open.has(row.full) ? "\u25be " : "\u25b8 ") : null;
    const kind = [row.partitions ? `partitioned (${row.partitions})` : (row.partition ? "partition" : "topic"),
      row.domain === "non-persistent" ? h("span", {class: "badge warn"}, "non-persistent") : null];
    const f = row.figures;
    return [[toggle, link], kind, f ? int(f.producers) : dash, f ? int(f.subscriptions) : dash,
      f ? int(f.consumers) : dash, h("span", {class: "backlog"}, f ? int(f.backlog) : dash),
      f ? rate(f.rateIn) : dash, f ? rate(f.rateOut) : dash, f ? bytes(f.storage) : dash];
  }

  return {refresh, showError: banner.show, clearError: banner.clear};
}

async function topicNames(tenant, namespace) {
  const base = (domain) => `/admin/v2/${domain}/${enc(tenant)}/${enc(namespace)}`;
  const [persistent, partitioned, volatile, volatilePartitioned] = await Promise.all([
    getJson(base("persistent")), getJson(`${base("persistent")}/partitioned`),
    getJson(base("non-persistent")), getJson(`${base("non-persistent")}/partitioned`)]);
  return {topics: [...persistent, ...volatile], partitioned: [...partitioned, ...volatilePartitioned]};
}

/** broker-stats/topics as a Map, or null once it answered 403 (then per-topic stats are used). */
async function topicStats(state) {
  if (!state.brokerStats) return null;
  try {
    return flattenTopicStats(await getJson("/admin/v2/broker-stats/topics"));
  } catch (exc) {
    if (exc instanceof ApiError && exc.status === 403) {
      state.brokerStats = false;
      return null;
    }
    throw exc;
  }
}

/** One row per topic, partitions under their partitioned topic; figures where stats have them. */
function buildRows(names, stats) {
  const parents = new Map(names.partitioned.map((full) => [full, {...parseTopic(full), partitions: 0, children: []}]));
  const rows = [...parents.values()];
  for (const full of names.topics) {
    const topic = parseTopic(full);
    const partition = partitionOf(topic.local);
    const parent = partition && parents.get(`${topic.domain}://${topic.tenant}/${topic.namespace}/${partition.parent}`);
    const row = {...topic, partition: Boolean(partition), figures: stats && stats.has(full) ? figures(stats.get(full)) : null};
    if (parent) parent.children.push(row); else rows.push(row);
  }
  for (const parent of parents.values()) {
    parent.partitions = parent.children.length;
    parent.children.sort((a, b) => partitionOf(a.local).index - partitionOf(b.local).index);
    const loaded = parent.children.map((c) => c.figures).filter(Boolean);
    parent.figures = loaded.length ? sumFigures(loaded) : null;
  }
  return rows;
}

function sortRows(rows, key) {
  if (key === "name") return rows.sort((a, b) => a.local.localeCompare(b.local));
  const value = (row) => (row.figures ? row.figures[key] : -1);
  return rows.sort((a, b) => value(b) - value(a) || a.local.localeCompare(b.local));
}

/** Without broker-stats: the shown rows' figures from their own stats, rates from their counters. */
async function fillPageFigures(state, {page}) {
  const now = Date.now();
  await Promise.all(page.map(async (row) => {
    const path = topicPath(row) + (row.partitions ? "/partitioned-stats?perPartition=false" : "/stats");
    let stats;
    try {
      stats = await getJson(path);
    } catch (exc) {
      if (exc instanceof ApiError && exc.status === 404) return;
      throw exc;
    }
    const subscriptions = Object.values(stats.subscriptions || {});
    const counters = countersOf(stats);
    const before = state.counters.get(row.full);
    state.counters.set(row.full, {at: now, counters});
    const own = ratesOf(stats) || (before ? ratesBetween(before.counters, counters, before.at, now) : null);
    row.figures = {producers: (stats.publishers || []).length, subscriptions: subscriptions.length,
      consumers: subscriptions.reduce((n, s) => n + (s.consumers || []).length, 0),
      backlog: subscriptions.reduce((n, s) => n + (s.msgBacklog || 0), 0),
      rateIn: own ? own.msgIn : 0, rateOut: own ? own.msgOut : 0, storage: stats.storageSize || 0};
  }));
}

function createTopic(tenant, namespace, refresh) {
  return formDialog("Create a topic", [
    {name: "name", label: "Name", required: true, hint: `in ${tenant}/${namespace}`},
    {name: "domain", label: "Kind", type: "select", value: "persistent",
      options: [["persistent", "persistent"], ["non-persistent", "non-persistent"]]},
    {name: "partitions", label: "Partitions", type: "number", value: 0, min: 0,
      hint: "0 creates a non-partitioned topic"}],
  "Create", async (values) => {
    const topic = {domain: values.domain, tenant, namespace, local: values.name.trim()};
    const partitions = Number(values.partitions || 0);
    if (partitions > 0) await request("PUT", `${topicPath(topic)}/partitions`, partitions);
    else await request("PUT", topicPath(topic));
    toast(`Created ${topic.domain}://${tenant}/${namespace}/${topic.local}`);
    await refresh();
    return true;
  });
}
