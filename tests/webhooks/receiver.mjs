// A webhook receiver for tests/blackbox/test_webhooks.py: every delivery is verified with the
// Standard Webhooks reference verifier (the npm standardwebhooks package), an implementation
// independent of jobq's. It listens on 127.0.0.1 (port 0: any; https when given a
// certificate and key file: `node receiver.mjs PORT CERT KEY`) and prints {"port": N} once
// listening. The test drives it over HTTP:
//   POST /_plan   {"path", "secrets": [...], "answers": [{"status", "retry_after"}, ...]}
//                 the secrets each delivery to path is verified with, and the answers it gets
//                 in turn (then 200 for the rest), each after its delay_ms (default 0)
//   GET  /_log    every delivery so far: {path, id, timestamp, signature, traceparent,
//                 content_type, body, at_ms, status, verified: [one boolean per secret]}
// Any other POST is a delivery. Nothing here waits: the test polls /_log with a deadline.
import { createRequire } from "node:module";
import fs from "node:fs";
import http from "node:http";
import https from "node:https";

const require = createRequire(import.meta.url);
const { Webhook } = require("standardwebhooks");

const plans = new Map(); // path -> {secrets, answers}
const log = [];

function verify(secret, body, headers) {
  try {
    new Webhook(secret).verify(body, {
      "webhook-id": headers["webhook-id"],
      "webhook-timestamp": headers["webhook-timestamp"],
      "webhook-signature": headers["webhook-signature"],
    });
    return true;
  } catch (e) {
    return false;
  }
}

const [, , portArg, certFile, keyFile] = process.argv;
function serve(handler) {
  if (!certFile) return http.createServer(handler);
  return https.createServer({ cert: fs.readFileSync(certFile), key: fs.readFileSync(keyFile) },
    handler);
}

const server = serve((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8");
    if (req.method === "GET" && req.url === "/_log") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(log));
      return;
    }
    if (req.method === "POST" && req.url === "/_plan") {
      const p = JSON.parse(body);
      plans.set(p.path, { secrets: p.secrets || [], answers: p.answers || [] });
      res.writeHead(204);
      res.end();
      return;
    }
    const plan = plans.get(req.url) || { secrets: [], answers: [] };
    const answer = plan.answers.length ? plan.answers.shift() : { status: 200 };
    log.push({
      path: req.url,
      id: req.headers["webhook-id"],
      timestamp: req.headers["webhook-timestamp"],
      signature: req.headers["webhook-signature"],
      traceparent: req.headers["traceparent"] || null,
      content_type: req.headers["content-type"],
      body,
      at_ms: Date.now(),
      status: answer.status,
      verified: plan.secrets.map((s) => verify(s, body, req.headers)),
    });
    const headers = {};
    if (answer.retry_after !== undefined) headers["retry-after"] = String(answer.retry_after);
    setTimeout(() => {
      res.writeHead(answer.status, headers);
      res.end("ignored answer body");
    }, answer.delay_ms || 0);
  });
});

server.listen(Number(portArg || 0), "127.0.0.1", () => {
  process.stdout.write(JSON.stringify({ port: server.address().port }) + "\n");
});
