/// The security of one LE link as the host knows it: what the ATT server's permission
/// checks read (Core Vol 3 Part C §10.3, Part F §4). Until pairing exists every link is
/// unencrypted; Encryption Change and Key Refresh will update it.
public struct LinkSecurity: Sendable, Hashable, CustomStringConvertible {
    /// The link is encrypted (Encryption Change with Encryption_Enabled ≠ 0).
    public var encrypted: Bool
    /// Encryption key size in octets (7...16); 0 while unencrypted.
    public var keySize: Int
    /// The key was generated with MITM protection (passkey, numeric comparison, OOB).
    public var authenticated: Bool
    /// The key came from LE Secure Connections pairing.
    public var secureConnections: Bool
    /// The peer is bonded (keys stored).
    public var bonded: Bool

    /// A security state; the default is an unencrypted link.
    public init(encrypted: Bool = false, keySize: Int = 0, authenticated: Bool = false,
                secureConnections: Bool = false, bonded: Bool = false) {
        self.encrypted = encrypted
        self.keySize = encrypted ? keySize : 0
        self.authenticated = encrypted && authenticated
        self.secureConnections = encrypted && secureConnections
        self.bonded = bonded
    }

    /// An unencrypted link (security mode 1 level 1).
    public static let unencrypted = LinkSecurity()

    public var description: String {
        guard encrypted else { return bonded ? "unencrypted (bonded)" : "unencrypted" }
        var s = "encrypted, \(keySize)-byte key"
        if authenticated { s += ", authenticated" }
        if secureConnections { s += ", LE Secure Connections" }
        if bonded { s += ", bonded" }
        return s
    }
}
