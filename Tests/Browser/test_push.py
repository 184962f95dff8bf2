"""The dashboard as an installable app and its notifications (SPEC §11, docs/push.md), in
headless Chromium against the real alertd.

    ALERTD_BIN=.build/debug/alertd /usr/bin/python3 -m unittest discover -s Tests/Browser -p 'test_push.py' -v

A push goes the whole way but for the push service, which headless Chromium lacks: alertd
encrypts and sends it to a local endpoint (webpush.PushEndpoint) that decrypts it as the
browser would, and the DevTools protocol hands it to the service worker
(ServiceWorker.deliverPushMessage), as Chromium does with what its push service brings. What
the worker showed is read back with registration.getNotifications(). Headless Chromium has no
notification to tap either: a page of the origin asks the worker to act on a notification
("alertd.tap"), which runs the code a tap runs, the POST to alertd's answer_url included.
"""

import secrets
import unittest

from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By

from alertd_browser import Daemon, browser, text_of, token_entry, until, visible, wait_for
from webpush import DevTools, PushEndpoint

ALICE = secrets.token_urlsafe(24)  # answer
VIEWER = secrets.token_urlsafe(24)  # read only
POSTER = secrets.token_urlsafe(24)  # post

# A bound for what happens at once, with room for a machine shared with builds (load 20+ seen).
SOON = 15

# Clients of the tests: one each, so that no test sees another's alerts.
CLIENTS = ["shown", "tapped", "decided", "late", "destructive", "urgent", "opened"]  # "readonly": another device


def push_config(push=True):
    return (
        "log:\n  level: info\n"
        'callbacks:\n  allow: ["127.0.0.0/8"]\n  retry_initial_seconds: 0.2\n  retry_max_interval_seconds: 1\n'
        + ('push:\n  subject: "mailto:ops@example.com"\n  allow_http: true\n' if push else "")
        + "auth:\n  tokens:\n"
        + token_entry("alice", ALICE, ["answer"])
        + token_entry("viewer", VIEWER, ["read"])
        + token_entry("deployer", POSTER, ["post"])
    )


DEPLOY = {
    "title": "Deploy build 1234 to production?",
    "message": "12 commits, all checks green.",
    "buttons": [{"title": "Deploy"}, {"title": "Roll back", "style": "destructive"}, {"title": "Cancel", "style": "cancel"}],
}

NOTIFICATIONS_JS = """
const [tag, done] = arguments;
navigator.serviceWorker.getRegistration('/')
  .then((r) => (r ? r.getNotifications(tag ? { tag } : {}) : []))
  .then((list) => done(list.map((n) => ({
    title: n.title, body: n.body, tag: n.tag, requireInteraction: n.requireInteraction, renotify: n.renotify,
    silent: n.silent, actions: (n.actions || []).map((a) => ({ action: a.action, title: a.title })), data: n.data }))))
  .catch((e) => done({ error: String(e) }));
"""

TAP_JS = """
const [tag, action, done] = arguments;
navigator.serviceWorker.ready.then((r) => {
  navigator.serviceWorker.addEventListener('message', function heard(event) {
    if (event.data && event.data.type === 'alertd.tapped' && event.data.tag === tag) {
      navigator.serviceWorker.removeEventListener('message', heard);
      done(event.data.outcome);
    }
  });
  navigator.serviceWorker.startMessages();
  r.active.postMessage({ type: 'alertd.tap', tag, action });
}).catch((e) => done('error: ' + e));
"""

READY_JS = """
const done = arguments[0];
navigator.serviceWorker.ready
  .then((r) => done({ scope: r.scope, script: r.active && r.active.scriptURL,
                      controller: navigator.serviceWorker.controller && navigator.serviceWorker.controller.scriptURL }))
  .catch((e) => done({ error: String(e) }));
"""


