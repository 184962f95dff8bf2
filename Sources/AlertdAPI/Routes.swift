extension API {
    /// Every endpoint alertd serves: §4's, plus `whoami`, the OpenAPI document and the dashboard.
    /// A new endpoint is one line here and one handler.
    static let routes: [Route] = [
        Route("GET", "/healthz", .open, "healthz", API.healthz),
        Route("GET", "/readyz", .open, "readyz", API.readyz),
        Route("GET", "/metrics", .open, "metrics", API.metricsText),
        // The dashboard loads without a token: it asks for one itself.
        Route("GET", "/", .open, "dashboard", API.dashboardPage),
        Route("GET", "/ui/{asset}", .open, "dashboard_asset", API.dashboardAsset),
        // Its service worker, at the root so that its scope covers the page (`/`).
        Route("GET", "/sw.js", .open, "dashboard_worker", API.dashboardWorker),
        // The API's description: no token even with tokens configured (it holds no data).
        Route("GET", "/v1/openapi.json", .anyone, "openapi", API.openAPIDocument),
        // Any valid token (with tokens, every other /v1 request shows one before routing).
        Route("GET", "/v1/whoami", .open, "whoami", API.whoAmI),
        Route("GET", "/v1/clients", .read, "list_clients", API.listClients),
        Route("POST", "/v1/clients/{client}/alerts", .post, "post_alert", API.postAlert),
        Route("GET", "/v1/clients/{client}/alerts", .read, "list_alerts", API.listAlerts),
        Route("GET", "/v1/clients/{client}/alerts/current", .read, "current_alert", API.currentAlert),
        Route("GET", "/v1/clients/{client}/alerts/{id}", .read, "get_alert", API.getAlert),
        Route("DELETE", "/v1/clients/{client}/alerts/{id}", .post, "withdraw_alert", API.withdrawAlert),
        Route("POST", "/v1/clients/{client}/alerts/{id}/choice", .answer, "choose", API.choose),
        Route("GET", "/v1/clients/{client}/alerts/{id}/deliveries", .read, "deliveries", API.deliveries),
        // Signed receipts (SPEC §14): a decided alert's, and the deployment's audit log.
        Route("GET", "/v1/clients/{client}/alerts/{id}/receipt", .read, "alert_receipt", API.alertReceipt),
        Route("GET", "/v1/audit", .admin, "audit", API.audit),
        Route("POST", "/v1/clients/{client}/webhooks", .admin, "create_webhook", API.createWebhook),
        Route("GET", "/v1/clients/{client}/webhooks", .admin, "list_webhooks", API.listWebhooks),
        Route("GET", "/v1/clients/{client}/webhooks/{id}", .admin, "get_webhook", API.getWebhook),
        Route("DELETE", "/v1/clients/{client}/webhooks/{id}", .admin, "delete_webhook", API.deleteWebhook),
        // Web Push (SPEC §11): any valid token; the clients a subscription names are checked against it.
        Route("GET", "/v1/push/key", .open, "push_key", API.pushKey),
        Route("POST", "/v1/push/subscriptions", .open, "create_push_subscription", API.createPushSubscription),
        Route("GET", "/v1/push/subscriptions", .open, "list_push_subscriptions", API.listPushSubscriptions),
        Route("DELETE", "/v1/push/subscriptions/{id}", .open, "delete_push_subscription", API.deletePushSubscription),
        // A push's answer_url: the link itself is the capability, no Authorization.
        Route("POST", "/v1/answers/{token}", .anyone, "answer_link", API.answerThroughLink),
        // Signed receipts (SPEC §14): the public keys they are signed with, as a JWKS.
        Route("GET", "/v1/keys", .open, "receipt_keys", API.receiptKeySet),
        // Prometheus Alertmanager's webhook receiver: its alerts posted to {client} (docs/alertmanager.md).
        Route("POST", "/v1/integrations/alertmanager/{client}", .alertmanager, "alertmanager", API.receiveAlertmanager),
    ]
}
