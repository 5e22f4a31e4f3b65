// The overview: version, cluster, uptime, counts and storage, and live charts of messages and
// bytes per second in and out, all from GET /admin/v2/broker-stats/load-report (once) and
// /admin/v2/broker-stats/topics (each refresh), which need a super-user.
import {getJson} from "./api.js";
import {RateChart} from "./chart.js";
import {card, fill, h} from "./dom.js";
import {bytes, compact, duration, int, rate} from "./format.js";
import {errorBanner, figures, flattenTopicStats, sumFigures} from "./view.js";

export function mount(root) {
  const banner = errorBanner();
  const cards = h("div", {class: "cards", id: "overview-cards"});
  const messages = new RateChart("Messages per second", (v) => rate(v, "msg/s"), compact);
  const throughput = new RateChart("Bytes per second", (v) => rate(v, "B/s"), bytes);
  fill(root, h("h1", {}, "Overview"), h("p", {class: "sub"}, "This broker, refreshed every 2 seconds."),
    banner.el, cards, h("div", {class: "charts"}, messages.element, throughput.element));
  let identity = null;

  async function refresh() {
    if (identity === null) identity = await brokerIdentity();
    const topics = flattenTopicStats(await getJson("/admin/v2/broker-stats/topics"));
    const total = sumFigures([...topics.values()].map(figures));
    fill(cards,
      card("Version", identity.version), card("Cluster", identity.cluster),
      card("Uptime", duration(Date.now() - identity.started)),
      card("Topics", int(topics.size)), card("Producers", int(total.producers)),
      card("Consumers", int(total.consumers)), card("Subscriptions", int(total.subscriptions)),
      card("Backlog", int(total.backlog)), card("Storage used", bytes(total.storage)));
    const now = Date.now();
    messages.push(now, total.rateIn, total.rateOut);
    throughput.push(now, total.throughputIn, total.throughputOut);
  }

  return {refresh, showError: banner.show, clearError: banner.clear,
    dispose() { messages.dispose(); throughput.dispose(); }};
}

async function brokerIdentity() {
  const [report, runtime] = await Promise.all([getJson("/admin/v2/broker-stats/load-report"),
    getJson("/admin/v2/brokers/configuration/runtime")]);
  return {version: report.brokerVersionString, started: report.startTimestamp, cluster: runtime.clusterName};
}
