#!/usr/bin/env node
// jobq producer: enqueue COUNT jobs on QUEUE and print their ids, one a line.
//
//     node producer.mjs QUEUE COUNT [PAYLOAD_JSON]
//
// Job i (1..COUNT) gets the payload {"n": i} unless PAYLOAD_JSON is given. The server is
// $JOBQ_URL (default http://127.0.0.1:8080); $JOBQ_TOKEN, when set, is sent as a bearer token.
// Node.js 18 or newer, built-in fetch, no packages.

const URL = (process.env.JOBQ_URL || 'http://127.0.0.1:8080').replace(/\/+$/, '');
const TOKEN = process.env.JOBQ_TOKEN;

async function post(path, body) {
  const headers = { 'content-type': 'application/json' };
  if (TOKEN) headers.authorization = `Bearer ${TOKEN}`;
  const res = await fetch(URL + path, {
    method: 'POST', headers, body: JSON.stringify(body), signal: AbortSignal.timeout(10000),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

const [queue, countArg, payloadArg] = process.argv.slice(2);
if (!queue || !countArg) {
  console.error('usage: producer.mjs QUEUE COUNT [PAYLOAD_JSON]');
  process.exit(2);
}
const fixed = payloadArg === undefined ? undefined : JSON.parse(payloadArg);
for (let i = 1; i <= Number(countArg); i++) {
  const payload = fixed === undefined ? { n: i } : fixed;
  const { status, body } = await post('/jobs', { queue, payload });
  if (status !== 200 && status !== 201) {
    console.error(`enqueue failed: HTTP ${status} ${JSON.stringify(body)}`);
    process.exit(1);
  }
  console.log(body.id);
}
