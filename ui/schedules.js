// The schedules (GET /schedules): each schedule's cron expression or period, its time zone,
// its next run and its last run (in the schedule's zone, its offset shown) and the job that
// run enqueued; pause and resume one (PUT of the schedule as it is, with paused set).

import { api, seg } from './api.js';
import { $, badge, el, fillTable, fmtTimeIn } from './dom.js';

// ui: {act(what, fn, said), report(source, err, what), clear(source)}
export function makeSchedules(ui) {
  let last = '';

  function when(s) {
    return s.cron !== undefined ? s.cron : `every ${s.every_seconds} s`;
  }

  // A run's time as the schedule's zone reads it, with the zone's offset beside it.
  function at(s, epoch) {
    return epoch === null ? '—' : fmtTimeIn(epoch, s.timezone);
  }

  function lastJob(s) {
    if (s.last_job_id === null) return '—';
    return el('a', { href: `#job=${s.last_job_id}` }, `#${s.last_job_id}`);
  }

  // Pause or resume: the schedule as the list showed it, put back with paused set (a PUT
  // replaces the whole schedule; the fields it does not take are ignored).
  function setPaused(s, paused) {
    const body = { ...s, paused };
    const what = `${paused ? 'Pause' : 'Resume'} schedule ${s.name}`;
    ui.act(what, () => api('PUT', `/schedules/${seg(s.name)}`, body),
      (got) => `Schedule ${got.name} ${got.paused ? 'paused' : 'resumed'}.`);
  }

  function row(s) {
    const verb = s.paused ? 'Resume' : 'Pause';
    return el('tr', { 'data-schedule': s.name },
      el('th', { scope: 'row', class: 'wrap' }, s.name),
      el('td', { class: 'when' }, when(s)),
      el('td', { class: 'zone' }, s.timezone),
      el('td', { class: 'next' }, at(s, s.next_run_at)),
      el('td', { class: 'last' }, at(s, s.last_run_at)),
      el('td', { class: 'num job' }, lastJob(s)),
      el('td', { class: 'state' }, badge(s.paused ? 'paused' : 'active')),
      el('td', {}, el('div', { class: 'actions' },
        el('button', {
          type: 'button', data: { key: `s-${verb.toLowerCase()}-${s.name}` },
          'aria-label': `${verb} schedule ${s.name}`, onclick: () => setPaused(s, !s.paused),
        }, verb))));
  }

  async function refresh() {
    try {
      const { schedules } = await api('GET', '/schedules');
      ui.clear('schedules');
      const text = JSON.stringify(schedules);
      if (text === last) return;
      last = text;
      fillTable($('schedule-table'), schedules.map(row));
      $('schedules-empty').hidden = schedules.length > 0;
    } catch (e) {
      ui.report('schedules', e, 'Schedules');
    }
  }

  return { refresh };
}
