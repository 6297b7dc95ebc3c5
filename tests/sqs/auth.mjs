// SigV4 against jobqd's SQS listener with the AWS SDK for JavaScript (JSON protocol).
// Usage: node auth.mjs ENDPOINT QUEUE; the keys come from the environment as ID:SECRET in
// JOBQ_SQS_ADMIN, JOBQ_SQS_PRODUCER and JOBQ_SQS_WORKER. Exits 0 when every check holds:
// the right keys work, a wrong secret is SignatureDoesNotMatch, an unknown key
// InvalidClientTokenId, a producer's ReceiveMessage AccessDenied.
// tests/blackbox/test_sqs_auth.py runs it.
import assert from "node:assert/strict";
import * as sqs from "@aws-sdk/client-sqs";

const [endpoint, queue] = process.argv.slice(2);

function client(pair) {
  const [accessKeyId, secretAccessKey] = pair.split(":");
  return new sqs.SQSClient({ endpoint, region: "eu-west-3", maxAttempts: 1,
                             credentials: { accessKeyId, secretAccessKey } });
}

async function failure(c, Command, input) {
  try {
    await c.send(new Command(input));
  } catch (e) {
    return e;
  }
  assert.fail(`${Command.name} succeeded`);
}

const admin = client(process.env.JOBQ_SQS_ADMIN);
const producer = client(process.env.JOBQ_SQS_PRODUCER);
const worker = client(process.env.JOBQ_SQS_WORKER);
const [adminId] = process.env.JOBQ_SQS_ADMIN.split(":");

try {
  const { QueueUrl } = await admin.send(new sqs.CreateQueueCommand({ QueueName: queue }));
  const sent = await producer.send(new sqs.SendMessageCommand({ QueueUrl, MessageBody: "signed" }));
  const got = await worker.send(new sqs.ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 5 }));
  assert.equal(got.Messages[0].MessageId, sent.MessageId);
  await worker.send(new sqs.DeleteMessageCommand({ QueueUrl,
                                                  ReceiptHandle: got.Messages[0].ReceiptHandle }));
  let e = await failure(client(`${adminId}:not-the-secret`), sqs.ListQueuesCommand, {});
  assert.equal(e.name, "SignatureDoesNotMatch", e);
  assert.equal(e.$metadata.httpStatusCode, 403);
  e = await failure(client("AKIDUNKNOWN:whatever"), sqs.ListQueuesCommand, {});
  assert.equal(e.name, "InvalidClientTokenId", e);
  e = await failure(producer, sqs.ReceiveMessageCommand, { QueueUrl });
  assert.equal(e.name, "AccessDenied", e);
  assert.equal(e.$metadata.httpStatusCode, 403);
  e = await failure(worker, sqs.PurgeQueueCommand, { QueueUrl });
  assert.equal(e.name, "AccessDenied", e);
} catch (e) {
  console.error("auth.mjs failed:", e);
  process.exit(1);
}
