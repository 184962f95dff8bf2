import Crypto
import Foundation

/// What makes a notification on `alertd`'s channel alertd's own (SPEC §9).
///
/// PostgreSQL asks no privilege for `LISTEN` or `NOTIFY`: any role that may connect
/// to the database hears every payload and can send its own. So every payload an
/// instance sends is sealed with ChaCha20-Poly1305 under a key kept in the
/// `secrets` table, which only alertd's role reads (never in the channel itself):
/// a stranger hears ciphertext, and what it sends fails to open and is dropped.
///
/// A sealed payload is `1` (the format) followed by the base64 of the nonce, the
/// ciphertext and the tag. A payload heard again (a stranger may replay one it
/// heard) tells nothing untrue: a decided alert stays decided, a display older
/// than the one an instance holds is ignored (versions only grow), and a client
/// named is only read again.
struct NotificationSeal: Sendable {
    /// The row of `secrets` that holds the key.
    static let secretName = "notify"
    /// Binds a sealed payload to its use: a ciphertext made for something else never opens here.
    /// (Computed: a global `Data` made once was reported by LeakSanitizer as leaked.)
    private static var context: Data { Data("alertd notification v1".utf8) }
    private static let format: Character = "1"
    /// What sealing adds to a payload: the format, then base64's 4/3 of nonce, text and tag.
    static func sealedSize(of plain: Int) -> Int { 1 + (12 + plain + 16 + 2) / 3 * 4 }

    /// The key's bytes (swift-crypto's `SymmetricKey` is not `Sendable`; one is made per use).
    private let key: [UInt8]

    init(key: [UInt8]) {
        precondition(key.count == 32, "a notification key has 32 bytes")
        self.key = key
    }

    /// A new random key, as first start stores it.
    static func newKey() -> [UInt8] {
        SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
    }

    func seal(_ payload: String) -> String {
        // ChaChaPoly with a random nonce fails only on a key of the wrong size, which init refuses.
        let box = try! ChaChaPoly.seal(Data(payload.utf8), using: SymmetricKey(data: key), authenticating: Self.context)
        return String(Self.format) + box.combined.base64EncodedString()
    }

    /// The payload sealed in `sealed`; nil for anything this key did not seal.
    func open(_ sealed: String) -> String? {
        guard sealed.first == Self.format, let combined = Data(base64Encoded: String(sealed.dropFirst())),
            let box = try? ChaChaPoly.SealedBox(combined: combined),
            let plain = try? ChaChaPoly.open(box, using: SymmetricKey(data: key), authenticating: Self.context)
        else { return nil }
        return String(validating: plain, as: UTF8.self)
    }
}
