"""Support for the dashboard's browser tests: the real alertd, its API, headless Chromium.

Standard library plus Debian's python3-selenium (4.8); Chromium and its driver
from Debian's chromium and chromium-driver packages.

Environment:
    ALERTD_BIN          the alertd binary (default .build/debug/alertd)
    CHROMIUM_BIN        default /usr/bin/chromium
    CHROMEDRIVER_BIN    default /usr/bin/chromedriver
    ALERTD_SCREENSHOTS  1: save screenshots into docs/images/
"""

import ctypes
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ALERTD_BIN = os.path.abspath(os.path.join(REPO, os.environ.get("ALERTD_BIN", ".build/debug/alertd")))
CHROMIUM_BIN = os.environ.get("CHROMIUM_BIN", "/usr/bin/chromium")
CHROMEDRIVER_BIN = os.environ.get("CHROMEDRIVER_BIN", "/usr/bin/chromedriver")
SCREENSHOTS = os.environ.get("ALERTD_SCREENSHOTS") == "1"
IMAGES = os.path.join(REPO, "docs", "images")


def sha256_hex(text):
    return hashlib.sha256(text.encode()).hexdigest()


def token_entry(name, secret, roles, clients=("*",)):
    """One entry of auth.tokens, holding only the secret's SHA-256."""
    return (
        f'    - {{ name: {name}, sha256: "{sha256_hex(secret)}", roles: [{", ".join(roles)}], '
        f'clients: [{", ".join(json.dumps(c) for c in clients)}] }}\n'
    )


def _die_with_parent():
    # PR_SET_PDEATHSIG = 1: if the test process dies, the kernel kills the daemon.
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    except OSError:
        pass


class Daemon:
    """The real alertd on 127.0.0.1 (a free port unless given) with a temp state dir."""

    def __init__(self, config="log:\n  level: info\n", port=0, directory=None):
        if not os.access(ALERTD_BIN, os.X_OK):
            raise RuntimeError(f"no alertd binary at {ALERTD_BIN}: build it (swift build) or set ALERTD_BIN")
        self.directory = directory or tempfile.mkdtemp(prefix="alertd-browser-")
        self.config_path = os.path.join(self.directory, "alertd.yaml")
        self.state_dir = os.path.join(self.directory, "state")
        if directory is None:
            self.write_config(config)
        self.lines = []
        self._listening = threading.Event()
        self.port = None
        self.process = subprocess.Popen(
            [ALERTD_BIN, "--config", self.config_path, "--listen", f"127.0.0.1:{port}", "--state-dir", self.state_dir],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=_die_with_parent,
            env={k: v for k, v in os.environ.items() if not k.startswith(("LISTEN_", "NOTIFY_SOCKET", "WATCHDOG_"))},
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not self._listening.wait(20):
            self.kill()
            raise RuntimeError("alertd did not start listening:\n" + self.log())
        self.base = f"http://127.0.0.1:{self.port}"

    def _read(self):
        for raw in self.process.stderr:
            line = raw.decode(errors="replace")
            self.lines.append(line)
            match = re.search(r'msg="?listening"? .*address="?[0-9.]+:(\d+)', line)
            if match and self.port is None:
                self.port = int(match.group(1))
                self._listening.set()

    def log(self):
        return "".join(self.lines)

    def write_config(self, config):
        with open(self.config_path, "w") as file:
            file.write(config)

    def reload(self, config):
        """Rewrites the config and sends SIGHUP; returns once alertd says it reloaded."""
        seen = sum("config reloaded" in line for line in self.lines)
        self.write_config(config)
        self.process.send_signal(signal.SIGHUP)
        wait_for(lambda: sum("config reloaded" in line for line in self.lines) > seen, 10, "config reloaded")

    def terminate(self):
        """SIGTERM: alertd drains and exits 0."""
        self.process.send_signal(signal.SIGTERM)
        status = self.process.wait(20)
        self._reader.join(10)
        self.process.stderr.close()
        return status

    def restart(self):
        """A new alertd on the same port, config and state dir (after terminate)."""
        return Daemon(port=self.port, directory=self.directory)

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self._reader.join(10)
        self.process.stderr.close()

    def cleanup(self):
        self.kill()
        shutil.rmtree(self.directory, ignore_errors=True)

    # The API, as a service would use it.

    def api(self, method, path, body=None, token=None):
        """(status, parsed JSON body or None)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        if body is not None:
            request.add_header("Content-Type", "application/json")
        if token:
            request.add_header("Authorization", "Bearer " + token)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                text = response.read()
                return response.status, (json.loads(text) if text else None)
        except urllib.error.HTTPError as error:
            text = error.read()
            return error.code, (json.loads(text) if text else None)

    def post(self, client, alert, token=None):
        status, body = self.api("POST", f"/v1/clients/{client}/alerts", alert, token)
        assert status == 201, f"post answered {status}: {body}"
        return body

    def alert(self, client, alert_id, token=None):
        status, body = self.api("GET", f"/v1/clients/{client}/alerts/{alert_id}", token=token)
        assert status == 200, f"get answered {status}: {body}"
        return body

    def choose(self, client, alert_id, button, token=None):
        return self.api("POST", f"/v1/clients/{client}/alerts/{alert_id}/choice", {"button": button}, token)


def wait_for(condition, timeout, message=""):
    """Polls a condition of the outside world (the API) until it holds; fails after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {message}")
        time.sleep(0.02)


def browser(width=1280, height=860, dark=False, phone=False, arguments=()):
    """Headless Chromium through chromedriver, with the browser console recorded.

    `phone`: a 360 × 760 CSS-pixel viewport at device scale 2, as a small phone has.
    `arguments`: more command-line switches.
    """
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM_BIN
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-extensions",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-renderer-backgrounding",
        "--disable-background-timer-throttling",
        "--force-prefers-reduced-motion",
        "--hide-scrollbars",
        "--lang=en-US",
        f"--window-size={width},{height}",
        *arguments,
    ):
        options.add_argument(argument)
    if dark:
        options.add_argument("--force-dark-mode")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER_BIN), options=options)
    if dark:
        driver.execute_cdp_cmd(
            "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]}
        )
    if phone:
        # A window cannot be made this narrow; the viewport can.
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride", {"width": 360, "height": 760, "deviceScaleFactor": 2, "mobile": True}
        )
    return driver


