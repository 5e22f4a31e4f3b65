// What a user can do to a topic and its subscriptions, each through the REST API any client uses:
// produce (POST /topics/...), peek (GET .../subscription/{s}/position/{n}), create and delete
// topics and subscriptions, reset a cursor to a time, skip, clear a backlog, unload, compact.
// What destroys something asks first. On a partitioned topic the subscription and topic actions
// are sent to every partition, as pulsar-admin does.
import {ApiError, enc, getJson, request, topicName, topicPath} from "./api.js";
import {confirmAction, formDialog, showDialog} from "./dialogs.js";
import {h, toast} from "./dom.js";
import {messageBlock, readEntry} from "./message.js";

const PEEK_LIMIT = 100;

/** The topics an action goes to: the partitions of a partitioned topic, else the topic itself. */
export function targetsOf(topic, partitions) {
  if (!partitions) return [topic];
  return Array.from({length: partitions}, (_, i) => ({...topic, local: `${topic.local}-partition-${i}`}));
}

const subPath = (topic, sub) => `${topicPath(topic)}/subscription/${enc(sub)}`;

async function onEach(topic, partitions, pathOf, method, body) {
  for (const target of targetsOf(topic, partitions)) await request(method, pathOf(target), body);
}

export function produce(topic, partitions, done) {
  const fields = [
    {name: "payload", label: "Payload", type: "textarea", required: true, hint: "sent as text (UTF-8)"},
    {name: "key", label: "Key", hint: "optional"},
    {name: "properties", label: "Properties", type: "textarea", hint: "optional, one key=value a line"}];
  if (partitions) {
    fields.push({name: "partition", label: "Partition", type: "select", value: "",
      options: [["", "any (round robin)"], ...Array.from({length: partitions}, (_, i) => [String(i), String(i)])]});
  }
  return formDialog(`Produce to ${topicName(topic)}`, fields, "Send", async (values) => {
    const message = {payload: values.payload};
    if (values.key) message.key = values.key;
    const properties = parseProperties(values.properties || "");
    if (Object.keys(properties).length) message.properties = properties;
    const body = {producerName: "console", messages: [message], ...await schemaFields(topic)};
    const path = `/topics/${topic.domain}/${enc(topic.tenant)}/${enc(topic.namespace)}/${enc(topic.local)}` +
      (values.partition ? `/partitions/${values.partition}` : "");
    const acks = await (await request("POST", path, body)).json();
    const result = acks.messagePublishResults[0];
    if (result.errorCode) throw new Error(result.errorMsg || "the message was not stored");
    toast(`Produced message ${result.messageId}`);
    done();
    return result;
  });
}

/** The topic's latest schema version when it has one (the payload is encoded by it), else BYTES;
 *  BYTES too for a role that may produce but not read schemas (a produce-only role: the broker
 *  then checks BYTES against the topic's schema and its refusal is shown). */
async function schemaFields(topic) {
  const bytes = {valueSchema: JSON.stringify({type: "BYTES", schema: "", properties: {}})};
  let versions;
  try {
    ({getSchemaResponses: versions} = await getJson(
      `/admin/v2/schemas/${enc(topic.tenant)}/${enc(topic.namespace)}/${enc(topic.local)}/schemas`));
  } catch (exc) {
    if (exc instanceof ApiError && exc.status === 403) return bytes;
    throw exc;
  }
  if (versions.length) return {schemaVersion: versions[versions.length - 1].version};
  return bytes;
}

