public import AlertdWire
import Crypto

/// A receipt with its `signature` (Ed25519 over ``Receipt/signingInput()``, base64url): the
/// receipt resource, an audit line.
public struct SignedReceipt: Sendable, Hashable {
    public let receipt: Receipt
    /// 64 bytes.
    public let signature: [UInt8]

    /// A receipt and a signature, as they are: ``verify(with:)`` tells whether they agree.
    public init(receipt: Receipt, signature: [UInt8]) {
        self.receipt = receipt
        self.signature = signature
    }

    /// The resource: the receipt's members and `signature`.
    public var json: JSONObject {
        var object = receipt.json
        object["signature"] = .string(Base64URL.encode(signature))
        return object
    }

    /// The JCS bytes of ``json``: an audit line (without its newline), and what the next
    /// receipt's `prev_sha256` hashes.
    public func encoded() throws(ReceiptError) -> [UInt8] { try receipt.canonical(signature: Base64URL.encode(signature)) }

    /// SHA-256 (hex) of ``encoded()``.
    public func sha256() throws(ReceiptError) -> String { hex(SHA256.hash(data: try encoded())) }

    /// Where the chain stands after this receipt.
    public func link() throws(ReceiptError) -> ChainLink { ChainLink(seq: receipt.seq, sha256: try sha256()) }

    /// A receipt resource or audit line: the members of ``Receipt`` and `signature`.
    public init(json object: JSONObject) throws(ReceiptError) {
        guard case .string(let text)? = object["signature"] else {
            throw ReceiptError(.malformed, "signature must be a string (base64url)")
        }
        guard let signature = Base64URL.decode(text), signature.count == 64, Base64URL.encode(signature) == text else {
            throw ReceiptError(.malformed, "signature must be 64 bytes in base64url without padding")
        }
        var unsigned = object
        unsigned["signature"] = nil
        self.init(receipt: try Receipt(json: unsigned), signature: signature)
    }

    /// A receipt from its JSON text (one audit line).
    public init(text: some StringProtocol) throws(ReceiptError) {
        let value: JSONValue
        do {
            value = try JSONParser.parse(String(text))
        } catch {
            throw ReceiptError(.malformed, "not JSON: \(error)")
        }
        guard case .object(let object) = value else { throw ReceiptError(.malformed, "not a JSON object") }
        try self.init(json: object)
    }

    /// Checks the signature with the key the receipt names, from `keys`.
    public func verify(with keys: ReceiptKeySet) throws(ReceiptError) {
        guard let key = keys[receipt.keyID] else { throw ReceiptError(.unknownKey, "key_id \(receipt.keyID) is not in the key set") }
        guard key.isValidSignature(signature, for: try receipt.signingInput()) else {
            throw ReceiptError(.badSignature, "the signature does not verify with key \(receipt.keyID)")
        }
    }
}

extension ReceiptSigningKey {
    /// `receipt` with this key's id as `key_id`, signed.
    public func sign(_ receipt: Receipt) throws(ReceiptError) -> SignedReceipt {
        var receipt = receipt
        receipt.keyID = keyID
        return SignedReceipt(receipt: receipt, signature: signature(for: try receipt.signingInput()))
    }
}
