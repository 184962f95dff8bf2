public import AlertdCore
import AlertdEngine
public import AlertdReceipts
import NIOConcurrencyHelpers

/// The receipt a transaction owes for an alert it decides (SPEC §14), on its way to the
/// writer: the decided alert, and its draft once made (``ReceiptDraft/init(decided:)``:
/// what was asked, hashed, and the decision read off the alert's resource).
///
/// The draft does not depend on the chain, so it is made off the writer's serial path: by
/// the transaction's own task once the board's lock is released (``prepare()``), while the
/// writer signs and commits what came before. The writer takes it (``draft``), or makes it
/// itself when it gets there first: the same bytes either way, made once or twice, never
/// waited for. Only the signing, which links each receipt to the hash of the one before,
/// stays on the writer.
public final class PendingReceipt: Sendable {
    public let alert: Alert
    private let made = NIOLockedValueBox<ReceiptDraft?>(nil)

    public init(_ alert: Alert) { self.alert = alert }

    /// Makes the draft now, unless it is made.
    public func prepare() {
        guard made.withLockedValue({ $0 == nil }) else { return }
        let draft = ReceiptDraft(decided: alert)
        made.withLockedValue { $0 = $0 ?? draft }
    }

    /// The draft: as prepared, or made now.
    public var draft: ReceiptDraft {
        if let draft = made.withLockedValue({ $0 }) { return draft }
        let draft = ReceiptDraft(decided: alert)
        made.withLockedValue { $0 = $0 ?? draft }
        return draft
    }
}
