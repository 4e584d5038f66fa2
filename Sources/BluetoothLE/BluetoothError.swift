import BluetoothTransport

/// What went wrong, in one type for the whole facade: a kind to switch on, a message to
/// show, and the lower layer's error when there was one.
public struct BluetoothError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure: what a program switches on.
    public enum Kind: Sendable, Hashable {
        /// No controller: no adapter, a transport that cannot be opened, or it went away.
        case unavailable
        /// Nothing matched in time (scan), or the peer lacks the service/characteristic.
        case notFound
        /// The operation took longer than allowed (connect, ATT transaction).
        case timeout
        /// The link is down (or went down during the operation).
        case disconnected
        /// The peer answered with an ATT error (Core Vol 3 Part F §3.4.1.1).
        case attError(ATTErrorCode)
        /// The peer or the controller refused (connection, L2CAP channel: the result code).
        case refused
        /// Pairing or encryption failed.
        case security
        /// The request cannot be made (too long, unsupported property, bad argument).
        case invalidRequest
        /// The peer broke the protocol.
        case protocolViolation
        /// The task was cancelled.
        case cancelled
    }

    /// What kind of failure.
    public var kind: Kind
    /// What happened, for people ("no device matching the filter within 10.0 seconds").
    public var message: String
    /// The error of the layer below (``HostError``, ``GATTError``, ``TransportError``...).
    public var underlying: (any Error & Sendable)?

    /// An error of `kind` (programs building on the facade may throw it too).
    public init(_ kind: Kind, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.kind = kind
        self.message = message
        self.underlying = underlying
    }

    /// ``message``.
    public var description: String { message }

    init(_ e: HostError) {
        let kind: Kind = switch e.kind {
        case .transportClosed, .transport, .commandTimeout: .unavailable
        case .notFound: .notFound
        case .connectTimeout: .timeout
        case .disconnected: .disconnected
        case .connectFailed, .commandFailed, .l2capRefused: .refused
        case .busy, .notSupported: .invalidRequest
        case .pairingFailed, .bondStore: .security
        case .cancelled: .cancelled
        case .malformedPacket: .protocolViolation
        case .sendQueueFull, .invalidParameters: .invalidRequest
        }
        self.init(kind, e.message, underlying: e)
    }

    init(_ e: GATTError) {
        let kind: Kind = switch e {
        case .attError(let code, _, _): .attError(code)
        case .transactionTimeout: .timeout
        case .bearerClosed: .disconnected
        case .malformedResponse, .protocolViolation: .protocolViolation
        case .invalidRequest: .invalidRequest
        }
        self.init(kind, e.description, underlying: e)
    }

    /// Any error from below, mapped to its kind.
    init(_ e: any Error) {
        switch e {
        case let b as BluetoothError: self = b
        case let h as HostError: self.init(h)
        case let g as GATTError: self.init(g)
        case is CancellationError: self.init(.cancelled, "cancelled")
        case let t as TransportError: self.init(t.kind == .invalidSpec ? .invalidRequest : .unavailable, t.message, underlying: t)
        default: self.init(.unavailable, "\(e)", underlying: e)
        }
    }
}
