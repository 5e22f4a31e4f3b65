// Numbers, sizes, rates and times as the console prints them.

const DASH = "\u2014";

export function int(n) {
  return n === undefined || n === null ? DASH : Math.round(Number(n)).toLocaleString("en-US");
}

export function bytes(n) {
  if (n === undefined || n === null) return DASH;
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = Number(n), unit = 0;
  while (Math.abs(value) >= 1024 && unit < units.length - 1) { value /= 1024; unit += 1; }
  return `${unit ? value.toFixed(value < 10 ? 2 : 1) : value} ${units[unit]}`;
}

/** A per-second figure: "12.3 msg/s", "1.5 MiB/s". */
export function rate(n, unit = "msg/s") {
  if (n === undefined || n === null || Number.isNaN(n)) return DASH;
  if (unit === "B/s") return `${bytes(n)}/s`;
  const value = Number(n);
  return `${value >= 100 ? Math.round(value).toLocaleString("en-US") : value.toFixed(value >= 10 ? 1 : 2)} ${unit}`;
}

export function duration(ms) {
  let seconds = Math.max(0, Math.floor(ms / 1000));
  const days = Math.floor(seconds / 86400); seconds -= days * 86400;
  const hours = Math.floor(seconds / 3600); seconds -= hours * 3600;
  const minutes = Math.floor(seconds / 60); seconds -= minutes * 60;
  if (days) return `${days}d ${hours}h`;
  if (hours) return `${hours}h ${minutes}m`;
  if (minutes) return `${minutes}m ${seconds}s`;
  return `${seconds}s`;
}

/** Milliseconds since the epoch, or an ISO text, as local "YYYY-MM-DD HH:MM:SS". */
export function time(value) {
  if (value === undefined || value === null || value === "") return DASH;
  const date = new Date(typeof value === "number" ? value : Date.parse(value));
  if (Number.isNaN(date.getTime())) return String(value);
  const pad = (n) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ` +
    `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

/** A short axis label: 950, 1.2k, 3.4M. */
export function compact(n) {
  const value = Number(n);
  if (value >= 1e6) return `${(value / 1e6).toFixed(value >= 1e7 ? 0 : 1)}M`;
  if (value >= 1e3) return `${(value / 1e3).toFixed(value >= 1e4 ? 0 : 1)}k`;
  return Number.isInteger(value) ? String(value) : value.toFixed(2);
}

export const dash = DASH;