function parseProperties(text) {
  const properties = {};
  for (const line of text.split("\n")) {
    const at = line.indexOf("=");
    if (at > 0) properties[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return properties;
}

/** Peek at the first n entries after the subscription's mark-delete position (n <= its backlog). */
export function peek(topic, sub, backlog) {
  const most = Math.min(PEEK_LIMIT, backlog);
  return formDialog(`Peek at ${sub}`, [{name: "count", label: "Entries", type: "number", value: Math.min(10, most),
    min: 1, max: most, hint: `the backlog holds ${backlog}; a batch entry shows each of its messages`}],
  "Peek", async (values) => {
    const count = Math.max(1, Math.min(most, Number(values.count) || 1));
    const messages = [];
    for (let n = 1; n <= count; n += 1) {
      messages.push(...await readEntry(await request("GET", `${subPath(topic, sub)}/position/${n}`)));
    }
    setTimeout(() => showDialog(`${messages.length} message${messages.length === 1 ? "" : "s"} of ${sub}`,
      h("div", {class: "messages", id: "peeked"}, messages.map(messageBlock))));
    return messages;
  });
}

export async function clearBacklog(topic, partitions, sub, done) {
  if (!await confirmAction(`Clear the backlog of ${sub}?`,
    "Every message not yet acknowledged on this subscription is acknowledged now; its consumers will not receive them.",
    "Clear backlog")) return;
  await onEach(topic, partitions, (t) => `${subPath(t, sub)}/skip_all`, "POST");
  toast(`Cleared the backlog of ${sub}`);
  done();
}

export function skip(topic, sub, backlog, done) {
  return formDialog(`Skip messages on ${sub}`, [{name: "count", label: "Messages to skip", type: "number", value: 1,
    min: 1, max: backlog, hint: "they are acknowledged without being delivered: this cannot be undone"}],
  "Skip", async (values) => {
    await request("POST", `${subPath(topic, sub)}/skip/${Math.max(0, Number(values.count) || 0)}`);
    toast(`Skipped ${values.count} on ${sub}`);
    done();
    return true;
  });
}

export function resetCursor(topic, partitions, sub, done) {
  const hourAgo = new Date(Date.now() - 3600 * 1000 - new Date().getTimezoneOffset() * 60000);
  return formDialog(`Reset ${sub} to a time`, [{name: "when", label: "Publish time (local)", type: "datetime-local",
    value: hourAgo.toISOString().slice(0, 16), required: true,
    hint: "the subscription moves to the first message published at or after it: later acknowledgements are undone, " +
      "earlier messages are skipped"}],
  "Reset", async (values) => {
    const millis = new Date(values.when).getTime();
    if (Number.isNaN(millis)) throw new Error("not a date and time");
    await onEach(topic, partitions, (t) => `${subPath(t, sub)}/resetcursor/${millis}`, "POST");
    toast(`Reset ${sub}`);
    done();
    return true;
  });
}

export async function deleteSubscription(topic, partitions, sub, consumers, done) {
  const detail = consumers ? `Its ${consumers} connected consumer(s) will be disconnected. ` : "";
  if (!await confirmAction(`Delete subscription ${sub}?`, `${detail}Its position and backlog are lost.`,
    "Delete subscription")) return;
  await onEach(topic, partitions, (t) => `${subPath(t, sub)}?force=true`, "DELETE");
  toast(`Deleted subscription ${sub}`);
  done();
}

export function createSubscription(topic, partitions, done) {
  return formDialog(`Create a subscription on ${topicName(topic)}`, [
    {name: "name", label: "Name", required: true},
    {name: "position", label: "Start at", type: "select", value: "latest",
      options: [["latest", "latest (new messages only)"], ["earliest", "earliest (everything retained)"]]}],
  "Create", async (values) => {
    const body = values.position === "earliest" ? {ledgerId: -1, entryId: -1} : undefined;
    await onEach(topic, partitions, (t) => subPath(t, values.name.trim()), "PUT", body);
    toast(`Created subscription ${values.name}`);
    done();
    return true;
  });
}

export async function unload(topic, partitions, done) {
  await onEach(topic, partitions, (t) => `${topicPath(t)}/unload`, "PUT");
  toast("Unloaded: clients reconnect");
  done();
}

export async function compact(topic, partitions, done) {
  await onEach(topic, partitions, (t) => `${topicPath(t)}/compaction`, "PUT");
  toast("Compaction started");
  done();
}

export async function deleteTopic(topic, partitions) {
  if (!await confirmAction(`Delete ${topicName(topic)}?`,
    "Its messages, subscriptions and schema are deleted; connected clients are disconnected.", "Delete topic")) return;
  await request("DELETE", `${topicPath(topic)}${partitions ? "/partitions" : ""}?force=true`);
  toast(`Deleted ${topicName(topic)}`);
  location.hash = `#/ns/${enc(topic.tenant)}/${enc(topic.namespace)}`;
}
