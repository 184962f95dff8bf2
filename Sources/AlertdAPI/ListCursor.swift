import AlertdWire
import AlertdCore
import AlertdEngine

/// A list cursor as `next_cursor` writes it: `p.<priority>.<id>` in the pending
/// part, `t.<id>` (or `t`) in the terminal part. Clients pass it back as is.
extension Engine.ListCursor {
    var text: String {
        switch self {
        case .pending(let priority, let id): "p.\(priority).\(id)"
        case .terminal(let id?): "t.\(id)"
        case .terminal(nil): "t"
        }
    }

    /// nil for text this daemon never issues.
    init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count == 3, parts[0] == "p", let priority = Int(parts[1]), NewAlert.priorityRange.contains(priority),
            let id = AlertID(parts[2])
        {
            self = .pending(priority: priority, id: id)
        } else if parts.count == 2, parts[0] == "t", let id = AlertID(parts[1]) {
            self = .terminal(id)
        } else if text == "t" {
            self = .terminal(nil)
        } else {
            return nil
        }
    }
}
