// The REST API as the console calls it: the same paths and the same authentication as any client
// (Authorization: Bearer <token> when the user signed in). The token lives in sessionStorage only:
// it is gone when the tab closes.

const TOKEN_KEY = "minipulsar.console.token";

export class ApiError extends Error {
  constructor(status, reason, path) {
    super(`${reason} (HTTP ${status})`);
    this.status = status;
    this.reason = reason;
    this.path = path;
  }
}

export function token() { return sessionStorage.getItem(TOKEN_KEY); }
export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}
/** True when the broker asks this browser for a token (index.html's data-auth, set by the broker). */
export function tokenRequired() { return document.documentElement.dataset.auth === "token"; }

/** fetch with the token; resolves the Response when 2xx, else throws ApiError (401 also tells the app). */
export async function request(method, path, body) {
  const headers = {};
  const held = token();
  if (held) headers.Authorization = `Bearer ${held}`;
  const init = {method, headers};
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (response.ok) return response;
  let reason = response.statusText;
  try { reason = (await response.json()).reason || reason; } catch (_) { /* not JSON: keep the status text */ }
  if (response.status === 401) window.dispatchEvent(new CustomEvent("auth-required"));
  throw new ApiError(response.status, reason, path);
}

export async function getJson(path) { return (await request("GET", path)).json(); }
export async function getText(path) { return (await request("GET", path)).text(); }

/** {domain, tenant, namespace, local} of "persistent://t/ns/name". */
export function parseTopic(full) {
  const [domain, rest] = full.split("://");
  const [tenant, namespace, ...local] = rest.split("/");
  return {domain, tenant, namespace, local: local.join("/"), full};
}

export function topicName(t) { return `${t.domain}://${t.tenant}/${t.namespace}/${t.local}`; }

/** The v2 admin path of a topic: /admin/v2/persistent/t/ns/name. */
export function topicPath(t) {
  return `/admin/v2/${t.domain}/${enc(t.tenant)}/${enc(t.namespace)}/${enc(t.local)}`;
}

export function enc(part) { return encodeURIComponent(part); }

/** "name-partition-3" -> {parent: "name", index: 3}; null for a name that is not a partition. */
export function partitionOf(local) {
  const match = /^(.*)-partition-(\d+)$/.exec(local);
  return match ? {parent: match[1], index: Number(match[2])} : null;
}
