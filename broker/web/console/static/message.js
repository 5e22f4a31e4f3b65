// Messages as the admin API hands them out (GET .../subscription/{s}/position/{n}, .../ledger/{l}/
// entry/{e}): the decompressed payload as the body, the entry's metadata as X-Pulsar-* headers.
// A batch (X-Pulsar-num-batch-message) is split here into its messages, each
//   [size u32 big-endian][SingleMessageMetadata, protobuf][payload_size bytes]
// as Pulsar's Commands.deSerializeSingleMessageInBatch reads it.
import {h} from "./dom.js";
import {time} from "./format.js";

const HEX_LIMIT = 4096;  // bytes shown in the hex view

/** One entry's messages: [{id, key, publishTime, eventTime, producer, sequenceId, properties, payload}]. */
export async function readEntry(response) {
  const headers = response.headers;
  const payload = new Uint8Array(await response.arrayBuffer());
  const id = headers.get("X-Pulsar-Message-ID");
  const common = {publishTime: headers.get("X-Pulsar-publish-time"), producer: headers.get("X-Pulsar-producer-name")};
  const properties = propertiesOf(headers);
  const count = headers.get("X-Pulsar-num-batch-message");
  if (count === null) {
    return [{...common, id, key: headers.get("X-Pulsar-partition-key"), eventTime: headers.get("X-Pulsar-event-time"),
      sequenceId: headers.get("X-Pulsar-sequence-id"), properties, payload}];
  }
  return splitBatch(payload, Number(count)).map((single, index) => ({
    ...common, id: `${id}:${index}`, key: single.key, eventTime: single.eventTime || null,
    sequenceId: single.sequenceId, properties: single.properties, payload: single.payload,
    compactedOut: single.compactedOut}));
}

/** The entry's properties: the X-Pulsar-Property JSON header (exact keys), else the older
 *  X-Pulsar-PROPERTY-<key> headers (whose keys HTTP lowercases). */
function propertiesOf(headers) {
  const json = headers.get("X-Pulsar-Property");
  if (json) {
    try { return JSON.parse(json); } catch (_) { /* fall back to the per-key headers */ }
  }
  const properties = {};
  headers.forEach((value, name) => {
    if (name.toLowerCase().startsWith("x-pulsar-property-")) properties[name.slice(18)] = value;
  });
  return properties;
}

/** The messages of a batch payload (decompressed). */
export function splitBatch(bytes, count) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const messages = [];
  let at = 0;
  for (let i = 0; i < count && at + 4 <= bytes.length; i += 1) {
    const size = view.getUint32(at);
    const meta = singleMetadata(bytes.subarray(at + 4, at + 4 + size));
    at += 4 + size;
    messages.push({...meta, payload: bytes.subarray(at, at + meta.payloadSize)});
    at += meta.payloadSize;
  }
  return messages;
}

/** SingleMessageMetadata fields by number: 1 properties, 2 partition_key, 3 payload_size,
 *  4 compacted_out, 5 event_time, 7 ordering_key, 8 sequence_id (PulsarApi.proto). */
function singleMetadata(bytes) {
  const meta = {properties: {}, key: null, payloadSize: 0, compactedOut: false, eventTime: 0, sequenceId: null};
  const reader = new ProtoReader(bytes);
  while (!reader.done()) {
    const [field, wire] = reader.tag();
    if (field === 1 && wire === 2) {
      const pair = new ProtoReader(reader.bytes());
      let key = "", value = "";
      while (!pair.done()) {
        const [f, w] = pair.tag();
        if (f === 1 && w === 2) key = pair.text(); else if (f === 2 && w === 2) value = pair.text(); else pair.skip(w);
      }
      meta.properties[key] = value;
    } else if (field === 2 && wire === 2) meta.key = reader.text();
    else if (field === 3 && wire === 0) meta.payloadSize = reader.varint();
    else if (field === 4 && wire === 0) meta.compactedOut = reader.varint() !== 0;
    else if (field === 5 && wire === 0) meta.eventTime = reader.varint();
    else if (field === 8 && wire === 0) meta.sequenceId = reader.varint();
    else reader.skip(wire);
  }
  return meta;
}

