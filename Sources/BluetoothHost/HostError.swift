import BluetoothTransport
import BluetoothWire

/// Why a host operation failed. `message` is written for the user: what went wrong and,
/// where we know, how to fix it.
public struct HostError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure: what callers switch on.
    public enum Kind: Sendable, Equatable {
        /// Equality compares transport errors by their kind only.
        public static func == (a: Kind, b: Kind) -> Bool {
            switch (a, b) {
            case (.commandTimeout, .commandTimeout), (.transportClosed, .transportClosed),
                 (.notSupported, .notSupported), (.cancelled, .cancelled), (.connectTimeout, .connectTimeout),
                 (.sendQueueFull, .sendQueueFull), (.invalidParameters, .invalidParameters), (.busy, .busy), (.notFound, .notFound), (.bondStore, .bondStore): true
            case (.commandFailed(let x), .commandFailed(let y)), (.connectFailed(let x), .connectFailed(let y)): x == y
            case (.disconnected(let x), .disconnected(let y)): x == y
            case (.pairingFailed(let x), .pairingFailed(let y)): x == y
            case (.l2capRefused(let x), .l2capRefused(let y)): x == y
            case (.transport(let x), .transport(let y)): x.kind == y.kind
            case (.malformedPacket(let x), .malformedPacket(let y)): x == y
            default: false
            }
        }

        /// The controller did not answer a command within its timeout.
        case commandTimeout
        /// The controller answered a command with a non-success status.
        case commandFailed(HCIErrorCode)
        /// The transport reached end of stream (the controller or peer went away).
        case transportClosed
        /// The transport failed (I/O error, lost framing, ...).
        case transport(TransportError)
        /// The controller sent a packet we cannot parse.
        case malformedPacket(WireError)
        /// The controller lacks something the operation needs.
        case notSupported
        /// The operation was cancelled (host closed, task cancelled, scan stopped).
        case cancelled
        /// No connection within the timeout (the attempt was cancelled in the controller).
        case connectTimeout
        /// The controller reported the connection could not be made, with this status.
        case connectFailed(HCIErrorCode)
        /// The link went down (by the peer, the controller or us) with this reason; nil when
        /// the host itself closed.
        case disconnected(HCIErrorCode?)
        /// Too much data waits to be sent on the link.
        case sendQueueFull
        /// The caller's parameters are out of range or do not fit (the message says which).
        case invalidParameters
        /// Another operation of the same kind is in progress.
        case busy
        /// What was looked for (a device by name, address or service) was not seen.
        case notFound
        /// Pairing failed (Pairing Failed with this reason, by either side, or SMP's timeout),
        /// or the link could not be encrypted.
        case pairingFailed(SMPPairingFailedReason)
        /// The bond store could not be read or written (the message names the file).
        case bondStore
        /// The peer refused an L2CAP credit-based channel with this result (Core Vol 3 Part A
        /// Table 4.16: 0x0002 SPSM not supported, 0x0004 no resources, 0x0005/0x0008
        /// insufficient authentication/encryption ...).
        case l2capRefused(UInt16)
    }

    /// What kind of failure.
    public var kind: Kind
    /// What happened, for people (names the command, the peer, the reason).
    public var message: String
    /// The command the error belongs to, when there is one.
    public var opcode: HCIOpcode?

    /// An error of `kind`; `opcode` names the command it concerns, if any.
    public init(_ kind: Kind, _ message: String, opcode: HCIOpcode? = nil) {
        self.kind = kind
        self.message = message
        self.opcode = opcode
    }

    public var description: String { message }

    /// "HCI_LE_Set_PHY (0x2032)" or "opcode 0x3F01 (OGF 0x0F, OCF 0x301)".
    static func commandName(_ opcode: HCIOpcode) -> String {
        if let name = opcode.name { return "\(name) (0x\(hex(opcode.rawValue, 4)))" }
        return opcode.description
    }

    static func commandTimeout(_ opcode: HCIOpcode, after nanoseconds: UInt64) -> HostError {
        HostError(.commandTimeout,
                  "controller did not answer \(commandName(opcode)) within \(formatDuration(nanoseconds))",
                  opcode: opcode)
    }

    static func commandFailed(_ opcode: HCIOpcode, _ status: HCIErrorCode) -> HostError {
        HostError(.commandFailed(status), "\(commandName(opcode)) failed: \(status)", opcode: opcode)
    }

    static func from(_ error: TransportError, transport: String) -> HostError {
        if error.kind == .closed {
            return HostError(.transportClosed, "transport \(transport) closed: \(error.message)")
        }
        return HostError(.transport(error), "transport \(transport) failed: \(error.message)")
    }

    static func transportClosed(_ transport: String) -> HostError {
        HostError(.transportClosed, "transport \(transport) closed by the other side (controller gone or connection dropped)")
    }

    static let hostClosed = HostError(.cancelled, "the host was closed")

    /// "disconnected by the peer: Remote User Terminated Connection (0x13)"
    public static func disconnected(_ reason: HCIErrorCode?) -> HostError {
        HostError(.disconnected(reason), disconnectMessage(reason))
    }

    /// Who ended a link, said from its reason code (Core Vol 1 Part F §1.3).
    public static func disconnectMessage(_ reason: HCIErrorCode?) -> String {
        guard let reason else { return "disconnected: the host was closed" }
        switch reason {
        case .remoteUserTerminatedConnection, .remoteDeviceTerminatedConnectionDueToLowResources,
             .remoteDeviceTerminatedConnectionDueToPowerOff:
            return "disconnected by the peer: \(reason)"
        case .connectionTerminatedByLocalHost:
            return "disconnected by this host: \(reason)"
        case .connectionTimeout:
            return "link lost (supervision timeout): \(reason)"
        default:
            return "disconnected: \(reason)"
        }
    }
}

