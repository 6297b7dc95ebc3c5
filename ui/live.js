// The event stream (GET /events, Server-Sent Events) read with fetch, so that it carries the
// bearer token (EventSource cannot send one). followEvents() calls onEvent(type) for each
// job event and onState(live) when the stream opens or drops; a dropped stream comes back
// with Last-Event-ID after the last event seen (backoff 0.5 s doubling to 10 s). It starts
// at the end of the log: the dashboard wants what happens from now on, not the history.

import { getToken } from './api.js';

const BACKOFF_FIRST_MS = 500;
const BACKOFF_MAX_MS = 10000;
const SKIP_HOPS = 100; // pages of at most 10,000 events passed over to find the end
const NOTHING = '9223372036854775807'; // a job id no job has: its pages are empty

function headers(accept, last) {
  const h = { Accept: accept };
  const token = getToken();
  if (token) h.Authorization = 'Bearer ' + token;
  if (last !== null) h['Last-Event-ID'] = last;
  return h;
}

// The seq of the last event in the log, as a string (seqs may pass 2^53: never a Number),
// found by pages that match nothing but move their cursor on.
async function endOfLog(signal) {
  let after = '0';
  for (let i = 0; i < SKIP_HOPS; i++) {
    const url = new URL(`../events?job=${NOTHING}&limit=1&after=${after}`, document.baseURI);
    const resp = await fetch(url, { headers: headers('application/json', null), cache: 'no-store',
      credentials: 'omit', signal });
    if (!resp.ok) throw new Error('HTTP ' + resp.status);
    const m = /"next"\s*:\s*(\d+)/.exec(await resp.text());
    if (!m || m[1] === after) return after;
    after = m[1];
  }
  return after;
}

export function followEvents(onEvent, onState) {
  let last = null;
  let stopped = false;
  const ctrl = new AbortController();

  function line(ev, text) {
    if (text === '') {
      if (ev.type) {
        if (ev.id !== undefined) last = ev.id;
        onEvent(ev.type);
      }
      return {};
    }
    if (text[0] === ':') return ev; // a keep-alive
    const c = text.indexOf(':');
    const key = c < 0 ? text : text.slice(0, c);
    let value = c < 0 ? '' : text.slice(c + 1);
    if (value[0] === ' ') value = value.slice(1);
    if (key === 'id') ev.id = value;
    else if (key === 'event') ev.type = value;
    return ev;
  }

  async function once() {
    if (last === null) last = await endOfLog(ctrl.signal);
    const resp = await fetch(new URL('../events', document.baseURI), {
      headers: headers('text/event-stream', last), cache: 'no-store', credentials: 'omit',
      signal: ctrl.signal,
    });
    if (!resp.ok || !resp.body) throw new Error('HTTP ' + resp.status);
    onState(true);
    const reader = resp.body.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    let ev = {};
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += decoder.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        ev = line(ev, buf.slice(0, i).replace(/\r$/, ''));
        buf = buf.slice(i + 1);
      }
    }
  }

  (async () => {
    let backoff = BACKOFF_FIRST_MS;
    while (!stopped) {
      const started = Date.now();
      try {
        await once();
      } catch (e) {
        // dropped, refused or stopped: the poll takes over until the stream is back
      }
      if (stopped) return;
      onState(false);
      if (Date.now() - started > BACKOFF_MAX_MS) backoff = BACKOFF_FIRST_MS;
      await new Promise((resolve) => setTimeout(resolve, backoff));
      backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
    }
  })();

  return {
    stop() {
      stopped = true;
      ctrl.abort();
    },
  };
}
