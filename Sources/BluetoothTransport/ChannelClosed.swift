import BluetoothWire

/// Why a channel to a peer closed (an ATT bearer, the kernel's L2CAP socket): the HCI
/// disconnect reason when the link went down, and what happened, said for the user (e.g.
/// "disconnected by the peer: Remote User Terminated Connection (0x13)"). One type for every
/// layer that reports it.
public struct ChannelClosed: Error, Sendable, CustomStringConvertible, Equatable {
    /// The HCI disconnect reason, when the link went down.
    public var reason: HCIErrorCode?
    /// What happened, for people.
    public var message: String

    /// A closure with its HCI reason (when the link went down) and a message.
    public init(reason: HCIErrorCode? = nil, message: String) {
        self.reason = reason
        self.message = message
    }

    /// ``message``.
    public var description: String { message }
}
