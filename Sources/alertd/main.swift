import AlertdHTTP
import Dispatch
import Logging
import Glibc

struct Smoke: HTTPHandler {
    func handle(_ request: HTTPRequest, responder: Responder) {
        if request.path == "/later" {
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) {
                responder.respond(HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: Array("{\"later\":true}".utf8)))
            }
            return
        }
        responder.respond(HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: Array("{\"path\":\"\(request.path)\",\"q\":\"\(request.query)\",\"n\":\(request.body.count)}".utf8)))
    }
    func payloadTooLarge(limit: Int) -> HTTPResponse { HTTPResponse(status: 413, body: Array("too large".utf8)) }
}
let server = HTTPServer(configuration: .init(listen: .address(host: "127.0.0.1", port: 18080)), handler: Smoke(), logger: Logger(label: "x"))
try server.start()
print("listening", server.boundAddress)
while true { sleep(100) }
