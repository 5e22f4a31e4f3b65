// A topic's page: live rate charts, its figures, and tabs for subscriptions (with their consumers),
// producers, partitions, schema, internal stats and replication, with the actions of actions.js.
// Data: GET .../partitions (once), .../stats or .../partitioned-stats (every refresh), and the
// open tab's own path. Rates are Pulsar's rate fields when the stats carry them, else the growth
// of the counters between two refreshes.
import * as actions from "./actions.js";
import {enc, getJson, topicName, topicPath} from "./api.js";
import {RateChart, ratesBetween} from "./chart.js";
import {card, fill, h, refill, table, toast} from "./dom.js";
import {bytes, compact, dash, int, rate, time} from "./format.js";
import {consumersTable, internalPanel, replicationPanel, schemaPanel} from "./topic_panels.js";
import {countersOf, errorBanner, rateOf, ratesOf} from "./view.js";

const TABS = {subscriptions: "Subscriptions", producers: "Producers", partitions: "Partitions", schema: "Schema",
  internal: "Internal stats", replication: "Replication"};

export function mount(root, [domain, tenant, namespace, local]) {
  const topic = {domain, tenant, namespace, local};
  const persistent = domain === "persistent";
  const banner = errorBanner();
  const messages = new RateChart("Messages per second", (v) => rate(v, "msg/s"), compact);
  const throughput = new RateChart("Bytes per second", (v) => rate(v, "B/s"), bytes);
  const cards = h("div", {class: "cards"});
  const toolbar = h("div", {class: "toolbar"});
  const tabs = h("div", {class: "tabs", role: "tablist", "aria-label": "Topic details"});
  const panel = h("div", {class: "tabpanel", role: "tabpanel", id: "tabpanel"});
  const state = {partitions: null, tab: "subscriptions", stats: null, previous: null, rates: new Map()};
  fill(root,
    h("div", {class: "crumbs"}, h("a", {href: "#/tenants"}, "Tenants"), " / ",
      h("a", {href: `#/ns/${enc(tenant)}/${enc(namespace)}`}, `${tenant}/${namespace}`)),
    h("h1", {}, topicName(topic)), banner.el, toolbar, cards,
    h("div", {class: "charts"}, messages.element, throughput.element), tabs, panel);

  const refresh = async () => {
    if (state.partitions === null) {
      state.partitions = (await getJson(`${topicPath(topic)}/partitions`)).partitions || 0;
      drawToolbar();
    }
    const stats = await getJson(`${topicPath(topic)}/${state.partitions ? "partitioned-stats" : "stats"}`);
    state.stats = stats;
    drawFigures(stats);
    drawTabs();
    await drawPanel();
  };

  const act = (fn) => async () => {
    try {
      await fn();
    } catch (exc) {
      toast(exc.reason || exc.message, "error");
    }
  };
  const again = () => refresh().catch((exc) => banner.show(exc));

  function drawToolbar() {
    const parts = state.partitions;
    fill(toolbar,
      parts ? h("span", {class: "badge"}, `${parts} partitions`) : null,
      persistent ? null : h("span", {class: "badge warn"}, "non-persistent"),
      h("span", {class: "grow"}),
      h("button", {class: "primary", type: "button", id: "produce", onclick: act(() => actions.produce(topic, parts, again))},
        "Produce a message"),
      h("button", {type: "button", onclick: act(() => actions.createSubscription(topic, parts, again))}, "Create subscription"),
      h("button", {type: "button", onclick: act(() => actions.unload(topic, parts, again))}, "Unload"),
      persistent ? h("button", {type: "button", onclick: act(() => actions.compact(topic, parts, again))}, "Compact") : null,
      h("button", {class: "danger", type: "button", onclick: act(() => actions.deleteTopic(topic, parts))}, "Delete topic"));
  }

  function drawFigures(stats) {
    const now = Date.now();
    const counters = sumCounters(stats);
    const own = pulsarRates(stats);
    const rates = own || (state.previous ? ratesBetween(state.previous.counters, counters, state.previous.at, now) : null);
    state.previous = {at: now, counters};
    if (rates) {
      messages.push(now, rates.msgIn, rates.msgOut);
      throughput.push(now, rates.bytesIn, rates.bytesOut);
    }
    const subscriptions = Object.values(stats.subscriptions || {});
    fill(cards,
      card("Messages in", int(stats.msgInCounter)), card("Storage", bytes(stats.storageSize)),
      persistent ? card("Entries", int(stats.numberOfEntries)) : null,
      card("Producers", int((stats.publishers || []).length)), card("Subscriptions", int(subscriptions.length)),
      card("Backlog", int(subscriptions.reduce((n, s) => n + (s.msgBacklog || 0), 0))));
  }

  function drawTabs() {
    const shown = Object.keys(TABS).filter((key) =>
      (key !== "partitions" || state.partitions) && (key !== "internal" || persistent) &&
      (key !== "replication" || Object.keys(state.stats.replication || {}).length));
    if (!shown.includes(state.tab)) state.tab = "subscriptions";
    refill(tabs, shown.map((key) => h("button", {type: "button", role: "tab", id: `tab-${key}`,
      "aria-selected": String(key === state.tab), "aria-controls": "tabpanel", "data-focus-key": `tab:${key}`,
      onclick: () => { state.tab = key; drawTabs(); again(); }}, TABS[key])));
  }

  async function drawPanel() {
    const stats = state.stats;
    if (state.tab === "subscriptions") refill(panel, subscriptionsPanel(stats));
    else if (state.tab === "producers") refill(panel, producersPanel(stats));
    else if (state.tab === "partitions") refill(panel, partitionsPanel(stats));
    else if (state.tab === "schema") refill(panel, await schemaPanel(topic));
    else if (state.tab === "internal") refill(panel, await internalPanel(topic, state.partitions));
    else refill(panel, replicationPanel(stats));
  }

  function subscriptionsPanel(stats) {
    const parts = state.partitions;
    const entries = Object.entries(stats.subscriptions || {}).sort(([a], [b]) => a.localeCompare(b));
    const rows = entries.map(([name, sub]) => {
      const backlog = sub.msgBacklog || 0;
      const consumers = sub.consumers || [];
      const key = (verb) => `sub:${name}:${verb}`;
      return {cells: [h("strong", {class: "sub-name"}, name), sub.type || dash,
        h("span", {class: "sub-backlog"}, int(backlog)), int(sub.unackedMessages), int(consumers.length),
        rate(rateOf(state, `sub:${name}`, sub, "msgRateOut", consumers.reduce((n, c) => n + (c.msgOutCounter || 0), 0))),
        sub.blockedOnAckStatePersistent ? h("span", {class: "badge warn"}, "blocked") : (persistent ? "no" : dash),
        h("span", {class: "row-actions"},
          persistent && !parts ? h("button", {class: "small", type: "button", "data-focus-key": key("peek"),
            disabled: backlog ? null : true, onclick: act(() => actions.peek(topic, name, backlog))}, "Peek") : null,
          persistent && !parts ? h("button", {class: "small", type: "button", "data-focus-key": key("skip"),
            disabled: backlog ? null : true, onclick: act(() => actions.skip(topic, name, backlog, again))}, "Skip") : null,
          persistent ? h("button", {class: "small danger", type: "button", "data-focus-key": key("clear"),
            onclick: act(() => actions.clearBacklog(topic, parts, name, again))}, "Clear backlog") : null,
          persistent ? h("button", {class: "small", type: "button", "data-focus-key": key("reset"),
            onclick: act(() => actions.resetCursor(topic, parts, name, again))}, "Reset to time") : null,
          h("button", {class: "small danger", type: "button", "data-focus-key": key("delete"),
            onclick: act(() => actions.deleteSubscription(topic, parts, name, consumers.length, again))}, "Delete"))]};
    });
    const consumerTables = entries.filter(([, sub]) => (sub.consumers || []).length).map(([name, sub]) =>
      [h("h2", {}, `Consumers of ${name}`), consumersTable(state, name, sub)]);
    return [parts ? h("p", {class: "hint"}, "Peek and skip work on one partition: open it from the Partitions tab.") : null,
      table([{label: "Subscription"}, {label: "Type"}, {label: "Backlog", num: true}, {label: "Unacked", num: true},
        {label: "Consumers", num: true}, {label: "Rate out", num: true}, {label: "Blocked on ack state"}, {label: "Actions"}],
      rows, "No subscriptions."), consumerTables];
  }

  function producersPanel(stats) {
    const rows = (stats.publishers || []).map((p) => [p.producerName, h("span", {class: "mono"}, p.address || dash),
      p.accessMode || dash, rate(rateOf(state, `pub:${p.producerName}`, p, "msgRateIn", p.msgInCounter || 0)),
      int(p.msgInCounter), time(p.connectedSince)]);
    return table([{label: "Producer"}, {label: "Address"}, {label: "Access mode"}, {label: "Rate in", num: true},
      {label: "Messages in", num: true}, {label: "Connected since"}], rows, "No producers connected.");
  }

  function partitionsPanel(stats) {
    const rows = Object.entries(stats.partitions || {}).map(([name, part]) => {
      const local = name.split("/").pop();
      const subs = Object.values(part.subscriptions || {});
      return [h("a", {href: `#/topic/${domain}/${enc(tenant)}/${enc(namespace)}/${enc(local)}`,
        "data-focus-key": `partition:${local}`}, local), int((part.publishers || []).length), int(subs.length),
      int(subs.reduce((n, s) => n + (s.msgBacklog || 0), 0)), int(part.msgInCounter), bytes(part.storageSize)];
    });
    return table([{label: "Partition"}, {label: "Producers", num: true}, {label: "Subscriptions", num: true},
      {label: "Backlog", num: true}, {label: "Messages in", num: true}, {label: "Storage", num: true}], rows,
    "No partition is loaded yet.");
  }

  return {refresh, showError: banner.show, clearError: banner.clear,
    dispose() { messages.dispose(); throughput.dispose(); }};
}

/** A partitioned topic's counters are its partitions' summed; a topic's are its own. */
function sumCounters(stats) {
  const parts = Object.values(stats.partitions || {});
  if (!parts.length) return countersOf(stats);
  const total = {msgIn: 0, bytesIn: 0, msgOut: 0, bytesOut: 0};
  for (const part of parts) {
    const counters = countersOf(part);
    for (const key of Object.keys(total)) total[key] += counters[key];
  }
  return total;
}

function pulsarRates(stats) {
  const parts = Object.values(stats.partitions || {});
  if (!parts.length) return ratesOf(stats);
  const each = parts.map(ratesOf);
  if (each.some((r) => r === null)) return null;
  return each.reduce((a, b) => ({msgIn: a.msgIn + b.msgIn, bytesIn: a.bytesIn + b.bytesIn,
    msgOut: a.msgOut + b.msgOut, bytesOut: a.bytesOut + b.bytesOut}));
}