/** The protobuf wire format, as far as SingleMessageMetadata needs it. */
class ProtoReader {
  constructor(bytes) { this.bytes_ = bytes; this.at = 0; }
  done() { return this.at >= this.bytes_.length; }
  varint() {
    let value = 0, scale = 1, byte;
    do {
      if (this.at >= this.bytes_.length) throw new Error("truncated varint");
      byte = this.bytes_[this.at++];
      value += (byte & 0x7f) * scale;
      scale *= 128;
    } while (byte & 0x80);
    return value;
  }
  tag() { const tag = this.varint(); return [Math.floor(tag / 8), tag & 7]; }
  bytes() { const size = this.varint(); const out = this.bytes_.subarray(this.at, this.at + size); this.at += size; return out; }
  text() { return new TextDecoder().decode(this.bytes()); }
  skip(wire) {
    if (wire === 0) this.varint();
    else if (wire === 1) this.at += 8;
    else if (wire === 2) this.bytes();
    else if (wire === 5) this.at += 4;
    else throw new Error(`unsupported wire type ${wire}`);
  }
}

/** How a payload reads best: "json" when it parses as JSON, "text" when it is printable UTF-8, else "hex". */
export function bestView(payload) {
  const text = asText(payload);
  if (text === null) return "hex";
  try { JSON.parse(text); return "json"; } catch (_) { return "text"; }
}

export function asText(payload) {
  try {
    const text = new TextDecoder("utf-8", {fatal: true}).decode(payload);
    return /[\u0000-\u0008\u000e-\u001f]/.test(text) ? null : text;
  } catch (_) {
    return null;
  }
}

export function render(payload, view) {
  if (view === "json") {
    const text = asText(payload);
    try { return JSON.stringify(JSON.parse(text), null, 2); } catch (_) { return "(not JSON)"; }
  }
  if (view === "text") {
    const text = asText(payload);
    return text === null ? new TextDecoder().decode(payload) : text;
  }
  return hexDump(payload);
}

export function hexDump(payload) {
  const lines = [];
  const shown = payload.subarray(0, HEX_LIMIT);
  for (let at = 0; at < shown.length; at += 16) {
    const row = Array.from(shown.subarray(at, at + 16));
    const hex = row.map((b) => b.toString(16).padStart(2, "0")).join(" ");
    const ascii = row.map((b) => (b >= 32 && b < 127 ? String.fromCharCode(b) : ".")).join("");
    lines.push(`${at.toString(16).padStart(6, "0")}  ${hex.padEnd(47)}  ${ascii}`);
  }
  if (payload.length > HEX_LIMIT) lines.push(`... ${payload.length - HEX_LIMIT} more bytes`);
  return lines.join("\n");
}

/** One message as a block: its ids and metadata, and its payload in a chosen view. */
export function messageBlock(message) {
  let view = bestView(message.payload);
  const pre = h("pre", {class: "mono payload"}, render(message.payload, view));
  const buttons = ["text", "hex", "json"].map((name) => h("button", {
    class: "small", type: "button", "aria-pressed": String(name === view),
    onclick: (event) => {
      view = name;
      pre.textContent = render(message.payload, view);
      for (const b of buttons) b.setAttribute("aria-pressed", String(b === event.currentTarget));
    }}, name));
  const properties = Object.entries(message.properties || {}).map(([k, v]) => `${k}=${v}`).join(", ");
  return h("div", {class: "message"},
    h("dl", {},
      h("dt", {}, "message id"), h("dd", {class: "mono message-id"}, message.id),
      h("dt", {}, "key"), h("dd", {class: "message-key"}, message.key ?? "\u2014"),
      h("dt", {}, "publish time"), h("dd", {}, time(message.publishTime)),
      message.eventTime ? [h("dt", {}, "event time"), h("dd", {}, time(message.eventTime))] : null,
      h("dt", {}, "producer"), h("dd", {}, message.producer ?? "\u2014"),
      h("dt", {}, "properties"), h("dd", {class: "message-properties"}, properties || "\u2014"),
      h("dt", {}, "size"), h("dd", {}, `${message.payload.length} bytes`)),
    h("div", {class: "toolbar"}, "view:", buttons),
    pre);
}
