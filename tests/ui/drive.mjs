// Drives the dashboard in headless Chromium (playwright-core, pinned in package.json) for
// tests/blackbox/test_ui.py, which starts jobqd and prepares the jobs first.
//
//   node drive.mjs SCENARIO BASE_URL ARTIFACT_DIR JSON_ARGS
//
// SCENARIO is one of the functions in `scenarios` below; JSON_ARGS carries what it needs (job
// ids, queue names, tokens). Screenshots go to ARTIFACT_DIR/<scenario>-<step>.png. Exits 0 when
// every check held, 1 with the failed check on stderr otherwise. Every wait is bounded.
// Chromium: $JOBQ_CHROMIUM, else /usr/bin/chromium (Debian's package, scripts/deps.sh).

import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const WAIT = 15000; // ms for anything the page should show (a refresh is every 3 s)
const [scenario, base, artifacts, argText] = process.argv.slice(2);
const args = JSON.parse(argText || '{}');

function check(cond, what) {
  if (!cond) throw new Error('check failed: ' + what);
}

// The browser, with one page whose console errors, page errors and CSP violations are kept.
async function open(viewport) {
  const exe = process.env.JOBQ_CHROMIUM || '/usr/bin/chromium';
  check(existsSync(exe), `${exe} exists (install chromium: scripts/deps.sh)`);
  // As root (containers, CI) Chromium's sandbox cannot start: --no-sandbox is then needed.
  const root = process.getuid && process.getuid() === 0;
  const browser = await chromium.launch({
    executablePath: exe, headless: true,
    args: [...(root ? ['--no-sandbox'] : []), '--disable-dev-shm-usage'],
  });
  const context = await browser.newContext({ viewport: viewport || { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.problems = [];
  page.requests = [];
  page.on('pageerror', (e) => page.problems.push('page error: ' + e.message));
  page.on('console', (m) => {
    const text = m.text();
    // A refused API call (401, 403, 404, 503) is logged by Chromium as a failed resource
    // load: that is the page's business, shown in its own error list.
    if (m.type() === 'error' && !/Failed to load resource/.test(text))
      page.problems.push('console error: ' + text);
  });
  page.on('request', (r) => page.requests.push(r));
  return { browser, page };
}

async function shot(page, step) {
  mkdirSync(artifacts, { recursive: true });
  await page.screenshot({ path: join(artifacts, `${scenario}-${step}.png`), fullPage: true });
}

const button = (page, name) => page.getByRole('button', { name, exact: true });

async function visible(locator, what) {
  try {
    await locator.first().waitFor({ state: 'visible', timeout: WAIT });
  } catch (e) {
    throw new Error(`not visible within ${WAIT} ms: ${what}`);
  }
}

async function text(page, selector, re, what) {
  try {
    await page.waitForFunction(([sel, src]) => {
      const n = document.querySelector(sel);
      return n && !n.closest('[hidden]') && new RegExp(src).test(n.textContent);
    }, [selector, re.source], { timeout: WAIT });
  } catch (e) {
    const now = await page.locator(selector).first().textContent().catch(() => '(none)');
    throw new Error(`${what}: ${selector} never matched ${re} (it says ${JSON.stringify(now)})`);
  }
}

async function api(method, path, body, token) {
  const headers = { 'Content-Type': 'application/json' };
  if (token) headers.Authorization = 'Bearer ' + token;
  const r = await fetch(base + path, { method, headers, body: body && JSON.stringify(body) });
  check(r.ok, `${method} ${path} answered ${r.status}`);
  return r.json();
}

// No horizontal scrolling of the page itself (wide tables scroll in their own box).
async function noOverflow(page, what) {
  const [scroll, client] = await page.evaluate(() =>
    [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
  check(scroll <= client, `${what}: page ${scroll}px wide in a ${client}px viewport`);
}

// A focused job link keeps the focus while an automatic refresh redraws the list around it
// (a job enqueued meanwhile shows up).
async function focusSurvivesRefresh(page, locator) {
  await locator.focus();
  const key = await locator.getAttribute('data-key');
  const more = await api('POST', '/jobs', { queue: args.queue, payload: { later: true } });
  await visible(button(page, `Open job ${more.id}`), 'a job enqueued while a link has the focus');
  const now = await page.evaluate(() => document.activeElement && document.activeElement.dataset.key);
  check(now === key, `focus on ${key} after a refresh, found ${now}`);
}

const pathOf = (r) => new URL(r.url()).pathname;

const scenarios = {
  // The page follows GET /events: it says so, polls neither the job list nor the counts while
  // the stream is open, and a job enqueued elsewhere shows up through the stream. With the
  // stream refused it falls back to polling every 3 s, and says that too.
  async live({ page }) {
    await page.goto(base + '/ui/');
    await visible(button(page, `Show the jobs of queue ${args.queue}`), 'the queue row');
    await text(page, '#status', /live \(following the event stream\)/, 'the page is live');
    check(page.requests.some((r) => pathOf(r) === '/events' &&
      r.headers().accept === 'text/event-stream'), 'a GET /events stream was opened');
    const lists = () => page.requests.filter((r) => ['/jobs', '/queues'].includes(pathOf(r))).length;
    const quiet = lists();
    await page.waitForTimeout(4000); // more than one poll period, and no job changed
    check(lists() === quiet, `no job list or counts polled while live (${lists() - quiet} seen)`);
    const late = await api('POST', '/jobs', { queue: args.queue, payload: { live: true } });
    await visible(button(page, `Open job ${late.id}`), 'a job enqueued elsewhere, through the stream');
    await shot(page, 'live');

    await page.route(/\/events/, (route) => route.abort());
    await page.reload();
    await text(page, '#status', /refreshing every 3 s \(the event stream is not open\)/,
      'the fallback poll');
    const polled = await api('POST', '/jobs', { queue: args.queue, payload: { polled: true } });
    await visible(button(page, `Open job ${polled.id}`), 'a job enqueued elsewhere, by the poll');
  },

  // Jobs appear, the list filters and pages, a job opens, a failed job is retried and a queue
  // paused from the page, purge asks for a status and a confirmation, the chart is drawn.
  async main({ page }) {
    await page.goto(base + '/ui/');
    await visible(button(page, `Show the jobs of queue ${args.queue}`), 'the queue row');
    for (const id of args.jobs) await visible(button(page, `Open job ${id}`), `job ${id} listed`);
    // Enqueued while the page is open: the automatic refresh shows it.
    const late = await api('POST', '/jobs', { queue: args.queue, payload: { late: true } });
    await visible(button(page, `Open job ${late.id}`), 'a job enqueued after the page opened');
    await focusSurvivesRefresh(page, button(page, `Open job ${late.id}`));
    await page.waitForSelector('#chart polyline.enqueued', { timeout: WAIT });
    await shot(page, 'overview');

    // Filter by queue and status, then page through with the cursor.
    await page.locator('#f-queue').fill(args.queue);
    await page.locator('#f-status').selectOption('queued');
    await page.locator('#f-limit').selectOption('25');
    await button(page, 'Show').click();
    await text(page, '#p-info', /^Page 1, 25 jobs$/, 'first page of queued jobs');
    check(await button(page, 'Next page').isEnabled(), 'a next page');
    await button(page, 'Next page').click();
    await text(page, '#p-info', /^Page 2, \d+ jobs$/, 'second page');
    await button(page, 'Previous page').click();
    await text(page, '#p-info', /^Page 1, 25 jobs$/, 'back on the first page');
    check(page.url().includes('status=queued'), 'the filter is kept in the fragment');

    // The failed job: open it, read its error and attempts, retry it.
    await page.locator('#f-status').selectOption('failed');
    await button(page, 'Show').click();
    await button(page, `Open job ${args.failed}`).click();
    await text(page, '#detail-h', new RegExp(`^Job #${args.failed}$`), 'the detail heading');
    await text(page, '#d-error', /boom/, 'the error code');
    await text(page, '#d-payload', /"kind": "fails"/, 'the payload');
    if (args.attempts) await text(page, '#d-attempts tbody', /failed/, 'the attempt history');
    await shot(page, 'detail');
    await button(page, 'Retry').click();
    await text(page, '#notice', new RegExp(`Job ${args.failed} queued again`), 'retry notice');
    await text(page, '#d-fields', /queued/, 'the job is queued again');

    // Pause a queue from its row; then purge its succeeded jobs after choosing and confirming.
    await button(page, `Pause queue ${args.pause}`).click();
    await visible(button(page, `Resume queue ${args.pause}`), 'the queue is paused');
    await text(page, '#queue-table tbody', /paused/, 'the paused badge');
    await button(page, `Purge jobs of queue ${args.pause}`).click();
    const dialog = page.getByRole('dialog', { name: 'Purge jobs' });
    await visible(dialog, 'the purge dialog');
    await page.locator('#purge-status').selectOption('succeeded');
    await button(page, 'Purge').click(); // not confirmed yet: the form refuses
    check(await dialog.isVisible(), 'purge waits for the confirmation');
    await page.locator('#purge-confirm').check();
    await shot(page, 'purge');
    await button(page, 'Purge').click();
    await text(page, '#notice', new RegExp(`Deleted ${args.succeeded} succeeded jobs`), 'purged');
    await shot(page, 'after-actions');
  },

  // The limits: running against the maximum and the jobs held back, a rate window's use, a
  // paused pattern; a limit set, changed and deleted from the page, a refused one explained.
  async limits({ page }) {
    const row = (k) => `#limit-table tr[data-limit="${k}"]`;
    await page.goto(base + '/ui/');
    await text(page, row(args.exact) + ' .running', /^1 \/ 1$/, 'running against the maximum');
    await text(page, row(args.exact) + ' .held', /^2$/, 'the jobs held back');
    await text(page, row(args.exact) + ' .state', /full/, 'a key at its maximum');
    await text(page, row(args.rated) + ' .rate', /^2 \/ 5 per 3600 s$/, "the window's use");
    await text(page, row(args.rated) + ' .state', /open/, 'a key with room');
    // A pattern's maximum holds per key: never "3 / 1" or "full" for three keys at one each.
    await text(page, row(args.pattern) + ' .running', /^1 per key · 2 running$/,
      "a pattern's maximum per key and its keys' running jobs");
    await text(page, row(args.pattern) + ' .held', /^1$/, "the pattern's held job");
    check(!/full/.test(await page.locator(row(args.pattern) + ' .state').innerText()),
      'a pattern is never shown full');
    await text(page, row(args.pattern) + ' .rate', /^—$/, 'no rate');
    await text(page, row(args.pattern) + ' .state', /paused until \S+/, 'a paused key');
    await shot(page, 'overview');

    // A new limit from the form.
    await page.locator('#l-key').fill(args.added);
    await page.locator('#l-max').fill('3');
    await button(page, 'Set limit').click();
    await text(page, '#notice', new RegExp(`Limit ${args.added} set\\.`), 'the set notice');
    await text(page, row(args.added) + ' .running', /^0 \/ 3$/, 'the new limit listed');

    // Edit fills the form; a larger maximum lets the held jobs go.
    await button(page, `Edit limit ${args.exact}`).click();
    check(await page.locator('#l-key').inputValue() === args.exact, 'the form holds the key');
    check(await page.locator('#l-max').inputValue() === '1', 'the form holds max_running');
    await page.locator('#l-max').fill('2');
    await button(page, 'Set limit').click();
    await text(page, row(args.exact) + ' .running', /^1 \/ 2$/, 'the changed maximum');
    await text(page, row(args.exact) + ' .state', /open/, 'room again');

    // A rate without per_seconds: the server's message, naming the field.
    await button(page, 'Clear').click();
    await page.locator('#l-key').fill(args.added);
    await page.locator('#l-jobs').fill('5');
    await button(page, 'Set limit').click();
    await text(page, '#error-list',
      new RegExp(`Set limit ${args.added}: rate\\.per_seconds.*\\(invalid_request, HTTP 400\\)`),
      'the refused limit');

    // Delete asks first.
    await button(page, `Delete limit ${args.added}`).click();
    const dialog = page.getByRole('dialog', { name: 'Delete limit' });
    await visible(dialog, 'the delete dialog');
    await shot(page, 'delete');
    await button(page, 'Keep it').click();
    check(!(await dialog.isVisible()), 'kept');
    await button(page, `Delete limit ${args.added}`).click();
    await button(page, 'Delete limit').click();
    await text(page, '#notice', new RegExp(`Limit ${args.added} deleted`), 'the delete notice');
    await page.locator(row(args.added)).waitFor({ state: 'detached', timeout: WAIT });
    await shot(page, 'after');
  },

  // The schedules: cron or period, zone, next and last run with its job; pause and resume.
  async schedules({ page }) {
    const row = (n) => `#schedule-table tr[data-schedule="${n}"]`;
    await page.goto(base + '/ui/');
    await text(page, row(args.cron) + ' .when', /^0 9 \* \* MON$/, 'the cron expression');
    await text(page, row(args.cron) + ' .zone', /^Europe\/Berlin$/, 'the time zone');
    // 09:00 on a Monday in Berlin, as Berlin reads it, with its offset (not the UTC time).
    await text(page, row(args.cron) + ' .next', /^\d{4}-\d\d-\d\d 09:00:00 GMT\+[12]$/,
      "the next run in the schedule's zone");
    await text(page, row(args.cron) + ' .last', /^—$/, 'no run yet');
    await text(page, row(args.every) + ' .when', /^every 1 s$/, 'the period');
    await text(page, row(args.every) + ' .job', /^#\d+$/, 'the last job');
    await text(page, row(args.every) + ' .last', /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/,
      'the last run, in UTC');
    await text(page, row(args.every) + ' .state', /active/, 'an active schedule');
    await shot(page, 'overview');

    await button(page, `Pause schedule ${args.every}`).click();
    await text(page, '#notice', new RegExp(`Schedule ${args.every} paused\\.`), 'the pause notice');
    await text(page, row(args.every) + ' .state', /paused/, 'a paused schedule');
    await text(page, row(args.every) + ' .next', /^—$/, 'no next run while paused');
    await shot(page, 'paused');
    await button(page, `Resume schedule ${args.every}`).click();
    await text(page, '#notice', new RegExp(`Schedule ${args.every} resumed\\.`), 'the resume notice');
    await text(page, row(args.every) + ' .state', /active/, 'active again');
    await text(page, row(args.every) + ' .next', /\d/, 'a next run again');
  },

  // The webhooks: URL, events, state (failing, disabled), deliveries, failures, the last
  // answer and the next attempt.
  async webhooks({ page }) {
    const row = (n) => `#webhook-table tr[data-webhook="${n}"]`;
    await page.goto(base + '/ui/');
    await text(page, row(args.failing) + ' .url', new RegExp(`^${args.url}$`), 'the URL');
    await text(page, row(args.failing) + ' .filter', /^job\.created · /, 'the events it takes');
    await text(page, row(args.failing) + ' .state', /failing 1 set aside/,
      'a failing subscription and the event it set aside');
    await text(page, row(args.failing) + ' .failures', /^1$/, 'its failure');
    await text(page, row(args.failing) + ' .answer', /no answer/, 'the last answer');
    await text(page, row(args.failing) + ' .next', /\d\d:\d\d/, 'the next attempt');
    await text(page, row(args.disabled) + ' .state', /disabled/, 'a disabled subscription');
    await text(page, row(args.disabled) + ' .filter', /^every type$/, 'every event type');
    await shot(page, 'overview');

    // A new subscription from the form: its secret shown once, then its deliveries.
    await page.locator('#w-name').fill(args.created);
    await page.locator('#w-url').fill(args.receiver);
    await page.locator('#w-types').fill('job.created, job.succeeded');
    await page.locator('#w-queues').fill(args.queue);
    await button(page, 'Set webhook').click();
    await text(page, '#notice', new RegExp(`Webhook ${args.created} created`), 'the notice');
    await text(page, '#webhook-secret-value', /^whsec_[A-Za-z0-9+/=]+$/, 'the secret, once');
    await text(page, row(args.created) + ' .filter',
      new RegExp(`^job\\.created, job\\.succeeded · ${args.queue}$`), 'its filter');
    await api('POST', '/jobs', { queue: args.queue, payload: { hooked: true } });
    await text(page, row(args.created) + ' .deliveries', /^1$/, 'its delivery');
    await text(page, row(args.created) + ' .state', /delivering/, 'delivering');
    await text(page, row(args.created) + ' .answer', /^HTTP 204$/, 'the last answer');
    await shot(page, 'created');

    // Disable, enable; the secret stays (a PUT without one keeps it).
    await button(page, `Disable webhook ${args.created}`).click();
    await text(page, row(args.created) + ' .state', /disabled/, 'disabled');
    check((await api('GET', `/webhooks/${args.created}`)).enabled === false, 'disabled on the server');
    await button(page, `Enable webhook ${args.created}`).click();
    await text(page, row(args.created) + ' .state', /delivering/, 'enabled again');

    // Edit fills the form; ordered is saved.
    await button(page, `Edit webhook ${args.created}`).click();
    check(await page.locator('#w-url').inputValue() === args.receiver, 'the form holds the URL');
    await page.locator('#w-ordered').check();
    await button(page, 'Set webhook').click();
    await text(page, '#notice', new RegExp(`Webhook ${args.created} saved`), 'the save notice');
    check((await api('GET', `/webhooks/${args.created}`)).ordered === true, 'ordered saved');

    // A URL that is not http(s): the server's message.
    await button(page, 'Clear the webhook form').click();
    await page.locator('#w-name').fill(args.created);
    await page.locator('#w-url').fill('ftp://example.com/x');
    await button(page, 'Set webhook').click();
    await text(page, '#error-list', new RegExp(`Set webhook ${args.created}: url.*HTTP 400`),
      'the refused URL');

    // Delete asks first.
    await button(page, `Delete webhook ${args.created}`).click();
    await visible(page.getByRole('dialog', { name: 'Delete webhook' }), 'the delete dialog');
    await button(page, 'Delete webhook').click();
    await text(page, '#notice', new RegExp(`Webhook ${args.created} deleted`), 'deleted');
    await page.locator(row(args.created)).waitFor({ state: 'detached', timeout: WAIT });
  },

  // A workflow: a job's parents and children as links with their statuses, the counts at a
  // glance, the blocked column of the queues table and the blocked filter.
  async workflow({ page }) {
    await page.goto(base + `/ui/#queue=${encodeURIComponent(args.queue)}&job=${args.bottom}`);
    await text(page, '#detail-h', new RegExp(`^Job #${args.bottom}$`), 'the blocked job opens');
    await text(page, '#d-fields', /blocked/, 'its status');
    await text(page, '#d-flow-sum', /^Parents: 1 succeeded, 1 running \(waiting\) · if one fails: cancel · Children: 1 blocked$/,
      'the workflow at a glance');
    await text(page, `#d-deps [data-link="dep-${args.left}"]`, /succeeded/, 'a parent and its status');
    await text(page, `#d-deps [data-link="dep-${args.right}"]`, /running/, 'the other parent');
    await text(page, `#d-kids [data-link="kid-${args.callback}"]`, /blocked/, 'a child and its status');
    const row = page.locator('#queue-table tbody tr', { has: button(page, `Show the jobs of queue ${args.queue}`) });
    // The queues table may come after the job's detail: wait for the row's counts.
    await visible(row.locator('td.num'), "the queue's row");
    let cells = [];
    for (const until = Date.now() + WAIT; Date.now() < until; await page.waitForTimeout(100)) {
      cells = await row.locator('td.num').allTextContents();
      if (cells[2] === '2') break;
    }
    check(cells[2] === '2', `the queue's blocked column says 2 (${JSON.stringify(cells)})`);
    await shot(page, 'blocked');

    // Follow a parent: its own child is the blocked job; it has no parents.
    await button(page, `Open parent job ${args.left}`).click();
    await text(page, '#detail-h', new RegExp(`^Job #${args.left}$`), 'the parent opens');
    await text(page, '#d-flow-sum', /^Parents: 1 succeeded · if one fails: cancel · Children: 1 blocked$/,
      "the parent's workflow");
    await visible(button(page, `Open child job ${args.bottom}`), 'its child');

    // The blocked filter lists exactly the blocked jobs.
    await page.locator('#f-status').selectOption('blocked');
    await button(page, 'Show').click();
    await text(page, '#p-info', /^Page 1, 2 jobs$/, 'the blocked jobs');
    await visible(button(page, `Open job ${args.bottom}`), 'the blocked job listed');
    await shot(page, 'filter');
  },

  // At phone width: no sideways scrolling, the job detail readable, screenshots of both.
  async phone({ page }) {
    await page.goto(base + '/ui/');
    await visible(button(page, `Show the jobs of queue ${args.queue}`), 'the queue row');
    await noOverflow(page, 'overview');
    await shot(page, 'overview');
    await button(page, `Open job ${args.job}`).click();
    await text(page, '#detail-h', new RegExp(`^Job #${args.job}$`), 'the detail heading');
    await noOverflow(page, 'job detail');
    await page.locator('#detail').scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(artifacts, 'phone-detail.png') });
    // The keyboard reaches the buttons and shows where it is.
    await page.keyboard.press('Tab');
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
    check(outline !== 'none', 'a visible focus outline');
  },

  // The server's own error messages: an injected 503 on /queues, shown and then cleared once
  // the server answers again; a 404 for an unknown job shown with the server's message.
  async errors({ page }) {
    const busy = { error: { code: 'unavailable', message: 'the database is busy, try again' } };
    await page.route(/\/queues$/, (r) => r.fulfill({
      status: 503, contentType: 'application/json', body: JSON.stringify(busy),
    }));
    await page.goto(base + '/ui/');
    await text(page, '#error-list', /Queues: the database is busy, try again \(unavailable, HTTP 503\)/,
      'the 503 message');
    await shot(page, 'unavailable');
    await page.unroute(/\/queues$/);
    await page.waitForSelector('#error', { state: 'hidden', timeout: WAIT });
    await page.goto(base + '/ui/#job=999999');
    await text(page, '#error-list', /Job 999999: job 999999 does not exist \(not_found, HTTP 404\)/,
      'the 404 message');
    await shot(page, 'not-found');
  },

  // With --auth-token-file: the page asks for a token, asks again after a 401, shows a 403,
  // accepts another token, and never puts a token in a URL or in localStorage.
  async auth({ page }) {
    await page.goto(base + '/ui/');
    const dialog = page.getByRole('dialog', { name: 'Sign in to jobq' });
    await visible(dialog, 'the token prompt');
    await shot(page, 'prompt');
    await page.getByLabel('API token').fill('not-a-token-of-this-server');
    await button(page, 'Sign in').click();
    await text(page, '#token-why', /the bearer token is not valid/, 'asked again after a 401');
    await page.getByLabel('API token').fill(args.producer);
    await button(page, 'Sign in').click();
    await visible(button(page, `Open job ${args.failed}`), 'the jobs, with a producer token');
    await button(page, `Open job ${args.failed}`).click();
    await button(page, 'Retry').click();
    await text(page, '#error-list', /a producer token may not use POST \/jobs\/\{id\}\/retry/,
      'the 403 message');
    await shot(page, 'forbidden');
    await button(page, 'Change token').click();
    await page.getByLabel('API token').fill(args.admin);
    await button(page, 'Sign in').click();
    await button(page, 'Retry').click();
    await text(page, '#notice', new RegExp(`Job ${args.failed} queued again`), 'retried as admin');
    await page.reload();
    await visible(button(page, `Open job ${args.failed}`), 'still signed in after a reload');
    check(!(await dialog.isVisible()), 'no prompt after a reload');

    const stored = await page.evaluate(() => [sessionStorage.getItem('jobq.token'),
      JSON.stringify(localStorage), location.href, document.cookie]);
    check(stored[0] === args.admin, 'the token is in sessionStorage');
    for (const t of [args.admin, args.producer]) {
      check(!stored[1].includes(t) && !stored[2].includes(t) && !stored[3].includes(t),
        'no token in localStorage, the address or a cookie');
      for (const r of page.requests) check(!r.url().includes(t), `no token in ${r.url()}`);
    }
    const seen = await Promise.all(page.requests.map(async (r) =>
      [new URL(r.url()).pathname, (await r.allHeaders()).authorization]));
    const calls = seen.filter(([path]) => !path.startsWith('/ui'));
    check(calls.length > 0, 'API calls were made');
    check(calls.some(([, auth]) => auth === 'Bearer ' + args.admin),
      'API calls carry the admin token as a bearer header');
    check(seen.filter(([path]) => path.startsWith('/ui')).every(([, auth]) => !auth),
      'the page files are fetched without a token');
  },
};

const run = scenarios[scenario];
if (!run) {
  console.error(`unknown scenario ${scenario}: one of ${Object.keys(scenarios).join(', ')}`);
  process.exit(2);
}
const { browser, page } = await open(scenario === 'phone' ? { width: 390, height: 844 } : null);
let failed = null;
try {
  await run({ page });
  check(page.problems.length === 0, 'no console or page errors: ' + page.problems.join('; '));
} catch (e) {
  failed = e;
  await shot(page, 'failure').catch(() => {});
}
await browser.close();
if (failed) {
  console.error(`${scenario}: ${failed.message}`);
  process.exit(1);
}
console.log(`${scenario}: ok`);
