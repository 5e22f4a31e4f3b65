// Tenants and their namespaces (GET /admin/v2/tenants, /admin/v2/namespaces/{tenant}). Listing the
// tenants needs a super-user, as in Pulsar; a tenant admin opens its namespace by name instead.
import {ApiError, enc, getJson} from "./api.js";
import {fill, h, table} from "./dom.js";
import {errorBanner} from "./view.js";

export function mount(root) {
  const banner = errorBanner();
  const list = h("div", {id: "tenant-list"});
  const opener = h("input", {id: "open-namespace", placeholder: "tenant/namespace", "aria-label": "tenant/namespace"});
  const open = h("form", {class: "toolbar", onsubmit: (event) => {
    event.preventDefault();
    const [tenant, namespace] = opener.value.trim().split("/");
    if (tenant && namespace) location.hash = `#/ns/${enc(tenant)}/${enc(namespace)}`;
  }}, h("label", {for: "open-namespace"}, "Open a namespace"), opener, h("button", {type: "submit"}, "Open"));
  fill(root, h("h1", {}, "Tenants"), h("p", {class: "sub"}, "Tenants, their namespaces, and the topics in each."),
    banner.el, open, list);

  async function refresh() {
    let tenants;
    try {
      tenants = await getJson("/admin/v2/tenants");
    } catch (exc) {
      if (exc instanceof ApiError && exc.status === 403) {
        fill(list, h("p", {class: "note"}, "Listing tenants needs a super-user; open a namespace of your tenant by name."));
        return;
      }
      throw exc;
    }
    const rows = await Promise.all(tenants.map(async (tenant) => {
      const namespaces = await getJson(`/admin/v2/namespaces/${enc(tenant)}`);
      return [h("strong", {}, tenant), namespaces.length ? namespaces.map((full, i) => {
        const [, name] = full.split("/");
        return [i ? ", " : "", h("a", {href: `#/ns/${enc(tenant)}/${enc(name)}`}, full)];
      }) : h("span", {class: "hint"}, "no namespaces")];
    }));
    fill(list, table([{label: "Tenant"}, {label: "Namespaces"}], rows, "No tenants."));
  }

  return {refresh, showError: banner.show, clearError: banner.clear};
}
