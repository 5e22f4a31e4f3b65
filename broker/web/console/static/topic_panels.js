// The topic page's detail panels that need more than the topic's stats: consumers, the schema
// (GET /admin/v2/schemas/.../schemas), internal stats (ledgers and cursors) and replication.
import {enc, getJson, topicPath} from "./api.js";
import {card, h, table} from "./dom.js";
import {bytes, dash, int, rate, time} from "./format.js";
import {rateOf} from "./view.js";

/** A subscription's consumers: name, address, permits, unacked, rate, Key_Shared hash ranges. */
export function consumersTable(state, subscription, sub) {
  const rows = (sub.consumers || []).map((c) => [c.consumerName || dash, h("span", {class: "mono"}, c.address || dash),
    int(c.availablePermits), int(c.unackedMessages),
    rate(rateOf(state, `consumer:${subscription}:${c.consumerName}:${c.address}`, c, "msgRateOut", c.msgOutCounter || 0)),
    c.blockedConsumerOnUnackedMsgs ? h("span", {class: "badge warn"}, "blocked") : "no",
    (c.keyHashRanges || []).length ? h("span", {class: "mono"}, c.keyHashRanges.join(" ")) : dash,
    time(c.connectedSince)]);
  return table([{label: "Consumer"}, {label: "Address"}, {label: "Permits", num: true}, {label: "Unacked", num: true},
    {label: "Rate out", num: true}, {label: "Blocked on unacked"}, {label: "Key hash ranges"}, {label: "Connected since"}],
  rows);
}

export async function schemaPanel(topic) {
  const {getSchemaResponses: versions} = await getJson(
    `/admin/v2/schemas/${enc(topic.tenant)}/${enc(topic.namespace)}/${enc(topic.local)}/schemas`);
  if (!versions.length) return h("p", {class: "note"}, "No schema: producers and consumers exchange plain bytes.");
  const latest = versions[versions.length - 1];
  let definition = latest.data;
  try { definition = JSON.stringify(JSON.parse(latest.data), null, 2); } catch (_) { /* not JSON: as stored */ }
  return [h("div", {class: "cards"}, card("Type", latest.type), card("Version", String(latest.version)),
    card("Versions", String(versions.length)), card("Added", time(latest.timestamp))),
  h("pre", {class: "mono panel", id: "schema-definition"}, definition || "(no definition)"),
  Object.keys(latest.properties || {}).length ? table([{label: "Property"}, {label: "Value"}],
    Object.entries(latest.properties)) : null];
}

/** The managed ledger and its cursors (PersistentTopicInternalStats), per partition when partitioned. */
export async function internalPanel(topic, partitions) {
  if (!partitions) return internalOf(await getJson(`${topicPath(topic)}/internalStats`));
  const all = await getJson(`${topicPath(topic)}/partitioned-internalStats`);
  return Object.entries(all.partitions || {}).map(([name, stats]) => [h("h2", {}, name), internalOf(stats)]);
}

function internalOf(stats) {
  const ledgers = (stats.ledgers || []).map((l) => [String(l.ledgerId), int(l.entries), bytes(l.size)]);
  const cursors = Object.entries(stats.cursors || {}).map(([name, c]) => [name, h("span", {class: "mono"}, c.markDeletePosition),
    h("span", {class: "mono"}, c.readPosition), int(c.messagesConsumedCounter), h("span", {class: "mono"},
      c.individuallyDeletedMessages || dash)]);
  return [h("div", {class: "cards"}, card("Entries added", int(stats.entriesAddedCounter)),
    card("Entries", int(stats.numberOfEntries)), card("Total size", bytes(stats.totalSize)),
    card("Last confirmed", stats.lastConfirmedEntry || dash), card("State", stats.state || dash)),
  h("h2", {}, "Ledgers"), table([{label: "Ledger"}, {label: "Entries", num: true}, {label: "Size", num: true}], ledgers),
  h("h2", {}, "Cursors"), table([{label: "Cursor"}, {label: "Mark-delete position"}, {label: "Read position"},
    {label: "Consumed", num: true}, {label: "Individually deleted"}], cursors, "No cursors.")];
}

export function replicationPanel(stats) {
  const rows = Object.entries(stats.replication || {}).map(([remote, r]) => [remote,
    r.connected ? h("span", {class: "badge ok"}, "connected") : h("span", {class: "badge warn"}, "disconnected"),
    int(r.replicationBacklog), rate(r.msgRateOut), `${(r.replicationDelayInSeconds || 0).toFixed(1)} s`,
    h("span", {class: "mono"}, r.outboundConnection || dash)]);
  return table([{label: "Remote cluster"}, {label: "State"}, {label: "Backlog", num: true}, {label: "Rate out", num: true},
    {label: "Delay"}, {label: "Connection"}], rows, "Not replicated.");
}
