"""An Alertmanager alert on the dashboard, as the operator sees it (docs/alertmanager.md).

    /usr/bin/python3 -m unittest discover -s Tests/Browser -v

The notification is posted to alertd's receiver as Alertmanager 0.25 writes it (the
loop with the real Alertmanager is the Swift end-to-end tier's); the page shows the
question with the integration's buttons and the alert's labels, and a click answers it.
ALERTD_SCREENSHOTS=1 writes docs/images/dashboard-alertmanager.png.
"""

import json
import unittest

from alertd_browser import Daemon, browser, dialog, dialog_id, screenshot, text_of, until

CONFIG = """log:
  level: info
integrations:
  alertmanager:
    url: "http://127.0.0.1:9093"
    matcher_labels: [alertname, instance]
"""

LABELS = {"alertname": "DiskWillFillIn4Hours", "instance": "db-1.eu-west:9100", "job": "node", "mountpoint": "/var/lib/postgresql",
          "severity": "critical"}

NOTIFICATION = {
    "receiver": "alertd", "status": "firing", "version": "4", "groupKey": '{}:{alertname="DiskWillFillIn4Hours"}',
    "truncatedAlerts": 0, "externalURL": "http://alertmanager.eu-west:9093",
    "groupLabels": {"alertname": "DiskWillFillIn4Hours"}, "commonLabels": LABELS, "commonAnnotations": {},
    "alerts": [{
        "status": "firing", "labels": LABELS,
        "annotations": {
            "summary": "Disk on db-1 will fill up within 4 hours",
            "description": "/var/lib/postgresql is 91% full and grows 2.1 GB an hour. "
                           "Silence it while the cleanup job runs, or acknowledge and look.",
        },
        "startsAt": "2026-11-24T06:41:12.418396912Z", "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": "http://prometheus.eu-west:9090/graph?g0.expr=predict_linear%28node_filesystem_avail_bytes%5B6h%5D%2C+4*3600%29+%3C+0",
        "fingerprint": "5a95f7672ad6df90",
    }],
}


class AlertmanagerAlertTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon(CONFIG)
        cls.driver = browser()

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        cls.daemon.cleanup()

    def test_an_alertmanager_alert_shows_its_summary_buttons_and_labels_and_a_click_answers_it(self):
        self.driver.get(f"{self.daemon.base}/#/clients/oncall")
        until(self.driver, lambda d: text_of(d, "client-title") == "oncall" and "Nothing to answer" in text_of(d, "stage"))
        status, receipt = self.daemon.api("POST", "/v1/integrations/alertmanager/oncall", NOTIFICATION)
        self.assertEqual(status, 200, receipt)
        alert_id = receipt["alerts"][0]["alert_id"]
        self.assertEqual(receipt["alerts"][0]["outcome"], "created")
        until(self.driver, lambda d: dialog_id(d) == alert_id, 5, "the alert displayed")
        shown = dialog(self.driver)
        self.assertEqual(shown["title"], "Disk on db-1 will fill up within 4 hours")
        self.assertTrue(shown["message"].startswith("/var/lib/postgresql is 91% full"))
        # What a silence button would silence is on the alert itself.
        self.assertTrue(shown["message"].endswith(
            '\n\nA silence matches: alertname="DiskWillFillIn4Hours", instance="db-1.eu-west:9100"'), shown["message"])
        self.assertEqual([b["title"] for b in shown["buttons"]], ["Acknowledge", "Silence 1h", "Silence 24h", "Ignore"])
        # Alertmanager's labels read as labels (name and value); the rest is in the raw JSON.
        names = [e.get_attribute("textContent") for e in self.driver.find_elements("css selector", ".dialog-labels .label-name")]
        values = [e.get_attribute("textContent") for e in self.driver.find_elements("css selector", ".dialog-labels .label-value")]
        self.assertEqual(dict(zip(names, values)), LABELS)
        self.assertEqual(self.driver.find_elements("css selector", ".dialog-metadata dt"), [], "no other member to list")
        metadata = json.loads(self.driver.find_element("css selector", ".dialog-metadata-raw").get_attribute("textContent"))
        self.assertEqual(metadata["alertmanager"]["labels"], LABELS)
        self.assertEqual(metadata["alertmanager"]["silence_matchers"], ["alertname", "instance"])
        self.assertEqual(metadata["alertmanager"]["fingerprint"], "5a95f7672ad6df90")
        screenshot(self.driver, "dashboard-alertmanager.png")

        # Acknowledge: recorded, nothing sent back; the stage empties.
        self.driver.find_element("css selector", f'#stage-content button.action[data-index="0"]').click()
        until(self.driver, lambda d: "Nothing to answer" in text_of(d, "stage"), 5, "the stage emptied")
        answered = self.daemon.alert("oncall", alert_id)
        self.assertEqual((answered["state"], answered["result"]["button"]), ("answered", "Acknowledge"))
        status, listed = self.daemon.api("GET", f"/v1/clients/oncall/alerts/{alert_id}/deliveries")
        self.assertEqual((status, listed["deliveries"]), (200, []))


if __name__ == "__main__":
    unittest.main()