class NotificationTests(unittest.TestCase):
    """One alertd with push on, one browser whose service worker gets alertd's pushes."""

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon(push_config())
        cls.endpoint = PushEndpoint()
        cls.driver = browser()
        cls.driver.set_script_timeout(SOON)
        cls.base = cls.daemon.base
        cls.driver.execute_cdp_cmd("Browser.grantPermissions", {"permissions": ["notifications"], "origin": cls.base})
        # The dashboard registers the worker on load, signed in or not.
        cls.driver.get(cls.base + "/")
        cls.devtools = DevTools(cls.driver, cls.base)
        cls.registration = cls.devtools.registration_id(cls.base + "/")
        # The device as a browser would subscribe it: answers as alice.
        cls.phone = cls.endpoint.device("phone")
        status, saved = cls.daemon.api(
            "POST",
            "/v1/push/subscriptions",
            {"endpoint": cls.endpoint.url(cls.phone), "keys": cls.phone.keys(), "clients": CLIENTS, "answer": True},
            ALICE,
        )
        assert status == 201, (status, saved)

    @classmethod
    def tearDownClass(cls):
        cls.devtools.close()
        cls.driver.quit()
        cls.endpoint.stop()
        cls.daemon.cleanup()

    def setUp(self):
        # A page of the origin that is not the dashboard: nothing closes notes behind the test's back.
        self.driver.get(self.base + "/healthz")

    def notifications(self, tag=None):
        shown = self.driver.execute_async_script(NOTIFICATIONS_JS, tag)
        self.assertNotIn("error", shown if isinstance(shown, dict) else {}, shown)
        return shown

    def notification(self, tag, condition=lambda n: True, what="the notification"):
        """The notification with `tag` once `condition` holds of it."""
        try:
            return until(
                self.driver,
                lambda d: next((n for n in self.notifications(tag) if condition(n)), None),
                SOON,
                f"{what} ({tag})",
            )
        except TimeoutException:
            raise AssertionError(
                f"no {what} ({tag}) within {SOON} s; shown: {self.notifications()}; the worker: {self.devtools.worker_events()}"
            ) from None

    def deliver(self, payload, done, what, raw=False):
        """Hands `payload` to the worker and returns `done()` once it holds (what the push shows).

        Headless Chromium loses about one notification in ten from what getNotifications() reads
        back: DevTools' BackgroundService record says the push was dispatched and completed with
        Success (showNotification resolved), yet no notification with its tag is listed within
        15 s. It is the headless browser's notification store, not the worker: the same push
        delivered again is listed. So up to three deliveries, 5 s apart; the worker shows the same
        push twice as one notification (its tag), and a decision's note reads the same each time.
        """
        for _ in range(2):
            self.devtools.deliver_push(self.base, self.registration, payload, raw)
            try:
                return until(self.driver, lambda d: done(), 5, what)
            except TimeoutException:
                pass
        self.devtools.deliver_push(self.base, self.registration, payload, raw)
        try:
            return until(self.driver, lambda d: done(), SOON, what)
        except TimeoutException:
            raise AssertionError(
                f"not {what} within {SOON} s of a third delivery; shown: {self.notifications()}; the worker: {self.devtools.worker_events()}"
            ) from None

    def shows(self, payload, tag, condition=lambda n: True, what="the notification", raw=False):
        """The notification with `tag` that `payload` makes, once `condition` holds of it."""
        return self.deliver(payload, lambda: next((n for n in self.notifications(tag) if condition(n)), None), what, raw)

    def push(self, kind, alert_id, condition=lambda n: True, what="the notification", device=None):
        """The push alertd sent about `alert_id`, delivered to the worker, and its notification."""
        payload = self.endpoint.wait(device or self.phone, kind, alert_id)
        return payload, self.shows(payload, alert_id, condition, what)

    def display(self, client, alert=DEPLOY, device=None):
        posted = self.daemon.post(client, alert, token=POSTER)
        payload, _ = self.push("alert.displayed", posted["id"], device=device)
        return posted, payload

    def tap(self, tag, action):
        return self.driver.execute_async_script(TAP_JS, tag, action)

    def test_the_worker_registers_from_alertds_own_origin_for_the_whole_origin_and_the_app_is_installable(self):
        self.driver.get(self.base + "/")
        ready = self.driver.execute_async_script(READY_JS)
        self.assertEqual(ready["scope"], self.base + "/")
        self.assertEqual(ready["script"], self.base + "/sw.js")
        # It controls the page (clients.claim), and after a reload the page loads through it.
        self.driver.refresh()
        until(self.driver, lambda d: d.execute_async_script(READY_JS)["controller"] == self.base + "/sw.js", SOON, "a controlled page")
        manifest = self.driver.execute_cdp_cmd("Page.getAppManifest", {})
        self.assertEqual(manifest["url"], self.base + "/ui/manifest.webmanifest")
        self.assertEqual(manifest["errors"], [])
        # Chromium's own verdict: a manifest with the icons it needs and a worker with a fetch handler.
        errors = self.driver.execute_cdp_cmd("Page.getInstallabilityErrors", {})["installabilityErrors"]
        self.assertEqual(errors, [], errors)
        # The worker keeps copies of the dashboard's own files only: nothing of the API.
        cached = self.driver.execute_async_script(
            "const done = arguments[0]; caches.keys().then(async (names) => { const urls = [];"
            " for (const name of names) for (const r of await (await caches.open(name)).keys()) urls.push(new URL(r.url).pathname);"
            " done(urls); });"
        )
        self.assertIn("/ui/dashboard.js", cached)
        self.assertEqual([path for path in cached if not (path == "/" or path.startswith("/ui/"))], [])
        self.assertEqual(self.driver.execute_script("return document.querySelector('link[rel=manifest]').href"), manifest["url"])

    def test_a_push_shows_the_alert_with_its_title_and_its_non_destructive_buttons_as_actions(self):
        posted, payload = self.display("shown")
        shown = self.notification(posted["id"])
        self.assertEqual(shown["title"], DEPLOY["title"])
        self.assertTrue(shown["body"].startswith(DEPLOY["message"]), shown["body"])
        # Chromium shows two actions: Deploy, then the cancel button; never "Roll back" (destructive).
        self.assertEqual([a["title"] for a in shown["actions"]], ["Deploy", "Cancel"])
        self.assertEqual([a["action"] for a in shown["actions"]], ["button:0", "button:2"])
        # A choice the notification does not offer is one tap away on the dashboard.
        self.assertIn("every choice on the dashboard", shown["body"])
        self.assertTrue(shown["renotify"])
        self.assertFalse(shown["requireInteraction"])
        # The answer link, resolved against the worker's origin (alertd's own).
        self.assertEqual(shown["data"]["answerURL"], self.base + payload["answer_url"])
        self.assertEqual(shown["data"]["client"], "shown")
        self.assertEqual(len(self.notifications(posted["id"])), 1)

    def test_an_urgent_alert_stays_until_acted_on_and_a_reminder_replaces_its_notification(self):
        urgent = dict(DEPLOY, priority=60, title="Disk full on db-1")
        posted, payload = self.display("urgent", urgent)
        self.assertTrue(self.notification(posted["id"])["requireInteraction"])
        # A reminder (push.remind_every) is the same alert again: it replaces the notification.
        reminder = dict(payload, reminder=True)
        again = self.shows(reminder, posted["id"], lambda n: n["title"].startswith("Reminder: "), "the reminder")
        self.assertEqual(again["title"], "Reminder: Disk full on db-1")
        self.assertEqual(len(self.notifications(posted["id"])), 1)

    def test_a_tap_on_an_action_answers_the_alert_through_answer_url_as_the_subscriptions_decider(self):
        posted, _ = self.display("tapped")
        self.notification(posted["id"], lambda n: n["actions"], "the question")
        self.assertEqual(self.tap(posted["id"], "button:0"), "answered")
        decided = self.daemon.alert("tapped", posted["id"], token=VIEWER)
        self.assertEqual(decided["state"], "answered")
        self.assertEqual(decided["result"]["button"], "Deploy")
        self.assertEqual(decided["result"]["decided_by"], "alice")
        note = self.notification(posted["id"], lambda n: "You answered" in n["body"], "the outcome")
        self.assertEqual(note["body"], "You answered “Deploy”.")
        self.assertEqual(note["actions"], [])
        self.assertTrue(note["silent"])
        # The decision's push keeps what this device did, and the link is spent.
        _, decided = self.push("alert.decided", posted["id"], lambda n: n["data"].get("decided") == "answered", "the decided note")
        self.assertEqual(decided["body"], "You answered “Deploy”.")
        self.assertTrue(decided["data"]["settled"])
        # The note has nothing left to answer: a tap on it only opens the dashboard.
        self.assertNotEqual(self.tap(posted["id"], "button:0"), "answered")

    def test_a_tap_on_the_notification_shows_its_client_on_the_open_dashboard(self):
        self.driver.get(self.base + "/#/clients/elsewhere")
        field = until(self.driver, lambda d: visible(d, "login-view") and d.find_element(By.ID, "token-input"))
        field.send_keys(ALICE)
        self.driver.find_element(By.ID, "login-submit").click()
        until(self.driver, lambda d: visible(d, "client-view") and text_of(d, "client-title") == "elsewhere", SOON)
        posted, _ = self.display("opened")
        self.notification(posted["id"], lambda n: n["actions"], "the question")
        # A tap on the notification itself (no action): the dashboard shows the alert's client, and
        # the notification goes. Nothing is answered.
        self.assertEqual(self.tap(posted["id"], ""), "shown")
        until(self.driver, lambda d: text_of(d, "client-title") == "opened" and d.execute_script("return location.hash") == "#/clients/opened", SOON)
        until(self.driver, lambda d: (dialog := d.execute_script(
            "const e = document.querySelector('#stage-content [role=alertdialog]'); return e && e.dataset.alertId")) == posted["id"], SOON)
        self.assertEqual(self.notifications(posted["id"]), [])
        self.assertEqual(self.daemon.alert("opened", posted["id"], token=VIEWER)["state"], "displayed")

    def test_a_destructive_button_is_never_answered_from_a_notification(self):
        posted, _ = self.display("destructive")
        self.notification(posted["id"], lambda n: n["actions"], "the question")
        # Even asked for by its index, as no tap on a notification can.
        self.assertNotEqual(self.tap(posted["id"], "button:1"), "answered")
        self.assertEqual(self.daemon.alert("destructive", posted["id"], token=VIEWER)["state"], "displayed")
        self.assertEqual(self.notifications(posted["id"]), [])

    def test_a_tap_after_someone_else_answered_says_so_and_changes_nothing(self):
        posted, _ = self.display("late")
        self.notification(posted["id"], lambda n: n["actions"], "the question")
        status, _ = self.daemon.api("POST", f"/v1/clients/late/alerts/{posted['id']}/choice", {"button": "Cancel"}, ALICE)
        self.assertEqual(status, 200)
        self.assertEqual(self.tap(posted["id"], "button:0"), "refused")
        note = self.notification(posted["id"], lambda n: "Already answered" in n["body"], "the refusal")
        self.assertEqual(note["body"], "“Deploy” was not chosen. Already answered “Cancel” by alice.")
        self.assertEqual(self.daemon.alert("late", posted["id"], token=VIEWER)["result"]["button"], "Cancel")

    def test_alert_decided_replaces_the_question_with_a_quiet_note_that_a_dashboard_on_screen_closes(self):
        first, _ = self.display("decided")
        self.notification(first["id"], lambda n: n["actions"], "the question")
        self.daemon.choose("decided", first["id"], "Deploy", token=ALICE)
        # No page of the dashboard on screen: the question makes way for a note, without sound.
        _, note = self.push("alert.decided", first["id"], lambda n: not n["actions"], "the note")
        self.assertEqual(note["title"], DEPLOY["title"])
        self.assertEqual(note["body"], "Answered: nothing left to do.")
        self.assertTrue(note["silent"])
        self.assertTrue(note["data"]["settled"])
        # The next question closes it.
        second, _ = self.display("decided")
        self.notification(second["id"], lambda n: n["actions"], "the next question")
        self.assertEqual(self.notifications(first["id"]), [])
        # With the dashboard on screen, a decision closes its notification at once.
        self.driver.get(self.base + "/")
        self.daemon.choose("decided", second["id"], "Cancel", token=ALICE)
        payload = self.endpoint.wait(self.phone, "alert.decided", second["id"])
        self.deliver(payload, lambda: self.notifications(second["id"]) == [], "the notification closed")

    def test_every_push_shows_a_notification_even_one_it_cannot_read(self):
        # Browsers end (Safari) or flag (Chrome) subscriptions whose pushes show nothing.
        future = {"type": "alert.future", "alert": {"id": "X1", "client": "ops"}}
        self.shows(future, "alertd", what="the notification of a push it does not know")
        self.driver.execute_script("navigator.serviceWorker.getRegistration('/').then((r) => r.getNotifications().then((l) => l.forEach((n) => n.close())))")
        until(self.driver, lambda d: self.notifications("alertd") == [], SOON, "the notification closed")
        self.shows("not JSON", "alertd", what="the notification of a push that is not JSON", raw=True)
        # The decision about an alert whose question this device does not show (dismissed by hand).
        decided = {"type": "alert.decided", "alert": {"id": "01NOTSHOWN", "client": "ops", "state": "expired"}}
        note = self.shows(decided, "01NOTSHOWN", what="the note")
        self.assertEqual((note["title"], note["body"]), ("An alert for ops", "Expired before anyone answered."))
        self.assertTrue(note["silent"])

    def test_a_subscription_that_may_not_answer_gets_no_actions(self):
        reader = self.endpoint.device("reader")
        status, _ = self.daemon.api(
            "POST",
            "/v1/push/subscriptions",
            {"endpoint": self.endpoint.url(reader), "keys": reader.keys(), "clients": ["readonly"], "answer": False},
            VIEWER,
        )
        self.assertEqual(status, 201)
        posted, payload = self.display("readonly", device=reader)
        self.assertNotIn("answer_url", payload)
        shown = self.notification(posted["id"])
        self.assertEqual(shown["title"], DEPLOY["title"])
        self.assertEqual(shown["actions"], [])
        self.assertIsNone(shown["data"]["answerURL"])


