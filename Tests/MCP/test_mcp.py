"""`alertctl mcp` driven by a client nobody here wrote: the official Python MCP SDK.

Run by `make test` (target test-mcp) with the pinned packages of Tests/MCP/requirements.txt
in .venv/:

    ALERTD_BIN=.build/debug/alertd ALERTCTL_BIN=.build/debug/alertctl \
        .venv/bin/python -m unittest discover -s Tests/MCP -v

The SDK starts `alertctl mcp` as a subprocess on stdio, as an agent's host does, and
negotiates the protocol itself (it probes `server/discover`, then falls back to the
`initialize` handshake). Each test answers through alertd's HTTP API as an operator
would, and awaits events (the displayed alert, a progress notification, a long-poll
on the alert): nothing sleeps and hopes. Every wait is bounded.
"""

import ctypes
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import unittest
import urllib.error
import urllib.request

import anyio
from jsonschema import Draft202012Validator
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ALERTD_BIN = os.path.abspath(os.path.join(REPO, os.environ.get("ALERTD_BIN", ".build/debug/alertd")))
ALERTCTL_BIN = os.path.abspath(os.path.join(REPO, os.environ.get("ALERTCTL_BIN", ".build/debug/alertctl")))
TOOLS = {"ask_human", "check_answer", "withdraw_question", "notify_human", "request_permission"}
# The longest any one test may take: a hang fails the test with a traceback.
TEST_SECONDS = 60


def _die_with_parent():
    # PR_SET_PDEATHSIG = 1: if the test process dies, the kernel kills the daemon.
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    except OSError:
        pass


def token():
    secret = "alertd_" + secrets.token_urlsafe(24)
    return secret, hashlib.sha256(secret.encode()).hexdigest()


class Daemon:
    """The real alertd on 127.0.0.1, a free port, a temp state dir."""

    def __init__(self, config):
        if not os.access(ALERTD_BIN, os.X_OK):
            raise RuntimeError(f"no alertd binary at {ALERTD_BIN}: build it (swift build) or set ALERTD_BIN")
        self.directory = tempfile.mkdtemp(prefix="alertd-mcp-")
        config_path = os.path.join(self.directory, "alertd.yaml")
        with open(config_path, "w") as file:
            file.write(config)
        self.lines = []
        self.port = None
        listening = threading.Event()
        self.process = subprocess.Popen(
            [ALERTD_BIN, "--config", config_path, "--listen", "127.0.0.1:0", "--state-dir", os.path.join(self.directory, "state")],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=_die_with_parent,
            env={k: v for k, v in os.environ.items() if not k.startswith(("LISTEN_", "NOTIFY_SOCKET", "WATCHDOG_"))},
        )

        def read():
            for raw in self.process.stderr:
                line = raw.decode(errors="replace")
                self.lines.append(line)
                match = re.search(r'msg="?listening"? .*address="?[0-9.]+:(\d+)', line)
                if match and self.port is None:
                    self.port = int(match.group(1))
                    listening.set()

        self.reader = threading.Thread(target=read, daemon=True)
        self.reader.start()
        if not listening.wait(20):
            self.stop()
            raise RuntimeError("alertd did not start listening:\n" + "".join(self.lines))
        self.base = f"http://127.0.0.1:{self.port}"

    def request(self, method, path, secret, body=None, timeout=20):
        """(status, JSON body or None); a problem answer is returned, not raised."""
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Authorization": f"Bearer {secret}"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                raw = response.read()
                return response.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def stop(self):
        """SIGTERM; returns the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.reader.join(10)
        self.process.stderr.close()
        shutil.rmtree(self.directory, ignore_errors=True)
        return self.process.returncode


def server(url, secret, *arguments, client="ops"):
    """`alertctl mcp` as an MCP host starts it: the command, its args and its env."""
    if not os.access(ALERTCTL_BIN, os.X_OK):
        raise RuntimeError(f"no alertctl binary at {ALERTCTL_BIN}: build it (swift build) or set ALERTCTL_BIN")
    home = tempfile.mkdtemp(prefix="alertctl-mcp-home-")  # no ~/.config/alertd/alertctl.yaml of the user's
    return StdioServerParameters(
        command=ALERTCTL_BIN,
        args=["mcp", "--client", client, "--progress-interval", "1", *arguments],
        env={"ALERTD_URL": url, "ALERTD_TOKEN": secret, "HOME": home, "XDG_CONFIG_HOME": home},
    )


def text(result):
    return " ".join(block.text for block in result.content if getattr(block, "type", None) == "text")


class Progress:
    """The progress notifications of one call; `first` is set by the first."""

    def __init__(self):
        self.messages = []
        self.first = anyio.Event()

    async def __call__(self, progress, total, message):
        self.messages.append((progress, total, message))
        self.first.set()


class MCPTests(unittest.IsolatedAsyncioTestCase):
    @classmethod
    def setUpClass(cls):
        cls.agent, agent_digest = token()
        cls.alice, alice_digest = token()
        cls.bob, bob_digest = token()
        cls.daemon = Daemon(
            f"""
