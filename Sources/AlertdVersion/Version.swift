/// The version of alertd and alertctl: the one place it is written.
///
/// `alertd --version` and `alertctl --version` print it, `make deb` reads it
/// (the package is `alertd_<version>_amd64.deb`), and `Tests/Package` fails
/// when CHANGELOG.md's top entry, the binaries and the package disagree.
public enum AlertdVersion {
    public static let string = "0.1.0"

    /// What `--version` prints: the version, and " (debug build)" for a binary built
    /// without optimisation, so that nobody mistakes one for what ships (and the tests
    /// that must run the shipped binaries can refuse it, Tests/AlertdTestSupport).
    public static var printed: String { isDebugBuild ? string + " (debug build)" : string }

    /// Whether this binary was built without optimisation (SwiftPM's debug configuration).
    public static var isDebugBuild: Bool {
        #if DEBUG
            true
        #else
            false
        #endif
    }
}
