// The webhook subscriptions (GET /webhooks, an admin read): each one's URL and event filter,
// whether it is enabled (and why not, after a 410), how far it has delivered, its deliveries
// and failures, and, while it fails, since when, the events it set aside, the last answer and
// the next attempt. An admin creates or replaces one with the form (its generated secret is
// shown once, under the form), edits, enables or disables one (a PUT of it as it is, with
// enabled set: a PUT without a secret keeps the secret and the delivery state) and deletes
// one. A token that is not an admin's sees a line saying so instead.

import { api, seg } from './api.js';
import { $, badge, confirmDialog, el, fillTable, fmtTime } from './dom.js';

// ui: {act(what, fn, said), report(source, err, what), clear(source)}
export function makeWebhooks(ui) {
  let last = '';
  const askDelete = confirmDialog('webhook-delete', 'webhook-delete-name', (name) => {
    ui.act(`Delete webhook ${name}`, () => api('DELETE', `/webhooks/${seg(name)}`),
      `Webhook ${name} deleted.`);
  });

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

  // The subscription as PUT takes it (null filters left out: every type, every queue).
  function putBody(w) {
    const b = { url: w.url, ordered: w.ordered, enabled: w.enabled };
    if (w.types !== null) b.types = w.types;
    if (w.queues !== null) b.queues = w.queues;
    return b;
  }

  function setEnabled(w, enabled) {
    const what = `${enabled ? 'Enable' : 'Disable'} webhook ${w.name}`;
    ui.act(what, () => api('PUT', `/webhooks/${seg(w.name)}`, putBody({ ...w, enabled })),
      (got) => `Webhook ${got.name} ${got.enabled ? 'enabled' : 'disabled'}.`);
  }

  // The form shows a subscription to change.
  function edit(w) {
    $('w-name').value = w.name;
    $('w-url').value = w.url;
    $('w-types').value = w.types === null ? '' : w.types.join(', ');
    $('w-queues').value = w.queues === null ? '' : w.queues.join(', ');
    $('w-ordered').checked = w.ordered;
    $('w-enabled').checked = w.enabled;
    $('w-url').focus();
  }

  // A row's button: its text, and "<Verb> webhook <name>" as its accessible name.
  function button(w, verb, label, onclick, cls) {
    return el('button', {
      type: 'button', class: cls, data: { key: `w-${verb.toLowerCase()}-${w.name}` },
      'aria-label': `${verb} webhook ${w.name}`, onclick,
    }, label);
  }

  function actions(w) {
    return el('div', { class: 'actions' },
      button(w, 'Edit', 'Edit', () => edit(w)),
      w.enabled ? button(w, 'Disable', 'Disable', () => setEnabled(w, false))
        : button(w, 'Enable', 'Enable', () => setEnabled(w, true)),
      button(w, 'Delete', 'Delete…', () => askDelete(w.name), 'danger'));
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
        : w.retry_at)),
      el('td', {}, actions(w)));
  }

  async function refresh() {
    try {
      const { webhooks } = await api('GET', '/webhooks');
      ui.clear('webhooks');
      $('webhooks-admin').hidden = true;
      $('webhook-form').hidden = false;
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
        $('webhook-form').hidden = true;
        return;
      }
      ui.report('webhooks', e, 'Webhooks');
    }
  }

  // A comma-separated list of the form as an array; empty: left out (every one).
  function list(id) {
    const items = $(id).value.split(',').map((x) => x.trim()).filter((x) => x !== '');
    return items.length ? items : undefined;
  }

  // The secret a PUT generated, shown once (the server never shows it again).
  function showSecret(w) {
    $('webhook-secret-value').textContent = w.secret || '';
    $('webhook-secret-name').textContent = w.name;
    $('webhook-secret').hidden = !w.secret;
  }

  $('webhook-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const name = $('w-name').value;
    const body = {
      url: $('w-url').value, types: list('w-types'), queues: list('w-queues'),
      ordered: $('w-ordered').checked, enabled: $('w-enabled').checked,
    };
    ui.act(`Set webhook ${name}`, async () => {
      const got = await api('PUT', `/webhooks/${seg(name)}`, body);
      showSecret(got);
      return got;
    }, (w) => (w.secret ? `Webhook ${w.name} created: copy its secret now, it is shown once.`
      : `Webhook ${w.name} saved.`));
  });
  $('webhook-form').addEventListener('reset', () => $('w-name').focus());

  return { refresh, busy: () => $('webhook-delete-dialog').open };
}
