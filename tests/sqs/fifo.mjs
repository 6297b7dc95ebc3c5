// The SQS FIFO scenarios for the AWS SDK for JavaScript (JSON protocol) and sqs-consumer,
// unchanged: sqs.mjs runs them by name (fifo_order, ...) with its client; QUEUE is the FIFO
// queue's name without its ".fifo". tests/blackbox/test_sqs_fifo.py runs each scenario.
import assert from "node:assert/strict";
import * as sqs from "@aws-sdk/client-sqs";
import { Consumer } from "sqs-consumer";

// The scenarios over a client (send, failure: sqs.mjs's) and the queue's base name.
export function fifoScenarios({ client, send, failure, queue: base }) {
const queue = `${base}.fifo`;

async function fifoUrl(extra = {}) {
  const r = await send(sqs.CreateQueueCommand, { QueueName: queue,
    Attributes: { FifoQueue: "true", ...extra } });
  return r.QueueUrl;
}

// Receive (up to 10, short polls) until `n` messages came or `seconds` pass; each is deleted
// unless keep.
async function receiveN(QueueUrl, n, { seconds = 15, keep = false, extra = {} } = {}) {
  const got = [];
  const deadline = Date.now() + seconds * 1000;
  while (got.length < n && Date.now() < deadline) {
    const r = await send(sqs.ReceiveMessageCommand, { QueueUrl, MaxNumberOfMessages: 10,
      WaitTimeSeconds: 1, MessageSystemAttributeNames: ["All"], ...extra });
    for (const m of r.Messages || []) {
      got.push(m);
      if (!keep)
        await send(sqs.DeleteMessageCommand, { QueueUrl, ReceiptHandle: m.ReceiptHandle });
    }
  }
  return got;
}

// The messages QueueUrl still holds, visible or not: none once a dedup's one is deleted.
async function left(QueueUrl) {
  const a = await send(sqs.GetQueueAttributesCommand, { QueueUrl, AttributeNames: ["All"] });
  return Number(a.Attributes.ApproximateNumberOfMessages) +
    Number(a.Attributes.ApproximateNumberOfMessagesNotVisible);
}

return {
  // Send order within a group across receives, one message of a group in flight at once.
  async fifo_order() {
    const QueueUrl = await fifoUrl();
    const a = await send(sqs.GetQueueAttributesCommand, { QueueUrl, AttributeNames: ["All"] });
    assert.equal(a.Attributes.FifoQueue, "true");
    assert.equal(a.Attributes.ContentBasedDeduplication, "false");
    for (let i = 0; i < 4; i++) {
      const entries = ["a", "b"].map((g) => ({ Id: `${g}${i}`, MessageBody: `${g}${i}`,
        MessageGroupId: g, MessageDeduplicationId: `${g}-${i}` }));
      const r = await send(sqs.SendMessageBatchCommand, { QueueUrl, Entries: entries });
      assert.equal(r.Successful.length, 2, JSON.stringify(r));
      assert.match(r.Successful[0].SequenceNumber, /^[0-9]{20}$/);
    }
    // One receive of 10 returns one message per group (the group's head), in flight.
    const first = await send(sqs.ReceiveMessageCommand, { QueueUrl, MaxNumberOfMessages: 10,
      VisibilityTimeout: 2, MessageSystemAttributeNames: ["All"] });
    assert.deepEqual(first.Messages.map((m) => m.Body).sort(), ["a0", "b0"]);
    const m = first.Messages.find((x) => x.Body === "a0");
    assert.equal(m.Attributes.MessageGroupId, "a");
    assert.equal(m.Attributes.MessageDeduplicationId, "a-0");
    assert.match(m.Attributes.SequenceNumber, /^[0-9]{20}$/);
    const again = await send(sqs.ReceiveMessageCommand, { QueueUrl, MaxNumberOfMessages: 10 });
    assert.equal(again.Messages, undefined, "a group's next message while its head is in flight");
    // Its visibility timeout passed (not deleted), the head comes again at once, before the
    // rest of its group (no retry backoff puts it behind them).
    const rest = await receiveN(QueueUrl, 8);
    const order = (g) => rest.filter((x) => x.Attributes.MessageGroupId === g).map((x) => x.Body);
    assert.deepEqual(order("a"), ["a0", "a1", "a2", "a3"]);
    assert.deepEqual(order("b"), ["b0", "b1", "b2", "b3"]);
  },

  // Deduplication by MessageDeduplicationId: the first one's MessageId, nothing enqueued.
  async fifo_dedup() {
    const QueueUrl = await fifoUrl();
    const one = await send(sqs.SendMessageCommand, { QueueUrl, MessageBody: "x",
      MessageGroupId: "g", MessageDeduplicationId: "d1" });
    const two = await send(sqs.SendMessageCommand, { QueueUrl, MessageBody: "y",
      MessageGroupId: "g", MessageDeduplicationId: "d1" });
    assert.equal(two.MessageId, one.MessageId);
    const got = await receiveN(QueueUrl, 1);
    assert.deepEqual(got.map((m) => m.Body), ["x"]);
    assert.equal(await left(QueueUrl), 0);
  },

  // Content-based deduplication: the body's SHA-256.
  async fifo_content() {
    const QueueUrl = await fifoUrl({ ContentBasedDeduplication: "true" });
    const one = await send(sqs.SendMessageCommand, { QueueUrl, MessageBody: "same",
      MessageGroupId: "g" });
    const two = await send(sqs.SendMessageCommand, { QueueUrl, MessageBody: "same",
      MessageGroupId: "h" });
    const other = await send(sqs.SendMessageCommand, { QueueUrl, MessageBody: "other",
      MessageGroupId: "g" });
    assert.equal(two.MessageId, one.MessageId);
    assert.notEqual(other.MessageId, one.MessageId);
    const got = await receiveN(QueueUrl, 2);
    assert.deepEqual(got.map((m) => m.Body).sort(), ["other", "same"]);
    assert.equal(await left(QueueUrl), 0);
    assert.equal(got.find((m) => m.Body === "same").Attributes.MessageDeduplicationId,
      "0967115f2813a3541eaef77de9d9d5773f1c0c04314b0bbfe4ff3b3b1c55b5d5");
  },

  // The FIFO rules' errors, as AWS answers them.
  async fifo_errors() {
    let e = await failure(sqs.CreateQueueCommand, { QueueName: queue });
    assert.equal(e.name, "InvalidParameterValue");
    e = await failure(sqs.CreateQueueCommand, { QueueName: base,
      Attributes: { FifoQueue: "true" } });
    assert.equal(e.name, "InvalidParameterValue");
    e = await failure(sqs.CreateQueueCommand, { QueueName: base,
      Attributes: { ContentBasedDeduplication: "true" } });
    assert.equal(e.name, "InvalidAttributeName");
    const QueueUrl = await fifoUrl();
    e = await failure(sqs.SetQueueAttributesCommand, { QueueUrl,
      Attributes: { FifoQueue: "false" } });
    assert.equal(e.name, "InvalidAttributeName");
    e = await failure(sqs.SendMessageCommand, { QueueUrl, MessageBody: "x",
      MessageDeduplicationId: "d" });
    assert.equal(e.name, "MissingParameter");
    e = await failure(sqs.SendMessageCommand, { QueueUrl, MessageBody: "x",
      MessageGroupId: "g" });
    assert.equal(e.name, "InvalidParameterValue");
    e = await failure(sqs.SendMessageCommand, { QueueUrl, MessageBody: "x",
      MessageGroupId: "g", MessageDeduplicationId: "d", DelaySeconds: 1 });
    assert.equal(e.name, "InvalidParameterValue");
    e = await failure(sqs.SendMessageCommand, { QueueUrl, MessageBody: "x",
      MessageGroupId: "bad group", MessageDeduplicationId: "d" });
    assert.equal(e.name, "InvalidParameterValue");
    const batch = await send(sqs.SendMessageBatchCommand, { QueueUrl, Entries: [
      { Id: "ok", MessageBody: "x", MessageGroupId: "g", MessageDeduplicationId: "d" },
      { Id: "nogroup", MessageBody: "x", MessageDeduplicationId: "e" }] });
    assert.deepEqual(batch.Successful.map((s) => s.Id), ["ok"]);
    assert.equal(batch.Failed[0].Code, "MissingParameter");
    const std = await send(sqs.CreateQueueCommand, { QueueName: base });
    e = await failure(sqs.SendMessageCommand, { QueueUrl: std.QueueUrl, MessageBody: "x",
      MessageGroupId: "g" });
    assert.equal(e.name, "InvalidParameterValue");
  },

  // sqs-consumer handles a group's messages one at a time, in order.
  async fifo_consumer() {
    const QueueUrl = await fifoUrl({ ContentBasedDeduplication: "true" });
    for (let i = 0; i < 5; i++)
      await send(sqs.SendMessageCommand, { QueueUrl, MessageBody: `m${i}`, MessageGroupId: "g" });
    const seen = [];
    let busy = 0;
    const done = new Promise((resolve, reject) => {
      const c = Consumer.create({
        queueUrl: QueueUrl, sqs: client, batchSize: 10, waitTimeSeconds: 1,
        handleMessage: async (m) => {
          assert.equal(busy++, 0, "two messages of one group at once");
          seen.push(m.Body);
          await new Promise((r) => setTimeout(r, 20));
          busy--;
          if (seen.length === 5) {
            c.stop();
            resolve();
          }
          return m;
        },
      });
      c.on("error", reject);
      c.on("processing_error", reject);
      c.start();
      setTimeout(() => reject(new Error(`only ${seen}`)), 20000).unref();
    });
    await done;
    assert.deepEqual(seen, ["m0", "m1", "m2", "m3", "m4"]);
  },
};
}
