import BluetoothWire

/// What ``HCIHost/connect(to:timeout:parameters:)`` asks the controller for.
/// Units as in HCI_LE_Create_Connection (Core Vol 4 Part E §7.8.12).
public struct LEConnectParameters: Sendable, Equatable {
    /// LE_Scan_Interval / LE_Scan_Window while initiating, units of 0.625 ms.
    public var scanInterval: UInt16
    /// LE_Scan_Window while initiating, units of 0.625 ms.
    public var scanWindow: UInt16
    /// Connection_Interval_Min/Max, units of 1.25 ms (6...3200).
    public var intervalMin: UInt16
    /// Connection_Interval_Max, units of 1.25 ms.
    public var intervalMax: UInt16
    /// Max_Latency in connection events (0...499).
    public var maxLatency: UInt16
    /// Supervision_Timeout, units of 10 ms (10...3200).
    public var supervisionTimeout: UInt16
    /// The address type we connect from.
    public var ownAddressType: LEOwnAddressType

    /// Scan 60 ms every 60 ms; interval 30...50 ms, no latency, 4 s supervision timeout.
    public init(scanInterval: UInt16 = 0x0060, scanWindow: UInt16 = 0x0060, intervalMin: UInt16 = 24,
                intervalMax: UInt16 = 40, maxLatency: UInt16 = 0, supervisionTimeout: UInt16 = 400,
                ownAddressType: LEOwnAddressType = .public) {
        self.scanInterval = scanInterval
        self.scanWindow = scanWindow
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.maxLatency = maxLatency
        self.supervisionTimeout = supervisionTimeout
        self.ownAddressType = ownAddressType
    }

    /// The defaults above.
    public static let `default` = LEConnectParameters()

    var range: LEConnectionParameterRange {
        LEConnectionParameterRange(intervalMin: intervalMin, intervalMax: intervalMax, maxLatency: maxLatency,
                                   supervisionTimeout: supervisionTimeout)
    }
}

/// The state of one LE link as the host knows it.
public struct LELinkState: Sendable, Equatable, CustomStringConvertible {
    /// Connection_Handle.
    public var handle: UInt16
    /// Our role on the link.
    public var role: LEConnectionRole
    /// The peer's address as the link layer reported it.
    public var peer: LEAddress
    /// Connection_Interval, units of 1.25 ms.
    public var interval: UInt16
    /// Peripheral_Latency in connection events.
    public var latency: UInt16
    /// Supervision_Timeout, units of 10 ms.
    public var supervisionTimeout: UInt16
    /// Link layer payload sizes/times from HCI_LE_Data_Length_Change (27 / 328 µs until then).
    public var maxTxOctets: UInt16 = 27
    /// The longest link layer payload the peer may send (octets).
    public var maxRxOctets: UInt16 = 27
    /// The longest transmission time we may use (µs).
    public var maxTxTime: UInt16 = 328
    /// The longest transmission time the peer may use (µs).
    public var maxRxTime: UInt16 = 328
    /// The peer's LE features (LE Read Remote Features), once read.
    public var remoteFeatures: LEFeatures?
    /// The PHY we transmit on (HCI_LE_PHY_Update_Complete; LE 1M until one comes).
    public var txPHY: LEPHY = .le1M
    /// The PHY we receive on.
    public var rxPHY: LEPHY = .le1M

    /// A link as LE Connection Complete describes it.
    public init(handle: UInt16, role: LEConnectionRole, peer: LEAddress, interval: UInt16, latency: UInt16,
                supervisionTimeout: UInt16) {
        self.handle = handle
        self.role = role
        self.peer = peer
        self.interval = interval
        self.latency = latency
        self.supervisionTimeout = supervisionTimeout
    }

    /// The connection interval in milliseconds as text, exact: "50", "7.5", "11.25".
    public var intervalMilliseconds: String {
        let hundredths = Int(interval) * 125  // 1.25 ms units in 1/100 ms
        let whole = hundredths / 100, frac = hundredths % 100
        return frac == 0 ? "\(whole)" : frac % 10 == 0 ? "\(whole).\(frac / 10)" : "\(whole).\(frac < 10 ? "0" : "")\(frac)"
    }

    /// "handle 0x0040 central, interval 50 ms, latency 0, timeout 4000 ms, 1M/1M, 27/27 octets"
    public var description: String {
        "handle 0x\(hex(handle, 4)) \(role), interval \(intervalMilliseconds) ms, latency \(latency), "
            + "timeout \(Int(supervisionTimeout) * 10) ms, \(txPHY)/\(rxPHY), \(maxTxOctets)/\(maxRxOctets) octets"
    }
}

/// Identifies one connect request.
public struct ConnectRequestID: Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { "connect #\(rawValue)" }
}

