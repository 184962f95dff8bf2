public import AlertdCore
public import AlertdWire

/// The event alertd delivers when an alert becomes terminal: its id, type and
/// the exact body every target receives on every attempt.
///
/// The body is `{"type":"alert.<state>","timestamp":"<RFC 3339>","data":{"alert":<alert>}}`,
/// where `<alert>` is the alert as the API renders it. Store ``body`` with the
/// event and send it byte for byte: the signature covers those bytes.
///
/// ```swift
/// var ids = CallbackEventIDGenerator()
/// let event = CallbackEvent(
///     id: ids.next(at: now), state: .answered, timestamp: now, renderedAlert: renderedAlertBytes)
/// event.type  // "alert.answered"
/// ```
public struct CallbackEvent: Sendable, Hashable {
    /// The `webhook-id`: one per event, shared by all its targets, the same on every retry.
    public let id: CallbackEventID
    /// `alert.` + the terminal state.
    public let type: String
    /// When the alert became terminal.
    public let timestamp: Timestamp
    /// The JSON body, compact.
    public let body: [UInt8]

    /// Assembles the event for an alert that reached the terminal `state` at `timestamp`.
    ///
    /// - Parameter renderedAlert: the alert as compact JSON, exactly as the API renders it.
    /// - Precondition: `state` is terminal.
    public init(id: CallbackEventID, state: AlertState, timestamp: Timestamp, renderedAlert: [UInt8]) {
        precondition(state.isTerminal, "callback events are for terminal states, not \(state)")
        self.id = id
        self.type = Self.type(for: state)
        self.timestamp = timestamp
        var writer = JSONWriter(capacity: renderedAlert.count + 96)
        AlertEvent.write(type: type, timestamp: timestamp, into: &writer) { $0.raw(renderedAlert) }
        body = writer.bytes
    }

    /// Assembles the `alert.escalated` event of a step an alert took (SPEC §12), at the step's time.
    ///
    /// - Parameter renderedAlert: the alert as compact JSON, exactly as the API renders it.
    public init(id: CallbackEventID, escalation: EscalationEvent, renderedAlert: [UInt8]) {
        self.id = id
        self.type = AlertEvent.escalatedType
        self.timestamp = escalation.at
        var writer = JSONWriter(capacity: renderedAlert.count + 192)
        AlertEvent.write(type: type, timestamp: escalation.at, escalation: escalation, into: &writer) { $0.raw(renderedAlert) }
        body = writer.bytes
    }

    /// Restores an event read back from the store, body as stored.
    public init(id: CallbackEventID, type: String, timestamp: Timestamp, body: [UInt8]) {
        self.id = id
        self.type = type
        self.timestamp = timestamp
        self.body = body
    }

    /// The event type for a terminal state: `alert.answered`, `alert.dismissed`, …
    public static func type(for state: AlertState) -> String { "alert." + state.rawValue }
}

/// An event id: `msg_` + 26 Crockford base32 characters (an ``AlertID``-style
/// 128-bit id: creation time in milliseconds, then random bits). URL-safe,
/// unique, and sorted by creation as plain strings.
///
/// ```swift
/// CallbackEventID("msg_01M7ZYW7VKEVTMN3W9PJ09R8V3")?.description  // "msg_01M7ZYW7VKEVTMN3W9PJ09R8V3"
/// ```
public struct CallbackEventID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The 128 bits.
    public let value: AlertID

    /// What every event id starts with.
    public static let prefix = "msg_"

    /// The event id with these 128 bits.
    public init(_ value: AlertID) { self.value = value }

    /// Parses `msg_` + 26 characters; nil for anything else.
    public init?(_ text: String) {
        guard text.hasPrefix(Self.prefix), let value = AlertID(text.dropFirst(Self.prefix.count)) else { return nil }
        self.value = value
    }

    public static func < (a: CallbackEventID, b: CallbackEventID) -> Bool { a.value < b.value }

    public var description: String { Self.prefix + value.description }
}

/// Makes event ids that increase strictly, like ``AlertIDGenerator``.
public struct CallbackEventIDGenerator: Sendable {
    private var ids: AlertIDGenerator

    /// A generator whose ids all sort after `last` (pass the newest stored id after a restart).
    public init(after last: CallbackEventID? = nil) { ids = AlertIDGenerator(after: last?.value) }

    /// A new id carrying `time`, greater than every id this generator made before.
    public mutating func next(at time: Timestamp) -> CallbackEventID { CallbackEventID(ids.next(at: time)) }
}
