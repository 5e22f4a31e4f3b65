// A small live line chart on a canvas: two series (in and out) over the last WINDOW_MS, redrawn on
// every new point and on resize. Written here rather than taken from a charting library: it is
// all the console needs, and it ships with the broker without any third-party code.
import {h} from "./dom.js";

const WINDOW_MS = 5 * 60 * 1000;
const PAD = {left: 56, right: 10, top: 10, bottom: 22};

export class RateChart {
  /** title: the caption; format(value) -> the legend's text, axis(value) -> an axis label. */
  constructor(title, format, axis) {
    this.format = format;
    this.axis = axis;
    this.points = [];  // [time ms, in, out]
    this.canvas = h("canvas", {role: "img", "aria-label": `${title}: no data yet`});
    this.values = {in: h("span", {class: "legend-in"}, "\u2014"), out: h("span", {class: "legend-out"}, "\u2014")};
    this.title = title;
    this.element = h("figure", {class: "chart"},
      h("figcaption", {}, title, h("span", {class: "legend"},
        h("span", {}, h("span", {class: "swatch in"}), "in ", this.values.in),
        h("span", {}, h("span", {class: "swatch out"}), "out ", this.values.out))),
      this.canvas);
    this.resize = new ResizeObserver(() => this.draw());
    this.resize.observe(this.canvas);
  }

  /** Add a point (values per second); older points than the window are dropped. */
  push(when, valueIn, valueOut) {
    this.points.push([when, valueIn, valueOut]);
    while (this.points.length && this.points[0][0] < when - WINDOW_MS) this.points.shift();
    this.values.in.textContent = this.format(valueIn);
    this.values.out.textContent = this.format(valueOut);
    this.canvas.setAttribute("aria-label", `${this.title}: in ${this.format(valueIn)}, out ${this.format(valueOut)}`);
    this.draw();
  }

  dispose() { this.resize.disconnect(); }

  draw() {
    const canvas = this.canvas;
    const ratio = window.devicePixelRatio || 1;
    const width = canvas.clientWidth, height = canvas.clientHeight;
    if (!width || !height) return;
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    const ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    const style = getComputedStyle(document.documentElement);
    const now = this.points.length ? this.points[this.points.length - 1][0] : Date.now();
    const top = niceMax(Math.max(0, ...this.points.map((p) => Math.max(p[1], p[2]))));
    const x = (t) => PAD.left + (width - PAD.left - PAD.right) * (1 - (now - t) / WINDOW_MS);
    const y = (v) => height - PAD.bottom - (height - PAD.top - PAD.bottom) * (v / top);
    this.grid(ctx, style, width, height, top, y, x, now);
    this.line(ctx, style.getPropertyValue("--in").trim(), x, y, 1);
    this.line(ctx, style.getPropertyValue("--out").trim(), x, y, 2);
  }

  grid(ctx, style, width, height, top, y, x, now) {
    ctx.strokeStyle = style.getPropertyValue("--grid").trim();
    ctx.fillStyle = style.getPropertyValue("--muted").trim();
    ctx.font = "11px system-ui, sans-serif";
    ctx.lineWidth = 1;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    for (let i = 0; i <= 4; i += 1) {
      const value = (top * i) / 4;
      ctx.beginPath();
      ctx.moveTo(PAD.left, Math.round(y(value)) + 0.5);
      ctx.lineTo(width - PAD.right, Math.round(y(value)) + 0.5);
      ctx.stroke();
      ctx.fillText(this.axis(value), PAD.left - 6, y(value));
    }
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    for (let minutes = 5; minutes >= 0; minutes -= 1) {
      ctx.fillText(minutes ? `-${minutes}m` : "now", x(now - minutes * 60000), height - PAD.bottom + 6);
    }
  }

  line(ctx, color, x, y, index) {
    if (this.points.length < 2) return;
    ctx.strokeStyle = color;
    ctx.lineWidth = 2;
    ctx.beginPath();
    this.points.forEach((point, i) => {
      if (i === 0) ctx.moveTo(x(point[0]), y(point[index]));
      else ctx.lineTo(x(point[0]), y(point[index]));
    });
    ctx.stroke();
  }
}

/** A round top for the y axis: 1, 2 or 5 times a power of ten, at least 1. */
function niceMax(value) {
  if (value <= 1) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) {
    if (value <= step * power) return step * power;
  }
  return 10 * power;
}

/**
 * Per-second rates from two readings of counters {msgIn, bytesIn, msgOut, bytesOut} taken at
 * times t0 and t1 (ms). A counter that went down (a topic reloaded) counts from zero.
 */
export function ratesBetween(before, after, t0, t1) {
  const seconds = (t1 - t0) / 1000;
  const grown = (key) => {
    const delta = after[key] - before[key];
    return (delta >= 0 ? delta : after[key]) / seconds;
  };
  return {msgIn: grown("msgIn"), bytesIn: grown("bytesIn"), msgOut: grown("msgOut"), bytesOut: grown("bytesOut")};
}
