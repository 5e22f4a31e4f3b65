// The console's shell: hash routes to views, a poller that refreshes the current view every
// POLL_MS (or slower, on a broker whose answers take long) while the tab is visible, and the
// sign-in form when the broker asks for a token.
import {ApiError, setToken, token, tokenRequired} from "./api.js";
import {h, fill} from "./dom.js";
import * as namespace from "./namespace.js";
import * as overview from "./overview.js";
import * as tenants from "./tenants.js";
import * as topic from "./topic.js";

const POLL_MS = 2000;
const ROUTES = [
  [/^#?\/?$/, overview, "overview"],
  [/^#\/tenants$/, tenants, "tenants"],
  [/^#\/ns\/([^/]+)\/([^/]+)$/, namespace, "tenants"],
  [/^#\/topic\/(persistent|non-persistent)\/([^/]+)\/([^/]+)\/([^/]+)$/, topic, "tenants"],
];

let current = null;  // {view, timer}

function route() {
  stop();
  const main = document.getElementById("main");
  if (tokenRequired() && !token()) {
    showLogin(main);
    return;
  }
  renderSession();
  const hash = location.hash || "#/";
  const found = ROUTES.find(([pattern]) => pattern.test(hash));
  if (!found) {
    fill(main, h("h1", {}, "Not found"), h("p", {}, h("a", {href: "#/"}, "Back to the overview")));
    return;
  }
  const [pattern, module, section] = found;
  const params = pattern.exec(hash).slice(1).map(decodeURIComponent);
  for (const link of document.querySelectorAll("nav a")) {
    if (link.dataset.section === section) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  fill(main);
  current = {view: module.mount(main, params), timer: null};
  poll(current);
}

/** Refresh the view now and again after each refresh ends (never two at once): POLL_MS later, or
 *  ten times as long as the refresh took when that is longer, so a broker with many topics spends
 *  at most a tenth of its time answering one console. */
async function poll(state) {
  if (state !== current) return;
  const started = performance.now();
  if (!document.hidden) {
    try {
      await state.view.refresh();
      state.view.clearError?.();
    } catch (exc) {
      if (!(exc instanceof ApiError && exc.status === 401)) state.view.showError?.(exc);
    }
  }
  const took = performance.now() - started;
  if (state === current) state.timer = setTimeout(() => poll(state), Math.max(POLL_MS, 10 * took));
}

function stop() {
  if (current) {
    clearTimeout(current.timer);
    current.view.dispose?.();
    current = null;
  }
}

function showLogin(main, message = null) {
  renderSession();
  const field = h("textarea", {id: "token", name: "token", required: true, autocomplete: "off",
    spellcheck: "false", "aria-describedby": "token-hint"});
  const form = h("form", {class: "login", onsubmit: (event) => {
    event.preventDefault();
    setToken(field.value.trim());
    route();
  }},
  h("h1", {}, "Sign in"),
  message ? h("div", {class: "alert", role: "alert"}, message) : null,
  h("p", {id: "token-hint", class: "sub"}, "This broker authenticates its REST API. Paste a token (JWT) for a role; " +
    "the console shows and does what that role may. The token stays in this browser tab only."),
  h("label", {for: "token"}, "Token"), field,
  h("div", {class: "toolbar"}, h("button", {class: "primary", type: "submit"}, "Sign in")));
  fill(main, form);
  field.focus();
}

function renderSession() {
  const session = document.getElementById("session");
  if (!tokenRequired()) {
    fill(session);
    return;
  }
  fill(session, token() ? [h("span", {}, `signed in as ${roleOf(token())}`),
    h("button", {class: "small", type: "button", onclick: () => { setToken(null); route(); }}, "Sign out")] : null);
}

/** The role a token names (its sub claim, read without checking it: the broker checks). */
function roleOf(jwt) {
  try {
    const payload = jwt.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(atob(payload)).sub || "a token";
  } catch (_) {
    return "a token";
  }
}

window.addEventListener("hashchange", route);
window.addEventListener("auth-required", () => {
  if (!tokenRequired()) return;
  setToken(null);
  stop();
  showLogin(document.getElementById("main"), "The broker refused the token: sign in again.");
});
document.addEventListener("visibilitychange", () => {
  if (!document.hidden && current) { clearTimeout(current.timer); poll(current); }
});
route();
