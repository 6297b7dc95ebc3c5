// The SQS dead-letter queue scenarios for the AWS SDK for JavaScript (JSON protocol) and
// sqs-consumer, unchanged: sqs.mjs runs them by name (dlq_move, ...) with its client.
// tests/blackbox/test_sqs_dlq.py runs each scenario.
import assert from "node:assert/strict";
import * as sqs from "@aws-sdk/client-sqs";
import { Consumer } from "sqs-consumer";

// The scenarios over a client (send, failure: sqs.mjs's) and the queue's base name.
export function dlqScenarios({ client, send, failure, queue }) {
  async function create(QueueName, Attributes = {}) {
    return (await send(sqs.CreateQueueCommand, { QueueName, Attributes })).QueueUrl;
  }
  async function arn(QueueUrl) {
    const a = await send(sqs.GetQueueAttributesCommand, { QueueUrl, AttributeNames: ["QueueArn"] });
    return a.Attributes.QueueArn;
  }
  // A dead-letter queue and a source sending to it after maxReceiveCount receives.
  async function pair(maxReceiveCount, fifo = false) {
    const sfx = fifo ? ".fifo" : "";
    const extra = fifo ? { FifoQueue: "true", ContentBasedDeduplication: "true" } : {};
    const dlq = await create(`${queue}-dlq${sfx}`, extra);
    const RedrivePolicy = JSON.stringify({ deadLetterTargetArn: await arn(dlq), maxReceiveCount });
    const src = await create(`${queue}${sfx}`, { ...extra, RedrivePolicy });
    return { dlq, src, RedrivePolicy };
  }
  // Receive one message within `seconds`.
  async function receiveOne(QueueUrl, extra = {}, seconds = 15) {
    const deadline = Date.now() + seconds * 1000;
    while (Date.now() < deadline) {
      const r = await send(sqs.ReceiveMessageCommand, { QueueUrl, WaitTimeSeconds: 1,
        MessageAttributeNames: ["All"], ...extra });
      if (r.Messages && r.Messages.length) return r.Messages[0];
    }
    assert.fail(`no message in ${seconds} s`);
  }
  const release = (QueueUrl, m) => send(sqs.ChangeMessageVisibilityCommand, { QueueUrl,
    ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0 });
  const attrs = { color: { DataType: "String", StringValue: "red" } };

  return {
    // Received maxReceiveCount times, released (ChangeMessageVisibility 0) or expired: moved
    // to the dead-letter queue with its body and attributes; ListDeadLetterSourceQueues.
    async dlq_move() {
      const { dlq, src, RedrivePolicy } = await pair(2);
      const got = await send(sqs.GetQueueAttributesCommand, { QueueUrl: src,
        AttributeNames: ["RedrivePolicy"] });
      assert.equal(got.Attributes.RedrivePolicy, RedrivePolicy);
      await send(sqs.SendMessageCommand, { QueueUrl: src, MessageBody: "released",
        MessageAttributes: attrs });
      for (let i = 1; i <= 2; i++) {
        const m = await receiveOne(src);
        assert.equal(m.Body, "released");
        await release(src, m);
      }
      await send(sqs.SendMessageCommand, { QueueUrl: src, MessageBody: "expired" });
      for (let i = 1; i <= 2; i++) {
        const m = await receiveOne(src, { VisibilityTimeout: 1 });
        assert.equal(m.Body, "expired");
      }
      const moved = [await receiveOne(dlq), await receiveOne(dlq)];
      assert.deepEqual(moved.map((m) => m.Body).sort(), ["expired", "released"]);
      assert.equal(moved.find((m) => m.Body === "released").MessageAttributes.color.StringValue,
        "red");
      const none = await send(sqs.ReceiveMessageCommand, { QueueUrl: src });
      assert.equal(none.Messages, undefined);
      const sources = await send(sqs.ListDeadLetterSourceQueuesCommand, { QueueUrl: dlq });
      assert.deepEqual(sources.queueUrls, [src]);
    },

    // The redrive rules' errors, as AWS answers them.
    async dlq_errors() {
      const { dlq } = await pair(3);
      const missing = JSON.stringify({ deadLetterTargetArn:
        "arn:aws:sqs:us-east-1:000000000000:never-made", maxReceiveCount: 3 });
      let e = await failure(sqs.CreateQueueCommand, { QueueName: `${queue}-x`,
        Attributes: { RedrivePolicy: missing } });
      assert.equal(e.name, "InvalidParameterValue");
      const bad = JSON.stringify({ deadLetterTargetArn: await arn(dlq), maxReceiveCount: 0 });
      e = await failure(sqs.CreateQueueCommand, { QueueName: `${queue}-x`,
        Attributes: { RedrivePolicy: bad } });
      assert.equal(e.name, "InvalidAttributeValue");
      const toStandard = JSON.stringify({ deadLetterTargetArn: await arn(dlq),
        maxReceiveCount: 3 });
      e = await failure(sqs.CreateQueueCommand, { QueueName: `${queue}-x.fifo`,
        Attributes: { FifoQueue: "true", RedrivePolicy: toStandard } });
      assert.equal(e.name, "InvalidParameterValue");
      await send(sqs.SetQueueAttributesCommand, { QueueUrl: dlq, Attributes: {
        RedriveAllowPolicy: JSON.stringify({ redrivePermission: "denyAll" }) } });
      e = await failure(sqs.CreateQueueCommand, { QueueName: `${queue}-x`,
        Attributes: { RedrivePolicy: toStandard } });
      assert.equal(e.name, "InvalidParameterValue");
      const allow = JSON.stringify({ redrivePermission: "byQueue",
        sourceQueueArns: [`arn:aws:sqs:us-east-1:000000000000:${queue}-y`] });
      await send(sqs.SetQueueAttributesCommand, { QueueUrl: dlq,
        Attributes: { RedriveAllowPolicy: allow } });
      await create(`${queue}-y`, { RedrivePolicy: toStandard });
      e = await failure(sqs.CreateQueueCommand, { QueueName: `${queue}-x`,
        Attributes: { RedrivePolicy: toStandard } });
      assert.equal(e.name, "InvalidParameterValue");
      e = await failure(sqs.SetQueueAttributesCommand, { QueueUrl: dlq,
        Attributes: { RedriveAllowPolicy: '{"redrivePermission":"sometimes"}' } });
      assert.equal(e.name, "InvalidAttributeValue");
    },

    // sqs-consumer whose handler fails: each failure makes the message visible again
    // (terminateVisibilityTimeout), and after maxReceiveCount it is in the dead-letter queue.
    async dlq_consumer() {
      const { dlq, src } = await pair(2, true);
      await send(sqs.SendMessageCommand, { QueueUrl: src, MessageBody: "poison",
        MessageGroupId: "g" });
      let tries = 0;
      const c = Consumer.create({
        queueUrl: src, sqs: client, waitTimeSeconds: 1, terminateVisibilityTimeout: true,
        handleMessage: async () => {
          tries++;
          throw new Error("poison");
        },
      });
      c.on("error", () => {});
      c.on("processing_error", () => {});
      c.start();
      try {
        const m = await receiveOne(dlq, { MessageSystemAttributeNames: ["All"] }, 20);
        assert.equal(m.Body, "poison");
        assert.equal(m.Attributes.MessageGroupId, "g");
      } finally {
        c.stop();
      }
      assert.equal(tries, 2);
    },
  };
}
