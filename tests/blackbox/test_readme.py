"""The README's recipes ("Flow control: recipes", "Schedules: recipes",
"Workflows: recipes", "Events: recipes"), run as they stand:
each ```console block of those sections is one recipe, run on a fresh server and database. Every
`$ ` line (with its `\\` continuation lines) is a shell command run in one bash session (so
`TOKEN=$(...)` carries to the next command), with localhost:8080 turned into the test
server's address; what it prints must be exactly the lines the README shows after it.

curl and jq come from scripts/deps.sh; without them the recipes are skipped, naming the one
missing (as test_examples does for a language's runtime).

"Use it from an SQS client": its ```js block runs with node and the pinned AWS SDK of tests/sqs,
its ```python block with Debian's boto3 (/usr/bin/python3), against a server with --sqs-listen
(127.0.0.1:9324 turned into its address); each must print what its comment says."""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

from harness import HOST, ServerTest, backend, free_port

README = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                       "..", "..", "README.md"))
SECTIONS = ("## Flow control: recipes", "## Schedules: recipes", "## Workflows: recipes",
            "## Events: recipes")
RUN_TIMEOUT = 60  # seconds for one recipe
MARK = "@@recipe-step@@"


def recipes():
    """[(title, [(command, expected output lines)])] of the sections' console blocks."""
    with open(README, encoding="utf-8") as f:
        text = f.read()
    out = []
    for name in SECTIONS:
        out += section_recipes(text, name)
    return out


def section_recipes(text, name):
    """recipes() of the one section `name`."""
    start = text.index(name)
    end = text.find("\n## ", start + len(name))
    section = text[start:end if end >= 0 else len(text)]
    out = []
    for m in re.finditer(r"^\*\*([^*]+)\*\*.*?```console\n(.*?)```", section, re.S | re.M):
        steps = []
        for line in m.group(2).splitlines():
            if line.startswith("$ "):
                steps.append([line[2:], []])
            elif steps and steps[-1][0].endswith("\\"):
                steps[-1][0] += "\n" + line
            elif steps:
                steps[-1][1].append(line)
        out.append((m.group(1), [(cmd, lines) for cmd, lines in steps]))
    return out


class ReadmeRecipes(ServerTest):
    server_per_test = True

    def run_recipe(self, title):
        for tool in ("curl", "jq", "bash"):
            if not shutil.which(tool):
                self.skipTest("%s is missing: run scripts/deps.sh" % tool)
        steps = dict(recipes()).get(title)
        self.assertTrue(steps, "no recipe %r in README.md" % title)
        addr = "%s:%d" % (HOST, self.server.port)
        script = ["set -u"]
        for cmd, _ in steps:
            script += ["echo %s" % MARK, cmd.replace("localhost:8080", addr)]
        p = subprocess.run(["bash", "-c", "\n".join(script)], capture_output=True,
                           stdin=subprocess.DEVNULL, timeout=RUN_TIMEOUT)
        out = p.stdout.decode("utf-8", "replace")
        self.assertEqual(p.returncode, 0, "%s:\n%s%s" % (title, out, p.stderr.decode()))
        got = out.split(MARK + "\n")[1:]
        self.assertEqual(len(got), len(steps), out)
        for (cmd, want), printed in zip(steps, got):
            self.assertEqual(printed.splitlines(), want, "%s: $ %s" % (title, cmd))

    def test_one_customer_at_a_time(self):
        self.run_recipe("One customer at a time.")

    def test_calls_per_second(self):
        self.run_recipe("At most N calls per second to an API.")

    def test_reacting_to_a_429(self):
        self.run_recipe("Reacting to a 429.")

    def test_unique_while_running(self):
        self.run_recipe("Unique while running.")

    def test_weekly_in_a_time_zone(self):
        self.run_recipe("A report every Monday at 9 in Berlin.")

    def test_every_second_never_two_at_once(self):
        self.run_recipe("Every second, never two at once.")

    def test_batch_with_a_completion_callback(self):
        self.run_recipe("A batch with a completion callback.")

    def test_be_told_when_a_job_ends(self):
        if backend() == "pg":
            # Its stream listens 2 s; on PostgreSQL an event shows once every older
            # transaction of the cluster has ended (docs/events.md), and the suite's shared
            # cluster runs other tests' long transactions beside it. test_events covers the
            # stream on PostgreSQL with deadlines of its own.
            self.skipTest("a 2 s stream on the suite's shared PostgreSQL cluster")
        self.run_recipe("Be told when a job ends.")

    def test_a_webhook_for_every_job_that_ends(self):
        self.run_recipe("A webhook for every job that ends.")

    def test_every_recipe_is_run(self):
        self.assertEqual([t for t, _ in recipes()],
                         ["One customer at a time.", "At most N calls per second to an API.",
                          "Reacting to a 429.", "Unique while running.",
                          "A report every Monday at 9 in Berlin.",
                          "Every second, never two at once.",
                          "A batch with a completion callback.", "Be told when a job ends.",
                          "A webhook for every job that ends."])


SQS_SECTION = "## Use it from an SQS client"
SQS_DIR = os.path.join(os.path.dirname(README), "tests", "sqs")


class ReadmeSqs(ServerTest):
    @classmethod
    def setUpClass(cls):
        cls.sqs_port = free_port()
        cls.server_args = ("--sqs-listen", "%s:%d" % (HOST, cls.sqs_port))
        super().setUpClass()

    def snippet(self, lang, comment):
        """The section's ```lang block, pointed at the test's listener, and what it must
        print (after the `comment` mark on its print line)."""
        with open(README, encoding="utf-8") as f:
            text = f.read()
        start = text.index(SQS_SECTION)
        section = text[start:text.index("\n## ", start + 1)]
        code = re.search(r"```%s\n(.*?)```" % lang, section, re.S).group(1)
        want = re.search(r"\);? *%s (.*)" % re.escape(comment), code).group(1)
        return code.replace("http://127.0.0.1:9324", "http://%s:%d" % (HOST, self.sqs_port)), want

    def run_snippet(self, cmd, code, want, suffix):
        # In tests/sqs, so that a JS import finds its node_modules.
        fd, path = tempfile.mkstemp(suffix=suffix, prefix="readme-", dir=SQS_DIR)
        self.addCleanup(os.remove, path)
        with os.fdopen(fd, "w") as f:
            f.write(code)
        p = subprocess.run(cmd + [path], capture_output=True, stdin=subprocess.DEVNULL,
                           timeout=RUN_TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stderr.decode("utf-8", "replace"))
        self.assertEqual(p.stdout.decode().splitlines(), [want])

    def test_js_snippet(self):
        node = shutil.which("node")
        if not node or not os.path.isdir(os.path.join(SQS_DIR, "node_modules", "@aws-sdk")):
            self.skipTest("node or tests/sqs/node_modules is missing: run scripts/deps.sh")
        code, want = self.snippet("js", "//")
        self.run_snippet([node], code, want, ".mjs")

    def test_boto3_snippet(self):
        python = "/usr/bin/python3"  # Debian's, with python3-boto3
        if subprocess.run([python, "-c", "import boto3"], capture_output=True).returncode:
            self.skipTest("python3-boto3 is missing: run scripts/deps.sh")
        code, want = self.snippet("python", "#")
        self.run_snippet([python], code, want, ".py")

if __name__ == "__main__":
    unittest.main()
