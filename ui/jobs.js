// The job list (filters, cursor paging) and one job's detail (fields, payload, result,
// progress, errors, its workflow: parents and children with their statuses, attempt history,
// retry and cancel).

import { api, ApiError } from './api.js';
import { $, badge, el, fillTable, fmtJSON, fmtTime, replaceKeepFocus } from './dom.js';

const RETRYABLE = ['failed', 'cancelled'];
const CANCELLABLE = ['queued', 'running', 'blocked'];

// view: {queue, status, limit, cursor, back: [cursors of the pages before], next, job}
// ui: {act(what, fn, said), report(source, err, what), clear(source), saveView()}
export function makeJobs(view, ui) {
  let lastList = '';
  let lastDetail = '';

  function listPath() {
    const q = new URLSearchParams();
    if (view.queue) q.set('queue', view.queue);
    if (view.status) q.set('status', view.status);
    q.set('limit', String(view.limit));
    if (view.cursor) q.set('cursor', view.cursor);
    return '/jobs?' + q.toString();
  }

  function jobRow(j) {
    const err = j.error_code ? j.error_code + (j.error_detail ? ': ' + j.error_detail : '') : '';
    return el('tr', { class: view.job === j.id ? 'selected' : null },
      el('td', {}, el('button', {
        type: 'button', class: 'link', data: { key: 'job-' + j.id, job: j.id },
        'aria-label': `Open job ${j.id}`,
      }, '#' + j.id)),
      el('td', {}, j.queue),
      el('td', {}, badge(j.status)),
      el('td', { class: 'num' }, `${j.attempts}/${j.max_attempts}`),
      el('td', { class: 'num' }, j.priority),
      el('td', {}, fmtTime(j.created_at)),
      el('td', {}, fmtTime(j.run_at)),
      el('td', { class: 'wrap' }, err));
  }

  function renderList(page) {
    const text = JSON.stringify([page, view.job]);
    if (text === lastList) return; // unchanged: leave the DOM (and the user's place) alone
    lastList = text;
    fillTable($('job-table'), page.jobs.map(jobRow));
    $('jobs-empty').hidden = page.jobs.length > 0;
    view.next = page.next_cursor;
    $('p-next').disabled = !view.next;
    $('p-prev').disabled = view.back.length === 0;
    $('p-first').disabled = !view.cursor;
    const n = view.back.length + 1;
    $('p-info').textContent = `Page ${n}, ${page.jobs.length} job${page.jobs.length === 1 ? '' : 's'}`;
  }

  async function loadList() {
    try {
      renderList(await api('GET', listPath()));
      ui.clear('jobs');
    } catch (e) {
      ui.report('jobs', e, 'Job list');
    }
  }

  function field(dt, dd) {
    return [el('dt', {}, dt), el('dd', {}, dd === null || dd === undefined || dd === '' ? '—' : dd)];
  }

  // One parent or child: a link to it and its status (unknown when it no longer exists).
  function linkItem(kind, id, status) {
    return el('li', { data: { link: kind + '-' + id } }, el('button', {
      type: 'button', class: 'link', data: { key: kind + '-' + id, job: id },
      'aria-label': `Open ${kind === 'dep' ? 'parent' : 'child'} job ${id}`,
    }, '#' + id), ' ', status ? badge(status) : el('span', { class: 'badge' }, 'deleted'));
  }

  // "2 succeeded, 1 running" for the statuses of links, in the order statuses first appear.
  function counts(links) {
    const n = new Map();
    for (const l of links) n.set(l.status, (n.get(l.status) || 0) + 1);
    return [...n].map(([st, k]) => `${k} ${st}`).join(', ');
  }

  // The workflow at a glance: its parents (depends_on, with their statuses) and children.
  function renderFlow(j, parents, kids) {
    const ids = Array.isArray(j.depends_on) ? j.depends_on : [];
    const known = new Map((parents ? parents.dependencies : []).map((d) => [d.id, d.status]));
    const children = kids ? kids.dependents : [];
    $('d-flow').hidden = ids.length === 0 && children.length === 0;
    $('d-deps-box').hidden = ids.length === 0;
    $('d-kids-box').hidden = children.length === 0;
    replaceKeepFocus($('d-deps'), ids.map((id) => linkItem('dep', id, known.get(id))));
    replaceKeepFocus($('d-kids'), children.map((k) => linkItem('kid', k.id, k.status)));
    $('d-kids-more').hidden = !(kids && kids.more);
    const parts = [];
    if (ids.length) {
      const ps = ids.map((id) => ({ status: known.get(id) || 'deleted' }));
      parts.push(`Parents: ${counts(ps)}` + (j.status === 'blocked' ? ' (waiting)' : ''));
      parts.push(`if one fails: ${j.on_dependency_failure === 'run' ? 'run anyway' : 'cancel'}`);
    }
    if (children.length) parts.push(`Children: ${counts(children)}${kids.more ? ' and more' : ''}`);
    $('d-flow-sum').textContent = parts.join(' · ');
  }

  function renderAttempts(attempts, note) {
    const rows = (attempts || []).map((a) => el('tr', {},
      el('td', { class: 'num' }, a.attempt),
      el('td', {}, a.worker_id || '—'),
      el('td', {}, fmtTime(a.claimed_at)),
      el('td', {}, a.ended_at === null ? 'running' : fmtTime(a.ended_at)),
      el('td', {}, badge(a.outcome)),
      el('td', { class: 'wrap' },
        a.error_code ? a.error_code + (a.error_detail ? ': ' + a.error_detail : '') : '')));
    fillTable($('d-attempts'), rows);
    const msg = note || (attempts && attempts.length === 0 ? 'Never claimed yet.' : '');
    $('d-attempts-note').textContent = msg;
    $('d-attempts-note').hidden = !msg;
  }

  function renderDetail(j, attempts, note, parents, kids) {
    const text = JSON.stringify([j, attempts, note, parents, kids]);
    if (text === lastDetail) return;
    lastDetail = text;
    $('detail-h').textContent = `Job #${j.id}`;
    $('d-fields').replaceChildren(
      ...field('Status', badge(j.status)),
      ...field('Queue', j.queue),
      ...field('Attempts', `${j.attempts} of ${j.max_attempts}`),
      ...field('Priority', String(j.priority)),
      ...field('Created', fmtTime(j.created_at)),
      ...field('Run at', fmtTime(j.run_at)),
      ...field('Claimed', fmtTime(j.claimed_at)),
      ...field('Lease expires', fmtTime(j.lease_expires_at)),
      ...field('Worker', j.worker_id),
      ...field('Finished', fmtTime(j.finished_at)),
      ...field('Fencing token', String(j.fencing_token)),
      ...field('Requires', (j.requires || []).join(', ')),
      ...field('Idempotency key', j.idempotency_key),
      ...field('If a parent fails', (j.depends_on || []).length ? j.on_dependency_failure : ''));
    $('d-payload').textContent = fmtJSON(j.payload);
    $('d-result').textContent = fmtJSON(j.result);
    $('d-progress').textContent = fmtJSON(j.progress);
    $('d-error').textContent = j.error_code
      ? j.error_code + (j.error_detail ? '\n' + j.error_detail : '') : '—';
    renderFlow(j, parents, kids);
    $('d-retry').disabled = !RETRYABLE.includes(j.status);
    $('d-cancel').disabled = !CANCELLABLE.includes(j.status);
    renderAttempts(attempts, note);
  }

  async function loadDetail() {
    const id = view.job;
    if (!id) return;
    try {
      const [j, hist, parents, kids] = await Promise.all([
        api('GET', `/jobs/${id}`),
        api('GET', `/jobs/${id}/attempts`).catch((e) => e),
        api('GET', `/jobs/${id}/dependencies`).catch(() => null),
        api('GET', `/jobs/${id}/dependents`).catch(() => null),
      ]);
      if (view.job !== id) return; // another job was opened meanwhile
      let note = '';
      if (hist instanceof ApiError) note = `Attempt history unavailable: ${hist.message}`;
      else if (hist instanceof Error) throw hist;
      renderDetail(j, hist instanceof ApiError ? [] : hist.attempts, note, parents, kids);
      ui.clear('detail');
    } catch (e) {
      ui.report('detail', e, `Job ${id}`);
    }
  }

  function showPanel(shown) {
    $('detail').hidden = !shown;
    document.querySelector('main').classList.toggle('with-detail', shown);
    lastList = '';
    lastDetail = '';
  }

  function open(id, focus) {
    view.job = id;
    showPanel(true);
    ui.saveView();
    const done = Promise.all([loadDetail(), loadList()]);
    if (focus) {
      $('detail-h').focus({ preventScroll: true });
      $('detail').scrollIntoView({ block: 'nearest' });
    }
    return done;
  }

  function close() {
    const id = view.job;
    view.job = null;
    showPanel(false);
    ui.saveView();
    loadList().then(() => {
      const back = document.querySelector(`[data-key="job-${id}"]`);
      (back || $('jobs-h')).focus();
    });
  }

  function go(cursor, back) {
    view.cursor = cursor;
    view.back = back;
    lastList = '';
    return loadList();
  }

  // Wiring: the filter form, the pager, job links anywhere, the detail's buttons.
  $('filters').addEventListener('submit', (ev) => {
    ev.preventDefault();
    view.queue = $('f-queue').value.trim();
    view.status = $('f-status').value;
    view.limit = Number($('f-limit').value) || 50;
    ui.saveView();
    go(null, []);
  });
  $('f-clear').addEventListener('click', () => {
    $('f-queue').value = '';
    $('f-status').value = '';
    $('filters').requestSubmit();
  });
  $('p-first').addEventListener('click', () => go(null, []));
  $('p-prev').addEventListener('click', () => go(view.back.at(-1), view.back.slice(0, -1)));
  $('p-next').addEventListener('click', () => view.next && go(view.next, [...view.back, view.cursor]));
  document.addEventListener('click', (ev) => {
    const b = ev.target.closest('button[data-job]');
    if (b) open(Number(b.dataset.job), true);
  });
  $('d-close').addEventListener('click', close);
  $('d-retry').addEventListener('click', () => {
    const id = view.job;
    ui.act(`Retry job ${id}`, () => api('POST', `/jobs/${id}/retry`), `Job ${id} queued again.`);
  });
  $('d-cancel').addEventListener('click', () => {
    const id = view.job;
    ui.act(`Cancel job ${id}`, () => api('POST', `/jobs/${id}/cancel`), `Job ${id} cancelled.`);
  });

  function showFilters() {
    $('f-queue').value = view.queue;
    $('f-status').value = view.status;
    $('f-limit').value = String(view.limit);
  }

  return {
    refresh: () => Promise.all([loadList(), loadDetail()]),
    // Show the view as it now is (at start, or the fragment was edited): its filters, the
    // first page, its job. The next refresh loads them.
    sync() {
      showFilters();
      view.cursor = null;
      view.back = [];
      showPanel(Boolean(view.job));
    },
    filterQueue(name) {
      view.queue = name;
      showFilters();
      ui.saveView();
      go(null, []).then(() => $('jobs').focus());
    },
  };
}
