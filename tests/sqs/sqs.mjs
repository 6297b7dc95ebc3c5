// Drives jobqd's SQS listener with the AWS SDK for JavaScript, unchanged (its MD5 checks on).
// Usage: node sqs.mjs SCENARIO ENDPOINT QUEUE; exits 0 when the scenario holds, else prints
// why and exits 1. Or node sqs.mjs serve ENDPOINT: reads lines "SCENARIO QUEUE" and answers
// each with a line of JSON, {"ok": true} or {"ok": false, "error": WHY}, so that one node
// (and one load of the SDK) serves a test module: tests/blackbox/test_sqs.py runs each
// scenario so.
import assert from "node:assert/strict";
import * as readline from "node:readline";
import * as sqs from "@aws-sdk/client-sqs";
import { Consumer } from "sqs-consumer";
import { dlqScenarios } from "./dlq.mjs";
import { fifoScenarios } from "./fifo.mjs";

const [scenario, endpoint] = process.argv.slice(2);
let queue = process.argv[4]; // the scenario's queue (serve: each line's)
const client = new sqs.SQSClient({
  endpoint,
  region: "us-east-1",
  credentials: { accessKeyId: "jobq", secretAccessKey: "jobq" },
  maxAttempts: 1,
});
const send = (Command, input) => client.send(new Command(input));

// The error a call fails with (it must fail).
async function failure(Command, input) {
  try {
    await send(Command, input);
  } catch (e) {
    return e;
  }
  assert.fail(`${Command.name} succeeded`);
}

async function url() {
  const r = await send(sqs.CreateQueueCommand, { QueueName: queue });
  return r.QueueUrl;
}

// Receive until a message comes, for at most `seconds`.
async function receiveOne(QueueUrl, extra = {}, seconds = 15) {
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline) {
    const r = await send(sqs.ReceiveMessageCommand, { QueueUrl, WaitTimeSeconds: 1, ...extra });
    if (r.Messages && r.Messages.length) return r.Messages[0];
  }
  assert.fail(`no message in ${seconds} s`);
}