class NotifyThisDeviceTests(unittest.TestCase):
    """The dashboard's "Notify this device", as far as headless Chromium goes."""

    def sign_in(self, driver, base, client):
        driver.get(f"{base}/#/clients/{client}")
        field = until(driver, lambda d: visible(d, "login-view") and d.find_element(By.ID, "token-input"))
        field.send_keys(ALICE)
        driver.find_element(By.ID, "login-submit").click()
        until(driver, lambda d: visible(d, "client-view") and text_of(d, "identity").startswith("alice ·"))

    def start(self, config, arguments=()):
        daemon = Daemon(config)
        self.addCleanup(daemon.cleanup)
        driver = browser(arguments=arguments)
        self.addCleanup(driver.quit)
        driver.set_script_timeout(SOON)
        return daemon, driver

    def test_notify_this_device_asks_subscribes_and_saves_or_says_why_not(self):
        daemon, driver = self.start(push_config())
        driver.execute_cdp_cmd("Browser.grantPermissions", {"permissions": ["notifications"], "origin": daemon.base})
        self.sign_in(driver, daemon.base, "ops")
        button = until(driver, lambda d: (b := d.find_element(By.ID, "device-notify")) and b.is_enabled() and b, SOON, "the button")
        self.assertEqual(button.text, "Notify this device of ops")
        self.assertIn("even with the dashboard closed", text_of(driver, "device-status"))
        button.click()
        until(driver, lambda d: "Subscribing…" in text_of(d, "device-status"), SOON, "the page subscribing")
        self.assertFalse(driver.find_element(By.ID, "device-notify").is_enabled())
        # The page gives the browser's push service 20 s.
        status = until(driver, lambda d: (t := text_of(d, "device-status")) and ("Saved." in t or "could not subscribe" in t) and t, 40)
        saved = daemon.api("GET", "/v1/push/subscriptions", token=ALICE)[1]["subscriptions"]
        if "Saved." in status:
            # A browser with a push service: alertd holds the subscription the browser made.
            endpoint = driver.execute_async_script(
                "const done = arguments[0]; navigator.serviceWorker.ready.then((r) => r.pushManager.getSubscription())"
                ".then((s) => done(s && s.endpoint));"
            )
            self.assertEqual([(s["endpoint"], s["clients"], s["answer"]) for s in saved], [(endpoint, ["ops"], True)])
            self.assertIn("This device is notified of ops; its buttons answer as alice.", status)
            driver.find_element(By.ID, "device-stop").click()
            until(driver, lambda d: "Stopped" in text_of(d, "device-status"), SOON)
            self.assertEqual(daemon.api("GET", "/v1/push/subscriptions", token=ALICE)[1]["subscriptions"], [])
        else:
            # Headless Chromium has no push service: pushManager.subscribe() never settles after
            # the permission was granted. The page stops waiting, says so, and alertd holds nothing.
            self.assertIn("This browser could not subscribe (TimeoutError: its push service did not answer within 20 s", status)
            self.assertEqual(driver.execute_script("return Notification.permission"), "granted")
            self.assertEqual(saved, [])
            self.assertTrue(driver.find_element(By.ID, "device-stop").get_attribute("hidden"))
            self.assertTrue(driver.find_element(By.ID, "device-notify").is_enabled())

    def test_a_refused_permission_stops_there(self):
        daemon, driver = self.start(push_config())
        driver.execute_cdp_cmd("Browser.setPermission", {"permission": {"name": "notifications"}, "setting": "denied", "origin": daemon.base})
        self.sign_in(driver, daemon.base, "ops")
        # Blocked beforehand: the page says so without asking.
        until(driver, lambda d: "Notifications are blocked for this site" in text_of(d, "device-status"), SOON)
        self.assertFalse(driver.find_element(By.ID, "device-notify").is_enabled())
        # Allowed to ask again (the person reset the site's setting), and refused at the prompt.
        driver.execute_cdp_cmd("Browser.setPermission", {"permission": {"name": "notifications"}, "setting": "prompt", "origin": daemon.base})
        driver.refresh()
        button = until(driver, lambda d: (b := d.find_element(By.ID, "device-notify")) and b.is_enabled() and b, SOON, "the button")
        driver.execute_cdp_cmd("Browser.setPermission", {"permission": {"name": "notifications"}, "setting": "denied", "origin": daemon.base})
        button.click()
        until(driver, lambda d: "Notifications are blocked for this site" in text_of(d, "device-status"), SOON)
        subscription = driver.execute_async_script(
            "const done = arguments[0]; navigator.serviceWorker.ready.then((r) => r.pushManager.getSubscription()).then((s) => done(s && s.endpoint));"
        )
        self.assertIsNone(subscription)
        self.assertEqual(daemon.api("GET", "/v1/push/subscriptions", token=ALICE)[1]["subscriptions"], [])

    def test_with_push_off_the_page_says_so_and_offers_nothing(self):
        daemon, driver = self.start(push_config(push=False))
        self.sign_in(driver, daemon.base, "ops")
        until(driver, lambda d: "Notifications are off on this alertd" in text_of(d, "device-status"), SOON)
        self.assertFalse(driver.find_element(By.ID, "device-notify").is_enabled())
        # The worker still registers: the app is installable without push.
        ready = driver.execute_async_script(READY_JS)
        self.assertEqual(ready["script"], daemon.base + "/sw.js")

    def test_a_page_that_is_not_a_secure_context_says_notifications_need_https(self):
        # A name that is not loopback, served over http: not a secure context (127.0.0.1 and
        # localhost are). With tokens, alertd answers any Host.
        daemon, driver = self.start(push_config(), arguments=("--host-resolver-rules=MAP alertd.test 127.0.0.1",))
        base = f"http://alertd.test:{daemon.port}"
        self.sign_in(driver, base, "ops")
        until(driver, lambda d: "Notifications need HTTPS" in text_of(d, "device-status"), SOON)
        self.assertFalse(driver.find_element(By.ID, "device-notify").is_enabled())
        self.assertFalse(driver.execute_script("return window.isSecureContext"))


class InstalledAppTests(unittest.TestCase):
    def test_the_app_opens_while_alertd_is_down_and_reconnects_when_it_is_back(self):
        daemon = Daemon()
        self.addCleanup(lambda: daemon.cleanup())
        driver = browser()
        self.addCleanup(driver.quit)
        driver.set_script_timeout(SOON)
        driver.get(daemon.base + "/")
        until(driver, lambda d: d.execute_async_script(READY_JS).get("script") == daemon.base + "/sw.js", SOON, "the worker")
        until(driver, lambda d: visible(d, "clients-view"), SOON)
        self.assertEqual(daemon.terminate(), 0)
        # alertd is down: the page comes from the worker's copy and says it is reconnecting.
        driver.get(daemon.base + "/")
        until(driver, lambda d: "Reconnecting" in (text_of(d, "banner") or ""), SOON, "the reconnecting banner")
        back = daemon.restart()
        daemon = back
        until(driver, lambda d: visible(d, "clients-view"), 20, "the clients view once alertd is back")


if __name__ == "__main__":
    unittest.main()
