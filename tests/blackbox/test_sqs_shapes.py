"""The SQS listener's answers against the shapes AWS itself recorded (tests/sqs/aws_shapes.json,
kept from LocalStack's AWS-recorded snapshots; the file says where each comes from): for each
action we serve, in both protocols (JSON 1.0, and the query protocol's XML read back into the
same shape), the key sets of SendMessage, SendMessageBatch, ReceiveMessage (message attribute
filters, system attributes), GetQueueAttributes, the value formats (MessageId, ReceiptHandle,
timestamps, counts, QueueArn), the MD5 digests of the recorded bodies and attributes (String
and Binary), and the error codes, types and statuses. Raw HTTP, no SDK: an SDK would hide a
missing or extra key."""

import base64
import json
import os
import re
import urllib.parse
import xml.etree.ElementTree as ET

from harness import Client, ServerTest, free_port

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "..", "sqs", "aws_shapes.json")) as f:
    SHAPES = json.load(f)
MD5 = re.compile(SHAPES["formats"]["md5"])
MS = re.compile(SHAPES["formats"]["timestamp"])
COUNT = re.compile(SHAPES["formats"]["count"])

# Query-protocol names of the JSON members that are lists, maps or batch entries.
LISTS = {"AttributeNames": "AttributeName", "MessageAttributeNames": "MessageAttributeName",
         "MessageSystemAttributeNames": "MessageSystemAttributeName"}
MAPS = {"Attributes": "Attribute", "MessageAttributes": "MessageAttribute"}
ENTRIES = {"SendMessageBatch": "SendMessageBatchRequestEntry",
           "DeleteMessageBatch": "DeleteMessageBatchRequestEntry",
           "ChangeMessageVisibilityBatch": "ChangeMessageVisibilityBatchRequestEntry"}
# XML elements that stand for a list member of the JSON answer.
XML_LISTS = {"Message": "Messages",
             "SendMessageBatchResultEntry": "Successful",
             "DeleteMessageBatchResultEntry": "Successful",
             "ChangeMessageVisibilityBatchResultEntry": "Successful",
             "BatchResultErrorEntry": "Failed"}


def form(action, params):
    """The query protocol's form of a JSON request."""
    out = [("Action", action), ("Version", "2012-11-05")]

    def flat(prefix, key, value):
        if key in LISTS:
            for i, v in enumerate(value, 1):
                out.append(("%s%s.%d" % (prefix, LISTS[key], i), v))
        elif key in MAPS:
            for i, (name, v) in enumerate(value.items(), 1):
                p = "%s%s.%d." % (prefix, MAPS[key], i)
                out.append((p + "Name", name))
                if isinstance(v, dict):
                    for k, x in v.items():
                        out.append((p + "Value." + k, x))
                else:
                    out.append((p + "Value", v))
        else:
            out.append((prefix + key, str(value)))

    for key, value in params.items():
        if key == "Entries":
            for i, e in enumerate(value, 1):
                for k, v in e.items():
                    flat("%s.%d." % (ENTRIES[action], i), k, v)
        else:
            flat("", key, value)
    return urllib.parse.urlencode(out).encode()


def local(tag):
    return tag.split("}", 1)[-1]


def from_xml(el):
    """An XML answer's element as the JSON answer's shape."""
    kids = list(el)
    if not kids:
        return el.text or ""
    out = {}
    for k in kids:
        name = local(k.tag)
        if name in ("Attribute", "MessageAttribute"):
            key = "Attributes" if name == "Attribute" else "MessageAttributes"
            n = k.find("{*}Name").text
            v = k.find("{*}Value")
            out.setdefault(key, {})[n] = from_xml(v)
        elif name in XML_LISTS:
            out.setdefault(XML_LISTS[name], []).append(from_xml(k))
        else:
            out[name] = from_xml(k)
    return out


