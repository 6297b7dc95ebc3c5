// The jobq dashboard: queues with their counts, the limits, the schedules, the throughput
// chart, the job list and a job's detail, kept up to date without losing the user's place: the
// job list and the queue counts refresh when the event stream (GET /events) tells of a change,
// and every few seconds only while the stream is down; the limits, schedules and chart every
// few seconds. The
// view (filters and the open job, never the token) is kept in the URL's fragment so a reload
// comes back to it.

import { api, getToken, onUnauthorized, seg, setToken } from './api.js';
import { drawChart } from './chart.js';
import { $, badge, el, fillTable, fmtAge, fmtTime } from './dom.js';
import { makeJobs } from './jobs.js';
import { followEvents } from './live.js';
import { makeLimits } from './limits.js';
import { makeSchedules } from './schedules.js';
import { makeWebhooks } from './webhooks.js';

const REFRESH_MS = 3000;
const EVENT_DELAY_MS = 250; // events coming together make one refresh
const LIMITS = [25, 50, 100, 500];

// ----- the view, in the fragment: #queue=a&status=failed&limit=50&job=42 ----------------
const view = { queue: '', status: '', limit: 50, cursor: null, back: [], next: null, job: null };

function loadView() {
  const p = new URLSearchParams(location.hash.slice(1));
  view.queue = p.get('queue') || '';
  view.status = p.get('status') || '';
  const limit = Number(p.get('limit'));
  view.limit = LIMITS.includes(limit) ? limit : 50;
  const job = Number(p.get('job'));
  view.job = Number.isInteger(job) && job > 0 ? job : null;
}

function saveView() {
  const p = new URLSearchParams();
  if (view.queue) p.set('queue', view.queue);
  if (view.status) p.set('status', view.status);
  if (view.limit !== 50) p.set('limit', String(view.limit));
  if (view.job) p.set('job', String(view.job));
  const hash = p.toString();
  history.replaceState(null, '', hash ? '#' + hash : location.pathname);
}

// ----- errors and notices -----------------------------------------------------------------
// Errors are kept per source ('queues', 'jobs', an action...): a refresh that works again
// clears its own; an action's error stays until dismissed or the next action.
const errors = new Map();

function renderErrors() {
  $('error-list').replaceChildren(...[...errors.values()].map((m) => el('li', {}, m)));
  $('error').hidden = errors.size === 0;
}

function report(source, err, what) {
  const where = err.status ? ` (${err.code}, HTTP ${err.status})` : '';
  errors.set(source, `${what}: ${err.message}${where}`);
  renderErrors();
}

function clear(source) {
  if (errors.delete(source)) renderErrors();
}

let noticeTimer = 0;
function notice(text) {
  $('notice').textContent = text;
  $('notice').hidden = false;
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => { $('notice').hidden = true; }, 8000);
}

// Run an action (a button's): `what` names it in an error ("Pause queue a: ..."), `said` is
// the notice on success (a string, or a function of the answer). Then refresh.
async function act(what, fn, said) {
  clear('action');
  try {
    const answer = await fn();
    notice(typeof said === 'function' ? said(answer) : said);
  } catch (e) {
    report('action', e, what);
  }
  await refresh();
}

// ----- queues -------------------------------------------------------------------------------
let lastQueues = '';

function queueRow(q) {
  const paused = q.paused === true;
  const n = (v) => el('td', { class: 'num' }, v === undefined ? '—' : v);
  const key = (what) => ({ key: `q-${what}-${q.name}` });
  return el('tr', {},
    el('th', { scope: 'row' }, el('button', {
      type: 'button', class: 'link', data: key('show'),
      'aria-label': `Show the jobs of queue ${q.name}`,
    }, q.name)),
    el('td', {}, badge(paused ? 'paused' : 'active')),
    n(q.queued), n(q.running), n(q.blocked), n(q.succeeded), n(q.failed), n(q.cancelled),
    el('td', { class: 'num' }, fmtAge(q.oldest_queued_age_seconds)),
    el('td', {}, el('div', { class: 'actions' },
      el('button', {
        type: 'button', data: key(paused ? 'resume' : 'pause'),
        'aria-label': `${paused ? 'Resume' : 'Pause'} queue ${q.name}`,
        onclick: () => act(`${paused ? 'Resume' : 'Pause'} queue ${q.name}`,
          () => api('POST', `/queues/${seg(q.name)}/${paused ? 'resume' : 'pause'}`),
          `Queue ${q.name} ${paused ? 'resumed' : 'paused'}.`),
      }, paused ? 'Resume' : 'Pause'),
      el('button', {
        type: 'button', class: 'danger', data: key('purge'),
        'aria-label': `Purge jobs of queue ${q.name}`, onclick: () => askPurge(q.name),
      }, 'Purge…'))));
}

async function loadQueues() {
  try {
    const { queues } = await api('GET', '/queues');
    clear('queues');
    const text = JSON.stringify(queues);
    if (text === lastQueues) return;
    lastQueues = text;
    fillTable($('queue-table'), queues.map(queueRow));
    $('queues-empty').hidden = queues.length > 0;
    $('queue-names').replaceChildren(...queues.map((q) => el('option', { value: q.name })));
  } catch (e) {
    report('queues', e, 'Queues');
  }
}

