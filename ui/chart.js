// The throughput chart: jobs per second over the last 15 minutes, drawn as SVG lines from
// GET /stats/throughput ({step_seconds, points: [{at, enqueued, succeeded, failed}]}).

import { el } from './dom.js';

const NS = 'http://www.w3.org/2000/svg';
const WINDOW = 15 * 60;
const SERIES = ['enqueued', 'succeeded', 'failed']; // also their CSS classes
const PAD = { left: 44, right: 10, top: 10, bottom: 22 };

function svg(tag, attrs, text) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

// The smallest of 1, 2, 5 x 10^n at or above v (at least 1 job/s on the axis).
function niceCeil(v) {
  if (!(v > 1)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function fmtRate(r) {
  if (r === 0) return '0';
  return r >= 10 ? r.toFixed(0) : r >= 1 ? r.toFixed(1) : r.toFixed(2);
}

// Draw data into the <svg> node, and a text summary (the latest complete bucket's rates,
// with a colour key) into the summary node.
export function drawChart(node, summary, data) {
  const step = data.step_seconds > 0 ? data.step_seconds : 10;
  const points = Array.isArray(data.points) ? data.points : [];
  const width = Math.max(240, node.clientWidth || 600);
  const height = Number(node.getAttribute('height')) || 180;
  node.setAttribute('viewBox', `0 0 ${width} ${height}`);
  const end = points.length ? points[points.length - 1].at + step : Date.now() / 1000;
  const start = end - WINDOW;
  let max = 0;
  for (const p of points) for (const k of SERIES) max = Math.max(max, (p[k] || 0) / step);
  const top = niceCeil(max);
  const w = width - PAD.left - PAD.right;
  const h = height - PAD.top - PAD.bottom;
  const x = (t) => PAD.left + ((t - start) / WINDOW) * w;
  const y = (r) => PAD.top + h - (r / top) * h;

  const kids = [];
  for (const f of [0, 0.5, 1]) {
    const yy = y(top * f).toFixed(1);
    kids.push(svg('line', { class: 'grid', x1: PAD.left, x2: width - PAD.right, y1: yy, y2: yy }));
    kids.push(svg('text', { class: 'axis', x: PAD.left - 6, y: +yy + 4, 'text-anchor': 'end' },
      fmtRate(top * f)));
  }
  for (const m of [15, 10, 5, 0]) {
    const label = m ? `-${m} min` : 'now';
    kids.push(svg('text', {
      class: 'axis', x: x(end - m * 60).toFixed(1), y: height - 6,
      'text-anchor': m === 15 ? 'start' : m === 0 ? 'end' : 'middle',
    }, label));
  }
  for (const k of SERIES) {
    // Each bucket's rate at its middle; a bucket without a point counts zero.
    const pts = points.filter((p) => p.at + step > start)
      .map((p) => `${x(p.at + step / 2).toFixed(1)},${y((p[k] || 0) / step).toFixed(1)}`);
    if (pts.length) kids.push(svg('polyline', { class: 'line ' + k, points: pts.join(' ') }));
  }
  node.replaceChildren(...kids);

  // The last bucket is still filling: report the one before it.
  const last = points.length > 1 ? points[points.length - 2] : points[0];
  summary.replaceChildren(...SERIES.map((k) => el('span', {},
    el('span', { class: 'swatch ' + k, 'aria-hidden': 'true' }),
    `${k} ${fmtRate(last ? (last[k] || 0) / step : 0)}/s`)));
}
