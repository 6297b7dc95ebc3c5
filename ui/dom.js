// Small DOM helpers. Text always goes in as text (textContent), never as HTML.

export const $ = (id) => document.getElementById(id);

// el('td', {class: 'num', data: {key: 'x'}, onclick: fn}, child, 'text', ...)
export function el(tag, attrs, ...kids) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k === 'data') Object.assign(node.dataset, v);
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? '' : v);
  }
  for (const kid of kids) {
    if (kid === undefined || kid === null || kid === false) continue;
    node.append(kid instanceof Node ? kid : String(kid));
  }
  return node;
}

// Replace the children of parent with nodes, keeping the keyboard focus: when the focused
// element had a data-key, the new element with the same key gets the focus back.
export function replaceKeepFocus(parent, nodes) {
  const active = document.activeElement;
  const key = active && parent.contains(active) ? active.dataset.key : undefined;
  parent.replaceChildren(...nodes);
  if (key !== undefined) {
    const again = parent.querySelector(`[data-key="${CSS.escape(key)}"]`);
    if (again) again.focus({ preventScroll: true });
  }
}

// Fill a table's body with rows (keeping the focus), each cell labelled with its column's
// heading (data-label), which the phone layout shows beside the value.
export function fillTable(table, rows) {
  const heads = [...table.tHead.rows[0].cells].map((c) => c.textContent);
  for (const tr of rows) [...tr.cells].forEach((c, i) => { c.dataset.label = heads[i] || ''; });
  replaceKeepFocus(table.tBodies[0], rows);
}

// A dialog that confirms a delete: `${id}-dialog` holding the form `${id}-form`, its button
// `${id}-keep` and the element nameId that names the item. Returns ask(name), which opens it
// for name; confirming closes it and calls onConfirm(name). Either way the keyboard focus
// goes back to where it was.
export function confirmDialog(id, nameId, onConfirm) {
  let item = null;
  let from = null;
  function end() {
    $(`${id}-dialog`).close();
    if (from && from.isConnected) from.focus();
  }
  $(`${id}-keep`).addEventListener('click', end);
  $(`${id}-form`).addEventListener('submit', (ev) => {
    ev.preventDefault();
    const name = item;
    end();
    onConfirm(name);
  });
  return (name) => {
    item = name;
    from = document.activeElement;
    $(nameId).textContent = name;
    $(`${id}-dialog`).showModal();
  };
}

const pad = (n) => String(n).padStart(2, '0');

// Epoch seconds in the IANA zone `zone` as "YYYY-MM-DD HH:MM:SS" followed by the zone's
// offset then ("2026-11-29 03:00:00 GMT+1"; UTC for an offset of 0); '' for null.
export function fmtTimeIn(epoch, zone) {
  if (epoch === null || epoch === undefined) return '';
  const f = new Intl.DateTimeFormat('en-US', {
    timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit',
    hour: '2-digit', minute: '2-digit', second: '2-digit', timeZoneName: 'shortOffset',
  });
  const p = Object.fromEntries(f.formatToParts(new Date(epoch * 1000))
    .map((x) => [x.type, x.value]));
  const off = /^GMT([+-]0)?$/.test(p.timeZoneName) ? 'UTC' : p.timeZoneName;
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second} ${off}`;
}

// Epoch seconds as local "HH:MM:SS" today, "YYYY-MM-DD HH:MM:SS" on another day; '' for null.
export function fmtTime(epoch) {
  if (epoch === null || epoch === undefined) return '';
  const d = new Date(epoch * 1000);
  const day = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
  const time = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  return d.toDateString() === new Date().toDateString() ? time : `${day} ${time}`;
}

// Seconds as "45s", "3m 20s", "2h 5m", "3d 4h".
export function fmtAge(s) {
  s = Math.max(0, Math.round(s || 0));
  if (s < 60) return s + 's';
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}

export function fmtJSON(v) {
  return v === undefined || v === null ? '—' : JSON.stringify(v, null, 2);
}

export function badge(status) {
  return el('span', { class: 'badge st-' + status }, status);
}