class SqsShapes(ServerTest):
    @classmethod
    def setUpClass(cls):
        cls.sqs_port = free_port()
        cls.server_args = ("--sqs-listen", "127.0.0.1:%d" % cls.sqs_port)
        super().setUpClass()

    def call(self, proto, action, params):
        """(status, answer as the JSON shape, error code or None, error type or None)."""
        c = Client(self.sqs_port)
        self.addCleanup(c.close)
        if proto == "json":
            r = c.request("POST", "/", raw=json.dumps(params).encode(), headers={
                "Content-Type": "application/x-amz-json-1.0",
                "X-Amz-Target": "AmazonSQS." + action})
            body = r.json
            if r.status != 200:
                code, kind = r.header("x-amzn-query-error").split(";")
                return r.status, body, code, kind
            return r.status, body, None, None
        r = c.request("POST", "/", raw=form(action, params),
                      headers={"Content-Type": "application/x-www-form-urlencoded"})
        root = ET.fromstring(r.body)
        if r.status != 200:
            err = root.find("{*}Error")
            fields = {local(k.tag): k.text for k in err}
            return r.status, fields, fields.get("Code"), fields.get("Type")
        result = root.find("{*}%sResult" % action)
        return r.status, (from_xml(result) if result is not None else {}), None, None

    def ok(self, proto, action, params):
        status, body, code, _ = self.call(proto, action, params)
        self.assertEqual(status, 200, "%s %s: %s %s" % (proto, action, code, body))
        return body if isinstance(body, dict) else {}

    def queue(self, proto, attrs=None):
        name = "%s-%s" % (self.q.replace(".", "-"), proto)
        params = {"QueueName": name}
        if attrs:
            params["Attributes"] = attrs
        return name, self.ok(proto, "CreateQueue", params)["QueueUrl"]

    def both(self, check):
        for proto in ("json", "query"):
            with self.subTest(protocol=proto):
                check(proto)

    def receive(self, proto, url, **extra):
        """Receive the one message of url and make it visible again at once."""
        params = dict({"QueueUrl": url, "MaxNumberOfMessages": 1}, **extra)
        msgs = self.ok(proto, "ReceiveMessage", params).get("Messages") or []
        self.assertEqual(len(msgs), 1, msgs)
        self.ok(proto, "ChangeMessageVisibility", {"QueueUrl": url, "VisibilityTimeout": 0,
                                                   "ReceiptHandle": msgs[0]["ReceiptHandle"]})
        return msgs[0]

    def assert_message_formats(self, m):
        self.assertTrue(m["MessageId"] and m["ReceiptHandle"], m)
        self.assertRegex(m["MD5OfBody"], MD5)

    def test_send_message(self):
        s = SHAPES["send_message"]

        def check(proto):
            _, url = self.queue(proto)
            got = self.ok(proto, "SendMessage", {"QueueUrl": url, "MessageBody": s["body"],
                                                 "MessageAttributes": s["attributes"]})
            got.pop("ResponseMetadata", None)
            self.assertEqual(sorted(got), s["keys"])
            self.assertEqual(got["MD5OfMessageBody"], s["MD5OfMessageBody"])
            self.assertEqual(got["MD5OfMessageAttributes"], s["MD5OfMessageAttributes"])
            self.assertTrue(got["MessageId"])
        self.both(check)

    def test_receive_message_attribute_filters(self):
        s, sent = SHAPES["receive_attribute_filters"], SHAPES["send_message"]

        def check(proto):
            _, url = self.queue(proto)
            self.ok(proto, "SendMessage", {"QueueUrl": url, "MessageBody": sent["body"],
                                           "MessageAttributes": sent["attributes"]})
            for case in s["cases"]:
                extra = {"MessageAttributeNames": case["names"]} if case["names"] else {}
                m = self.receive(proto, url, **extra)
                want = s["message_keys_with_attributes"] if case["md5"] else s["message_keys"]
                self.assertEqual(sorted(m), want, case)
                self.assert_message_formats(m)
                self.assertEqual(m["MD5OfBody"], s["MD5OfBody"])
                self.assertEqual(sorted(m.get("MessageAttributes", {})), case["attributes"])
                self.assertEqual(m.get("MD5OfMessageAttributes"), case["md5"], case)
                for a in m.get("MessageAttributes", {}).values():
                    self.assertEqual(sorted(a), ["DataType", "StringValue"], a)
        self.both(check)

    def test_receive_system_attributes(self):
        s = SHAPES["receive_system_attributes"]

        def check(proto):
            _, url = self.queue(proto)
            self.ok(proto, "SendMessage", {"QueueUrl": url, "MessageBody": "msg",
                                           "MessageAttributes": s["message_attribute"]})
            m = self.receive(proto, url, AttributeNames=["All"])
            self.assertEqual(sorted(m["Attributes"]), s["all"])
            self.assertRegex(m["Attributes"]["SentTimestamp"], MS)
            self.assertRegex(m["Attributes"]["ApproximateFirstReceiveTimestamp"], MS)
            self.assertEqual(m["Attributes"]["ApproximateReceiveCount"], "1")
            m = self.receive(proto, url, AttributeNames=["All"], MessageAttributeNames=["All"])
            self.assertEqual(m["Attributes"]["ApproximateReceiveCount"], "2")
            self.assertEqual(m["MD5OfMessageAttributes"], s["message_attribute_md5"])
            m = self.receive(proto, url, AttributeNames=[s["single"]])
            self.assertEqual(sorted(m["Attributes"]), [s["single"]])
        self.both(check)

    def test_binary_attribute_digest(self):
        s = SHAPES["binary_attribute"]
        raw = bytes.fromhex(s["value_hex"])

        def check(proto):
            _, url = self.queue(proto)
            attr = {s["name"]: {"DataType": "Binary",
                                "BinaryValue": base64.b64encode(raw).decode()}}
            got = self.ok(proto, "SendMessage", {"QueueUrl": url, "MessageBody": s["body"],
                                                 "MessageAttributes": attr})
            self.assertEqual(got["MD5OfMessageBody"], s["MD5OfBody"])
            self.assertEqual(got["MD5OfMessageAttributes"], s["MD5OfMessageAttributes"])
            m = self.receive(proto, url, MessageAttributeNames=["All"])
            self.assertEqual(m["MD5OfMessageAttributes"], s["MD5OfMessageAttributes"])
            a = m["MessageAttributes"][s["name"]]
            self.assertEqual(sorted(a), ["BinaryValue", "DataType"])
            self.assertEqual(base64.b64decode(a["BinaryValue"]), raw)
        self.both(check)

    def test_send_message_batch(self):
        s = SHAPES["send_message_batch"]

        def check(proto):
            _, url = self.queue(proto)
            got = self.ok(proto, "SendMessageBatch", {"QueueUrl": url, "Entries": [
                {"Id": "2", "MessageBody": s["body"]}]})
            self.assertEqual(len(got["Successful"]), 1, got)
            e = got["Successful"][0]
            self.assertEqual(sorted(e), s["entry_keys"])
            self.assertEqual(e["MD5OfMessageBody"], s["MD5OfMessageBody"])
            self.assertEqual(e["Id"], "2")
            self.assertFalse(got.get("Failed"), got)
        self.both(check)

    def test_queue_attributes_all(self):
        s = SHAPES["queue_attributes_all"]

        def check(proto):
            name, url = self.queue(proto, s["given"])
            got = self.ok(proto, "GetQueueAttributes", {"QueueUrl": url,
                                                        "AttributeNames": ["All"]})["Attributes"]
            self.assertEqual(sorted(got), s["keys"])
            for k, v in s["values"].items():
                self.assertEqual(got[k], v, k)
            for k in s["seconds_timestamps"]:
                self.assertRegex(got[k], r"^[0-9]{10}$")
            arn = SHAPES["formats"]["QueueArn"].replace("NAME", re.escape(name))
            self.assertRegex(got["QueueArn"], arn)
        self.both(check)

    def assert_error(self, proto, action, params, want):
        status, body, code, kind = self.call(proto, action, params)
        self.assertEqual((status, code, kind), (want["status"], want["code"], want["type"]),
                         body)
        if proto == "json":
            self.assertEqual(sorted(body), ["__type", "message"])
        else:
            self.assertEqual(sorted(k for k in body if k != "Detail"), ["Code", "Message", "Type"])

    def test_errors(self):
        e = SHAPES["errors"]

        def check(proto):
            _, url = self.queue(proto, {"DelaySeconds": "0"})
            self.assert_error(proto, "ReceiveMessage", {"QueueUrl": url,
                                                        "MaxNumberOfMessages": 11},
                              e["receive_11"])
            self.assert_error(proto, "SendMessage", {"QueueUrl": url,
                                                     "MessageBody": "x" * 262145},
                              e["oversized_message"])
            twenty = [{"Id": str(i), "MessageBody": "m", "ReceiptHandle": "h",
                       "VisibilityTimeout": 1} for i in range(20)]
            for action, keys in (("SendMessageBatch", ("Id", "MessageBody")),
                                 ("DeleteMessageBatch", ("Id", "ReceiptHandle")),
                                 ("ChangeMessageVisibilityBatch",
                                  ("Id", "ReceiptHandle", "VisibilityTimeout"))):
                entries = [{k: x[k] for k in keys} for x in twenty]
                self.assert_error(proto, action, {"QueueUrl": url, "Entries": entries},
                                  e["too_many_entries"])
                for bad in e["invalid_batch_id"]["ids"]:
                    one = dict(entries[0], Id=bad)
                    self.assert_error(proto, action, {"QueueUrl": url, "Entries": [one]},
                                      e["invalid_batch_id"])
            name = "%s-%s" % (self.q.replace(".", "-"), proto)
            self.assert_error(proto, "CreateQueue", {"QueueName": name,
                                                     "Attributes": {"DelaySeconds": "5"}},
                              e["queue_exists"])
        self.both(check)
