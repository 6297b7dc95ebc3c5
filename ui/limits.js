// The limits (GET /limits): each limit's running jobs against its max_running (a pattern's
// holds per key: its maximum per key beside the running jobs of all its keys), its rate
// window's use (an exact key's), the jobs it holds back and a paused key; set a limit (PUT,
// which creates or replaces) and delete one (DELETE, after a confirmation).

import { api, seg } from './api.js';
import { $, badge, confirmDialog, el, fillTable, fmtTime } from './dom.js';

// ui: {act(what, fn, said), report(source, err, what), clear(source)}
export function makeLimits(ui) {
  let last = '';
  const askDelete = confirmDialog('limit-delete', 'limit-delete-key', (k) => {
    ui.act(`Delete limit ${k}`, () => api('DELETE', `/limits/${seg(k)}`),
      `Limit ${k} deleted: its jobs are no longer held back.`);
  });

  function state(l) {
    if (l.paused_until !== null) {
      return el('span', {}, badge('paused'), ` until ${fmtTime(l.paused_until)}`);
    }
    // A pattern's max_running holds for each of its keys on its own: the sum of their
    // running jobs says nothing of whether one is full; its held jobs do.
    if (pattern(l)) return badge(l.held > 0 ? 'holding' : 'open');
    const full = l.max_running !== null && l.running >= l.max_running;
    return badge(full ? 'full' : 'open');
  }

  function pattern(l) {
    return l.key.endsWith('*');
  }

  // An exact key's running jobs against its maximum ("2 / 3"); a pattern's maximum per key
  // beside the running jobs of all its keys ("1 per key · 3 running").
  function running(l) {
    if (l.max_running === null) return String(l.running);
    if (pattern(l)) return `${l.max_running} per key · ${l.running} running`;
    return `${l.running} / ${l.max_running}`;
  }

  function rate(l) {
    if (!l.rate) return '—';
    const per = `${l.rate.jobs} per ${l.rate.per_seconds} s`;
    return l.window_used === null ? `${per}, each key` : `${l.window_used} / ${per}`;
  }

  function row(l) {
    const key = (what) => ({ key: `l-${what}-${l.key}` });
    return el('tr', { 'data-limit': l.key },
      el('th', { scope: 'row', class: 'wrap' }, l.key),
      el('td', { class: 'num running' }, running(l)),
      el('td', { class: 'num rate' }, rate(l)),
      el('td', { class: 'num held' }, l.held),
      el('td', { class: 'state' }, state(l)),
      el('td', {}, el('div', { class: 'actions' },
        el('button', {
          type: 'button', data: key('edit'), 'aria-label': `Edit limit ${l.key}`,
          onclick: () => edit(l),
        }, 'Edit'),
        el('button', {
          type: 'button', class: 'danger', data: key('delete'),
          'aria-label': `Delete limit ${l.key}`, onclick: () => askDelete(l.key),
        }, 'Delete…'))));
  }

  async function refresh() {
    try {
      const { limits } = await api('GET', '/limits');
      ui.clear('limits');
      const text = JSON.stringify(limits);
      if (text === last) return;
      last = text;
      fillTable($('limit-table'), limits.map(row));
      $('limits-empty').hidden = limits.length > 0;
    } catch (e) {
      ui.report('limits', e, 'Limits');
    }
  }

  // The form shows a limit to change: its key and bounds.
  function edit(l) {
    $('l-key').value = l.key;
    $('l-max').value = l.max_running === null ? '' : l.max_running;
    $('l-jobs').value = l.rate ? l.rate.jobs : '';
    $('l-per').value = l.rate ? l.rate.per_seconds : '';
    $('l-max').focus();
  }

  // The body of the form: the fields filled in, as numbers (the server names a bad one).
  function body() {
    const b = {};
    const num = (id) => ($(id).value.trim() === '' ? undefined : Number($(id).value));
    const max = num('l-max');
    const jobs = num('l-jobs');
    const per = num('l-per');
    if (max !== undefined) b.max_running = max;
    if (jobs !== undefined || per !== undefined) b.rate = { jobs, per_seconds: per };
    return b;
  }

  $('limit-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const k = $('l-key').value;
    ui.act(`Set limit ${k}`, () => api('PUT', `/limits/${seg(k)}`, body()),
      (l) => `Limit ${l.key} set.`);
  });
  $('limit-form').addEventListener('reset', () => $('l-key').focus());

  return { refresh, busy: () => $('limit-delete-dialog').open };
}