/// Why the connection manager sent a command; its answer comes back through
/// ``LEConnectionManager/commandAnswered(_:_:now:)``.
public enum ConnectionCommandPurpose: Hashable, Sendable {
    case createConnection
    case createConnectionCancel
    case disconnect(handle: UInt16)
    case connectionUpdate(handle: UInt16)
    case remoteParameterReply(handle: UInt16)
    /// LE Read Remote Features, sent once a link we created is up.
    case readRemoteFeatures(handle: UInt16)
    /// LE Set Data Length for a link.
    case setDataLength(handle: UInt16)
    /// LE Set PHY for a link (LE PHY Update Complete follows).
    case setPHY(handle: UInt16)
}

/// What ``LEConnectionManager`` asks its driver to do.
public enum ConnectionAction: Sendable {
    /// Send this HCI command and report its answer with the purpose.
    case sendCommand(any HCICommandEncodable, ConnectionCommandPurpose)
    /// Send this complete L2CAP basic frame (header included) on the link.
    case sendL2CAP(handle: UInt16, frame: [UInt8])
    /// A connect request succeeded.
    case connected(ConnectRequestID, LELinkState)
    /// A connect request failed (timeout, controller refusal, cancelled).
    case connectFailed(ConnectRequestID, HostError)
    /// A link nobody asked for came up (we are peripheral) — the driver may track it.
    case linkOpened(LELinkState)
    /// Parameters, data length or PHY of a link changed.
    case linkUpdated(LELinkState)
    /// The link is gone; every pending operation on it must fail with `reason`.
    case linkClosed(LELinkState, reason: HCIErrorCode)
    /// HCI_Disconnect was refused; the link stays up.
    case disconnectFailed(handle: UInt16, HostError)
    /// A Connection Update procedure ended: LE Connection Update Complete (the parameters
    /// now in force, or the controller's status as an error), or LE Connection Update
    /// refused by the controller. Ends ``LEConnection/updateParameters(_:)`` calls.
    case parametersUpdated(handle: UInt16, Result<LELinkState, HostError>)
    /// Our PHY request ended: LE PHY Update Complete (the PHYs now in use, also when nothing
    /// changed), its status as an error, a refused LE Set PHY, or no answer in time. Ends
    /// ``LEConnection/setPHY(tx:rx:options:)`` calls.
    case phyUpdated(handle: UInt16, Result<LELinkState, HostError>)
    /// LE Set Data Length was answered (the link's Data Length Change comes as
    /// `.linkUpdated` when the sizes change). Ends ``LEConnection/setDataLength(txOctets:txTime:)``.
    case dataLengthSet(handle: UInt16, Result<LELinkState, HostError>)
}

extension ConnectionAction: CustomStringConvertible {
    public var description: String {
        switch self {
        case .sendCommand(let c, let p): "sendCommand(\(type(of: c).opcode.name ?? "?"), \(p))"
        case .sendL2CAP(let h, let f): "sendL2CAP(0x\(hex(h, 4)), \(f.count) bytes)"
        case .connected(let id, let s): "connected(\(id), \(s))"
        case .connectFailed(let id, let e): "connectFailed(\(id), \(e))"
        case .linkOpened(let s): "linkOpened(\(s))"
        case .linkUpdated(let s): "linkUpdated(\(s))"
        case .linkClosed(let s, let r): "linkClosed(0x\(hex(s.handle, 4)), \(r))"
        case .disconnectFailed(let h, let e): "disconnectFailed(0x\(hex(h, 4)), \(e))"
        case .parametersUpdated(let h, let r): "parametersUpdated(0x\(hex(h, 4)), \(r))"
        case .phyUpdated(let h, let r): "phyUpdated(0x\(hex(h, 4)), \(r))"
        case .dataLengthSet(let h, let r): "dataLengthSet(0x\(hex(h, 4)), \(r))"
        }
    }
}

/// Counters of ``LEConnectionManager``.
public struct ConnectionStatistics: Sendable, Equatable {
    /// Signaling commands that could not be parsed.
    public var malformedSignaling = 0
    /// Command Reject (not understood) sent for unknown codes.
    public var rejectedSignaling = 0
    /// Signaling responses that matched no request of ours.
    public var unmatchedSignalingResponses = 0
    /// Peer connection parameter requests (L2CAP or LL) accepted / rejected.
    public var parameterRequestsAccepted = 0
    /// Peer connection parameter requests rejected.
    public var parameterRequestsRejected = 0
    /// SMP PDUs ignored (no pairing layer yet) and Pairing Requests refused.
    public var smpIgnored = 0
    /// Pairing Requests refused (pairing disabled).
    public var pairingRequestsRefused = 0
    /// Connections that completed with no request waiting (disconnected again).
    public var orphanConnections = 0
    /// Events for a handle we do not know.
    public var unknownHandleEvents = 0
    /// LE Connection Complete events with a Connection_Handle above 0x0EFF (refused).
    public var invalidConnectionHandles = 0
    /// All zero.
    public init() {}
}
