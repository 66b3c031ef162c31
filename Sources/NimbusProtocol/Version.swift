/// The one version number of Nimbus: `nimbusd --version`, `nimbusctl --version`, the
/// protocol's `hello` and the Debian package all print this string.
public enum NimbusVersion {
    public static let string = "0.1.0"
}
