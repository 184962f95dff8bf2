"""The dashboard in a real browser (headless Chromium) against the real alertd.

    /usr/bin/python3 -m unittest discover -s Tests/Browser -v

Each test posts through the API as a service would, and watches the page. It
awaits conditions (WebDriverWait, or a bounded poll of the API). The docs say a
change shows "within a second"; the tests give it SOON (5 s): on two cores shared
with other builds a second is not always a second, and the bound is there to catch
a page that does not follow at all (its long-poll would answer only after its
25 s), not to time the page.
"""

import json
import time
import unittest
import urllib.request

from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from alertd_browser import (
    Daemon,
    browser,
    dialog,
    dialog_id,
    screenshot,
    text_of,
    token_entry,
    until,
    visible,
    wait_for,
)

# "Within a second", with room for a loaded machine: see the module's docstring.
SOON = 5

DEPLOY = {
    "title": "Deploy build 1234 to production?",
    "message": "12 commits by 4 people, all checks green. The last deploy was 3 hours ago.",
    "buttons": [{"title": "Deploy"}, {"title": "Cancel", "style": "cancel"}],
    "metadata": {"build": 1234, "branch": "main", "requested_by": "ci"},
}


def red(css_color):
    """Whether a computed `rgb(…)` colour is a red (destructive)."""
    parts = [int(float(p)) for p in css_color[css_color.index("(") + 1 : css_color.index(")")].split(",")[:3]]
    return parts[0] > 180 and parts[1] < 90 and parts[2] < 90


def severe_console_entries(driver):
    # Chromium logs every 4xx as an error; the push key's 404 is alertd saying push is off
    # (this daemon's config has none), which the page reads and shows.
    return [
        entry
        for entry in driver.get_log("browser")
        if entry["level"] == "SEVERE" and not ("/v1/push/key - Failed to load resource" in entry["message"] and " 404 " in entry["message"])
    ]