def until(driver, condition, timeout=5, message=""):
    """WebDriverWait for a condition of the page."""
    return WebDriverWait(
        driver, timeout, poll_frequency=0.03, ignored_exceptions=(StaleElementReferenceException,)
    ).until(condition, message)


DIALOG_JS = """
const dialog = document.querySelector('#stage-content [role=alertdialog]');
if (!dialog) return null;
const rect = (e) => { const r = e.getBoundingClientRect(); return {x: r.x, y: r.y, width: r.width, height: r.height}; };
return {
  id: dialog.dataset.alertId,
  style: dialog.dataset.style,
  title: dialog.querySelector('.dialog-title').textContent,
  message: (dialog.querySelector('.dialog-message') || {}).textContent || null,
  buttons: [...dialog.querySelectorAll('button.action')].map((b) => ({
    title: b.querySelector('.action-title').textContent, style: b.dataset.style, index: Number(b.dataset.index),
    disabled: b.disabled, rect: rect(b), color: getComputedStyle(b).color,
    inCancelGroup: !!b.closest('.sheet-cancel'), layout: b.closest('.actions').className })),
  rect: rect(dialog),
  stage: rect(document.getElementById('stage-content')),
  focused: document.activeElement === dialog,
};
"""


def dialog(driver):
    """The displayed alert as the page shows it, or None."""
    return driver.execute_script(DIALOG_JS)


def dialog_id(driver):
    shown = dialog(driver)
    return shown and shown["id"]


def text_of(driver, element_id):
    return driver.execute_script("const e = document.getElementById(arguments[0]); return e ? e.textContent : null", element_id)


def visible(driver, element_id):
    return driver.execute_script(
        "const e = document.getElementById(arguments[0]); return !!e && !e.closest('[hidden]')", element_id
    )


def screenshot(driver, name):
    """Saves docs/images/<name> when ALERTD_SCREENSHOTS=1, the pointer parked where it highlights nothing."""
    if SCREENSHOTS:
        ActionChains(driver).move_to_element(driver.find_element(By.CSS_SELECTOR, ".topbar")).perform()
        os.makedirs(IMAGES, exist_ok=True)
        driver.save_screenshot(os.path.join(IMAGES, name))
