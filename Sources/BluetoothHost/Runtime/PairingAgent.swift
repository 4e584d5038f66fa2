import BluetoothSecurity
import BluetoothWire

/// Who answers for the user during pairing: shows passkeys, asks for the one the peer
/// shows, asks whether two numbers match. Called off the driver thread (the answers may
/// take as long as the user does, within SMP's 30 s).
public struct PairingAgent: Sendable {
    /// Show this passkey (six digits, leading zeros): the peer's user types it.
    public var displayPasskey: @Sendable (LEConnection, UInt32) -> Void
    /// The passkey the peer shows, typed by the user; nil cancels (Passkey Entry Failed).
    public var enterPasskey: @Sendable (LEConnection) async -> UInt32?
    /// Whether the peer shows this number too (Numeric Comparison).
    public var confirmNumber: @Sendable (LEConnection, UInt32) async -> Bool
    /// The peer's user pressed a key while typing the passkey we show (Keypress
    /// Notification; only with ``SMPConfiguration/keypressNotifications`` on both sides).
    public var keypress: @Sendable (LEConnection, SMPKeypressNotificationType) -> Void

    /// An agent answering with these closures.
    public init(displayPasskey: @escaping @Sendable (LEConnection, UInt32) -> Void,
                enterPasskey: @escaping @Sendable (LEConnection) async -> UInt32?,
                confirmNumber: @escaping @Sendable (LEConnection, UInt32) async -> Bool,
                keypress: @escaping @Sendable (LEConnection, SMPKeypressNotificationType) -> Void = { _, _ in }) {
        self.displayPasskey = displayPasskey
        self.enterPasskey = enterPasskey
        self.confirmNumber = confirmNumber
        self.keypress = keypress
    }

    /// No user: Just Works only (a passkey request is cancelled, a comparison refused).
    public static let justWorks = PairingAgent(displayPasskey: { _, _ in }, enterPasskey: { _ in nil },
                                               confirmNumber: { _, _ in false })

    /// Scripted answers (`--passkey N`, `--confirm yes`): the same for every pairing.
    public static func fixed(passkey: UInt32?, confirm: Bool, display: @escaping @Sendable (LEConnection, UInt32) -> Void = { _, _ in })
        -> PairingAgent {
        PairingAgent(displayPasskey: display, enterPasskey: { _ in passkey }, confirmNumber: { _, _ in confirm })
    }
}

/// What happened to a pairing, for ``HCIHost/pairingEvents`` (every pairing on the host,
/// the ones peers start included).
public enum PairingEvent: Sendable {
    case paired(LEConnection, SMPPairingResult)
    case failed(LEConnection, HostError)
    /// A pairing a peer started bonded, but the bond could not be written.
    case bondNotStored(LEConnection, HostError)
}
