// The config loader on any text: YAML through Yams (libyaml, instrumented too),
// then every key checked. A config file is written by the operator, not by a
// stranger, but a loader that crashes or hangs on a typo is a bad first minute;
// every input must end in a Config or in ConfigErrors naming what is wrong.
import AlertdDaemon

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfig(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    do {
        _ = try Config.parse(yaml: text, source: "fuzz.yaml")
    } catch let errors as ConfigErrors {
        precondition(!errors.errors.isEmpty, "ConfigErrors without an error")
    } catch {
        fatalError("Config.parse threw something other than ConfigErrors: \(error)")
    }
    return 0
}