log: {{ level: info }}
durability: normal
limits: {{ max_wait_seconds: 5 }}
auth:
  tokens:
    - {{ name: agent, sha256: "{agent_digest}", roles: [post, read], clients: ["ops", "ops-*"] }}
    - {{ name: alice, sha256: "{alice_digest}", roles: [answer], clients: ["*"] }}
    - {{ name: bob, sha256: "{bob_digest}", roles: [answer], clients: ["*"] }}
"""
        )

    @classmethod
    def tearDownClass(cls):
        status = cls.daemon.stop()
        if status != 0:
            raise AssertionError(f"alertd exited {status}:\n" + "".join(cls.daemon.lines))

    def connect(self, *arguments, client="ops"):
        return Client(server(self.daemon.base, self.agent, *arguments, client=client))

    async def displayed(self, client):
        """The alert `client` displays, awaited with a long-poll (the daemon's wait)."""
        for _ in range(4):
            status, alert = await anyio.to_thread.run_sync(
                lambda: self.daemon.request("GET", f"/v1/clients/{client}/alerts/current?wait=5", self.alice)
            )
            if status == 200:
                return alert
        self.fail(f"nothing was displayed on {client}")

    async def final(self, client, alert_id):
        """The alert once terminal, awaited with a long-poll on it."""
        for _ in range(4):
            status, alert = await anyio.to_thread.run_sync(
                lambda: self.daemon.request("GET", f"/v1/clients/{client}/alerts/{alert_id}?wait=5", self.alice)
            )
            self.assertEqual(status, 200, alert)
            if alert["state"] not in ("queued", "displayed"):
                return alert
        self.fail(f"alert {alert_id} stayed {alert['state']}")

    async def choose(self, client, alert_id, button, secret=None, **words):
        body = {"button": button, **words}
        status, alert = await anyio.to_thread.run_sync(
            lambda: self.daemon.request("POST", f"/v1/clients/{client}/alerts/{alert_id}/choice", secret or self.alice, body)
        )
        self.assertEqual(status, 200, alert)
        return alert

    async def test_tools_are_listed_with_valid_schemas(self):
        with anyio.fail_after(TEST_SECONDS):
            async with self.connect() as client:
                self.assertIn(client.protocol_version, HANDSHAKE_PROTOCOL_VERSIONS)
                self.assertEqual(client.server_info.name, "alertd")
                tools = {tool.name: tool for tool in (await client.list_tools()).tools}
                self.assertEqual(set(tools), TOOLS)
                for tool in tools.values():
                    Draft202012Validator.check_schema(tool.input_schema)
                    Draft202012Validator.check_schema(tool.output_schema)
                    self.assertEqual(tool.input_schema["type"], "object")
                    # request_permission is called by a host, which may send members a newer version added.
                    self.assertEqual(tool.input_schema["additionalProperties"], tool.name == "request_permission")
                    self.assertTrue(tool.description)
                self.assertEqual(set(tools["request_permission"].input_schema["required"]), {"tool_name", "input"})
                # The priority an agent may ask for is capped (issue 44, item 4): 0 by default.
                self.assertEqual(tools["ask_human"].input_schema["properties"]["priority"]["maximum"], 0)
                self.assertEqual(set(tools["ask_human"].input_schema["required"]), {"title", "buttons"})
                self.assertIn("'ops'", tools["ask_human"].description)
                # A schema that accepts what it should, and refuses a typo.
                schema = Draft202012Validator(tools["ask_human"].input_schema)
                good = {"title": "Deploy?", "buttons": [{"title": "Deploy"}, {"title": "No", "style": "cancel"}]}
                self.assertEqual(list(schema.iter_errors(good)), [])
                self.assertNotEqual(list(schema.iter_errors({**good, "titel": "x"})), [])

    async def test_ask_human_returns_the_button_a_person_chose(self):
        with anyio.fail_after(TEST_SECONDS):
            async with self.connect() as client:
                progress = Progress()
                outcome = {}

                async def ask():
                    outcome["result"] = await client.call_tool(
                        "ask_human",
                        {
                            "title": "Deploy build 1234 to prod?",
                            "message": "3 services, 2 migrations",
                            "buttons": [{"title": "Deploy"}, {"title": "Not now", "style": "cancel"}],
                            "timeout_seconds": 60,
                        },
                        progress_callback=progress,
                    )

                async with anyio.create_task_group() as group:
                    group.start_soon(ask)
                    alert = await self.displayed("ops")
                    self.assertEqual(alert["title"], "Deploy build 1234 to prod?")
                    self.assertEqual([b["title"] for b in alert["buttons"]], ["Deploy", "Not now"])
                    self.assertEqual(alert["metadata"]["asked_via"], "alertctl mcp")
                    await progress.first.wait()
                    await self.choose("ops", alert["id"], "Deploy")
                result = outcome["result"]
                self.assertFalse(result.is_error, text(result))
                answer = result.structured_content
                self.assertEqual(answer["status"], "answered")
                self.assertEqual(answer["button"], "Deploy")
                self.assertEqual(answer["button_index"], 0)
                self.assertFalse(answer["cancelled"])
                self.assertEqual(answer["decided_by"], "alice")
                self.assertEqual(answer["alert_id"], alert["id"])
                self.assertIn('"Deploy"', text(result))
                self.assertIn(alert["id"], progress.messages[0][2])
                self.assertEqual(progress.messages[0][1], 60)

    async def test_ask_human_with_fields_and_a_quorum_returns_the_values_and_comment(self):
        with anyio.fail_after(TEST_SECONDS):
            async with self.connect(client="ops-words") as client:
                outcome = {}

                async def ask():
                    outcome["result"] = await client.call_tool(
                        "ask_human",
                        {
                            "title": "Deploy build 1234 to prod?",
                            "buttons": [{"title": "Deploy"}, {"title": "Stop", "style": "cancel"}],
                            "quorum": 2,
                            "fields": [{"name": "ticket", "label": "Change ticket", "placeholder": "OPS-123", "required": True}],
                            "timeout_seconds": 60,
                        },
                    )

                async with anyio.create_task_group() as group:
                    group.start_soon(ask)
                    alert = await self.displayed("ops-words")
                    self.assertEqual(alert["quorum"], 2)
                    self.assertEqual([(f["name"], f["required"], f["buttons"]) for f in alert["fields"]], [("ticket", True, ["Deploy"])])
                    voted = await self.choose("ops-words", alert["id"], "Deploy", comment="LGTM", values={"ticket": "OPS-1"})
                    self.assertEqual(voted["state"], "displayed")
                    # A vote without the required ticket is refused, and the call goes on waiting.
                    status, problem = self.daemon.request(
                        "POST", f"/v1/clients/ops-words/alerts/{alert['id']}/choice", self.bob, {"button": "Deploy"}
                    )
                    self.assertEqual((status, problem["code"]), (400, "invalid-answer"), problem)
                    self.assertEqual([e["field"] for e in problem["errors"]], ["values.ticket"])
                    await self.choose("ops-words", alert["id"], "Deploy", self.bob, comment="ok by me", values={"ticket": "OPS-2"})
                result = outcome["result"]
                self.assertFalse(result.is_error, text(result))
                answer = result.structured_content
                self.assertEqual((answer["status"], answer["button"], answer["decided_by"]), ("answered", "Deploy", "bob"))
                self.assertEqual(answer["values"], {"ticket": "OPS-2"})
                self.assertEqual(answer["comment"], "ok by me")
                self.assertEqual([(v["decided_by"], v["comment"]) for v in answer["votes"]], [("alice", "LGTM"), ("bob", "ok by me")])
                self.assertIn("by alice and bob", text(result))
                self.assertIn('ticket="OPS-2"', text(result))
                self.assertIn('"ok by me"', text(result))
                tool = {t.name: t for t in (await client.list_tools()).tools}["ask_human"]
                Draft202012Validator(tool.output_schema).validate(answer)

    async def test_request_permission_allows_only_when_a_person_chose_allow(self):
        with anyio.fail_after(TEST_SECONDS):
            async with self.connect(client="ops-permission") as client:
                outcome = {}
                request = {"tool_name": "Bash", "input": {"command": "npm test", "description": "Run the tests"}, "tool_use_id": "toolu_01"}

                async def ask():
                    outcome["result"] = await client.call_tool("request_permission", request)

                async with anyio.create_task_group() as group:
                    group.start_soon(ask)
                    alert = await self.displayed("ops-permission")
                    self.assertEqual(alert["title"], "Allow Bash: npm test?")
                    self.assertEqual([(b["title"], b["style"]) for b in alert["buttons"]], [("Allow", "default"), ("Deny", "cancel")])
                    self.assertIn("command: npm test", alert["message"])
                    self.assertEqual((alert["metadata"]["tool"], alert["metadata"]["tool_use_id"]), ("Bash", "toolu_01"))
                    # It expires a minute after the server stops waiting (--timeout, 600 s), whatever becomes of the server.
                    self.assertEqual(alert["expires_in"], 660)
                    await self.choose("ops-permission", alert["id"], "Allow")
                result = outcome["result"]
                self.assertFalse(result.is_error, text(result))
                self.assertEqual(json.loads(text(result)), {"behavior": "allow", "updatedInput": request["input"]})

                async def deny():
                    outcome["denied"] = await client.call_tool("request_permission", {"tool_name": "Write", "input": {"file_path": "/etc/hosts", "content": "x"}})

                async with anyio.create_task_group() as group:
                    group.start_soon(deny)
                    alert = await self.displayed("ops-permission")
                    self.assertEqual(alert["title"], "Allow Write: /etc/hosts?")
                    await self.choose("ops-permission", alert["id"], "Deny", comment="not the system's hosts file")
                self.assertEqual(json.loads(text(outcome["denied"])), {"behavior": "deny", "message": "not the system's hosts file"})

    async def test_request_permission_denies_when_nobody_answers_in_time(self):
        with anyio.fail_after(TEST_SECONDS):
            async with self.connect("--timeout", "1", client="ops-permission-timeout") as client:
                result = await client.call_tool("request_permission", {"tool_name": "Bash", "input": {"command": "rm -rf build"}})
                self.assertFalse(result.is_error, text(result))
                answer = json.loads(text(result))
                self.assertEqual(answer["behavior"], "deny")
                self.assertIn("Nobody answered", answer["message"])
                self.assertNotIn("updatedInput", answer)
                # Withdrawn, so that nobody allows what the agent was told is denied.
                status, listed = self.daemon.request("GET", "/v1/clients/ops-permission-timeout/alerts?state=withdrawn", self.alice)
                self.assertEqual([a["title"] for a in listed["alerts"]], ["Allow Bash: rm -rf build?"])

    async def test_by_default_the_server_acts_only_on_its_own_questions_its_client_and_priority_0(self):
        # Issue 44, item 4: with the recommended post token, withdraw_question withdrew another
        # poster's quorum approval, and ask_human posted to any client at priority 100.
        with anyio.fail_after(TEST_SECONDS):
            status, theirs = self.daemon.request(
                "POST", "/v1/clients/ops-scope/alerts", self.agent,
                {"title": "Deploy to prod?", "quorum": 2, "buttons": [{"title": "Deploy"}, {"title": "Stop", "style": "cancel"}]},
            )
            self.assertEqual(status, 201, theirs)
            async with self.connect(client="ops-scope") as client:
                for tool in ("withdraw_question", "check_answer"):
                    result = await client.call_tool(tool, {"alert_id": theirs["id"]})
                    self.assertTrue(result.is_error, text(result))
                    self.assertIn("not a question this session asked", text(result))
                    self.assertIn("--any-question", text(result))
                elsewhere = await client.call_tool("ask_human", {"title": "Deploy?", "buttons": ["Go"], "client": "ops-other"})
                self.assertTrue(elsewhere.is_error)
                self.assertIn("'ops-other' is not allowed", text(elsewhere))
                urgent = await client.call_tool("ask_human", {"title": "Deploy?", "buttons": ["Go"], "priority": 50, "timeout_seconds": 0})
                self.assertTrue(urgent.is_error)
                self.assertIn("--max-priority", text(urgent))
                # Its own question it checks and withdraws, on the client it was asked on.
                mine = await client.call_tool("ask_human", {"title": "Mine?", "buttons": ["Go"], "timeout_seconds": 0})
                withdrawn = await client.call_tool("withdraw_question", {"alert_id": mine.structured_content["alert_id"]})
                self.assertEqual(withdrawn.structured_content["status"], "withdrawn")
            status, alert = self.daemon.request("GET", f"/v1/clients/ops-scope/alerts/{theirs['id']}", self.alice)
            self.assertEqual(alert["state"], "displayed")
            status, other = self.daemon.request("GET", "/v1/clients/ops-other/alerts", self.alice)
            self.assertEqual(other["alerts"], [])
            # Each flag widens what it names.
            async with self.connect("--any-question", "--allow-client", "ops-o*", "--max-priority", "100", client="ops-scope") as client:
                checked = await client.call_tool("check_answer", {"alert_id": theirs["id"]})
                self.assertEqual(checked.structured_content["status"], "not_answered_yet", text(checked))
                asked = await client.call_tool(
                    "ask_human", {"title": "Deploy?", "buttons": ["Go"], "client": "ops-other", "priority": 50, "timeout_seconds": 0}
                )
                self.assertFalse(asked.is_error, text(asked))
                self.assertEqual(asked.structured_content["client"], "ops-other")
                withdrawn = await client.call_tool("withdraw_question", {"alert_id": theirs["id"]})
                self.assertEqual(withdrawn.structured_content["status"], "withdrawn")
                await client.call_tool("withdraw_question", {"alert_id": asked.structured_content["alert_id"]})

    async def test_text_people_wrote_reaches_the_agent_without_escape_sequences(self):
        # Issue 44, item 10: an MCP client's name with an escape sequence (one that writes the
        # clipboard) went into every alert's metadata as it was; a person's comment is shown to
        # the agent's host, a terminal.
        parameters = server(self.daemon.base, self.agent, client="ops-escapes")
        process = subprocess.Popen(
            [parameters.command, *parameters.args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, **parameters.env},
            preexec_fn=_die_with_parent,
        )
        try:
            name = "evil\u001b]52;c;aGVsbG8=\u0007agent"
            messages = [
                {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": name, "version": "1\u009b31m"}}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask_human", "arguments": {"title": "Reboot?", "buttons": ["Reboot", {"title": "No", "style": "cancel"}]}}},
            ]
            process.stdin.write(json.dumps(messages[0]).encode() + b"\n")
            process.stdin.flush()
            with anyio.fail_after(TEST_SECONDS):
                first = json.loads(await anyio.to_thread.run_sync(process.stdout.readline))
                self.assertEqual(first["id"], 1)
                process.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages[1:]))
                process.stdin.flush()
                alert = await self.displayed("ops-escapes")
                self.assertEqual(alert["metadata"]["agent"], "evil]52;c;aGVsbG8=agent 131m")
                await self.choose("ops-escapes", alert["id"], "No", comment="no \u001b]0;pwned\u0007 \u009b2J way")
                while True:
                    answer = json.loads(await anyio.to_thread.run_sync(process.stdout.readline))
                    if answer.get("id") == 2:
                        break
                said = answer["result"]["content"][0]["text"]
                self.assertIn('"no \ufffd]0;pwned\ufffd \ufffd2J way"', said)
                self.assertFalse(any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in said), said)
                self.assertEqual(answer["result"]["structuredContent"]["comment"], "no \ufffd]0;pwned\ufffd \ufffd2J way")
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()
            process.stdout.close()

    async def test_the_cancel_button_is_a_no(self):
        with anyio.fail_after(TEST_SECONDS):
            async with self.connect(client="ops-cancel") as client:
                outcome = {}

                async def ask():
                    outcome["result"] = await client.call_tool(
                        "ask_human", {"title": "Drop table orders_old?", "buttons": ["Drop", {"title": "Keep", "style": "cancel"}]}
                    )

                async with anyio.create_task_group() as group:
                    group.start_soon(ask)
                    alert = await self.displayed("ops-cancel")
                    await self.choose("ops-cancel", alert["id"], "Keep")
                answer = outcome["result"].structured_content
                self.assertEqual((answer["status"], answer["button"], answer["cancelled"]), ("answered", "Keep", True))
                self.assertIn("Do not go ahead", text(outcome["result"]))

    async def test_a_timeout_returns_not_answered_yet_and_a_retry_asks_nothing_twice(self):
        with anyio.fail_after(TEST_SECONDS):
            async with self.connect(client="ops-timeout") as client:
                question = {"title": "Rotate the TLS key?", "buttons": ["Rotate", "Wait"], "timeout_seconds": 1}
                first = await client.call_tool("ask_human", question)
                self.assertFalse(first.is_error, text(first))
                answer = first.structured_content
                self.assertEqual(answer["status"], "not_answered_yet")
                self.assertEqual(answer["state"], "displayed")
                self.assertIn("check_answer", text(first))
                alert_id = answer["alert_id"]

                # The agent retries the same call: the same question, not a second one.
                again = await client.call_tool("ask_human", {**question, "timeout_seconds": 0})
                self.assertEqual(again.structured_content["alert_id"], alert_id)
                status, pending = self.daemon.request("GET", "/v1/clients/ops-timeout/alerts", self.alice)
                self.assertEqual([a["id"] for a in pending["alerts"]], [alert_id])

                waiting = await client.call_tool("check_answer", {"alert_id": alert_id, "client": "ops-timeout"})
                self.assertEqual(waiting.structured_content["status"], "not_answered_yet")

                await self.choose("ops-timeout", alert_id, "Rotate")
                checked = await client.call_tool("check_answer", {"alert_id": alert_id, "client": "ops-timeout", "wait_seconds": 5})
                self.assertEqual(checked.structured_content["status"], "answered")
                self.assertEqual(checked.structured_content["button"], "Rotate")

                # Once the agent was told the answer, the same question is a new one.
                anew = await client.call_tool("ask_human", {**question, "timeout_seconds": 0})
                self.assertNotEqual(anew.structured_content["alert_id"], alert_id)
                self.assertEqual(anew.structured_content["status"], "not_answered_yet")

                withdrawn = await client.call_tool("withdraw_question", {"alert_id": anew.structured_content["alert_id"], "client": "ops-timeout"})
                self.assertEqual(withdrawn.structured_content["status"], "withdrawn")
                self.assertEqual(withdrawn.structured_content["decided_by"], "agent")
                late = await client.call_tool("withdraw_question", {"alert_id": alert_id, "client": "ops-timeout"})
                self.assertFalse(late.is_error, text(late))
                self.assertEqual(late.structured_content["status"], "answered")

    async def test_cancelling_a_call_stops_its_wait_and_with_the_flag_withdraws_it(self):
        for flag, client_id in ((True, "ops-withdraw"), (False, "ops-keep")):
            with self.subTest(withdraw_on_cancel=flag), anyio.fail_after(TEST_SECONDS):
                arguments = ["--withdraw-on-cancel"] if flag else []
                async with self.connect(*arguments, client=client_id) as client:
                    progress = Progress()
                    with anyio.CancelScope() as scope:

                        async def ask():
                            await client.call_tool(
                                "ask_human", {"title": "Restart db-3?", "buttons": ["Restart", "Leave it"]}, progress_callback=progress
                            )

                        async with anyio.create_task_group() as group:
                            group.start_soon(ask)
                            alert = await self.displayed(client_id)
                            await progress.first.wait()
                            scope.cancel()
                    self.assertTrue(scope.cancelled_caught)
                    if flag:
                        final = await self.final(client_id, alert["id"])
                        self.assertEqual(final["state"], "withdrawn")
                        self.assertEqual(final["result"]["decided_by"], "agent")
                    else:
                        # The server goes on serving; the question waits for a person.
                        checked = await client.call_tool("check_answer", {"alert_id": alert["id"], "client": client_id})
                        self.assertEqual(checked.structured_content["status"], "not_answered_yet")
                        await client.call_tool("withdraw_question", {"alert_id": alert["id"], "client": client_id})

    async def test_the_end_of_input_withdraws_what_is_waited_for_with_the_flag(self):
        # Raw JSON lines, no SDK: the host closes stdin while a question waits.
        parameters = server(self.daemon.base, self.agent, "--withdraw-on-cancel", client="ops-eof")
        process = subprocess.Popen(
            [parameters.command, *parameters.args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, **parameters.env},
            preexec_fn=_die_with_parent,
        )
        try:
            messages = [
                {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask_human", "arguments": {"title": "Reboot?", "buttons": ["Reboot"]}}},
            ]
            # MCP's lifecycle: nothing but pings before the answer to initialize. The SDK serves
            # each request in a task of its own, so a call sent beside initialize may overtake it.
            process.stdin.write(json.dumps(messages[0]).encode() + b"\n")
            process.stdin.flush()
            with anyio.fail_after(TEST_SECONDS):
                first = json.loads(await anyio.to_thread.run_sync(process.stdout.readline))
                self.assertEqual(first["id"], 1)
                process.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages[1:]))
                process.stdin.flush()
                alert = await self.displayed("ops-eof")
                self.assertEqual(alert["metadata"]["agent"], "raw 1")
                process.stdin.close()
                status = await anyio.to_thread.run_sync(lambda: process.wait(20))
                self.assertEqual(status, 0)
                final = await self.final("ops-eof", alert["id"])
                self.assertEqual(final["state"], "withdrawn")
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()
            process.stdout.close()

    async def test_notify_human_posts_a_notice_without_buttons(self):
        with anyio.fail_after(TEST_SECONDS):
            async with self.connect(client="ops-notice") as client:
                result = await client.call_tool("notify_human", {"title": "Nightly build is green", "dismiss_after": 1})
                self.assertFalse(result.is_error, text(result))
                notice = result.structured_content
                self.assertEqual((notice["client"], notice["state"], notice["position"]), ("ops-notice", "displayed", 0))
                final = await self.final("ops-notice", notice["alert_id"])
                self.assertEqual((final["state"], final["buttons"]), ("dismissed", []))

    async def test_bad_arguments_are_tool_errors_the_model_can_fix(self):
        with anyio.fail_after(TEST_SECONDS):
            async with self.connect() as client:
                cases = [
                    ({"title": "Deploy?"}, "needs 'buttons'"),
                    ({"title": "Deploy?", "buttons": ["Go"], "titel": "x"}, "no argument named 'titel'"),
                    ({"title": "x" * 300, "buttons": ["Go"]}, "title"),
                    ({"title": "Deploy?", "buttons": ["Go", "Go"]}, "buttons[1].title"),
                    ({"title": "Deploy?", "buttons": ["Go"], "timeout_seconds": -1}, "timeout_seconds"),
                ]
                for arguments, expected in cases:
                    result = await client.call_tool("ask_human", arguments)
                    self.assertTrue(result.is_error, arguments)
                    self.assertIn(expected, text(result))
                # The server is still there.
                self.assertEqual(len((await client.list_tools()).tools), 5)


