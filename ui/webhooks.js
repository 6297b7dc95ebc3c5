// The webhook subscriptions (GET /webhooks, an admin read): each one's URL and event filter,
// whether it is enabled (and why not, after a 410), how far it has delivered, its deliveries
// and failures, and, while it fails, since when, the events it set aside, the last answer and
// the next attempt. A
// token that is not an admin's sees a line saying so instead.

import { api } from './api.js';
import { $, badge, el, fillTable, fmtTime } from './dom.js';

// ui: {report(source, err, what), clear(source)}
export function makeWebhooks(ui) {
  let last = '';

  function time(epoch) {
    return epoch === null ? '—' : fmtTime(epoch);
  }

  function filter(w) {
    const types = w.types === null ? 'every type' : w.types.join(', ');
    return w.queues === null ? types : `${types} · ${w.queues.join(', ')}`;
  }

  function state(w) {
    if (!w.enabled) return el('span', {}, badge('disabled'), w.disabled_reason ? ` ${w.disabled_reason}` : '');
    const held = w.parked > 0 ? ` ${w.parked} set aside` : '';
    return el('span', {}, badge(w.failing_since === null ? 'delivering' : 'failing'), held);
  }

  function lastAnswer(w) {
    if (w.last_status === null) return '—';
    const status = w.last_status === 0 ? 'no answer' : `HTTP ${w.last_status}`;
    return w.last_error && w.failing_since !== null ? `${status} (${w.last_error})` : status;
  }

  function row(w) {
    return el('tr', { 'data-webhook': w.name },
      el('th', { scope: 'row', class: 'wrap' }, w.name),
      el('td', { class: 'wrap url' }, w.url),
      el('td', { class: 'wrap filter' }, filter(w)),
      el('td', { class: 'state' }, state(w)),
      el('td', { class: 'num seq' }, String(w.delivered_seq)),
      el('td', { class: 'num deliveries' }, String(w.deliveries)),
      el('td', { class: 'num failures' }, String(w.failures)),
      el('td', { class: 'failing' }, time(w.failing_since)),
      el('td', { class: 'wrap answer' }, lastAnswer(w)),
      el('td', { class: 'next' }, time(w.next_attempt_at !== null ? w.next_attempt_at
        : w.retry_at)));
  }

  async function refresh() {
    try {
      const { webhooks } = await api('GET', '/webhooks');
      ui.clear('webhooks');
      $('webhooks-admin').hidden = true;
      const text = JSON.stringify(webhooks);
      if (text === last) return;
      last = text;
      fillTable($('webhook-table'), webhooks.map(row));
      $('webhooks-empty').hidden = webhooks.length > 0;
    } catch (e) {
      if (e.status === 403) { // not an admin's token: nothing to show, nothing wrong
        ui.clear('webhooks');
        last = '';
        fillTable($('webhook-table'), []);
        $('webhooks-empty').hidden = true;
        $('webhooks-admin').hidden = false;
        return;
      }
      ui.report('webhooks', e, 'Webhooks');
    }
  }

  return { refresh };
}
