import AlertdDaemon
import AlertdReceipts
import ArgumentParser
import Foundation

/// `alertd receipts keygen PATH`: a new Ed25519 signing key for receipts (SPEC §14).
struct ReceiptsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receipts", abstract: "Makes the key signed receipts are signed with (SPEC §14).", subcommands: [Keygen.self])

    struct Keygen: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Writes a new Ed25519 signing key for receipts to PATH (PEM PKCS#8, mode 0600).",
            discussion: """
                Name the file in receipts.key_file. Every instance of one PostgreSQL database signs with \
                the same key: copy the file to each. An existing file is never replaced. To rotate, make \
                a new key, set receipts.key_file to it and list the old file under receipts.previous_keys, \
                so that GET /v1/keys keeps listing the key the older receipts were signed with. Prints \
                the key id (the key_id of the receipts it signs) and the public key.
                """)

        @Argument(help: "The file to write; it must not exist.")
        var path: String

        func run() throws {
            let key = ReceiptSigningKey.generate()
            do {
                try ReceiptKeyFiles.write(key, to: path)
            } catch {
                FileHandle.standardError.write(Data("alertd: receipts keygen: \(error)\n".utf8))
                throw ExitCode(1)
            }
            print("wrote \(path) (Ed25519, PEM PKCS#8, mode 0600)\nkey_id: \(key.keyID)\n\(key.publicKey.pem)", terminator: "")
        }
    }
}
