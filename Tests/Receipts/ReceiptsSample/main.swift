// receipts-sample: signs a chain of receipts with alertd's own receipt code (AlertdReceipts),
// for the Python tier (Tests/Receipts) to check with other implementations: Python's
// `cryptography` (Ed25519) and `rfc8785` (JCS). Not shipped: receipts are written by the
// stores once issue 47's decision side lands; until then this is how the tier gets receipts
// made by alertd's code rather than its own.
//
//     receipts-sample KEY_FILE ALERTS_FILE [START_SEQ START_SHA256]
//
// KEY_FILE is a PEM PKCS#8 key (`alertd receipts keygen`). ALERTS_FILE holds one JSON object
// per line: `{"alert": <alert resource>, "result": {"outcome", "button", "button_index",
// "decided_by", "votes", "comment", "values"}, "decided_at": …}`. Prints one signed receipt per
// line (JCS), in a chain from START (default: seq 0, 64 zeros).

import AlertdReceipts
import AlertdWire
import Foundation

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("receipts-sample: \(message)\n".utf8))
    exit(64)
}

let arguments = CommandLine.arguments
guard arguments.count == 3 || arguments.count == 5 else {
    fail("usage: receipts-sample KEY_FILE ALERTS_FILE [START_SEQ START_SHA256]")
}
guard let keyData = FileManager.default.contents(atPath: arguments[1]) else { fail("cannot read \(arguments[1])") }
guard let alertsData = FileManager.default.contents(atPath: arguments[2]) else { fail("cannot read \(arguments[2])") }
let key: ReceiptSigningKey
do {
    key = try ReceiptSigningKey(pem: String(decoding: keyData, as: UTF8.self))
} catch {
    fail("\(arguments[1]): \(error)")
}
var head = ChainLink.start
if arguments.count == 5 {
    guard let seq = Int(arguments[3]) else { fail("START_SEQ must be an integer") }
    head = ChainLink(seq: seq, sha256: arguments[4])
}
var output = ""
for (index, line) in String(decoding: alertsData, as: UTF8.self).split(separator: "\n").enumerated() {
    do {
        let entry = try JSONParser.parse(String(line))
        guard let alert = entry["alert"]?.objectValue, let result = entry["result"]?.objectValue,
            let decidedAt = entry["decided_at"]?.stringValue, let alertID = alert["id"]?.stringValue,
            let client = alert["client"]?.stringValue,
            let outcome = result["outcome"]?.stringValue.flatMap(Receipt.Outcome.init(rawValue:))
        else { fail("line \(index + 1): not {\"alert\", \"result\", \"decided_at\"}") }
        var values: [String: String] = [:]
        for (name, value) in result["values"]?.objectValue ?? [:] { values[name] = value.stringValue }
        let receipt = Receipt(
            after: head, alertID: alertID, client: client, contentSHA256: try ReceiptContent.sha256(ofAlert: alert), outcome: outcome,
            button: result["button"]?.stringValue, buttonIndex: result["button_index"]?.numberValue?.int,
            decidedBy: result["decided_by"]?.stringValue, votes: result["votes"]?.arrayValue ?? [], comment: result["comment"]?.stringValue,
            values: values, decidedAt: decidedAt)
        let signed = try key.sign(receipt)
        output += String(decoding: try signed.encoded(), as: UTF8.self) + "\n"
        head = try signed.link()
    } catch {
        fail("line \(index + 1): \(error)")
    }
}
FileHandle.standardOutput.write(Data(output.utf8))