$('queue-table').addEventListener('click', (ev) => {
  const b = ev.target.closest('button[data-key^="q-show-"]');
  if (b) jobs.filterQueue(b.dataset.key.slice('q-show-'.length));
});

// ----- the chart ----------------------------------------------------------------------------
let lastChart = null;

async function loadChart() {
  const note = $('chart-note');
  try {
    lastChart = await api('GET', '/stats/throughput');
    drawChart($('chart'), $('chart-summary'), lastChart);
    note.hidden = true;
  } catch (e) {
    note.textContent = `No throughput data: ${e.message}` + (e.status ? ` (HTTP ${e.status})` : '');
    note.hidden = false;
  }
}

new ResizeObserver(() => {
  if (lastChart) drawChart($('chart'), $('chart-summary'), lastChart);
}).observe($('chart'));

// ----- purge --------------------------------------------------------------------------------
let purgeQueue = '';
let purgeFrom = null;

function askPurge(name) {
  purgeQueue = name;
  purgeFrom = document.activeElement;
  $('purge-queue').textContent = name;
  $('purge-form').reset();
  $('purge-dialog').showModal();
}

function endPurge() {
  $('purge-dialog').close();
  if (purgeFrom && purgeFrom.isConnected) purgeFrom.focus();
}

$('purge-cancel').addEventListener('click', endPurge);
$('purge-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const status = $('purge-status').value;
  const name = purgeQueue;
  endPurge();
  act(`Purge ${status} jobs of queue ${name}`,
    () => api('DELETE', `/queues/${seg(name)}/jobs?status=${encodeURIComponent(status)}`),
    (r) => `Deleted ${r.deleted} ${status} job${r.deleted === 1 ? '' : 's'} of queue ${name}.` +
      (r.more ? ' More remain: purge again to go on.' : ''));
});

// ----- the token ----------------------------------------------------------------------------
let tokenDone = null;

function askToken(why) {
  $('token-why').textContent = why || 'This jobqd needs an API token.';
  $('token-form').reset();
  if (!$('token-dialog').open) $('token-dialog').showModal();
  $('token-input').focus();
  return new Promise((resolve) => { tokenDone = resolve; });
}

$('token-dialog').addEventListener('cancel', (ev) => ev.preventDefault()); // nothing works without
$('token-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  setToken($('token-input').value.trim());
  $('token-input').value = '';
  $('token-dialog').close();
  $('change-token').hidden = false;
  if (tokenDone) tokenDone();
  tokenDone = null;
});
$('change-token').addEventListener('click', async () => {
  setToken('');
  await askToken('Enter another token.');
  refresh();
});
onUnauthorized(askToken);

// ----- refreshing ---------------------------------------------------------------------------
const jobs = makeJobs(view, { act, report, clear, saveView });
const limits = makeLimits({ act, report, clear });
const schedules = makeSchedules({ act, report, clear });
const webhooks = makeWebhooks({ act, report, clear });
let running = null; // the refresh under way
let again = null; // the one that starts after it (asked for while it ran)
let live = false; // the event stream is open
let eventTimer = null;

// Refresh what the page shows: everything, or (polled) what the event stream does not tell
// of while it is open (everything again while an error is shown, until it goes away).
function refresh(polled) {
  if (running) {
    again = again || running.then(() => refresh(polled));
    return again;
  }
  again = null;
  const parts = [limits.refresh(), schedules.refresh(), webhooks.refresh(), loadChart()];
  if (!(polled === true && live && errors.size === 0)) parts.push(loadQueues(), jobs.refresh());
  running = Promise.all(parts).finally(() => {
    running = null;
    $('status').textContent = `Updated ${fmtTime(Date.now() / 1000)}` +
      (!$('auto').checked ? ', auto-refresh off'
        : live ? ', live (following the event stream)'
          : ', refreshing every 3 s (the event stream is not open)');
  });
  return running;
}

function quiet() {
  return !$('auto').checked || document.hidden || $('purge-dialog').open || limits.busy() ||
    webhooks.busy();
}

// A job changed: the job list and the queue counts, once for events that come together.
function refreshLive() {
  eventTimer = null;
  if (quiet()) return;
  Promise.all([loadQueues(), jobs.refresh()]).finally(() => {
    $('status').textContent = `Updated ${fmtTime(Date.now() / 1000)}, live (following the event stream)`;
  });
}

function tick() {
  if (!quiet()) refresh(true);
  setTimeout(tick, REFRESH_MS);
}

followEvents(() => {
  if (!eventTimer) eventTimer = setTimeout(refreshLive, EVENT_DELAY_MS);
}, (open) => {
  if (open === live) return;
  live = open;
  if (!quiet()) refresh(); // catch up on what happened while it was down, and say so
});

$('refresh').addEventListener('click', () => refresh());
$('auto').addEventListener('change', () => refresh());
$('error-close').addEventListener('click', () => {
  errors.clear();
  renderErrors();
});

// A fragment typed in, or the back button: show that view.
window.addEventListener('hashchange', () => {
  loadView();
  jobs.sync();
  refresh();
});

loadView();
$('change-token').hidden = !getToken();
jobs.sync();
refresh().then(() => setTimeout(tick, REFRESH_MS));
