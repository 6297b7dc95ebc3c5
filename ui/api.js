// The API client. Every call goes to this jobqd (paths relative to /ui/, so a proxy prefix
// keeps working), carries the token as a bearer header when there is one, and throws an
// ApiError carrying the server's own error code and message. The token lives in
// sessionStorage (this tab only) and never in a URL.

const TOKEN_KEY = 'jobq.token';

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status; // 0: no answer at all
    this.code = code;
  }
}

export function getToken() {
  return sessionStorage.getItem(TOKEN_KEY) || '';
}

export function setToken(token) {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
}

// askToken(message) is called on a 401: it resolves once the user entered a new token.
// One prompt serves every call that got a 401 meanwhile.
let askToken = null;
let asking = null;

export function onUnauthorized(fn) {
  askToken = fn;
}

function newToken(message) {
  if (!asking) asking = askToken(message).finally(() => { asking = null; });
  return asking;
}

async function errorOf(resp) {
  let code = 'http_' + resp.status;
  let message = resp.statusText || 'HTTP ' + resp.status;
  try {
    const body = await resp.json();
    if (body && body.error) {
      code = body.error.code || code;
      message = body.error.message || message;
    }
  } catch (e) {
    // not JSON: keep the status line
  }
  return new ApiError(resp.status, code, message);
}

// Call the API: method, path ("/jobs?queue=a"), optional JSON body. Resolves to the parsed
// JSON answer; rejects with an ApiError. A 401 asks for a token and tries again.
export async function api(method, path, body) {
  const url = new URL('..' + path, document.baseURI);
  for (;;) {
    const headers = { Accept: 'application/json' };
    const token = getToken();
    if (token) headers.Authorization = 'Bearer ' + token;
    const init = { method, headers, cache: 'no-store', credentials: 'omit' };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let resp;
    try {
      resp = await fetch(url, init);
    } catch (e) {
      throw new ApiError(0, 'network', 'cannot reach jobqd: ' + e.message);
    }
    if (resp.status === 401 && askToken) {
      const err = await errorOf(resp);
      setToken('');
      await newToken(err.message);
      continue;
    }
    if (!resp.ok) throw await errorOf(resp);
    return resp.json();
  }
}

// A path segment: queue names may hold ':' and '.', which stay readable but safe.
export function seg(s) {
  return encodeURIComponent(s);
}