/// "5 s", "1.5 s", "250 ms", "300 µs".
func formatDuration(_ ns: UInt64) -> String {
    if ns >= 1_000_000_000 {
        if ns % 1_000_000_000 == 0 { return "\(ns / 1_000_000_000) s" }
        let tenths = (ns + 50_000_000) / 100_000_000
        return "\(tenths / 10).\(tenths % 10) s"
    }
    if ns >= 1_000_000 { return "\(ns / 1_000_000) ms" }
    return "\(ns / 1_000) µs"
}


/// The answer to a command: its Command Complete return parameters (owned copy), or the
/// status of its Command Status.
public struct CommandReturn: Sendable, Equatable {
    /// The command answered.
    public var opcode: HCIOpcode
    /// The Status return parameter (`.success` when there are no return parameters).
    public var status: HCIErrorCode
    /// All return parameters including the leading Status byte; empty for Command Status
    /// answers and for commands without return parameters.
    public var returnParameters: [UInt8]
    /// True when the controller answered with HCI_Command_Status: the command was accepted
    /// and its result comes later in its own event.
    public var isCommandStatus: Bool

    /// An answer as the command flow builds it from the event.
    public init(opcode: HCIOpcode, status: HCIErrorCode, returnParameters: [UInt8], isCommandStatus: Bool = false) {
        self.opcode = opcode
        self.status = status
        self.returnParameters = returnParameters
        self.isCommandStatus = isCommandStatus
    }

    /// Decodes the return parameters as `type` (exact length).
    public func decode<T: HCICommandReturnParameters>(as type: T.Type) throws(WireError) -> T {
        var result: Result<T, WireError>
        result = returnParameters.withUnsafeBytes { buffer in
            do throws(WireError) { return .success(try T(parsing: buffer)) } catch { return .failure(error) }
        }
        return try result.get()
    }
}

/// Identifies one submitted command so its completion can be routed back.
public struct CommandToken: Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { "#\(rawValue)" }
}

extension HostError {
    /// The peer went away (the link dropped, or it did not answer a connection attempt):
    /// reconnecting later may help. A closed host or a refusing controller is not that.
    public var isLinkLoss: Bool {
        switch kind {
        case .disconnected, .connectTimeout: true
        default: false
        }
    }
}
