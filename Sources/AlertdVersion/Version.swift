/// The version of alertd and alertctl: the one place it is written.
///
/// `alertd --version` and `alertctl --version` print it, `make deb` reads it
/// (the package is `alertd_<version>_amd64.deb`), and `Tests/Package` fails
/// when CHANGELOG.md's top entry, the binaries and the package disagree.
public enum AlertdVersion {
    public static let string = "0.1.0"
}
