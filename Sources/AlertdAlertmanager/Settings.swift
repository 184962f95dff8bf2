public import AlertdWire

/// `integrations.alertmanager` in the config: where Alertmanager is, how alertd
/// signs in to it, the buttons its alerts get and how they are ranked.
///
/// ```swift
/// var settings = AlertmanagerSettings(url: "http://127.0.0.1:9093")
/// settings.buttons        // Acknowledge, Silence 1h, Silence 24h, Ignore (cancel)
/// settings.silencesURL    // "http://127.0.0.1:9093/api/v2/silences"
/// ```
public struct AlertmanagerSettings: Sendable, Hashable {
    /// Alertmanager's base URL as configured, without a trailing slash (a route
    /// prefix, `http://host:9093/alertmanager`, is kept). nil: alertd only
    /// receives; no button may then create a silence.
    public var url: String?
    /// The `Authorization` header value alertd sends to Alertmanager (`Bearer …`,
    /// `Basic …`); nil: none. Sent only to ``silencesURL``.
    public var authorization: String?
    /// The buttons of every alert the integration posts, in order.
    public var buttons: [AlertmanagerButton]
    /// The labels a silence matches on, besides `alertname`, which it always
    /// matches; nil: every label of the alert. An alert that lacks any of them
    /// (or `alertname`) gets no silence buttons: a silence is never wider than this.
    public var matcherLabels: [String]?
    /// Priority by the value of the alert's `severity` label.
    public var severityPriority: [String: Int]
    /// The priority of an alert whose `severity` is missing or not in ``severityPriority``.
    public var defaultPriority: Int
    /// Seconds an alert stays pending unanswered; nil: `alerts.default_expires_in`.
    public var expiresIn: Double?

    public init(
        url: String? = nil, authorization: String? = nil, buttons: [AlertmanagerButton] = AlertmanagerButton.defaults,
        matcherLabels: [String]? = nil, severityPriority: [String: Int] = AlertmanagerSettings.defaultSeverityPriority,
        defaultPriority: Int = 0, expiresIn: Double? = nil
    ) {
        self.url = url.map(Self.trimmed)
        self.authorization = authorization
        self.buttons = buttons
        self.matcherLabels = matcherLabels
        self.severityPriority = severityPriority
        self.defaultPriority = defaultPriority
        self.expiresIn = expiresIn
    }

    /// `critical` 50, `warning` 0, `info` −50.
    public static let defaultSeverityPriority = ["critical": 50, "warning": 0, "info": -50]

    /// Where silences are created: Alertmanager's API v2.
    public var silencesURL: String? { url.map { $0 + "/api/v2/silences" } }

    /// Whether a button creates silences: one has `silence`, and there is an Alertmanager to send them to.
    public var silences: Bool { url != nil && buttons.contains { $0.silenceSeconds != nil } }

    /// The button titled `title`, if the integration has one.
    public func button(titled title: String) -> AlertmanagerButton? { buttons.first { $0.title == title } }

    /// The base URL without the trailing slashes a config may carry.
    static func trimmed(_ url: String) -> String {
        var url = Substring(url)
        while url.hasSuffix("/") { url = url.dropLast() }
        return String(url)
    }

    /// Why `text` cannot be Alertmanager's base URL (nil when it can): an
    /// absolute `http` or `https` URL with a host, no query, no fragment, no user info
    /// (auth goes in `bearer_token` or `basic_auth`, never in a URL that logs show).
    public static func urlProblem(_ text: String) -> String? {
        let lower = text.lowercased()
        let scheme = lower.hasPrefix("http://") ? "http://" : lower.hasPrefix("https://") ? "https://" : nil
        guard let scheme else { return "must be an http:// or https:// URL, not \(text)" }
        let rest = text.dropFirst(scheme.count)
        let authority = rest.prefix { $0 != "/" }
        guard !authority.isEmpty else { return "must name a host: \(text)" }
        if authority.contains("@") { return "must not carry user info; use bearer_token or basic_auth" }
        if text.contains("?") || text.contains("#") { return "must have no query or fragment: \(text)" }
        if text.unicodeScalars.contains(where: { $0.value <= 32 || $0.value == 127 }) {
            return "must not contain spaces or control characters"
        }
        return nil
    }
}

/// One button of the integration's alerts: its title and style, and what
/// choosing it does in Alertmanager.
public struct AlertmanagerButton: Sendable, Hashable {
    public var title: String
    public var style: ButtonStyle
    /// Seconds of silence choosing it creates; nil: nothing is sent back (the
    /// choice is recorded, as for Acknowledge and Ignore).
    public var silenceSeconds: Double?

    public init(title: String, style: ButtonStyle = .default, silenceSeconds: Double? = nil) {
        self.title = title
        self.style = style
        self.silenceSeconds = silenceSeconds
    }

    /// Acknowledge (recorded), Silence 1h, Silence 24h, Ignore (cancel).
    public static let defaults = [
        AlertmanagerButton(title: "Acknowledge"),
        AlertmanagerButton(title: "Silence 1h", silenceSeconds: 3600),
        AlertmanagerButton(title: "Silence 24h", silenceSeconds: 86_400),
        AlertmanagerButton(title: "Ignore", style: .cancel),
    ]

    /// The button as an alert shows it.
    public var button: Button { Button(title: title, style: style) }
}
