#!/usr/bin/env node
// jobq worker: claim jobs from QUEUE with a long poll, run them, complete them.
//
//     node worker.mjs QUEUE [MAX_JOBS]
//
// The job: sleep payload.sleep seconds (default 0), then answer {"doubled": 2 * payload.n}.
// A payload whose n is not a number fails the job with error_code "work_error".
//
// Leases, done right:
// - setInterval heartbeats every lease/3 seconds while the job runs;
// - a 409 lease_lost (on a heartbeat or on complete) means the job is someone else's now:
//   stop working on it (the AbortController) and drop it, never complete it;
// - complete (and fail) are retried after a network error or a 5xx, a few times with
//   backoff, with the same lease_token: if the first answer was lost, the repeat gets 200.
//
// Settings (environment): JOBQ_URL (default http://127.0.0.1:8080), JOBQ_TOKEN (bearer
// token), JOBQ_LEASE_SECONDS (30), JOBQ_WAIT_SECONDS (long poll, 20), JOBQ_IDLE_POLLS (exit
// after this many empty polls in a row; 0 = never), JOBQ_HEARTBEAT (1; 0 turns heartbeats
// off, to show a lease being lost). Exits after MAX_JOBS jobs (0 = no limit), or on
// SIGTERM/SIGINT (after the job in hand). Node.js 18 or newer, built-in fetch, no packages.
import os from 'node:os';

const URL = (process.env.JOBQ_URL || 'http://127.0.0.1:8080').replace(/\/+$/, '');
const TOKEN = process.env.JOBQ_TOKEN;
const LEASE = Number(process.env.JOBQ_LEASE_SECONDS || 30);
const WAIT = Number(process.env.JOBQ_WAIT_SECONDS || 20);
const IDLE_POLLS = Number(process.env.JOBQ_IDLE_POLLS || 0);
const HEARTBEAT = process.env.JOBQ_HEARTBEAT !== '0';
const WORKER_ID = `node-${os.hostname()}-${process.pid}`;
const RETRIES = 5; // tries of complete/fail before giving up (the lease expires: redelivery)

const log = (msg) => console.error(`worker: ${msg}`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// POST body as JSON; resolves to {status, body}. Rejects on a network error or after
// timeoutMs, or when `stop` (an AbortSignal) fires.
async function post(path, body, timeoutMs, stop) {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(new Error('timed out')), timeoutMs);
  const onStop = () => ctl.abort(new Error('stopped'));
  stop?.addEventListener('abort', onStop);
  try {
    const headers = { 'content-type': 'application/json' };
    if (TOKEN) headers.authorization = `Bearer ${TOKEN}`;
    const res = await fetch(URL + path, {
      method: 'POST', headers, body: JSON.stringify(body), signal: ctl.signal,
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  } finally {
    clearTimeout(timer);
    stop?.removeEventListener('abort', onStop);
  }
}

class LeaseLost extends Error {}

// The job itself. Rejects with LeaseLost as soon as `lost` (an AbortSignal) fires.
async function work(payload, lost) {
  await new Promise((resolve, reject) => {
    const t = setTimeout(resolve, 1000 * Number(payload.sleep || 0));
    lost.addEventListener('abort', () => { clearTimeout(t); reject(new LeaseLost()); });
  });
  if (typeof payload.n !== 'number') throw new Error(`payload.n is not a number: ${payload.n}`);
  return { doubled: payload.n * 2 };
}

// POST /jobs/{id}/complete or /fail with the job's lease_token, retrying network errors and
// 5xx with backoff, the same token every time. Resolves to true when the server took it.
async function finish(job, action, body) {
  const path = `/jobs/${job.id}/${action}`;
  let delay = 500;
  for (let attempt = 1; attempt <= RETRIES; attempt++) {
    let status, answer;
    try {
      ({ status, body: answer } = await post(path, { ...body, lease_token: job.lease_token }, 10000));
    } catch (e) {
      answer = e.cause?.message || e.message;
    }
    if (status === 200) return true;
    if (status === 409) {
      log(`job ${job.id}: lease lost on ${action}, dropping it`);
      return false;
    }
    if (status !== undefined && status < 500) {
      log(`job ${job.id}: ${action} answered ${status} ${JSON.stringify(answer)}`);
      return false;
    }
    log(`job ${job.id}: ${action} failed (${status ?? answer}), retry ${attempt} with the same token`);
    await sleep(delay);
    delay *= 2;
  }
  log(`job ${job.id}: gave up on ${action}; the lease will expire and the job be retried`);
  return false;
}

async function handle(job) {
  const lost = new AbortController();
  let beating = false;
  const every = (LEASE * 1000) / 3;
  const timer = HEARTBEAT && setInterval(async () => {
    if (beating || lost.signal.aborted) return; // one heartbeat in flight at a time
    beating = true;
    try {
      const { status, body } = await post(`/jobs/${job.id}/heartbeat`,
        { lease_token: job.lease_token }, every);
      if (status === 409) {
        log(`job ${job.id}: lease lost on heartbeat, dropping it`);
        lost.abort();
      } else if (status !== 200) {
        log(`job ${job.id}: heartbeat answered ${status} ${JSON.stringify(body)}`);
      }
    } catch (e) {
      log(`job ${job.id}: heartbeat failed (${e.message}), trying again`);
    } finally {
      beating = false;
    }
  }, every);
  let result;
  try {
    result = await work(job.payload && typeof job.payload === 'object' ? job.payload : {}, lost.signal);
  } catch (e) {
    clearInterval(timer);
    if (e instanceof LeaseLost) return;
    if (await finish(job, 'fail', { error_code: 'work_error', error_detail: e.message })) {
      log(`job ${job.id}: failed: ${e.message}`);
    }
    return;
  }
  clearInterval(timer);
  if (lost.signal.aborted) return;
  if (await finish(job, 'complete', { result })) {
    log(`job ${job.id}: completed ${JSON.stringify(result)}`);
  }
}

const [queue, maxArg] = process.argv.slice(2);
if (!queue) {
  console.error('usage: worker.mjs QUEUE [MAX_JOBS]');
  process.exit(2);
}
const maxJobs = Number(maxArg || 0);
const stop = new AbortController(); // SIGTERM: cut the long poll short, finish the job in hand
process.on('SIGTERM', () => stop.abort());
process.on('SIGINT', () => stop.abort());

const claim = { worker_id: WORKER_ID, queue, lease_seconds: LEASE, wait_seconds: WAIT };
let done = 0;
let idle = 0;
while (!stop.signal.aborted && (maxJobs === 0 || done < maxJobs)) {
  let status, body;
  try {
    ({ status, body } = await post('/claim', claim, (WAIT + 10) * 1000, stop.signal));
  } catch (e) {
    if (stop.signal.aborted) break; // a claim cut short is simply redelivered
    log(`claim failed (${e.cause?.message || e.message}), trying again in 1s`);
    await sleep(1000);
    continue;
  }
  if (status !== 200) {
    log(`claim answered ${status} ${JSON.stringify(body)}, trying again in 1s`);
    await sleep(1000);
    continue;
  }
  if (body.jobs.length === 0) {
    if (IDLE_POLLS && ++idle >= IDLE_POLLS) {
      log('idle, exiting');
      break;
    }
    continue;
  }
  idle = 0;
  await handle(body.jobs[0]);
  done++;
}