class MCPErrorTests(unittest.IsolatedAsyncioTestCase):
    """alertd's refusals, as tool errors that say what to do."""

    @classmethod
    def setUpClass(cls):
        cls.agent, agent_digest = token()
        cls.queued, queued_digest = token()
        cls.limited, limited_digest = token()
        cls.daemon = Daemon(
            f"""
log: {{ level: info }}
durability: normal
limits: {{ rate_per_second: 0.001, rate_burst: 2 }}
clients:
  tiny: {{ max_pending: 1 }}
auth:
  tokens:
    - {{ name: agent, sha256: "{agent_digest}", roles: [post, read], clients: ["ops"] }}
    - {{ name: queued, sha256: "{queued_digest}", roles: [post, read], clients: ["tiny"] }}
    - {{ name: limited, sha256: "{limited_digest}", roles: [post, read], clients: ["ops"] }}
"""
        )

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    async def test_a_wrong_token_says_to_fix_the_token(self):
        with anyio.fail_after(TEST_SECONDS):
            result = await self.call("alertd_wrong", "ask_human", {"title": "Deploy?", "buttons": ["Go"]})
            self.assertTrue(result.is_error)
            self.assertIn("refused the token", text(result))
            self.assertIn("ALERTD_TOKEN", text(result))

    async def call(self, secret, tool, arguments, client="ops", flags=()):
        async with Client(server(self.daemon.base, secret, *flags, client=client)) as session:
            result = await session.call_tool(tool, arguments)
            # Whatever alertd said, the server lives on.
            self.assertEqual(len((await session.list_tools()).tools), 5)
            return result

    async def test_a_client_the_token_lacks_says_which_role_it_needs(self):
        with anyio.fail_after(TEST_SECONDS):
            result = await self.call(
                self.agent, "ask_human", {"title": "Deploy?", "buttons": ["Go"], "client": "payments"}, flags=("--allow-client", "payments")
            )
            self.assertTrue(result.is_error)
            self.assertIn("post role on payments", text(result))

    async def test_a_full_queue_says_not_to_ask_more(self):
        with anyio.fail_after(TEST_SECONDS):
            first = await self.call(self.queued, "notify_human", {"title": "one"}, client="tiny")
            self.assertFalse(first.is_error, text(first))
            second = await self.call(self.queued, "ask_human", {"title": "two?", "buttons": ["Yes"], "timeout_seconds": 0}, client="tiny")
            self.assertTrue(second.is_error)
            self.assertIn("queue is full", text(second))

    async def test_a_rate_limit_says_when_to_call_again(self):
        with anyio.fail_after(TEST_SECONDS):
            for title in ("one", "two"):
                result = await self.call(self.limited, "notify_human", {"title": title})
                self.assertFalse(result.is_error, text(result))
            result = await self.call(self.limited, "notify_human", {"title": "three"})
            self.assertTrue(result.is_error)
            self.assertIn("rate-limiting", text(result))
            self.assertIn("same arguments", text(result))


