// What every view shares: an error banner that the poller fills and clears, and the figures of
// GET /admin/v2/broker-stats/topics (super-users only) summed the way the pages show them.
import {h} from "./dom.js";

/** A view's error banner: show(exc) and clear(); a 403 reads as a permission, not a failure. */
export function errorBanner() {
  const el = h("div", {class: "alert", role: "alert", hidden: true});
  return {
    el,
    show(exc) {
      el.textContent = exc.status === 403 ? `Not permitted for this role: ${exc.reason}` : (exc.reason || exc.message);
      el.hidden = false;
    },
    clear() { el.hidden = true; },
  };
}

/** Every loaded topic's stats from broker-stats/topics, flattened: Map(topic name -> stats). */
export function flattenTopicStats(tree) {
  const topics = new Map();
  for (const bundles of Object.values(tree)) {
    for (const domains of Object.values(bundles)) {
      for (const byName of Object.values(domains)) {
        for (const [name, stats] of Object.entries(byName)) topics.set(name, stats);
      }
    }
  }
  return topics;
}

/** A topic's figures for lists: counts, backlog and rates (Pulsar's streamed topic stats). */
export function figures(stats) {
  const subscriptions = Object.values(stats.subscriptions || {});
  return {
    producers: stats.producerCount ?? (stats.publishers || []).length,
    subscriptions: subscriptions.length,
    consumers: subscriptions.reduce((n, s) => n + (s.consumers || []).length, 0),
    backlog: subscriptions.reduce((n, s) => n + (s.msgBacklog || 0), 0),
    rateIn: stats.msgRateIn || 0, rateOut: stats.msgRateOut || 0,
    throughputIn: stats.msgThroughputIn || 0, throughputOut: stats.msgThroughputOut || 0,
    storage: stats.storageSize || 0,
  };
}

/** Figures summed (a partitioned topic's, from its partitions'). */
export function sumFigures(list) {
  const total = {producers: 0, subscriptions: 0, consumers: 0, backlog: 0, rateIn: 0, rateOut: 0,
    throughputIn: 0, throughputOut: 0, storage: 0};
  for (const item of list) for (const key of Object.keys(total)) total[key] += item[key] || 0;
  return total;
}

/**
 * A topic's counters from its TopicStats: {msgIn, bytesIn, msgOut, bytesOut}, from Pulsar's
 * topic-level counters when the stats carry them, else summed from publishers and consumers.
 */
export function countersOf(stats) {
  const subscriptions = Object.values(stats.subscriptions || {});
  const out = (key) => subscriptions.reduce((n, s) =>
    n + (s[key] ?? (s.consumers || []).reduce((m, c) => m + (c[key] || 0), 0)), 0);
  return {
    msgIn: stats.msgInCounter || 0,
    bytesIn: stats.bytesInCounter ?? (stats.publishers || []).reduce((n, p) => n + (p.bytesInCounter || 0), 0),
    msgOut: stats.msgOutCounter ?? out("msgOutCounter"),
    bytesOut: stats.bytesOutCounter ?? out("bytesOutCounter"),
  };
}

/** Pulsar's own rate fields of a TopicStats, when it carries them (else null: rates come from counters). */
export function ratesOf(stats) {
  if (!("msgRateIn" in stats)) return null;
  return {msgIn: stats.msgRateIn || 0, bytesIn: stats.msgThroughputIn || 0,
    msgOut: stats.msgRateOut || 0, bytesOut: stats.msgThroughputOut || 0};
}

/** One figure's rate: Pulsar's field when present, else the growth of `counter` since the last refresh. */
export function rateOf(state, key, stats, field, counter) {
  if (field in stats) return stats[field];
  const now = Date.now();
  const before = state.rates.get(key);
  if (!before) {
    state.rates.set(key, {at: now, counter, rate: null});
    return null;
  }
  if (now - before.at < 500) return before.rate;
  const grown = counter >= before.counter ? counter - before.counter : counter;
  const value = grown / ((now - before.at) / 1000);
  state.rates.set(key, {at: now, counter, rate: value});
  return value;
}
