import AlertdCore
import Testing

@Suite("Client ids match ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
struct ClientIDTests {
    @Test(
        "Valid client ids",
        arguments: [
            "ops", "a", "Z", "0", "team-1.x_y", "A.B-C_D", "9-", "x.", String(repeating: "a", count: 64),
            "a" + String(repeating: "-", count: 63),
        ])
    func valid(id: String) {
        #expect(ClientID.isValid(id))
    }

    @Test(
        "Invalid client ids",
        arguments: [
            "", String(repeating: "a", count: 65), "-ops", ".ops", "_ops", "o/ps", "ops space", " ops", "ops\n",
            "opé", "ops😀", "ö", "o:ps", "o+ps", "o%2Fps", "o\u{0}ps",
        ])
    func invalid(id: String) {
        #expect(!ClientID.isValid(id))
    }

    @Test("Substrings are checked the same way")
    func substring() {
        let path = "clients/ops/alerts"
        #expect(ClientID.isValid(path.split(separator: "/")[1]))
        #expect(!ClientID.isValid(path.dropFirst(7).prefix(5)))  // "/ops/"
    }
}