class MCPUnreachableTests(unittest.IsolatedAsyncioTestCase):
    """alertd down before the call, and stopped during one."""

    async def test_alertd_not_running_is_a_tool_error(self):
        with anyio.fail_after(TEST_SECONDS):
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]
            async with Client(server(f"http://127.0.0.1:{port}", "alertd_any")) as client:
                result = await client.call_tool("ask_human", {"title": "Deploy?", "buttons": ["Go"]})
                self.assertTrue(result.is_error)
                self.assertIn("cannot be reached", text(result))
                self.assertIn("same arguments", text(result))
                checked = await client.call_tool("check_answer", {"alert_id": "01ARZ3NDEKTSV4RRFFQ69G5FAV"})
                self.assertTrue(checked.is_error)
                # A permission request alertd cannot put to anyone is denied, never allowed.
                permission = await client.call_tool("request_permission", {"tool_name": "Bash", "input": {"command": "ls"}})
                self.assertFalse(permission.is_error, text(permission))
                answer = json.loads(text(permission))
                self.assertEqual(answer["behavior"], "deny")
                self.assertIn("cannot be reached", answer["message"])

    async def test_credentials_in_the_url_never_reach_the_agent(self):
        # Issue 44, item 8: the tool's error text repeated --url whole.
        with anyio.fail_after(TEST_SECONDS):
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]
            url = f"http://ops:hunter2-secret@127.0.0.1:{port}/?token=query-secret"
            async with Client(server(url, "alertd_any")) as client:
                for tool, arguments in (
                    ("ask_human", {"title": "Deploy?", "buttons": ["Go"]}),
                    ("notify_human", {"title": "FYI"}),
                    ("request_permission", {"tool_name": "Bash", "input": {"command": "ls"}}),
                ):
                    result = await client.call_tool(tool, arguments)
                    said = text(result)
                    self.assertIn("cannot be reached", said)
                    self.assertNotIn("hunter2", said)
                    self.assertNotIn("query-secret", said)
                    self.assertIn("***@127.0.0.1", said)

    async def test_alertd_stopped_during_the_wait_names_the_question(self):
        agent, digest = token()
        daemon = Daemon(
            f"""
log: {{ level: info }}
durability: normal
auth:
  tokens:
    - {{ name: agent, sha256: "{digest}", roles: [post, read], clients: ["ops"] }}
"""
        )
        try:
            with anyio.fail_after(TEST_SECONDS):
                async with Client(server(daemon.base, agent, "--retry-for", "1")) as client:
                    progress = Progress()
                    outcome = {}

                    async def ask():
                        outcome["result"] = await client.call_tool(
                            "ask_human", {"title": "Deploy?", "buttons": ["Go"]}, progress_callback=progress
                        )

                    async with anyio.create_task_group() as group:
                        group.start_soon(ask)
                        await progress.first.wait()
                        await anyio.to_thread.run_sync(daemon.stop)
                    result = outcome["result"]
                    self.assertTrue(result.is_error)
                    self.assertIn("cannot be reached", text(result))
                    self.assertRegex(text(result), r"check_answer with alert_id \w+")
        finally:
            daemon.stop()


if __name__ == "__main__":
    unittest.main()