const scenarios = {
  async basic() {
    const QueueUrl = await url();
    assert.ok(QueueUrl.endsWith(`/000000000000/${queue}`), QueueUrl);
    const got = await send(sqs.GetQueueUrlCommand, { QueueName: queue });
    assert.equal(got.QueueUrl, QueueUrl);
    const attrs = {
      color: { DataType: "String", StringValue: "blue" },
      n: { DataType: "Number", StringValue: "42" },
      raw: { DataType: "Binary", BinaryValue: new Uint8Array([0, 1, 2, 255]) },
    };
    const body = "hello \u00e9\u4e16\ud83d\ude00";
    const sent = await send(sqs.SendMessageCommand, { QueueUrl, MessageBody: body,
                                                      MessageAttributes: attrs });
    assert.ok(sent.MessageId && sent.MD5OfMessageBody && sent.MD5OfMessageAttributes);
    const m = await receiveOne(QueueUrl, { MessageAttributeNames: ["All"],
                                           MessageSystemAttributeNames: ["All"] });
    assert.equal(m.Body, body);
    assert.equal(m.MessageId, sent.MessageId);
    assert.equal(m.MD5OfMessageAttributes, sent.MD5OfMessageAttributes);
    assert.equal(m.MessageAttributes.color.StringValue, "blue");
    assert.deepEqual([...m.MessageAttributes.raw.BinaryValue], [0, 1, 2, 255]);
    assert.equal(m.Attributes.ApproximateReceiveCount, "1");
    assert.ok(Number(m.Attributes.SentTimestamp) > 1.6e12);
    // Names and a prefix ("r.*": raw, as AWS matches it) select some attributes; the digest
    // covers those returned.
    await send(sqs.ChangeMessageVisibilityCommand, { QueueUrl, ReceiptHandle: m.ReceiptHandle,
                                                     VisibilityTimeout: 0 });
    const again = await receiveOne(QueueUrl, { MessageAttributeNames: ["r.*", "n"],
                                               AttributeNames: ["ApproximateReceiveCount"] });
    assert.deepEqual(Object.keys(again.MessageAttributes).sort(), ["n", "raw"]);
    assert.equal(again.Attributes.ApproximateReceiveCount, "2");
    await send(sqs.DeleteMessageCommand, { QueueUrl, ReceiptHandle: again.ReceiptHandle });
    const none = await send(sqs.ReceiveMessageCommand, { QueueUrl });
    assert.equal(none.Messages, undefined);
  },

  async longpoll() {
    const QueueUrl = await url();
    const started = Date.now();
    const poll = send(sqs.ReceiveMessageCommand, { QueueUrl, WaitTimeSeconds: 10 });
    await new Promise((r) => setTimeout(r, 300));
    await send(sqs.SendMessageCommand, { QueueUrl, MessageBody: "late" });
    const r = await poll;
    assert.equal(r.Messages.length, 1);
    assert.equal(r.Messages[0].Body, "late");
    assert.ok(Date.now() - started < 5000, `woken after ${Date.now() - started} ms`);
    // An empty long poll answers after its wait, not before.
    const t0 = Date.now();
    const empty = await send(sqs.ReceiveMessageCommand, { QueueUrl, WaitTimeSeconds: 1 });
    assert.equal(empty.Messages, undefined);
    assert.ok(Date.now() - t0 >= 900, `answered after ${Date.now() - t0} ms`);
  },

  async visibility() {
    const QueueUrl = await url();
    await send(sqs.SendMessageCommand, { QueueUrl, MessageBody: "v" });
    const m = await receiveOne(QueueUrl, { VisibilityTimeout: 1 });
    // Extended (sqs-consumer's heartbeat): not visible while the extension lasts, past the
    // first second and the sweeper's pass.
    await send(sqs.ChangeMessageVisibilityCommand, { QueueUrl, ReceiptHandle: m.ReceiptHandle,
                                                     VisibilityTimeout: 30 });
    const hidden = await send(sqs.ReceiveMessageCommand, { QueueUrl, WaitTimeSeconds: 2 });
    assert.equal(hidden.Messages, undefined);
    // Expiry: a short timeout makes it visible again by itself.
    await send(sqs.ChangeMessageVisibilityCommand, { QueueUrl, ReceiptHandle: m.ReceiptHandle,
                                                     VisibilityTimeout: 1 });
    const back = await receiveOne(QueueUrl, { AttributeNames: ["ApproximateReceiveCount"] });
    assert.equal(back.Body, "v");
    assert.equal(back.Attributes.ApproximateReceiveCount, "2");
    await send(sqs.DeleteMessageCommand, { QueueUrl, ReceiptHandle: back.ReceiptHandle });
  },

  async stale() {
    const QueueUrl = await url();
    await send(sqs.SendMessageCommand, { QueueUrl, MessageBody: "fenced" });
    const first = await receiveOne(QueueUrl, { VisibilityTimeout: 1 });
    const second = await receiveOne(QueueUrl, { VisibilityTimeout: 30 });
    assert.equal(second.MessageId, first.MessageId);
    // The zombie consumer's handle is refused: it cannot delete nor extend.
    const del = await failure(sqs.DeleteMessageCommand, { QueueUrl,
                                                          ReceiptHandle: first.ReceiptHandle });
    assert.equal(del.name, "ReceiptHandleIsInvalid");
    const chg = await failure(sqs.ChangeMessageVisibilityCommand, {
      QueueUrl, ReceiptHandle: first.ReceiptHandle, VisibilityTimeout: 0 });
    assert.equal(chg.name, "MessageNotInflight");
    const batch = await send(sqs.DeleteMessageBatchCommand, { QueueUrl, Entries: [
      { Id: "zombie", ReceiptHandle: first.ReceiptHandle }] });
    assert.equal(batch.Failed[0].Code, "ReceiptHandleIsInvalid");
    // The live handle still holds it.
    await send(sqs.DeleteMessageCommand, { QueueUrl, ReceiptHandle: second.ReceiptHandle });
  },

  async batches() {
    const QueueUrl = await url();
    const sent = await send(sqs.SendMessageBatchCommand, { QueueUrl, Entries: [
      { Id: "a", MessageBody: "one" },
      { Id: "b", MessageBody: "two", DelaySeconds: 901 },
      { Id: "c", MessageBody: "three",
        MessageAttributes: { k: { DataType: "String", StringValue: "v" } } },
    ] });
    assert.deepEqual(sent.Successful.map((e) => e.Id).sort(), ["a", "c"]);
    assert.equal(sent.Failed.length, 1);
    assert.equal(sent.Failed[0].Id, "b");
    assert.equal(sent.Failed[0].Code, "InvalidParameterValue");
    assert.equal(sent.Failed[0].SenderFault, true);
    const eleven = Array.from({ length: 11 }, (_, i) => ({ Id: `m${i}`, MessageBody: "x" }));
    const e = await failure(sqs.SendMessageBatchCommand, { QueueUrl, Entries: eleven });
    assert.equal(e.name, "TooManyEntriesInBatchRequest");
    const dup = await failure(sqs.SendMessageBatchCommand, { QueueUrl, Entries: [
      { Id: "x", MessageBody: "1" }, { Id: "x", MessageBody: "2" }] });
    assert.equal(dup.name, "BatchEntryIdsNotDistinct");
    const r = await send(sqs.ReceiveMessageCommand, { QueueUrl, MaxNumberOfMessages: 10,
                                                      WaitTimeSeconds: 1 });
    assert.equal(r.Messages.length, 2);
    const del = await send(sqs.DeleteMessageBatchCommand, { QueueUrl, Entries: [
      { Id: "ok", ReceiptHandle: r.Messages[0].ReceiptHandle },
      { Id: "bad", ReceiptHandle: "not-a-handle" },
    ] });
    assert.deepEqual(del.Successful.map((x) => x.Id), ["ok"]);
    assert.equal(del.Failed[0].Id, "bad");
    assert.equal(del.Failed[0].Code, "ReceiptHandleIsInvalid");
    const chg = await send(sqs.ChangeMessageVisibilityBatchCommand, { QueueUrl, Entries: [
      { Id: "rel", ReceiptHandle: r.Messages[1].ReceiptHandle, VisibilityTimeout: 0 },
      { Id: "gone", ReceiptHandle: r.Messages[0].ReceiptHandle, VisibilityTimeout: 5 },
    ] });
    assert.deepEqual(chg.Successful.map((x) => x.Id), ["rel"]);
    assert.equal(chg.Failed[0].Id, "gone");
  },

  async queues() {
    const QueueUrl = await url();
    await send(sqs.SendMessageBatchCommand, { QueueUrl, Entries: [
      { Id: "a", MessageBody: "1" }, { Id: "b", MessageBody: "2" }, { Id: "c", MessageBody: "3" }] });
    await receiveOne(QueueUrl, { VisibilityTimeout: 60 });
    const a = await send(sqs.GetQueueAttributesCommand, { QueueUrl, AttributeNames: ["All"] });
    assert.equal(a.Attributes.ApproximateNumberOfMessages, "2");
    assert.equal(a.Attributes.ApproximateNumberOfMessagesNotVisible, "1");
    assert.equal(a.Attributes.VisibilityTimeout, "30");
    assert.ok(a.Attributes.QueueArn.endsWith(`:${queue}`));
    const listed = await send(sqs.ListQueuesCommand, { QueueNamePrefix: queue });
    assert.deepEqual(listed.QueueUrls, [QueueUrl]);
    // Pages of MaxResults, NextToken to go on.
    for (const n of ["b", "c"])
      await send(sqs.CreateQueueCommand, { QueueName: `${queue}-${n}` });
    const p1 = await send(sqs.ListQueuesCommand, { QueueNamePrefix: queue, MaxResults: 2 });
    assert.equal(p1.QueueUrls.length, 2);
    assert.ok(p1.NextToken);
    const p2 = await send(sqs.ListQueuesCommand, { QueueNamePrefix: queue, MaxResults: 2,
                                                   NextToken: p1.NextToken });
    assert.deepEqual(p2.QueueUrls, [`${QueueUrl}-c`]);
    assert.equal(p2.NextToken, undefined);
    await send(sqs.PurgeQueueCommand, { QueueUrl });
    const b = await send(sqs.GetQueueAttributesCommand, { QueueUrl,
      AttributeNames: ["ApproximateNumberOfMessages"] });
    assert.deepEqual(b.Attributes, { ApproximateNumberOfMessages: "0" });
    const bad = await failure(sqs.GetQueueAttributesCommand, { QueueUrl,
                                                               AttributeNames: ["Nope"] });
    assert.equal(bad.name, "InvalidAttributeName");
  },

  async errors() {
    const QueueUrl = await url();
    let e = await failure(sqs.DeleteMessageCommand, { QueueUrl, ReceiptHandle: "garbage" });
    assert.equal(e.name, "ReceiptHandleIsInvalid");
    assert.equal(e.$metadata.httpStatusCode, 400);
    e = await failure(sqs.ReceiveMessageCommand, { QueueUrl, MaxNumberOfMessages: 11 });
    assert.equal(e.name, "InvalidParameterValue");
    e = await failure(sqs.ReceiveMessageCommand, { QueueUrl, WaitTimeSeconds: 21 });
    assert.equal(e.name, "InvalidParameterValue");
    e = await failure(sqs.ListQueueTagsCommand, { QueueUrl });
    assert.equal(e.name, "UnsupportedOperation");
    e = await failure(sqs.SendMessageCommand, { QueueUrl, MessageBody: "a\u0001b" });
    assert.equal(e.name, "InvalidMessageContents");
    e = await failure(sqs.SendMessageCommand, { QueueUrl, MessageBody: "x".repeat(262145) });
    assert.equal(e.name, "InvalidParameterValue");
    e = await failure(sqs.GetQueueUrlCommand, { QueueName: "bad name!" });
    assert.equal(e.name, "InvalidParameterValue");
  },

  async attributes() {
    const made = await send(sqs.CreateQueueCommand, { QueueName: queue,
      Attributes: { VisibilityTimeout: "5" } });
    const QueueUrl = made.QueueUrl;
    // Idempotent when the attributes match (a default stands for one not given).
    const again = await send(sqs.CreateQueueCommand, { QueueName: queue,
      Attributes: { VisibilityTimeout: "5", DelaySeconds: "0" } });
    assert.equal(again.QueueUrl, QueueUrl);
    let e = await failure(sqs.CreateQueueCommand, { QueueName: queue,
      Attributes: { VisibilityTimeout: "6" } });
    assert.equal(e.name, "QueueNameExists");
    let a = await send(sqs.GetQueueAttributesCommand, { QueueUrl,
      AttributeNames: ["VisibilityTimeout", "DelaySeconds", "CreatedTimestamp"] });
    assert.equal(a.Attributes.VisibilityTimeout, "5");
    assert.equal(a.Attributes.DelaySeconds, "0");
    assert.ok(Number(a.Attributes.CreatedTimestamp) > 1.6e9);
    // The queue's DelaySeconds delays a message sent without one.
    await send(sqs.SetQueueAttributesCommand, { QueueUrl, Attributes: { DelaySeconds: "2" } });
    a = await send(sqs.GetQueueAttributesCommand, { QueueUrl, AttributeNames: ["All"] });
    assert.equal(a.Attributes.DelaySeconds, "2");
    assert.equal(a.Attributes.VisibilityTimeout, "5");
    const t0 = Date.now();
    await send(sqs.SendMessageCommand, { QueueUrl, MessageBody: "later" });
    const now = await send(sqs.ReceiveMessageCommand, { QueueUrl });
    assert.equal(now.Messages, undefined);
    const m = await receiveOne(QueueUrl);
    assert.equal(m.Body, "later");
    assert.ok(Date.now() - t0 >= 900, `received after ${Date.now() - t0} ms`);
    e = await failure(sqs.SetQueueAttributesCommand, { QueueUrl,
      Attributes: { VisibilityTimeout: "43201" } });
    assert.equal(e.name, "InvalidAttributeValue");
    e = await failure(sqs.SetQueueAttributesCommand, { QueueUrl, Attributes: { Nope: "1" } });
    assert.equal(e.name, "InvalidAttributeName");
    // Deleted: gone for every action.
    await send(sqs.DeleteQueueCommand, { QueueUrl });
    e = await failure(sqs.GetQueueUrlCommand, { QueueName: queue });
    assert.equal(e.name, "QueueDoesNotExist");
    e = await failure(sqs.SendMessageCommand, { QueueUrl, MessageBody: "x" });
    assert.equal(e.name, "QueueDoesNotExist");
    e = await failure(sqs.ReceiveMessageCommand, { QueueUrl: QueueUrl + "-never-made" });
    assert.equal(e.name, "QueueDoesNotExist");
  },

  // sqs-consumer, unchanged: its heartbeat (ChangeMessageVisibility) keeps a slow message
  // from being received twice, a failed one is released at once (visibility 0) and comes
  // back, and every handled message is deleted.
  async consumer() {
    const QueueUrl = await url();
    await send(sqs.SendMessageBatchCommand, { QueueUrl, Entries: [
      { Id: "a", MessageBody: "quick" }, { Id: "b", MessageBody: "slow" },
      { Id: "c", MessageBody: "boom" }] });
    const handled = {};
    let failedOnce = false;
    const errors = [];
    const consumer = Consumer.create({
      queueUrl: QueueUrl,
      sqs: client,
      waitTimeSeconds: 1,
      visibilityTimeout: 2,
      heartbeatInterval: 1,
      terminateVisibilityTimeout: true,
      handleMessage: async (m) => {
        handled[m.Body] = (handled[m.Body] || 0) + 1;
        if (m.Body === "slow")
          await new Promise((r) => setTimeout(r, 4000)); // past the timeout and a sweep
        if (m.Body === "boom" && !failedOnce) {
          failedOnce = true;
          throw new Error("boom");
        }
        return m;
      },
    });
    consumer.on("error", (e) => errors.push(e));
    consumer.start();
    const deadline = Date.now() + 30000;
    while (Date.now() < deadline && !(handled.quick && handled.slow && handled.boom === 2))
      await new Promise((r) => setTimeout(r, 100));
    // The slow one's deletion follows its handler: wait for the queue to be empty.
    let a;
    while (Date.now() < deadline) {
      a = await send(sqs.GetQueueAttributesCommand, { QueueUrl, AttributeNames: ["All"] });
      if (a.Attributes.ApproximateNumberOfMessages === "0" &&
          a.Attributes.ApproximateNumberOfMessagesNotVisible === "0")
        break;
      await new Promise((r) => setTimeout(r, 100));
    }
    consumer.stop({ abort: true });
    assert.deepEqual(handled, { quick: 1, slow: 1, boom: 2 });
    assert.equal(a.Attributes.ApproximateNumberOfMessages, "0");
    assert.equal(a.Attributes.ApproximateNumberOfMessagesNotVisible, "0");
    // sqs-consumer releases a failed message before it stops that message's heartbeat, so a
    // heartbeat may still come after the release: that one is refused (the message is not in
    // flight any more), as SQS refuses it. Nothing else may fail.
    assert.deepEqual(errors.filter((e) => e.cause?.name !== "MessageNotInflight"), []);
  },

  // sqs-consumer, unchanged, as a zombie: its handler outlives the visibility timeout (no
  // heartbeat), another consumer receives the message meanwhile, and the zombie's delete is
  // refused (an "error" event, ReceiptHandleIsInvalid); the live handle deletes it.
  async consumer_stale() {
    const QueueUrl = await url();
    await send(sqs.SendMessageCommand, { QueueUrl, MessageBody: "zombie" });
    const deadline = Date.now() + 30000;
    const errors = [];
    let received = false, other = null;
    const consumer = Consumer.create({
      queueUrl: QueueUrl,
      sqs: client,
      waitTimeSeconds: 1,
      visibilityTimeout: 1,
      handleMessage: async (m) => {
        received = true;
        while (!other && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
        return m;
      },
    });
    consumer.on("error", (e) => errors.push(e));
    consumer.start();
    while (!received && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    other = await receiveOne(QueueUrl, { VisibilityTimeout: 30 });
    assert.equal(other.Body, "zombie");
    while (!errors.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    consumer.stop({ abort: true });
    assert.equal(errors.length, 1, `errors: ${errors}`);
    assert.equal(errors[0].code, "ReceiptHandleIsInvalid", `${errors[0]}`);
    await send(sqs.DeleteMessageCommand, { QueueUrl, ReceiptHandle: other.ReceiptHandle });
    const a = await send(sqs.GetQueueAttributesCommand, { QueueUrl, AttributeNames: ["All"] });
    assert.equal(a.Attributes.ApproximateNumberOfMessages, "0");
    assert.equal(a.Attributes.ApproximateNumberOfMessagesNotVisible, "0");
  },

  // A job enqueued natively (the test enqueued {"n": 1}) is received with its payload as body.
  async native() {
    const QueueUrl = await url();
    const m = await receiveOne(QueueUrl);
    assert.equal(m.Body, '{"n":1}');
    await send(sqs.DeleteMessageCommand, { QueueUrl, ReceiptHandle: m.ReceiptHandle });
  },

  // Sends one message and leaves it: the test reads it back through the native API.
  async sendone() {
    const QueueUrl = await url();
    await send(sqs.SendMessageCommand, { QueueUrl, MessageBody: "from sqs" });
  },
};

// Runs scenario name on queue; throws why it failed.
async function run(name) {
  const all = Object.assign({}, scenarios, fifoScenarios({ client, send, failure, queue }),
                            dlqScenarios({ client, send, failure, queue }));
  if (!Object.hasOwn(all, name)) throw new Error(`no scenario ${name}`);
  await all[name]();
}

if (scenario === "serve") {
  for await (const line of readline.createInterface({ input: process.stdin })) {
    const [name, q] = line.trim().split(" ");
    queue = q;
    try {
      await run(name);
      console.log(JSON.stringify({ ok: true }));
    } catch (e) {
      console.log(JSON.stringify({ ok: false, error: `scenario ${name} failed: ${e.stack || e}` }));
    }
  }
} else {
  try {
    await run(scenario);
  } catch (e) {
    console.error(`scenario ${scenario} failed:`, e);
    process.exit(1);
  }
}