class OpenDaemonTests(unittest.TestCase):
    """A daemon without tokens, one browser (a second one where a test needs it)."""

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon()
        cls.driver = browser()

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        cls.daemon.cleanup()

    def open(self, client, driver=None):
        driver = driver or self.driver
        driver.get(f"{self.daemon.base}/#/clients/{client}")
        until(driver, lambda d: text_of(d, "client-title") == client and "Nothing to answer" in text_of(d, "stage"))

    def shows(self, alert_id, timeout=5, driver=None):
        until(driver or self.driver, lambda d: dialog_id(d) == alert_id, timeout, f"alert {alert_id} displayed")

    def test_a_1200_px_window_with_history_rows_has_no_horizontal_scrolling(self):
        client = "narrow"
        for index in range(6):
            posted = self.daemon.post(client, {
                "title": f"Deploy build {index} of payments-api to production eu-west-1?",
                "buttons": [{"title": "Deploy everything now", "style": "destructive"}, {"title": "Cancel", "style": "cancel"}],
            })
            self.assertEqual(self.daemon.choose(client, posted["id"], "Deploy everything now")[0], 200)
        self.daemon.post(client, DEPLOY)
        driver = browser(width=1200, height=800)
        try:
            driver.get(f"{self.daemon.base}/#/clients/{client}")
            until(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#history-body tr")) == 6, 10, "six history rows")
            widths = driver.execute_script(
                "const wrap = document.querySelector('.table-wrap');"
                "return [document.documentElement.scrollWidth, document.documentElement.clientWidth, wrap.scrollWidth, wrap.clientWidth];")
            self.assertLessEqual(widths[0], widths[1], f"the page scrolls sideways: {widths}")
            self.assertLessEqual(widths[2], widths[3], f"the history table scrolls sideways: {widths}")
        finally:
            driver.quit()

    def test_a_posted_alert_appears_a_click_answers_it_and_the_next_one_appears(self):
        self.open("flow")
        first = self.daemon.post("flow", DEPLOY)
        second = self.daemon.post("flow", {"title": "Restart the cache?", "buttons": [{"title": "Restart"}]})
        self.shows(first["id"])
        shown = dialog(self.driver)
        self.assertEqual(shown["title"], DEPLOY["title"])
        self.assertEqual(shown["message"], DEPLOY["message"])
        until(self.driver, lambda d: "1 of 2" in text_of(d, "stage-position") and "1 queued behind" in text_of(d, "stage-position"))
        until(self.driver, lambda d: "Restart the cache?" in text_of(d, "queue-list"))

        self.driver.find_element(By.XPATH, "//div[@role='alertdialog']//button[.//span[text()='Deploy']]").click()
        answered = wait_for(
            lambda: (a := self.daemon.alert("flow", first["id"]))["state"] == "answered" and a, 5, "the choice committed"
        )
        self.assertEqual(answered["result"]["button"], "Deploy")
        self.assertEqual(answered["result"]["button_index"], 0)
        self.assertIsNone(answered["result"]["decided_by"])
        self.shows(second["id"])
        until(self.driver, lambda d: "nothing queued behind" in text_of(d, "stage-position"))
        row = until(self.driver, lambda d: d.find_element(By.CSS_SELECTOR, f"#history-body tr[data-alert-id='{first['id']}']"))
        self.assertEqual(row.get_attribute("data-outcome"), "answered")
        self.assertEqual(row.find_element(By.CSS_SELECTOR, ".history-button").text, "Deploy")
        self.assertIn("Deploy", text_of(self.driver, "flash"))

    def test_an_escalated_alert_says_where_it_came_from_and_an_answer_here_decides_it_there(self):
        # SPEC §12: nobody answered on esc-own (a blocker holds its display), so the alert is
        # also queued on esc-lead, whose dashboard shows it, says so, and answers it.
        self.daemon.post("esc-own", {"title": "blocker", "buttons": [{"title": "OK"}]})
        self.open("esc-lead")
        posted = self.daemon.post("esc-own", dict(DEPLOY, escalation=[{"after": 0.3, "to": "esc-lead"}]))
        self.shows(posted["id"])
        self.assertEqual(
            text_of(self.driver, "escalated-from"), "Escalated from esc-own: nobody answered there in 0.3 s")
        self.driver.find_element(By.XPATH, "//div[@role='alertdialog']//button[.//span[text()='Deploy']]").click()
        answered = wait_for(
            lambda: (a := self.daemon.alert("esc-own", posted["id"]))["state"] == "answered" and a, 5, "the choice committed"
        )
        self.assertEqual(answered["result"]["button"], "Deploy")
        self.assertEqual([step["client"] for step in answered["escalated_to"]], ["esc-lead"])
        until(self.driver, lambda d: "Nothing to answer" in text_of(d, "stage"))

    def test_an_escalated_alert_queued_behind_another_is_marked_in_the_queue(self):
        self.daemon.post("esc-own2", {"title": "blocker", "buttons": [{"title": "OK"}]})
        self.open("esc-lead2")
        local = self.daemon.post("esc-lead2", {"title": "the lead's own", "buttons": [{"title": "OK"}]})
        self.shows(local["id"])
        self.daemon.post("esc-own2", dict(DEPLOY, escalation=[{"after": 0.2, "to": "esc-lead2"}]))
        until(self.driver, lambda d: "↑ from esc-own2" in text_of(d, "queue-list"), 10, "the queued alert marked as escalated")
        self.assertNotIn("escalated-from", self.driver.page_source, "the lead's own alert said it was escalated")

    def test_a_second_browser_sees_a_choice_made_in_the_first_at_once(self):
        other = browser()
        try:
            self.open("pair")
            self.open("pair", other)
            first = self.daemon.post("pair", {"title": "Approve change 42?", "buttons": [{"title": "Approve"}, {"title": "Reject", "style": "destructive"}]})
            second = self.daemon.post("pair", {"title": "Approve change 43?", "buttons": [{"title": "Approve"}]})
            self.shows(first["id"])
            self.shows(first["id"], driver=other)

            # Reject is destructive: a click asks, the confirm button chooses.
            self.driver.find_element(By.XPATH, "//button[.//span[text()='Reject']]").click()
            until(self.driver, lambda d: visible(d, "confirm-yes"))
            self.driver.find_element(By.ID, "confirm-yes").click()
            wait_for(lambda: self.daemon.alert("pair", first["id"])["state"] == "answered", 5, "the choice committed")
            self.shows(second["id"], timeout=SOON, driver=other)
            until(other, lambda d: "answered “Reject”" in text_of(d, "flash"), SOON)

            # A choice made through the API shows in both at once (SOON).
            status, _ = self.daemon.choose("pair", second["id"], "Approve")
            self.assertEqual(status, 200)
            for driver in (self.driver, other):
                until(driver, lambda d: dialog_id(d) is None and "Nothing to answer" in text_of(d, "stage"), SOON)
        finally:
            other.quit()

    def test_expiry_and_withdrawal_show_at_once(self):
        self.open("timers")
        expiring = self.daemon.post("timers", {"title": "Expires soon", "buttons": [{"title": "OK"}], "expires_in": 1.5})
        withdrawn = self.daemon.post("timers", {"title": "Withdrawn soon", "buttons": [{"title": "OK"}]})
        self.shows(expiring["id"])
        wait_for(lambda: self.daemon.alert("timers", expiring["id"])["state"] == "expired", 5, "the expiry")
        self.shows(withdrawn["id"], timeout=SOON)
        until(self.driver, lambda d: "“Expires soon” was expired" in text_of(d, "flash"), SOON)
        status, _ = self.daemon.api("DELETE", f"/v1/clients/timers/alerts/{withdrawn['id']}")
        self.assertEqual(status, 200)
        until(self.driver, lambda d: dialog_id(d) is None, SOON)
        until(self.driver, lambda d: "withdrawn" in text_of(d, "flash"), SOON)
        until(self.driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#history-body tr")) == 2)
        outcomes = {r.get_attribute("data-alert-id"): r.get_attribute("data-outcome") for r in self.driver.find_elements(By.CSS_SELECTOR, "#history-body tr")}
        self.assertEqual(outcomes, {expiring["id"]: "expired", withdrawn["id"]: "withdrawn"})

    def test_number_keys_escape_and_enter_choose_and_focus_lands_on_the_dialog(self):
        self.open("keys")
        numbered = self.daemon.post("keys", {"title": "Restart db-1?", "buttons": [
            {"title": "Not now", "style": "cancel"}, {"title": "Later"}, {"title": "Restart", "style": "destructive"}]})
        escaped = self.daemon.post("keys", {"title": "Page the on-call?", "buttons": [
            {"title": "Dismiss", "style": "cancel"}, {"title": "Page"}]})
        entered = self.daemon.post("keys", {"title": "Rotate keys?", "buttons": [
            {"title": "Skip", "style": "destructive"}, {"title": "Never", "style": "cancel"}, {"title": "Rotate"}, {"title": "Rotate all"}]})
        keys = ActionChains(self.driver)

        self.shows(numbered["id"])
        shown = dialog(self.driver)
        self.assertTrue(shown["focused"], "focus lands on the alertdialog")
        # Displayed order: Later, Restart, then the cancel button last; key 2 is Restart,
        # destructive: it asks first, and y chooses it.
        self.assertEqual([b["title"] for b in shown["buttons"]], ["Later", "Restart", "Not now"])
        keys.send_keys("2").perform()
        until(self.driver, lambda d: visible(d, "confirm") and "“Restart” is destructive" in text_of(d, "confirm"))
        keys.send_keys("y").perform()
        answered = wait_for(lambda: (a := self.daemon.alert("keys", numbered["id"]))["result"] and a, 5, "key 2")
        self.assertEqual(answered["result"]["button"], "Restart")

        self.shows(escaped["id"])
        self.assertTrue(dialog(self.driver)["focused"])
        keys.send_keys(Keys.ESCAPE).perform()
        answered = wait_for(lambda: (a := self.daemon.alert("keys", escaped["id"]))["result"] and a, 5, "Esc")
        self.assertEqual(answered["result"]["button"], "Dismiss")
        self.assertTrue(answered["result"]["cancelled"])

        self.shows(entered["id"])
        keys.send_keys(Keys.ENTER).perform()
        answered = wait_for(lambda: (a := self.daemon.alert("keys", entered["id"]))["result"] and a, 5, "Enter")
        self.assertEqual(answered["result"]["button"], "Rotate", "Enter chooses the first default button")

    def test_buttons_past_nine_carry_a_to_g_as_alertctl_labels_them_and_the_letter_chooses(self):
        # Issue 45: the tenth button had no key here, [a] in watch and [10] in get.
        self.open("many")
        buttons = [{"title": f"B{n}"} for n in range(1, 13)] + [{"title": "None", "style": "cancel"}]
        posted = self.daemon.post("many", {"title": "Which one?", "buttons": buttons})
        self.shows(posted["id"])
        keys = self.driver.execute_script(
            "return [...document.querySelectorAll('#stage-content button.action')].map(b => b.querySelector('kbd').textContent);")
        self.assertEqual(keys, ["1", "2", "3", "4", "5", "6", "7", "8", "9", "a", "b", "c", "d"])
        ActionChains(self.driver).send_keys("b").perform()
        answered = wait_for(lambda: (a := self.daemon.alert("many", posted["id"]))["result"] and a, 5, "key b")
        self.assertEqual(answered["result"]["button"], "B11")

    def test_a_destructive_button_asks_to_confirm_by_key_and_by_mouse_and_cancel_never_does(self):
        self.open("confirm")
        buttons = [{"title": "Keep", "style": "cancel"}, {"title": "Restart"}, {"title": "Wipe", "style": "destructive"}]
        first = self.daemon.post("confirm", {"title": "Wipe staging?", "buttons": buttons})
        second = self.daemon.post("confirm", {"title": "Wipe staging again?", "buttons": buttons})
        third = self.daemon.post("confirm", {"title": "Wipe staging once more?", "buttons": buttons})
        keys = ActionChains(self.driver)
        asking = lambda d: visible(d, "confirm") and "“Wipe” is destructive" in text_of(d, "confirm")
        kept = lambda d: not visible(d, "confirm") and "Kept: “Wipe” was not chosen" in text_of(d, "flash")
        self.shows(first["id"])
        self.assertEqual([b["title"] for b in dialog(self.driver)["buttons"]], ["Restart", "Wipe", "Keep"])

        # Key 2 (Wipe) asks; any key but y keeps the alert: 2 again, Escape (which then
        # chooses nothing, not the cancel button), Enter on the focused Keep button.
        for keep_key in ("2", Keys.ESCAPE, Keys.ENTER):
            keys.send_keys("2").perform()
            until(self.driver, asking)
            self.assertEqual(self.daemon.alert("confirm", first["id"])["state"], "displayed")
            keys.send_keys(keep_key).perform()
            until(self.driver, kept)
            self.assertEqual(self.daemon.alert("confirm", first["id"])["state"], "displayed", f"after {keep_key!r}")
            self.driver.execute_script("document.getElementById('flash').textContent = ''")

        # The mouse alike: a click asks, a second click on the same button (a double click)
        # is not the confirmation, the confirm button is.
        wipe = self.driver.find_element(By.XPATH, "//div[@role='alertdialog']//button[.//span[text()='Wipe']]")
        wipe.click()
        until(self.driver, asking)
        wipe.click()
        self.assertTrue(visible(self.driver, "confirm"))
        self.assertEqual(self.daemon.alert("confirm", first["id"])["state"], "displayed")
        self.driver.find_element(By.ID, "confirm-yes").click()
        answered = wait_for(lambda: (a := self.daemon.alert("confirm", first["id"]))["result"] and a, 5, "the confirmed choice")
        self.assertEqual(answered["result"]["button"], "Wipe")

        # The cancel button never asks: Escape chooses it at once.
        self.shows(second["id"], timeout=SOON)
        keys.send_keys(Keys.ESCAPE).perform()
        answered = wait_for(lambda: (a := self.daemon.alert("confirm", second["id"]))["result"] and a, 5, "Esc")
        self.assertEqual(answered["result"]["button"], "Keep")
        self.assertFalse(visible(self.driver, "confirm"))

        # An alert answered elsewhere while its confirmation is open: nothing is chosen here, and the page says so.
        self.shows(third["id"], timeout=SOON)
        keys.send_keys("2").perform()
        until(self.driver, asking)
        status, _ = self.daemon.choose("confirm", third["id"], "Restart")
        self.assertEqual(status, 200)
        until(self.driver, lambda d: not visible(d, "confirm") and "was answered “Restart”" in text_of(d, "flash")
              and "“Wipe” was not confirmed here" in text_of(d, "flash"), SOON)
        fourth = self.daemon.post("confirm", {"title": "Wipe staging at last?", "buttons": buttons})

        # Key 2 then y chooses it, as in alertctl watch.
        self.shows(fourth["id"], timeout=SOON)
        keys.send_keys("2").perform()
        until(self.driver, asking)
        keys.send_keys("y").perform()
        answered = wait_for(lambda: (a := self.daemon.alert("confirm", fourth["id"]))["result"] and a, 5, "2 then y")
        self.assertEqual(answered["result"]["button"], "Wipe")

    def test_before_the_first_answer_nothing_claims_the_client_is_empty(self):
        driver = browser()
        try:
            # The client's requests are held by the browser, never answered: the page shows
            # what it shows before alertd said anything about the client.
            driver.execute_cdp_cmd("Fetch.enable", {"patterns": [{"urlPattern": "*/v1/clients/held/*"}]})
            driver.get(f"{self.daemon.base}/#/clients/held")
            until(driver, lambda d: text_of(d, "client-title") == "held" and visible(d, "client-view"))
            self.assertIn("Loading…", text_of(driver, "stage"))
            self.assertEqual(text_of(driver, "client-summary"), "")
            self.assertFalse(visible(driver, "queue-empty"))
            self.assertFalse(visible(driver, "history-empty"))
            page = driver.find_element(By.TAG_NAME, "body").text
            for claim in ("0 pending", "Nothing queued", "No decided alerts yet", "Nothing to answer"):
                self.assertNotIn(claim, page)
        finally:
            driver.quit()

    def test_alert_and_action_sheet_layouts(self):
        for past in ({"title": "Scale web to 12 instances?", "buttons": [{"title": "Scale"}]},
                     {"title": "Failover to eu-west?", "buttons": [{"title": "Failover", "style": "destructive"}]}):
            posted = self.daemon.post("ops", past)
            self.daemon.choose("ops", posted["id"], past["buttons"][0]["title"])
        self.open("ops")
        two = self.daemon.post("ops", {**DEPLOY, "buttons": [{"title": "Cancel", "style": "cancel"}, {"title": "Deploy", "style": "destructive"}]})
        rotate = self.daemon.post("ops", {"title": "Rotate TLS certificates?", "buttons": [{"title": "Rotate"}]})
        self.shows(two["id"])
        until(self.driver, lambda d: "1 queued behind" in text_of(d, "stage-position"))
        until(self.driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#chart circle")) == 2)
        shown = dialog(self.driver)
        deploy, cancel = shown["buttons"]
        self.assertEqual((deploy["title"], cancel["title"]), ("Deploy", "Cancel"), "the cancel button is last")
        self.assertIn("horizontal", deploy["layout"])
        self.assertAlmostEqual(deploy["rect"]["y"], cancel["rect"]["y"], delta=1, msg="two buttons side by side")
        self.assertGreater(cancel["rect"]["x"], deploy["rect"]["x"])
        self.assertTrue(red(deploy["color"]), f"destructive is red, not {deploy['color']}")
        self.assertFalse(red(cancel["color"]))
        dialog_middle = shown["rect"]["y"] + shown["rect"]["height"] / 2
        stage_middle = shown["stage"]["y"] + shown["stage"]["height"] / 2
        self.assertAlmostEqual(dialog_middle, stage_middle, delta=20, msg="an alert is centered")
        # Metadata reads as keys and values; the raw JSON waits one click away.
        keys = [e.get_attribute("textContent") for e in self.driver.find_elements(By.CSS_SELECTOR, ".dialog-metadata dt")]
        values = [e.get_attribute("textContent") for e in self.driver.find_elements(By.CSS_SELECTOR, ".dialog-metadata dd")]
        self.assertEqual(list(zip(keys, values)), [("build", "1234"), ("branch", "main"), ("requested_by", "ci")])
        raw = self.driver.find_element(By.CSS_SELECTOR, ".dialog-metadata-raw")
        self.assertFalse(raw.is_displayed(), "the raw JSON is behind a click")
        screenshot(self.driver, "dashboard-alert.png")
        self.driver.find_element(By.CSS_SELECTOR, ".dialog-metadata-json summary").click()
        until(self.driver, lambda d: raw.is_displayed(), 5, "the raw JSON shown after one click")
        self.assertEqual(json.loads(raw.get_attribute("textContent")), DEPLOY["metadata"])
        self.assertEqual(self.daemon.choose("ops", two["id"], "Deploy")[0], 200)
        self.assertEqual(self.daemon.choose("ops", rotate["id"], "Rotate")[0], 200)

        three = self.daemon.post("ops", {"title": "Which replica takes over?", "buttons": [
            {"title": "db-2 (eu-west-1b)"}, {"title": "db-3 (eu-west-1c)"}, {"title": "Let the cluster decide"}]})
        self.shows(three["id"])
        a, b, c = dialog(self.driver)["buttons"]
        self.assertIn("vertical", a["layout"], "three buttons are stacked")
        self.assertLess(a["rect"]["y"], b["rect"]["y"])
        self.assertLess(b["rect"]["y"], c["rect"]["y"])
        self.daemon.choose("ops", three["id"], "db-2 (eu-west-1b)")

        sheet = self.daemon.post("ops", {
            "title": "db-1 is not answering", "message": "Primary in eu-west-1, last heartbeat 45 s ago.", "style": "action_sheet",
            "buttons": [{"title": "Cancel", "style": "cancel"}, {"title": "Promote replica"}, {"title": "Restart primary"},
                        {"title": "Drop connections", "style": "destructive"}]})
        self.shows(sheet["id"])
        shown = dialog(self.driver)
        self.assertEqual(shown["style"], "action_sheet")
        titles = [b["title"] for b in shown["buttons"]]
        self.assertEqual(titles, ["Promote replica", "Restart primary", "Drop connections", "Cancel"])
        xs = {round(b["rect"]["x"]) for b in shown["buttons"]}
        self.assertEqual(len(xs), 1, "a vertical list")
        ys = [b["rect"]["y"] for b in shown["buttons"]]
        self.assertEqual(ys, sorted(ys))
        self.assertTrue(shown["buttons"][3]["inCancelGroup"] and not shown["buttons"][2]["inCancelGroup"])
        gap = shown["buttons"][3]["rect"]["y"] - (shown["buttons"][2]["rect"]["y"] + shown["buttons"][2]["rect"]["height"])
        self.assertGreater(gap, 4, "the cancel button is set apart")
        self.assertTrue(red(shown["buttons"][2]["color"]))
        stage_bottom = shown["stage"]["y"] + shown["stage"]["height"]
        self.assertLess(stage_bottom - (shown["rect"]["y"] + shown["rect"]["height"]), 40, "anchored at the bottom")
        self.assertGreater(shown["rect"]["y"] - shown["stage"]["y"], stage_bottom - (shown["rect"]["y"] + shown["rect"]["height"]))
        screenshot(self.driver, "dashboard-action-sheet.png")

    def test_a_buttonless_alert_counts_down_and_is_dismissed(self):
        self.open("notice")
        posted_at = time.monotonic()
        notice = self.daemon.post("notice", {"title": "Backup finished", "message": "412 GB in 38 min.", "dismiss_after": 6})
        self.shows(notice["id"])
        shown = dialog(self.driver)
        self.assertEqual(shown["buttons"], [])
        first = int(until(self.driver, lambda d: d.find_element(By.ID, "countdown-text").get_attribute("data-remaining")))
        # What is left of the 6 s when the page first showed it: at most 6, and no less than the
        # time since the post allows (a loaded machine may take seconds to show it; a second of
        # rounding).
        elapsed = time.monotonic() - posted_at
        self.assertLessEqual(first, 6)
        self.assertGreaterEqual(first, 6 - elapsed - 1, f"{elapsed:.1f} s after the post")
        self.assertIn(f"Dismissed in {first} s", text_of(self.driver, "countdown-text"))
        # The countdown goes down as time passes (awaited, bounded).
        until(self.driver, lambda d: int(d.find_element(By.ID, "countdown-text").get_attribute("data-remaining")) < first, 3)
        until(self.driver, lambda d: dialog_id(d) is None, 10, "dismissal")
        self.assertEqual(self.daemon.alert("notice", notice["id"])["state"], "dismissed")
        until(self.driver, lambda d: d.find_element(By.CSS_SELECTOR, f"#history-body tr[data-alert-id='{notice['id']}']").get_attribute("data-outcome") == "dismissed")

    def test_alert_text_is_shown_as_text_and_no_script_runs(self):
        self.open("xss")
        hostile = {
            "title": "<img src=x onerror=alert(1)>",
            "message": "<script>window.__pwned = 1</script><img src=y onerror=\"window.__pwned = 2\">",
            "buttons": [{"title": "<b onmouseover=alert(3)>Yes</b>"}, {"title": "</button><img src=z onerror=alert(4)>", "style": "cancel"}],
            "metadata": {"html": "<svg onload=alert(5)>", "nested": {"list": [1, "two"]}},
        }
        posted = self.daemon.post("xss", hostile)
        self.shows(posted["id"])
        shown = dialog(self.driver)
        self.assertEqual(shown["title"], hostile["title"])
        self.assertEqual(shown["message"], hostile["message"])
        self.assertEqual([b["title"] for b in shown["buttons"]], [b["title"] for b in hostile["buttons"]])
        self.assertEqual(self.driver.find_elements(By.CSS_SELECTOR, "#stage-content img, #stage-content script, #stage-content svg, #stage-content b"), [])
        metadata = self.driver.find_element(By.CSS_SELECTOR, ".dialog-metadata-raw").get_attribute("textContent")
        self.assertEqual(json.loads(metadata), hostile["metadata"])
        values = [e.get_attribute("textContent") for e in self.driver.find_elements(By.CSS_SELECTOR, ".dialog-metadata dd")]
        self.assertEqual(values, ["<svg onload=alert(5)>", '{"list":[1,"two"]}'], "values as text, objects as compact JSON")
        self.assertIn('\n  "html": "<svg onload=alert(5)>"', metadata, "formatted JSON, as text")
        # Answer it, so the title also goes through the history and the flash.
        self.driver.find_element(By.CSS_SELECTOR, "button.action[data-index='0']").click()
        until(self.driver, lambda d: d.find_elements(By.CSS_SELECTOR, f"#history-body tr[data-alert-id='{posted['id']}']"))
        self.assertEqual(self.driver.find_element(By.CSS_SELECTOR, f"#history-body tr[data-alert-id='{posted['id']}'] .history-title").text, hostile["title"])
        self.assertEqual(self.driver.find_elements(By.CSS_SELECTOR, "main img, main script, main b"), [])
        with self.assertRaises(NoAlertPresentException):
            self.driver.switch_to.alert
        self.assertIsNone(self.driver.execute_script("return window.__pwned"))

    def test_the_clients_view_lists_clients_and_a_fragment_opens_one(self):
        daemon = Daemon()
        try:
            for _ in range(3):
                daemon.post("kiosk-lobby", {"title": "Visitor at the front desk", "buttons": [{"title": "Let in"}, {"title": "Ignore", "style": "cancel"}]})
            daemon.post("ops", DEPLOY)
            idle = daemon.post("team-payments", {"title": "Refund 120 EUR?", "buttons": [{"title": "Refund"}]})
            daemon.choose("team-payments", idle["id"], "Refund")
            self.driver.get(daemon.base + "/")
            until(self.driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#client-list li")) == 3)
            cards = {li.get_attribute("data-client"): li.text for li in self.driver.find_elements(By.CSS_SELECTOR, "#client-list li")}
            self.assertEqual(list(cards), ["kiosk-lobby", "ops", "team-payments"])
            self.assertIn("3 pending", cards["kiosk-lobby"])
            self.assertIn("alert displayed", cards["kiosk-lobby"])
            self.assertIn("0 pending", cards["team-payments"])
            self.assertIn("idle", cards["team-payments"])
            screenshot(self.driver, "dashboard-clients.png")
            # Live: a post elsewhere shows without reloading.
            daemon.post("team-payments", {"title": "Refund 80 EUR?", "buttons": [{"title": "Refund"}]})
            until(self.driver, lambda d: "1 pending" in d.find_element(By.CSS_SELECTOR, "li[data-client='team-payments']").text, 5)

            self.driver.find_element(By.CSS_SELECTOR, "li[data-client='ops'] a").click()
            until(self.driver, lambda d: d.current_url.endswith("#/clients/ops"))
            until(self.driver, lambda d: (dialog(d) or {}).get("title") == DEPLOY["title"])
            self.driver.back()
            until(self.driver, lambda d: visible(d, "clients-view"))
            # A kiosk opens a client directly.
            self.driver.get(daemon.base + "/#/clients/kiosk-lobby")
            until(self.driver, lambda d: (dialog(d) or {}).get("title") == "Visitor at the front desk")
            self.assertEqual(text_of(self.driver, "crumb-client"), "kiosk-lobby")
        finally:
            daemon.cleanup()

    def test_a_dropped_connection_reconnects_with_backoff_and_says_so(self):
        daemon = Daemon()
        try:
            self.driver.get(daemon.base + "/#/clients/ops")
            first = daemon.post("ops", {"title": "Before the restart", "buttons": [{"title": "OK"}]})
            self.shows(first["id"])
            self.assertEqual(daemon.terminate(), 0)
            until(self.driver, lambda d: visible(d, "banner") and "Reconnecting" in text_of(d, "banner"), 5)
            daemon = daemon.restart()
            status, _ = daemon.choose("ops", first["id"], "OK")
            self.assertEqual(status, 200)
            second = daemon.post("ops", {"title": "After the restart", "buttons": [{"title": "OK"}]})
            # Backoff is capped at 4 s (plus the restart): the page is back well within 15,
            # and a page that never reconnects fails.
            self.shows(second["id"], timeout=15)
            until(self.driver, lambda d: "Reconnecting" not in (text_of(d, "banner") or ""), SOON)
        finally:
            daemon.cleanup()

    def test_after_a_restart_the_banner_goes_as_soon_as_alertd_answers_even_with_nothing_new(self):
        # Issue 45: the page was live again within half a second, but the banner said
        # "Reconnecting… next try in 3 s" until its long-poll's 25 s ran out.
        daemon = Daemon()
        try:
            self.driver.get(daemon.base + "/#/clients/ops")
            first = daemon.post("ops", {"title": "Still here after the restart", "buttons": [{"title": "OK"}]})
            self.shows(first["id"])
            self.assertEqual(daemon.terminate(), 0)
            until(self.driver, lambda d: visible(d, "banner") and "Reconnecting" in text_of(d, "banner"), 5)
            daemon = daemon.restart()
            # Backoff is capped at 4 s; then one look, and the banner says so (well before 25 s).
            until(self.driver, lambda d: "Reconnecting" not in (text_of(d, "banner") or ""), 10)
            self.assertEqual(dialog_id(self.driver), first["id"], "the same alert is shown")
        finally:
            daemon.cleanup()

    def test_the_history_table_wraps_between_words_never_inside_one(self):
        client = "words"
        titles = [
            "Promote the standby replica of payments-eu to primary now?",
            "Rotate every credential of the deployment pipeline tonight?",
        ]
        for title in titles:
            posted = self.daemon.post(client, {"title": title, "buttons": [
                {"title": "Acknowledge everything", "style": "destructive"}, {"title": "Cancel", "style": "cancel"}]})
            self.assertEqual(self.daemon.choose(client, posted["id"], "Acknowledge everything")[0], 200)
        for width in (1200, 900, 360):
            driver = browser(width=width, height=800)
            try:
                driver.get(f"{self.daemon.base}/#/clients/{client}")
                until(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#history-body tr")) == 2, 10, "two rows")
                # Every word of every cell on one line (a line may end after a hyphen, as in
                # print): a Range per word, or per hyphenated part, has one line of rects.
                split = driver.execute_script("""
                    const split = [];
                    for (const cell of document.querySelectorAll('#history-body td')) {
                        if (getComputedStyle(cell).display === 'none') continue;
                        const node = [...cell.childNodes].find(n => n.nodeType === Node.TEXT_NODE);
                        if (!node) continue;
                        for (const match of node.textContent.matchAll(/[^ -]+-?/g)) {
                            const range = document.createRange();
                            range.setStart(node, match.index);
                            range.setEnd(node, match.index + match[0].length);
                            const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
                            if (tops.size > 1) split.push(match[0]);
                        }
                    }
                    return split;""")
                self.assertEqual(split, [], f"words split across lines at {width} px")
            finally:
                driver.quit()

    def test_a_phone_screen_fits_without_sideways_scrolling(self):
        phone = browser(phone=True)
        try:
            phone.get(self.daemon.base + "/#/clients/phone")
            self.assertEqual(phone.execute_script("return window.innerWidth"), 360)
            posted = self.daemon.post("phone", {
                "title": "Deploy build 1234 of payments-api to production in eu-west-1?",
                "message": "12 commits, all green. Rollback: one click in the deploy history.",
                "buttons": [{"title": "Deploy now"}, {"title": "Deploy at 18:00"}, {"title": "Cancel", "style": "cancel"}],
            })
            self.shows(posted["id"], driver=phone)
            width = phone.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
            self.assertLessEqual(width[0], width[1], "no horizontal scrolling at 360 px")
            shown = dialog(phone)
            self.assertGreaterEqual(shown["rect"]["x"], 0)
            self.assertLessEqual(shown["rect"]["x"] + shown["rect"]["width"], 360)
            screenshot(phone, "dashboard-phone.png")
        finally:
            phone.quit()

    def test_a_wall_screen_gets_larger_text_and_the_history_beside_the_alert(self):
        wall = browser(width=2560, height=1440)
        try:
            wall.get(self.daemon.base + "/#/clients/wall")
            posted = self.daemon.post("wall", DEPLOY)
            self.shows(posted["id"], driver=wall)
            size = wall.execute_script("return parseFloat(getComputedStyle(document.documentElement).fontSize)")
            self.assertGreater(size, 20)
            stage, side = wall.execute_script(
                "return ['.stage', '.side'].map((s) => document.querySelector(s).getBoundingClientRect().toJSON())")
            self.assertLess(stage["right"], side["left"], "side by side")
            self.assertAlmostEqual(stage["top"], side["top"], delta=2)
        finally:
            wall.quit()

    def test_a_dark_room_gets_dark_colours(self):
        dark = browser(dark=True)
        try:
            dark.get(self.daemon.base + "/#/clients/night")
            posted = self.daemon.post("night", {**DEPLOY, "buttons": [
                {"title": "Deploy"}, {"title": "Roll back", "style": "destructive"}, {"title": "Cancel", "style": "cancel"}]})
            self.shows(posted["id"], driver=dark)
            colours = dark.execute_script(
                "const c = (e, p) => getComputedStyle(e)[p];"
                "return [c(document.body, 'backgroundColor'), c(document.body, 'color'),"
                " c(document.querySelector('[role=alertdialog]'), 'backgroundColor')]")

            def luminance(css):
                r, g, b = [int(float(p)) for p in css[css.index("(") + 1 : css.index(")")].split(",")[:3]]
                return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255

            body, text, panel = (luminance(c) for c in colours)
            self.assertLess(body, 0.1, colours)
            self.assertLess(panel, 0.25, colours)
            self.assertGreater(text, 0.8, colours)
            screenshot(dark, "dashboard-dark.png")
        finally:
            dark.quit()

    def test_the_page_and_its_files_carry_their_headers_and_the_policy_holds(self):
        with urllib.request.urlopen(self.daemon.base + "/") as response:
            headers = response.headers
            self.assertEqual(headers["Content-Type"], "text/html; charset=utf-8")
            self.assertEqual(
                headers["Content-Security-Policy"],
                "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
                "manifest-src 'self'; worker-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
            self.assertEqual(headers["X-Content-Type-Options"], "nosniff")
            self.assertEqual(headers["Referrer-Policy"], "no-referrer")
            self.assertEqual(headers["Cache-Control"], "no-cache")
            self.assertTrue(headers["ETag"].startswith('"'))
        # A whole session: no script error, no policy violation.
        self.driver.get_log("browser")
        self.open("clean")
        posted = self.daemon.post("clean", DEPLOY)
        self.shows(posted["id"])
        self.driver.find_element(By.CSS_SELECTOR, "button.action[data-index='0']").click()
        until(self.driver, lambda d: dialog_id(d) is None)
        self.assertEqual(severe_console_entries(self.driver), [])
        # The policy is enforced: an inline script added to the page does not run.
        ran = self.driver.execute_script(
            "const s = document.createElement('script'); s.textContent = 'window.__inline = 1'; document.body.append(s);"
            "return window.__inline === 1")
        self.assertFalse(ran)


class TokenTests(unittest.TestCase):
    """A daemon with tokens: the prompt, a wrong token, roles."""

    CONSOLE = "alertd_console-secret-for-tests"
    VIEWER = "alertd_viewer-secret-for-tests"
    ADMIN = "alertd_admin-secret-for-tests"

    @classmethod
    def config(cls, console=True):
        entries = token_entry("admin", cls.ADMIN, ["admin"]) + token_entry("wallboard", cls.VIEWER, ["read"], ["ops", "team-*"])
        if console:
            entries += token_entry("ops-console", cls.CONSOLE, ["read", "answer"], ["ops"])
        return "auth:\n  tokens:\n" + entries

    def setUp(self):
        self.daemon = Daemon(self.config())
        self.driver = browser()

    def tearDown(self):
        self.driver.quit()
        self.daemon.cleanup()

    def sign_in(self, token):
        field = until(self.driver, lambda d: visible(d, "login-view") and d.find_element(By.ID, "token-input"))
        field.clear()
        field.send_keys(token)
        self.driver.find_element(By.ID, "login-submit").click()

    def test_the_page_asks_for_a_token_refuses_a_wrong_one_and_answers_with_the_right_one(self):
        self.driver.get(self.daemon.base + "/#/clients/ops")
        until(self.driver, lambda d: visible(d, "login-view"))
        self.assertEqual(self.driver.switch_to.active_element.get_attribute("id"), "token-input")
        self.assertFalse(visible(self.driver, "client-view"))
        self.sign_in("alertd_not-a-token")
        until(self.driver, lambda d: "not valid" in text_of(d, "login-error"))
        self.assertTrue(visible(self.driver, "login-view"))
        self.assertIsNone(self.driver.execute_script("return sessionStorage.getItem('alertd.token')"))

        self.sign_in(self.CONSOLE)
        until(self.driver, lambda d: visible(d, "client-view"))
        self.assertEqual(text_of(self.driver, "identity"), "ops-console · read, answer")
        self.assertEqual(self.driver.execute_script("return sessionStorage.getItem('alertd.token')"), self.CONSOLE)
        posted = self.daemon.post("ops", DEPLOY, token=self.ADMIN)
        until(self.driver, lambda d: dialog_id(d) == posted["id"])
        self.driver.find_element(By.XPATH, "//button[.//span[text()='Deploy']]").click()
        answered = wait_for(lambda: (a := self.daemon.alert("ops", posted["id"], self.ADMIN))["result"] and a, 5, "the choice")
        self.assertEqual(answered["result"]["decided_by"], "ops-console")
        until(self.driver, lambda d: "ops-console" in d.find_element(By.CSS_SELECTOR, f"#history-body tr[data-alert-id='{posted['id']}'] .history-by").text)
        # The token never travels in a URL, and a reload keeps it for this tab.
        urls = self.driver.execute_script("return [location.href, ...performance.getEntriesByType('resource').map((e) => e.name)]")
        self.assertTrue(urls and not any(self.CONSOLE in url for url in urls), urls)
        self.driver.refresh()
        until(self.driver, lambda d: visible(d, "client-view"))
        self.assertFalse(visible(self.driver, "login-view"))

    def test_a_read_only_token_sees_the_alert_with_its_buttons_disabled_and_a_note(self):
        posted = self.daemon.post("ops", DEPLOY, token=self.ADMIN)
        self.driver.get(self.daemon.base + "/#/clients/ops")
        self.sign_in(self.VIEWER)
        until(self.driver, lambda d: dialog_id(d) == posted["id"])
        shown = dialog(self.driver)
        self.assertTrue(shown["buttons"] and all(b["disabled"] for b in shown["buttons"]))
        note = self.driver.find_element(By.CSS_SELECTOR, ".readonly-note").text
        self.assertIn("wallboard", note)
        self.assertIn("answer role", note)
        ActionChains(self.driver).send_keys("1").send_keys(Keys.ENTER).perform()
        # Still displayed: the API agrees nothing was chosen.
        self.assertEqual(self.daemon.alert("ops", posted["id"], self.ADMIN)["state"], "displayed")
        screenshot(self.driver, "dashboard-read-only.png")

    def test_a_client_the_token_may_not_read_shows_what_to_do_instead_of_empty_panels(self):
        # db has an answered alert: whatever the panels would say about it, "nothing" would be false.
        posted = self.daemon.post("db", DEPLOY, token=self.ADMIN)
        status, _ = self.daemon.choose("db", posted["id"], "Deploy", token=self.ADMIN)
        self.assertEqual(status, 200)
        self.driver.get(self.daemon.base + "/#/clients/db")
        self.sign_in(self.VIEWER)
        until(self.driver, lambda d: "may not read db" in text_of(d, "client-error"), SOON)
        error = text_of(self.driver, "client-error")
        self.assertIn("wallboard", error)
        self.assertIn("ops, team-*", error)
        self.assertIn("whose clients include db", error)
        self.assertFalse(visible(self.driver, "client-panels"))
        page = self.driver.find_element(By.TAG_NAME, "body").text
        for claim in ("Loading…", "pending", "Nothing queued", "No decided alerts yet", "Nothing to answer"):
            self.assertNotIn(claim, page)
        # A client it may read shows its panels again.
        self.driver.get(self.daemon.base + "/#/clients/ops")
        until(self.driver, lambda d: visible(d, "client-panels") and "Nothing to answer" in text_of(d, "stage"))
        self.assertEqual(text_of(self.driver, "client-error"), "")

    def test_a_token_refused_later_brings_the_prompt_back(self):
        self.driver.get(self.daemon.base + "/#/clients/ops")
        self.sign_in(self.CONSOLE)
        until(self.driver, lambda d: visible(d, "client-view") and "Nothing to answer" in text_of(d, "stage"))
        self.daemon.reload(self.config(console=False))
        # The page's next request after this post carries a token alertd no longer has.
        self.daemon.post("ops", DEPLOY, token=self.ADMIN)
        until(self.driver, lambda d: visible(d, "login-view"), 8)
        self.assertIn("refused", text_of(self.driver, "login-error"))
        self.assertIsNone(self.driver.execute_script("return sessionStorage.getItem('alertd.token')"))


class QuorumTests(unittest.TestCase):
    """An alert that needs two people (SPEC §10): two browsers signed in as two deciders."""

    DEPLOYER = "alertd_deployer-secret-for-tests"
    ALICE = "alertd_alice-secret-for-tests"
    BOB = "alertd_bob-secret-for-tests"
    TWO_PERSON = {**DEPLOY, "quorum": 2}

    def setUp(self):
        entries = (
            token_entry("deployer", self.DEPLOYER, ["post"])
            + token_entry("alice", self.ALICE, ["answer"])
            + token_entry("bob", self.BOB, ["answer"])
        )
        self.daemon = Daemon("auth:\n  tokens:\n" + entries)
        self.alice = browser()
        self.bob = browser()

    def tearDown(self):
        self.alice.quit()
        self.bob.quit()
        self.daemon.cleanup()

    def sign_in(self, driver, token, name):
        driver.get(self.daemon.base + "/#/clients/ops")
        field = until(driver, lambda d: visible(d, "login-view") and d.find_element(By.ID, "token-input"))
        field.send_keys(token)
        driver.find_element(By.ID, "login-submit").click()
        until(driver, lambda d: visible(d, "client-view") and text_of(d, "identity").startswith(name + " ·"))

    def click(self, driver, title):
        driver.find_element(By.XPATH, f"//div[@role='alertdialog']//button[.//span[text()='{title}']]").click()

    def votes(self, alert_id):
        return [f"{v['decided_by']}:{v['button']}" for v in self.daemon.alert("ops", alert_id, self.DEPLOYER)["votes"]]

    def test_one_votes_the_other_sees_it_without_reload_then_votes_and_the_alert_is_answered(self):
        self.sign_in(self.alice, self.ALICE, "alice")
        self.sign_in(self.bob, self.BOB, "bob")
        for driver in (self.alice, self.bob):
            until(driver, lambda d: "Nothing to answer" in text_of(d, "stage"))
        # Set on the page now: still there later means the page was never reloaded.
        self.bob.execute_script("window.__notReloaded = true")
        posted = self.daemon.post("ops", self.TWO_PERSON, token=self.DEPLOYER)
        following = self.daemon.post("ops", {"title": "Restart the cache?", "buttons": [{"title": "Restart"}]}, token=self.DEPLOYER)
        for driver in (self.alice, self.bob):
            until(driver, lambda d: dialog_id(d) == posted["id"], SOON)
            until(driver, lambda d: text_of(d, "votes") == "0 of 2 approvals")
            self.assertTrue(all(not b["disabled"] for b in dialog(driver)["buttons"]))

        # Alice approves: a vote, not the answer. Her page says so and disables her buttons.
        self.click(self.alice, "Deploy")
        wait_for(lambda: self.votes(posted["id"]) == ["alice:Deploy"], SOON, "alice's vote committed")
        self.assertEqual(self.daemon.alert("ops", posted["id"], self.DEPLOYER)["state"], "displayed")
        until(self.alice, lambda d: text_of(d, "votes") == "1 of 2 approvals — alice: Deploy", SOON)
        until(self.alice, lambda d: all(b["disabled"] for b in dialog(d)["buttons"]))
        self.assertIn("You voted “Deploy”; waiting for 1 more.", text_of(self.alice, "voted-note"))
        self.assertIn("You voted “Deploy” on", text_of(self.alice, "flash"))

        # Bob's page shows her vote without a reload, within the long-poll's "at once", his buttons still live.
        until(self.bob, lambda d: text_of(d, "votes") == "1 of 2 approvals — alice: Deploy", SOON)
        self.assertTrue(self.bob.execute_script("return window.__notReloaded === true"))
        self.assertEqual(dialog_id(self.bob), posted["id"])
        self.assertTrue(all(not b["disabled"] for b in dialog(self.bob)["buttons"]))
        self.assertFalse(visible(self.bob, "voted-note"))
        screenshot(self.bob, "dashboard-quorum.png")

        # Bob approves too: that answers it, and both pages move on to the next alert.
        self.click(self.bob, "Deploy")
        answered = wait_for(
            lambda: (a := self.daemon.alert("ops", posted["id"], self.DEPLOYER))["state"] == "answered" and a, SOON, "the decision"
        )
        self.assertEqual(answered["result"]["button"], "Deploy")
        self.assertEqual(answered["result"]["decided_by"], "bob")
        self.assertEqual([v["decided_by"] for v in answered["result"]["votes"]], ["alice", "bob"])
        for driver in (self.alice, self.bob):
            until(driver, lambda d: dialog_id(d) == following["id"], SOON)
            until(driver, lambda d: "answered “Deploy” by alice and bob" in text_of(d, "flash"), SOON)
            row = until(driver, lambda d: d.find_element(By.CSS_SELECTOR, f"#history-body tr[data-alert-id='{posted['id']}'] .history-by"))
            self.assertEqual(row.text, "alice and bob")
        self.assertTrue(self.bob.execute_script("return window.__notReloaded === true"))

    def test_a_decider_who_voted_cannot_press_again_by_key_or_click_even_after_a_reload(self):
        posted = self.daemon.post("ops", {**self.TWO_PERSON, "buttons": [{"title": "Deploy"}, {"title": "Roll back"}, {"title": "Cancel", "style": "cancel"}]}, token=self.DEPLOYER)
        self.sign_in(self.alice, self.ALICE, "alice")
        until(self.alice, lambda d: dialog_id(d) == posted["id"], SOON)
        ActionChains(self.alice).send_keys("1").perform()
        wait_for(lambda: self.votes(posted["id"]) == ["alice:Deploy"], SOON, "alice's vote committed")
        until(self.alice, lambda d: all(b["disabled"] for b in dialog(d)["buttons"]), SOON)
        # Another number, Esc (the cancel button: a veto), Enter and a click choose nothing: no
        # choice is even sent (alertd would refuse it, 409 already-voted, so the API cannot tell).
        # The handlers run as the keys are dispatched, and a choice calls fetch before its first await.
        self.alice.execute_script(
            "window.__choices = 0; const f = window.fetch;"
            "window.fetch = (url, options) => { if (String(url).endsWith('/choice')) window.__choices += 1; return f(url, options); };")
        ActionChains(self.alice).send_keys("2").send_keys(Keys.ESCAPE).send_keys(Keys.ENTER).perform()
        self.alice.execute_script("for (const b of document.querySelectorAll('#stage-content button.action')) b.click();")
        self.assertEqual(self.alice.execute_script("return window.__choices"), 0)
        # What the page knows comes from alertd: a reload shows the same vote, the same disabled buttons.
        self.alice.refresh()
        until(self.alice, lambda d: visible(d, "client-view") and dialog_id(d) == posted["id"], SOON)
        until(self.alice, lambda d: text_of(d, "votes") == "1 of 2 approvals — alice: Deploy")
        self.assertTrue(all(b["disabled"] for b in dialog(self.alice)["buttons"]))
        self.assertTrue(visible(self.alice, "voted-note"))
        self.assertEqual(self.votes(posted["id"]), ["alice:Deploy"])
        self.assertEqual(self.daemon.alert("ops", posted["id"], self.DEPLOYER)["state"], "displayed")

        # Bob's Cancel is a veto: one person stops it, and alice's page says so.
        self.sign_in(self.bob, self.BOB, "bob")
        until(self.bob, lambda d: text_of(d, "votes") == "1 of 2 approvals — alice: Deploy", SOON)
        ActionChains(self.bob).send_keys(Keys.ESCAPE).perform()
        until(self.alice, lambda d: "answered “Cancel” by bob" in text_of(d, "flash"), SOON)
        until(self.alice, lambda d: "Nothing to answer" in text_of(d, "stage"), SOON)
        result = self.daemon.alert("ops", posted["id"], self.DEPLOYER)["result"]
        self.assertTrue(result["cancelled"])
        self.assertEqual(result["decided_by"], "bob")


if __name__ == "__main__":
    unittest.main()


class AnswerWordsTests(unittest.TestCase):
    """Answers with words (SPEC §13): the page asks for an alert's fields and an optional comment
    before it sends, inside the confirmation for a destructive button."""

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon()
        cls.driver = browser()

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        cls.daemon.cleanup()

    def open(self, client):
        self.driver.get(f"{self.daemon.base}/#/clients/{client}")
        until(self.driver, lambda d: text_of(d, "client-title") == client)

    def button(self, title):
        return self.driver.find_element(By.XPATH, f"//div[@role='alertdialog']//button[.//span[text()='{title}']]")

    def test_fields_and_a_comment_are_asked_for_before_the_answer_is_sent(self):
        self.open("words")
        posted = self.daemon.post("words", {
            "title": "Deploy build 1234?",
            "buttons": [{"title": "Deploy"}, {"title": "Cancel", "style": "cancel"}],
            "fields": [
                {"name": "ticket", "label": "Change ticket", "placeholder": "OPS-123", "required": True},
                {"name": "reason", "label": "Why not", "buttons": ["Cancel"]},
            ],
        })
        until(self.driver, lambda d: dialog_id(d) == posted["id"], SOON)
        ticket = self.driver.find_element(By.ID, "field-ticket")
        self.assertEqual(ticket.get_attribute("placeholder"), "OPS-123")
        self.assertIn("Change ticket", text_of(self.driver, "answer-form"))
        self.assertIn("(for “Cancel”)", text_of(self.driver, "answer-form"))
        self.assertTrue(visible(self.driver, "answer-comment"))

        # A required field left empty: nothing is sent, the field says why and takes the focus.
        self.button("Deploy").click()
        until(self.driver, lambda d: "Required for “Deploy”" in text_of(d, "field-ticket-error"))
        self.assertIn("nothing was sent", text_of(self.driver, "flash"))
        self.assertEqual(self.driver.switch_to.active_element.get_attribute("id"), "field-ticket")
        self.assertEqual(self.daemon.alert("words", posted["id"])["state"], "displayed")

        # Digits typed into an input are text, not the key of a button.
        ticket.send_keys("OPS-1")
        self.driver.find_element(By.ID, "answer-comment").send_keys("window agreed with payments")
        self.assertEqual(self.daemon.alert("words", posted["id"])["state"], "displayed")
        self.button("Deploy").click()
        answered = wait_for(lambda: (a := self.daemon.alert("words", posted["id"]))["result"] and a, SOON, "the answer")
        self.assertEqual(answered["result"]["values"], {"ticket": "OPS-1"})
        self.assertEqual(answered["result"]["comment"], "window agreed with payments")
        # The history is redrawn as it refreshes: its row read in one go.
        until(self.driver, lambda d: "ticket “OPS-1”: “window agreed with payments”" in (d.execute_script(
            "const r = document.querySelector(`#history-body tr[data-alert-id='${arguments[0]}'] .history-button`);"
            "return r ? r.textContent : ''", posted["id"])), SOON, "the history row says the ticket and the comment")

    def test_the_cancel_button_needs_no_ticket_and_carries_its_own_field_and_the_comment(self):
        self.open("words-no")
        posted = self.daemon.post("words-no", {
            "title": "Deploy build 1235?",
            "buttons": [{"title": "Deploy"}, {"title": "Cancel", "style": "cancel"}],
            "fields": [{"name": "ticket", "required": True}, {"name": "reason", "buttons": ["Cancel"]}],
        })
        until(self.driver, lambda d: dialog_id(d) == posted["id"], SOON)
        self.driver.find_element(By.ID, "field-ticket").send_keys("OPS-9")
        self.driver.find_element(By.ID, "field-reason").send_keys("freeze")
        self.driver.find_element(By.ID, "answer-comment").send_keys("until Monday")
        self.button("Cancel").click()
        answered = wait_for(lambda: (a := self.daemon.alert("words-no", posted["id"]))["result"] and a, SOON, "the answer")
        # Only the cancel button's field goes with it.
        self.assertEqual(answered["result"]["values"], {"reason": "freeze"})
        self.assertEqual((answered["result"]["cancelled"], answered["result"]["comment"]), (True, "until Monday"))

    def test_a_destructive_buttons_fields_and_comment_are_asked_inside_its_confirmation(self):
        self.open("words-confirm")
        posted = self.daemon.post("words-confirm", {
            "title": "Drop table orders_old?",
            "buttons": [{"title": "Archive"}, {"title": "Drop", "style": "destructive"}, {"title": "Keep", "style": "cancel"}],
            "fields": [{"name": "ticket", "label": "Change ticket", "required": True, "buttons": ["Drop"]}],
        })
        until(self.driver, lambda d: dialog_id(d) == posted["id"], SOON)
        keys = ActionChains(self.driver)
        keys.send_keys("2").perform()
        until(self.driver, lambda d: visible(d, "confirm") and "“Drop” is destructive" in text_of(d, "confirm"))
        inside = self.driver.execute_script(
            "return !!document.querySelector('#confirm #answer-form #field-ticket') && !!document.querySelector('#confirm #answer-comment')")
        self.assertTrue(inside, "the fields and the comment are inside the confirmation")
        # Confirming with the required field empty sends nothing; the confirmation stays open on it.
        self.driver.find_element(By.ID, "confirm-yes").click()
        until(self.driver, lambda d: "Required for “Drop”" in text_of(d, "field-ticket-error"))
        self.assertTrue(visible(self.driver, "confirm"))
        self.assertEqual(self.daemon.alert("words-confirm", posted["id"])["state"], "displayed")
        # y typed into a field is text, not the confirmation.
        self.driver.find_element(By.ID, "field-ticket").send_keys("OPS-y")
        self.assertEqual(text_of(self.driver, "field-ticket-error"), "", "typing into the field takes its mark away")
        self.driver.find_element(By.ID, "answer-comment").send_keys("archived to S3 yesterday")
        self.assertEqual(self.daemon.alert("words-confirm", posted["id"])["state"], "displayed")
        screenshot(self.driver, "dashboard-words-confirm.png")
        self.driver.find_element(By.ID, "confirm-yes").click()
        answered = wait_for(lambda: (a := self.daemon.alert("words-confirm", posted["id"]))["result"] and a, SOON, "the answer")
        self.assertEqual(answered["result"]["button"], "Drop")
        self.assertEqual(answered["result"]["values"], {"ticket": "OPS-y"})
        self.assertEqual(answered["result"]["comment"], "archived to S3 yesterday")

    def test_kept_the_form_goes_back_above_the_buttons_with_what_was_typed(self):
        self.open("words-keep")
        posted = self.daemon.post("words-keep", {
            "title": "Drop table orders_older?",
            "buttons": [{"title": "Drop", "style": "destructive"}, {"title": "Keep", "style": "cancel"}],
            "fields": [{"name": "ticket", "required": True}],
        })
        until(self.driver, lambda d: dialog_id(d) == posted["id"], SOON)
        self.driver.find_element(By.ID, "answer-comment").send_keys("not yet")
        self.button("Drop").click()
        until(self.driver, lambda d: visible(d, "confirm"))
        self.driver.find_element(By.ID, "confirm-keep").click()
        until(self.driver, lambda d: not visible(d, "confirm"))
        home = self.driver.execute_script("return document.getElementById('answer-form').parentElement.id")
        self.assertEqual(home, "answer-form-home")
        self.assertEqual(self.driver.find_element(By.ID, "answer-comment").get_attribute("value"), "not yet")
        ActionChains(self.driver).send_keys(Keys.ESCAPE).perform()
        answered = wait_for(lambda: (a := self.daemon.alert("words-keep", posted["id"]))["result"] and a, SOON, "Esc")
        # What was typed goes with the next button chosen: the cancel one here.
        self.assertEqual((answered["result"]["button"], answered["result"]["comment"]), ("Keep", "not yet"))

    def test_words_alertd_refuses_are_shown_at_their_field_and_nothing_is_lost(self):
        self.open("words-refused")
        posted = self.daemon.post("words-refused", {
            "title": "Name the release?",
            "buttons": [{"title": "Name it"}],
            "fields": [{"name": "name", "label": "Release name", "max_length": 5}],
        })
        until(self.driver, lambda d: dialog_id(d) == posted["id"], SOON)
        # Past what the input lets a person type (a page of another version might): alertd says so.
        self.driver.execute_script("document.getElementById('field-name').value = 'much too long'")
        self.button("Name it").click()
        until(self.driver, lambda d: "must be at most 5 characters" in text_of(d, "field-name-error"), SOON)
        self.assertIn("“Name it” was not chosen", text_of(self.driver, "flash"))
        self.assertEqual(self.driver.find_element(By.ID, "field-name").get_attribute("value"), "much too long")
        self.assertEqual(self.daemon.alert("words-refused", posted["id"])["state"], "displayed")
        self.driver.execute_script("document.getElementById('field-name').value = ''")
        self.driver.find_element(By.ID, "field-name").send_keys("Kiwi")
        self.button("Name it").click()
        answered = wait_for(lambda: (a := self.daemon.alert("words-refused", posted["id"]))["result"] and a, SOON, "the answer")
        self.assertEqual(answered["result"]["values"], {"name": "Kiwi"})

    def test_a_coding_agents_permission_request_on_a_phone_fits_and_takes_a_comment(self):
        # What `alertctl hook claude-code` and request_permission post (AlertdMCP's PermissionRequest).
        phone = browser(phone=True)
        try:
            phone.get(self.daemon.base + "/#/clients/agents")
            posted = self.daemon.post("agents", {
                "title": "Allow Bash: npm run migrate -- --env production?",
                "message": "Bash wants to run with:\ncommand: npm run migrate -- --env production\n"
                           "description: Run the database migrations on production",
                "buttons": [{"title": "Allow"}, {"title": "Deny", "style": "cancel"}],
                "metadata": {"asked_via": "alertctl hook claude-code", "cwd": "/home/ana/shop", "tool": "Bash"},
            })
            until(phone, lambda d: dialog_id(d) == posted["id"], SOON)
            width = phone.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
            self.assertLessEqual(width[0], width[1], "no horizontal scrolling at 360 px")
            phone.find_element(By.ID, "answer-comment").send_keys("Run it on staging first.")
            screenshot(phone, "dashboard-permission-phone.png")
            phone.find_element(By.XPATH, "//div[@role='alertdialog']//button[.//span[text()='Deny']]").click()
            answered = wait_for(lambda: (a := self.daemon.alert("agents", posted["id"]))["result"] and a, SOON, "Deny")
            self.assertEqual((answered["result"]["cancelled"], answered["result"]["comment"]), (True, "Run it on staging first."))
        finally:
            phone.quit()
