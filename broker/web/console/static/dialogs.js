// Modal dialogs on the page's one <dialog>: a confirmation before anything that destroys data, and
// forms for the actions that take input. showModal() keeps the keyboard inside the dialog and Esc
// closes it.
import {h, fill} from "./dom.js";

const dialog = () => document.getElementById("dialog");

/** Ask before a destructive action; resolves true when confirmed. */
export function confirmAction(title, detail, verb) {
  return new Promise((resolve) => {
    const el = dialog();
    el.className = "";
    const cancel = h("button", {type: "button", value: "cancel", onclick: () => el.close("cancel")}, "Cancel");
    const form = h("form", {method: "dialog"},
      h("h2", {}, title), h("p", {}, detail),
      h("div", {class: "actions"}, cancel,
        h("button", {class: "danger primary", value: "confirm", type: "submit", "data-confirm": ""}, verb)));
    fill(el, form);
    el.onclose = () => resolve(el.returnValue === "confirm");
    el.returnValue = "";
    el.showModal();
    cancel.focus();  // the safe choice has the focus
  });
}

/**
 * A form: fields [{name, label, type: "text"|"number"|"textarea"|"select"|"datetime-local", value,
 * options, hint, required}]. submit(values) runs on "OK"; its error is shown in the dialog and the
 * dialog stays open; when it succeeds the dialog closes (resolves its result, or null on cancel).
 */
export function formDialog(title, fields, okLabel, submit, {wide = false, intro = null} = {}) {
  return new Promise((resolve) => {
    const el = dialog();
    el.className = wide ? "wide" : "";
    const error = h("div", {class: "alert", role: "alert", hidden: true});
    const inputs = {};
    const rows = fields.map((field) => {
      const id = `field-${field.name}`;
      inputs[field.name] = input(field, id);
      return [h("label", {for: id}, field.label), inputs[field.name],
        field.hint ? h("div", {class: "hint"}, field.hint) : null];
    });
    const ok = h("button", {class: "primary", type: "submit"}, okLabel);
    const form = h("form", {}, h("h2", {}, title), intro, rows, error,
      h("div", {class: "actions"}, h("button", {type: "button", onclick: () => el.close()}, "Cancel"), ok));
    let result = null;
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      ok.disabled = true;
      error.hidden = true;
      try {
        const values = Object.fromEntries(Object.entries(inputs).map(([k, v]) => [k, v.value]));
        result = await submit(values);
        el.close();
      } catch (exc) {
        error.textContent = exc.reason || exc.message;
        error.hidden = false;
      } finally {
        ok.disabled = false;
      }
    });
    fill(el, form);
    el.onclose = () => resolve(result);
    el.showModal();
    const first = Object.values(inputs)[0];
    if (first) first.focus();
  });
}

/** A dialog showing content (a list of messages, a result) with a Close button. */
export function showDialog(title, content, {wide = true} = {}) {
  const el = dialog();
  el.className = wide ? "wide" : "";
  const close = h("button", {type: "button", onclick: () => el.close()}, "Close");
  fill(el, h("div", {class: "body"}, h("h2", {}, title), content, h("div", {class: "actions"}, close)));
  el.onclose = null;
  el.showModal();
  close.focus();
  return el;
}

function input(field, id) {
  const common = {id, name: field.name, required: field.required || null};
  if (field.type === "textarea") return h("textarea", common, field.value || "");
  if (field.type === "select") {
    return h("select", common, field.options.map(([value, label]) =>
      h("option", {value, selected: String(value) === String(field.value) || null}, label)));
  }
  const el = h("input", {...common, type: field.type || "text", min: field.min ?? null, max: field.max ?? null,
    autocomplete: "off"});
  if (field.value !== undefined) el.value = field.value;
  return el;
}
