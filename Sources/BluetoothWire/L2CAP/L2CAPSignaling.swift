// The LE signaling channel (Core Vol 3 Part A §4): codes, parameters and commands.

/// A signaling command code. Core Vol 3 Part A §4, Table 4.2. Open set.
public struct L2CAPSignalingCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// L2CAP Command Reject (0x01).
    public static let commandReject = L2CAPSignalingCode(rawValue: 0x01)
    /// L2CAP Connection Request (0x02).
    public static let connectionRequest = L2CAPSignalingCode(rawValue: 0x02)
    /// L2CAP Connection Response (0x03).
    public static let connectionResponse = L2CAPSignalingCode(rawValue: 0x03)
    /// L2CAP Configuration Request (0x04).
    public static let configurationRequest = L2CAPSignalingCode(rawValue: 0x04)
    /// L2CAP Configuration Response (0x05).
    public static let configurationResponse = L2CAPSignalingCode(rawValue: 0x05)
    /// L2CAP Disconnection Request (0x06).
    public static let disconnectionRequest = L2CAPSignalingCode(rawValue: 0x06)
    /// L2CAP Disconnection Response (0x07).
    public static let disconnectionResponse = L2CAPSignalingCode(rawValue: 0x07)
    /// L2CAP Echo Request (0x08).
    public static let echoRequest = L2CAPSignalingCode(rawValue: 0x08)
    /// L2CAP Echo Response (0x09).
    public static let echoResponse = L2CAPSignalingCode(rawValue: 0x09)
    /// L2CAP Information Request (0x0A).
    public static let informationRequest = L2CAPSignalingCode(rawValue: 0x0A)
    /// L2CAP Information Response (0x0B).
    public static let informationResponse = L2CAPSignalingCode(rawValue: 0x0B)
    /// L2CAP Connection Parameter Update Request (0x12).
    public static let connectionParameterUpdateRequest = L2CAPSignalingCode(rawValue: 0x12)
    /// L2CAP Connection Parameter Update Response (0x13).
    public static let connectionParameterUpdateResponse = L2CAPSignalingCode(rawValue: 0x13)
    /// L2CAP LE Credit Based Connection Request (0x14).
    public static let leCreditBasedConnectionRequest = L2CAPSignalingCode(rawValue: 0x14)
    /// L2CAP LE Credit Based Connection Response (0x15).
    public static let leCreditBasedConnectionResponse = L2CAPSignalingCode(rawValue: 0x15)
    /// L2CAP Flow Control Credit Indication (0x16).
    public static let flowControlCreditIndication = L2CAPSignalingCode(rawValue: 0x16)
    /// L2CAP Credit Based Connection Request (0x17).
    public static let creditBasedConnectionRequest = L2CAPSignalingCode(rawValue: 0x17)
    /// L2CAP Credit Based Connection Response (0x18).
    public static let creditBasedConnectionResponse = L2CAPSignalingCode(rawValue: 0x18)
    /// L2CAP Credit Based Reconfigure Request (0x19).
    public static let creditBasedReconfigureRequest = L2CAPSignalingCode(rawValue: 0x19)
    /// L2CAP Credit Based Reconfigure Response (0x1A).
    public static let creditBasedReconfigureResponse = L2CAPSignalingCode(rawValue: 0x1A)

    /// True for codes whose packets are requests (identifier 0 is invalid in those).
    @inlinable public var isRequest: Bool {
        switch rawValue {
        case 0x02, 0x04, 0x06, 0x08, 0x0A, 0x12, 0x14, 0x17, 0x19: true
        default: false
        }
    }

    /// The name in the specification (nil: not assigned).
    public var name: String? {
        switch rawValue {
        case 0x01: "L2CAP_COMMAND_REJECT_RSP"
        case 0x02: "L2CAP_CONNECTION_REQ"
        case 0x03: "L2CAP_CONNECTION_RSP"
        case 0x04: "L2CAP_CONFIGURATION_REQ"
        case 0x05: "L2CAP_CONFIGURATION_RSP"
        case 0x06: "L2CAP_DISCONNECTION_REQ"
        case 0x07: "L2CAP_DISCONNECTION_RSP"
        case 0x08: "L2CAP_ECHO_REQ"
        case 0x09: "L2CAP_ECHO_RSP"
        case 0x0A: "L2CAP_INFORMATION_REQ"
        case 0x0B: "L2CAP_INFORMATION_RSP"
        case 0x12: "L2CAP_CONNECTION_PARAMETER_UPDATE_REQ"
        case 0x13: "L2CAP_CONNECTION_PARAMETER_UPDATE_RSP"
        case 0x14: "L2CAP_LE_CREDIT_BASED_CONNECTION_REQ"
        case 0x15: "L2CAP_LE_CREDIT_BASED_CONNECTION_RSP"
        case 0x16: "L2CAP_FLOW_CONTROL_CREDIT_IND"
        case 0x17: "L2CAP_CREDIT_BASED_CONNECTION_REQ"
        case 0x18: "L2CAP_CREDIT_BASED_CONNECTION_RSP"
        case 0x19: "L2CAP_CREDIT_BASED_RECONFIGURE_REQ"
        case 0x1A: "L2CAP_CREDIT_BASED_RECONFIGURE_RSP"
        default: nil
        }
    }

    public var description: String { name ?? "code 0x\(Hex.pad(rawValue, 2))" }
}

/// The Reason of an L2CAP_COMMAND_REJECT_RSP with its reason-specific data.
/// Core Vol 3 Part A §4.1.
public enum L2CAPCommandRejectReason: Hashable, Sendable {
    /// 0x0000 Command not understood.
    case commandNotUnderstood
    /// 0x0001 Signaling MTU exceeded; carries the sender's actual signaling MTU.
    case signalingMTUExceeded(actualMTU: UInt16)
    /// 0x0002 Invalid CID in request; carries the local and remote CIDs (from the rejecter's view).
    case invalidCID(localCID: L2CAPChannelID, remoteCID: L2CAPChannelID)
    /// A reserved reason code; any reason data that followed is not kept.
    case reserved(UInt16)

    @inlinable public var rawValue: UInt16 {
        switch self {
        case .commandNotUnderstood: 0x0000
        case .signalingMTUExceeded: 0x0001
        case .invalidCID: 0x0002
        case .reserved(let v): v
        }
    }

    /// The name from the specification.
    public var name: String {
        switch self {
        case .commandNotUnderstood: "Command not understood"
        case .signalingMTUExceeded: "Signaling MTU exceeded"
        case .invalidCID: "Invalid CID in request"
        case .reserved: "Reserved"
        }
    }

    @inlinable var dataLength: Int {
        switch self {
        case .commandNotUnderstood, .reserved: 2
        case .signalingMTUExceeded: 4
        case .invalidCID: 6
        }
    }
}

/// Connection parameters of L2CAP_CONNECTION_PARAMETER_UPDATE_REQ. Core Vol 3 Part A §4.20.
/// Intervals in units of 1.25 ms, timeout in units of 10 ms. Values are not range-checked
/// when parsing (the receiver answers with a rejection instead); see `isWithinSpecRanges`.
public struct L2CAPConnectionParameters: Hashable, Sendable {
    /// The smallest connection interval, units of 1.25 ms.
    public var intervalMin: UInt16
    /// The largest connection interval, units of 1.25 ms.
    public var intervalMax: UInt16
    /// Peripheral latency, in connection events.
    public var peripheralLatency: UInt16
    /// Supervision timeout, units of 10 ms.
    public var timeoutMultiplier: UInt16

    /// A value with these fields.
    @inlinable
    public init(intervalMin: UInt16, intervalMax: UInt16, peripheralLatency: UInt16, timeoutMultiplier: UInt16) {
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.peripheralLatency = peripheralLatency
        self.timeoutMultiplier = timeoutMultiplier
    }

    /// Interval 6...3200 with min ≤ max, latency ≤ 499, timeout 10...3200 (Core Vol 3 Part A §4.20).
    public var isWithinSpecRanges: Bool {
        (6 ... 3200).contains(intervalMin) && (6 ... 3200).contains(intervalMax) && intervalMin <= intervalMax
            && peripheralLatency <= 499 && (10 ... 3200).contains(timeoutMultiplier)
    }
}

/// Result of L2CAP_CONNECTION_PARAMETER_UPDATE_RSP. Core Vol 3 Part A §4.21. Open set.
public struct L2CAPConnectionParameterUpdateResult: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt16
    @inlinable public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// Accepted (0x0000).
    public static let accepted = L2CAPConnectionParameterUpdateResult(rawValue: 0x0000)
    /// Rejected (0x0001).
    public static let rejected = L2CAPConnectionParameterUpdateResult(rawValue: 0x0001)
    /// The name in the specification (nil: not assigned).
    public var name: String? {
        switch rawValue {
        case 0: "Connection Parameters accepted"
        case 1: "Connection Parameters rejected"
        default: nil
        }
    }
}

/// Result of the LE (0x15) and enhanced (0x18) credit based connection responses.
/// Core Vol 3 Part A §4.23 / §4.26. Open set.
public struct L2CAPCreditBasedConnectionResult: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt16
    @inlinable public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// Successful (0x0000).
    public static let successful = Self(rawValue: 0x0000)
    /// SPSM Not Supported (0x0002).
    public static let spsmNotSupported = Self(rawValue: 0x0002)
    /// No Resources Available (0x0004).
    public static let noResourcesAvailable = Self(rawValue: 0x0004)
    /// Insufficient Authentication (0x0005).
    public static let insufficientAuthentication = Self(rawValue: 0x0005)
    /// Insufficient Authorization (0x0006).
    public static let insufficientAuthorization = Self(rawValue: 0x0006)
    /// Encryption Key Size Too Short (0x0007).
    public static let encryptionKeySizeTooShort = Self(rawValue: 0x0007)
    /// Insufficient Encryption (0x0008).
    public static let insufficientEncryption = Self(rawValue: 0x0008)
    /// Invalid Source CID (0x0009).
    public static let invalidSourceCID = Self(rawValue: 0x0009)
    /// Source CID Already Allocated (0x000A).
    public static let sourceCIDAlreadyAllocated = Self(rawValue: 0x000A)
    /// Unacceptable Parameters (0x000B).
    public static let unacceptableParameters = Self(rawValue: 0x000B)
    /// Invalid Parameters (0x000C).
    public static let invalidParameters = Self(rawValue: 0x000C)
    /// Pending No Further Information (0x000D).
    public static let pendingNoFurtherInformation = Self(rawValue: 0x000D)
    /// Pending Authentication (0x000E).
    public static let pendingAuthentication = Self(rawValue: 0x000E)
    /// Pending Authorization (0x000F).
    public static let pendingAuthorization = Self(rawValue: 0x000F)
    /// The name in the specification (nil: not assigned).
    public var name: String? {
        switch rawValue {
        case 0x0000: "Connection successful"
        case 0x0002: "Connection refused - SPSM not supported"
        case 0x0004: "Connection refused - no resources available"
        case 0x0005: "Connection refused - insufficient authentication"
        case 0x0006: "Connection refused - insufficient authorization"
        case 0x0007: "Connection refused - encryption key size too short"
        case 0x0008: "Connection refused - insufficient encryption"
        case 0x0009: "Connection refused - invalid Source CID"
        case 0x000A: "Connection refused - Source CID already allocated"
        case 0x000B: "Connection refused - unacceptable parameters"
        case 0x000C: "Connection refused - invalid parameters"
        case 0x000D: "Connection pending - no further information available"
        case 0x000E: "Connection pending - authentication pending"
        case 0x000F: "Connection pending - authorization pending"
        default: nil
        }
    }
}

/// Result of L2CAP_CREDIT_BASED_RECONFIGURE_RSP. Core Vol 3 Part A §4.28. Open set.
public struct L2CAPCreditBasedReconfigureResult: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt16
    @inlinable public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// Successful (0x0000).
    public static let successful = Self(rawValue: 0x0000)
    /// MTU Reduction Not Allowed (0x0001).
    public static let mtuReductionNotAllowed = Self(rawValue: 0x0001)
    /// MPS Reduction Not Allowed (0x0002).
    public static let mpsReductionNotAllowed = Self(rawValue: 0x0002)
    /// Invalid Destination CID (0x0003).
    public static let invalidDestinationCID = Self(rawValue: 0x0003)
    /// Unacceptable Parameters (0x0004).
    public static let unacceptableParameters = Self(rawValue: 0x0004)
    /// The name in the specification (nil: not assigned).
    public var name: String? {
        switch rawValue {
        case 0x0000: "Reconfiguration successful"
        case 0x0001: "Reconfiguration failed - reduction in size of MTU not allowed"
        case 0x0002: "Reconfiguration failed - reduction in size of MPS not allowed for more than one channel at a time"
        case 0x0003: "Reconfiguration failed - one or more Destination CIDs invalid"
        case 0x0004: "Reconfiguration failed - other unacceptable parameters"
        default: nil
        }
    }
}

/// L2CAP_LE_CREDIT_BASED_CONNECTION_REQ parameters. Core Vol 3 Part A §4.22.
public struct L2CAPLECreditBasedConnectionRequest: Hashable, Sendable {
    /// The Simplified Protocol/Service Multiplexer.
    public var spsm: UInt16
    /// The channel the requester receives on.
    public var sourceCID: L2CAPChannelID
    /// MTU: the largest SDU the sender of this PDU takes.
    public var mtu: UInt16
    /// MPS: the largest K-frame payload the sender of this PDU takes.
    public var mps: UInt16
    /// Credits: K-frames the receiver of this PDU may send at once.
    public var initialCredits: UInt16
    /// A value with these fields.
    @inlinable
    public init(spsm: UInt16, sourceCID: L2CAPChannelID, mtu: UInt16, mps: UInt16, initialCredits: UInt16) {
        self.spsm = spsm
        self.sourceCID = sourceCID
        self.mtu = mtu
        self.mps = mps
        self.initialCredits = initialCredits
    }
}

/// L2CAP_LE_CREDIT_BASED_CONNECTION_RSP parameters. Core Vol 3 Part A §4.23.
public struct L2CAPLECreditBasedConnectionResponse: Hashable, Sendable {
    /// The channel the responder receives on (0 when refused).
    public var destinationCID: L2CAPChannelID
    /// MTU: the largest SDU the sender of this PDU takes.
    public var mtu: UInt16
    /// MPS: the largest K-frame payload the sender of this PDU takes.
    public var mps: UInt16
    /// Credits: K-frames the receiver of this PDU may send at once.
    public var initialCredits: UInt16
    /// The result: success, or why the request was refused.
    public var result: L2CAPCreditBasedConnectionResult
    /// A value with these fields.
    @inlinable
    public init(destinationCID: L2CAPChannelID, mtu: UInt16, mps: UInt16, initialCredits: UInt16,
                result: L2CAPCreditBasedConnectionResult) {
        self.destinationCID = destinationCID
        self.mtu = mtu
        self.mps = mps
        self.initialCredits = initialCredits
        self.result = result
    }
}

/// Up to five CIDs stored inline (the enhanced credit based commands carry 1...5).
/// Core Vol 3 Part A §4.25-4.27.
public struct L2CAPChannelIDList: RandomAccessCollection, Hashable, Sendable, ExpressibleByArrayLiteral {
    /// At most five channels per request.
    public static let capacity = 5
    @usableFromInline var storage: (UInt16, UInt16, UInt16, UInt16, UInt16) = (0, 0, 0, 0, 0)
    @usableFromInline var _count: UInt8 = 0

    /// An empty list.
    @inlinable public init() {}

    /// Nil when more than five CIDs are given.
    public init?(_ cids: some Sequence<L2CAPChannelID>) {
        for c in cids { guard append(c) else { return nil } }
    }

    /// A list of the given channels (at most five kept).
    public init(arrayLiteral elements: L2CAPChannelID...) {
        for c in elements.prefix(Self.capacity) { _ = append(c) }
    }

    /// 0.
    @inlinable public var startIndex: Int { 0 }
    /// The number of channels.
    @inlinable public var endIndex: Int { Int(_count) }

    /// Channel `i`.
    @inlinable
    public subscript(i: Int) -> L2CAPChannelID {
        precondition(i >= 0 && i < Int(_count), "index out of range")
        switch i {
        case 0: return L2CAPChannelID(rawValue: storage.0)
        case 1: return L2CAPChannelID(rawValue: storage.1)
        case 2: return L2CAPChannelID(rawValue: storage.2)
        case 3: return L2CAPChannelID(rawValue: storage.3)
        default: return L2CAPChannelID(rawValue: storage.4)
        }
    }

    /// Appends a CID; false when the list already holds five.
    @inlinable @discardableResult
    public mutating func append(_ cid: L2CAPChannelID) -> Bool {
        switch _count {
        case 0: storage.0 = cid.rawValue
        case 1: storage.1 = cid.rawValue
        case 2: storage.2 = cid.rawValue
        case 3: storage.3 = cid.rawValue
        case 4: storage.4 = cid.rawValue
        default: return false
        }
        _count &+= 1
        return true
    }

    public static func == (a: Self, b: Self) -> Bool { a.elementsEqual(b) }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(_count)
        for c in self { hasher.combine(c) }
    }

    /// Reads the rest of `r` as a CID list of `allowed` entries.
    @inlinable
    static func read(_ r: inout ByteReader, allowed: ClosedRange<Int>) throws(WireError) -> L2CAPChannelIDList {
        guard r.remaining & 1 == 0 else { throw r.error(.invalidLength, "CID list length is odd") }
        let n = r.remaining >> 1
        guard allowed.contains(n) else { throw r.error(.invalidLength, "CID list must hold 1 to 5 CIDs") }
        var list = L2CAPChannelIDList()
        for _ in 0 ..< n { list.append(L2CAPChannelID(rawValue: try r.u16("CID"))) }
        return list
    }

    @inlinable
    func write(_ w: inout ByteWriter) throws(WireError) {
        for c in self { try w.u16(c.rawValue) }
    }
}

/// L2CAP_CREDIT_BASED_CONNECTION_REQ parameters (enhanced credit based flow control).
/// Core Vol 3 Part A §4.25.
public struct L2CAPCreditBasedConnectionRequest: Hashable, Sendable {
    /// The Simplified Protocol/Service Multiplexer.
    public var spsm: UInt16
    /// MTU: the largest SDU the sender of this PDU takes.
    public var mtu: UInt16
    /// MPS: the largest K-frame payload the sender of this PDU takes.
    public var mps: UInt16
    /// Credits: K-frames the receiver of this PDU may send at once.
    public var initialCredits: UInt16
    /// The channels the requester receives on.
    public var sourceCIDs: L2CAPChannelIDList
    /// A value with these fields.
    @inlinable
    public init(spsm: UInt16, mtu: UInt16, mps: UInt16, initialCredits: UInt16, sourceCIDs: L2CAPChannelIDList) {
        self.spsm = spsm
        self.mtu = mtu
        self.mps = mps
        self.initialCredits = initialCredits
        self.sourceCIDs = sourceCIDs
    }
}

/// L2CAP_CREDIT_BASED_CONNECTION_RSP parameters. Core Vol 3 Part A §4.26.
public struct L2CAPCreditBasedConnectionResponse: Hashable, Sendable {
    /// MTU: the largest SDU the sender of this PDU takes.
    public var mtu: UInt16
    /// MPS: the largest K-frame payload the sender of this PDU takes.
    public var mps: UInt16
    /// Credits: K-frames the receiver of this PDU may send at once.
    public var initialCredits: UInt16
    /// The result: success, or why the request was refused.
    public var result: L2CAPCreditBasedConnectionResult
    /// One entry per requested channel; 0x0000 for a refused one. May be empty.
    public var destinationCIDs: L2CAPChannelIDList
    /// A value with these fields.
    @inlinable
    public init(mtu: UInt16, mps: UInt16, initialCredits: UInt16, result: L2CAPCreditBasedConnectionResult,
                destinationCIDs: L2CAPChannelIDList) {
        self.mtu = mtu
        self.mps = mps
        self.initialCredits = initialCredits
        self.result = result
        self.destinationCIDs = destinationCIDs
    }
}

/// L2CAP_CREDIT_BASED_RECONFIGURE_REQ parameters. Core Vol 3 Part A §4.27.
public struct L2CAPCreditBasedReconfigureRequest: Hashable, Sendable {
    /// MTU: the largest SDU the sender of this PDU takes.
    public var mtu: UInt16
    /// MPS: the largest K-frame payload the sender of this PDU takes.
    public var mps: UInt16
    /// The channels the responder receives on.
    public var destinationCIDs: L2CAPChannelIDList
    /// A value with these fields.
    @inlinable
    public init(mtu: UInt16, mps: UInt16, destinationCIDs: L2CAPChannelIDList) {
        self.mtu = mtu
        self.mps = mps
        self.destinationCIDs = destinationCIDs
    }
}

/// One command on the LE signaling channel (CID 0x0005): Code u8, Identifier u8,
/// Length u16, Data. Core Vol 3 Part A §4. On LE a C-frame carries exactly one command,
/// so the Length must match the bytes present.
///
/// `.unknown` holds a view into the parsed buffer, valid while the caller's buffer is alive;
/// every other case owns its values.
public enum L2CAPSignalingCommand {
    case commandReject(identifier: UInt8, reason: L2CAPCommandRejectReason)
    case disconnectionRequest(identifier: UInt8, destinationCID: L2CAPChannelID, sourceCID: L2CAPChannelID)
    case disconnectionResponse(identifier: UInt8, destinationCID: L2CAPChannelID, sourceCID: L2CAPChannelID)
    case connectionParameterUpdateRequest(identifier: UInt8, L2CAPConnectionParameters)
    case connectionParameterUpdateResponse(identifier: UInt8, result: L2CAPConnectionParameterUpdateResult)
    case leCreditBasedConnectionRequest(identifier: UInt8, L2CAPLECreditBasedConnectionRequest)
    case leCreditBasedConnectionResponse(identifier: UInt8, L2CAPLECreditBasedConnectionResponse)
    case flowControlCreditIndication(identifier: UInt8, cid: L2CAPChannelID, credits: UInt16)
    case creditBasedConnectionRequest(identifier: UInt8, L2CAPCreditBasedConnectionRequest)
    case creditBasedConnectionResponse(identifier: UInt8, L2CAPCreditBasedConnectionResponse)
    case creditBasedReconfigureRequest(identifier: UInt8, L2CAPCreditBasedReconfigureRequest)
    case creditBasedReconfigureResponse(identifier: UInt8, result: L2CAPCreditBasedReconfigureResult)
    /// Any other code (including BR/EDR-only ones): the Data field as a view.
    case unknown(code: L2CAPSignalingCode, identifier: UInt8, data: UnsafeRawBufferPointer)

    /// Size of the Code + Identifier + Length header.
    public static let headerLength = 4

    /// Parses one signaling command that fills `bytes` exactly.
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        let code = L2CAPSignalingCode(rawValue: try r.u8("signaling code"))
        let identifier = try r.u8("signaling identifier")
        let length = Int(try r.u16("signaling length"))
        guard length <= r.remaining else {
            throw WireError(.invalidLength, at: 2, "signaling length exceeds the bytes present")
        }
        guard length == r.remaining else {
            throw WireError(.trailingBytes, at: 4 &+ length, "bytes after the signaling command")
        }
        if identifier == 0 && code.isRequest {
            throw WireError(.invalidValue, at: 1, "identifier 0x00 is invalid in a request")
        }
        var d = try r.subReader(length, "signaling data")
        switch code {
        case .commandReject:
            let reason = try d.u16("reason")
            switch reason {
            case 0x0000: self = .commandReject(identifier: identifier, reason: .commandNotUnderstood)
            case 0x0001:
                self = .commandReject(identifier: identifier, reason: .signalingMTUExceeded(actualMTU: try d.u16("actual MTU")))
            case 0x0002:
                let local = try d.u16("local CID"), remote = try d.u16("remote CID")
                self = .commandReject(identifier: identifier, reason: .invalidCID(
                    localCID: L2CAPChannelID(rawValue: local), remoteCID: L2CAPChannelID(rawValue: remote)))
            default:
                // Reserved reason: its data (if any) has no defined layout.
                _ = d.rest()
                self = .commandReject(identifier: identifier, reason: .reserved(reason))
            }
        case .disconnectionRequest, .disconnectionResponse:
            let dcid = L2CAPChannelID(rawValue: try d.u16("destination CID"))
            let scid = L2CAPChannelID(rawValue: try d.u16("source CID"))
            self = code == .disconnectionRequest
                ? .disconnectionRequest(identifier: identifier, destinationCID: dcid, sourceCID: scid)
                : .disconnectionResponse(identifier: identifier, destinationCID: dcid, sourceCID: scid)
        case .connectionParameterUpdateRequest:
            let p = L2CAPConnectionParameters(
                intervalMin: try d.u16("interval min"), intervalMax: try d.u16("interval max"),
                peripheralLatency: try d.u16("peripheral latency"), timeoutMultiplier: try d.u16("timeout multiplier"))
            self = .connectionParameterUpdateRequest(identifier: identifier, p)
        case .connectionParameterUpdateResponse:
            self = .connectionParameterUpdateResponse(
                identifier: identifier, result: L2CAPConnectionParameterUpdateResult(rawValue: try d.u16("result")))
        case .leCreditBasedConnectionRequest:
            let p = L2CAPLECreditBasedConnectionRequest(
                spsm: try d.u16("SPSM"), sourceCID: L2CAPChannelID(rawValue: try d.u16("source CID")),
                mtu: try d.u16("MTU"), mps: try d.u16("MPS"), initialCredits: try d.u16("initial credits"))
            self = .leCreditBasedConnectionRequest(identifier: identifier, p)
        case .leCreditBasedConnectionResponse:
            let p = L2CAPLECreditBasedConnectionResponse(
                destinationCID: L2CAPChannelID(rawValue: try d.u16("destination CID")),
                mtu: try d.u16("MTU"), mps: try d.u16("MPS"), initialCredits: try d.u16("initial credits"),
                result: L2CAPCreditBasedConnectionResult(rawValue: try d.u16("result")))
            self = .leCreditBasedConnectionResponse(identifier: identifier, p)
        case .flowControlCreditIndication:
            let cid = L2CAPChannelID(rawValue: try d.u16("CID"))
            self = .flowControlCreditIndication(identifier: identifier, cid: cid, credits: try d.u16("credits"))
        case .creditBasedConnectionRequest:
            let spsm = try d.u16("SPSM"), mtu = try d.u16("MTU"), mps = try d.u16("MPS")
            let credits = try d.u16("initial credits")
            let list = try L2CAPChannelIDList.read(&d, allowed: 1 ... 5)
            self = .creditBasedConnectionRequest(identifier: identifier, L2CAPCreditBasedConnectionRequest(
                spsm: spsm, mtu: mtu, mps: mps, initialCredits: credits, sourceCIDs: list))
        case .creditBasedConnectionResponse:
            let mtu = try d.u16("MTU"), mps = try d.u16("MPS"), credits = try d.u16("initial credits")
            let result = L2CAPCreditBasedConnectionResult(rawValue: try d.u16("result"))
            let list = try L2CAPChannelIDList.read(&d, allowed: 0 ... 5)
            self = .creditBasedConnectionResponse(identifier: identifier, L2CAPCreditBasedConnectionResponse(
                mtu: mtu, mps: mps, initialCredits: credits, result: result, destinationCIDs: list))
        case .creditBasedReconfigureRequest:
            let mtu = try d.u16("MTU"), mps = try d.u16("MPS")
            let list = try L2CAPChannelIDList.read(&d, allowed: 1 ... 5)
            self = .creditBasedReconfigureRequest(identifier: identifier, L2CAPCreditBasedReconfigureRequest(
                mtu: mtu, mps: mps, destinationCIDs: list))
        case .creditBasedReconfigureResponse:
            self = .creditBasedReconfigureResponse(
                identifier: identifier, result: L2CAPCreditBasedReconfigureResult(rawValue: try d.u16("result")))
        default:
            self = .unknown(code: code, identifier: identifier, data: d.rest())
        }
        try d.expectEnd("signaling data longer than the command")
    }

    /// The command's code.
    public var code: L2CAPSignalingCode {
        switch self {
        case .commandReject: .commandReject
        case .disconnectionRequest: .disconnectionRequest
        case .disconnectionResponse: .disconnectionResponse
        case .connectionParameterUpdateRequest: .connectionParameterUpdateRequest
        case .connectionParameterUpdateResponse: .connectionParameterUpdateResponse
        case .leCreditBasedConnectionRequest: .leCreditBasedConnectionRequest
        case .leCreditBasedConnectionResponse: .leCreditBasedConnectionResponse
        case .flowControlCreditIndication: .flowControlCreditIndication
        case .creditBasedConnectionRequest: .creditBasedConnectionRequest
        case .creditBasedConnectionResponse: .creditBasedConnectionResponse
        case .creditBasedReconfigureRequest: .creditBasedReconfigureRequest
        case .creditBasedReconfigureResponse: .creditBasedReconfigureResponse
        case .unknown(let code, _, _): code
        }
    }

    /// The command's identifier (matches responses to requests).
    public var identifier: UInt8 {
        switch self {
        case .commandReject(let i, _), .disconnectionRequest(let i, _, _), .disconnectionResponse(let i, _, _),
             .connectionParameterUpdateRequest(let i, _), .connectionParameterUpdateResponse(let i, _),
             .leCreditBasedConnectionRequest(let i, _), .leCreditBasedConnectionResponse(let i, _),
             .flowControlCreditIndication(let i, _, _), .creditBasedConnectionRequest(let i, _),
             .creditBasedConnectionResponse(let i, _), .creditBasedReconfigureRequest(let i, _),
             .creditBasedReconfigureResponse(let i, _), .unknown(_, let i, _):
            i
        }
    }

    /// Length of the Data field.
    public var dataLength: Int {
        switch self {
        case .commandReject(_, let reason): reason.dataLength
        case .disconnectionRequest, .disconnectionResponse: 4
        case .connectionParameterUpdateRequest: 8
        case .connectionParameterUpdateResponse: 2
        case .leCreditBasedConnectionRequest: 10
        case .leCreditBasedConnectionResponse: 10
        case .flowControlCreditIndication: 4
        case .creditBasedConnectionRequest(_, let p): 8 + 2 * p.sourceCIDs.count
        case .creditBasedConnectionResponse(_, let p): 8 + 2 * p.destinationCIDs.count
        case .creditBasedReconfigureRequest(_, let p): 4 + 2 * p.destinationCIDs.count
        case .creditBasedReconfigureResponse: 2
        case .unknown(_, _, let data): data.count
        }
    }
}

extension L2CAPSignalingCommand: WireEncodable {
    public var encodedLength: Int { L2CAPSignalingCommand.headerLength + dataLength }

    public func encode(into w: inout ByteWriter) throws(WireError) {
        let length = dataLength
        guard length <= Int(UInt16.max) else {
            throw WireError(.valueOutOfRange, at: w.count, "signaling data longer than 65535 bytes")
        }
        try w.u8(code.rawValue)
        try w.u8(identifier)
        try w.u16(UInt16(length))
        switch self {
        case .commandReject(_, let reason):
            try w.u16(reason.rawValue)
            switch reason {
            case .signalingMTUExceeded(let mtu): try w.u16(mtu)
            case .invalidCID(let local, let remote):
                try w.u16(local.rawValue)
                try w.u16(remote.rawValue)
            case .commandNotUnderstood, .reserved: break
            }
        case .disconnectionRequest(_, let dcid, let scid), .disconnectionResponse(_, let dcid, let scid):
            try w.u16(dcid.rawValue)
            try w.u16(scid.rawValue)
        case .connectionParameterUpdateRequest(_, let p):
            try w.u16(p.intervalMin)
            try w.u16(p.intervalMax)
            try w.u16(p.peripheralLatency)
            try w.u16(p.timeoutMultiplier)
        case .connectionParameterUpdateResponse(_, let result):
            try w.u16(result.rawValue)
        case .leCreditBasedConnectionRequest(_, let p):
            try w.u16(p.spsm)
            try w.u16(p.sourceCID.rawValue)
            try w.u16(p.mtu)
            try w.u16(p.mps)
            try w.u16(p.initialCredits)
        case .leCreditBasedConnectionResponse(_, let p):
            try w.u16(p.destinationCID.rawValue)
            try w.u16(p.mtu)
            try w.u16(p.mps)
            try w.u16(p.initialCredits)
            try w.u16(p.result.rawValue)
        case .flowControlCreditIndication(_, let cid, let credits):
            try w.u16(cid.rawValue)
            try w.u16(credits)
        case .creditBasedConnectionRequest(_, let p):
            try w.u16(p.spsm)
            try w.u16(p.mtu)
            try w.u16(p.mps)
            try w.u16(p.initialCredits)
            try p.sourceCIDs.write(&w)
        case .creditBasedConnectionResponse(_, let p):
            try w.u16(p.mtu)
            try w.u16(p.mps)
            try w.u16(p.initialCredits)
            try w.u16(p.result.rawValue)
            try p.destinationCIDs.write(&w)
        case .creditBasedReconfigureRequest(_, let p):
            try w.u16(p.mtu)
            try w.u16(p.mps)
            try p.destinationCIDs.write(&w)
        case .creditBasedReconfigureResponse(_, let result):
            try w.u16(result.rawValue)
        case .unknown(_, _, let data):
            try w.bytes(data)
        }
    }
}

extension L2CAPSignalingCommand: FieldDescribable {
    public var fieldTitle: String { code.name ?? "L2CAP signaling command 0x\(Hex.pad(code.rawValue, 2))" }

    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        var f: [Field] = [
            Field("code", .named(UInt64(code.rawValue), code.description)),
            Field("identifier", .uint(UInt64(identifier))),
            Field("length", .uint(UInt64(dataLength))),
        ]
        func cid(_ c: L2CAPChannelID) -> FieldValue { c.field }
        func cids(_ l: L2CAPChannelIDList) -> FieldValue { .list(l.map { $0.field }) }
        func named(_ v: UInt16, _ n: String?) -> FieldValue { n.map { .named(UInt64(v), $0) } ?? .uint(UInt64(v)) }
        switch self {
        case .commandReject(_, let reason):
            f.append(Field("reason", .named(UInt64(reason.rawValue), reason.name)))
            switch reason {
            case .signalingMTUExceeded(let mtu): f.append(Field("actual_mtu", .uint(UInt64(mtu))))
            case .invalidCID(let local, let remote):
                f.append(Field("local_cid", cid(local)))
                f.append(Field("remote_cid", cid(remote)))
            case .commandNotUnderstood, .reserved: break
            }
        case .disconnectionRequest(_, let dcid, let scid), .disconnectionResponse(_, let dcid, let scid):
            f.append(Field("destination_cid", cid(dcid)))
            f.append(Field("source_cid", cid(scid)))
        case .connectionParameterUpdateRequest(_, let p):
            f.append(Field("interval_min", .uint(UInt64(p.intervalMin))))
            f.append(Field("interval_max", .uint(UInt64(p.intervalMax))))
            f.append(Field("peripheral_latency", .uint(UInt64(p.peripheralLatency))))
            f.append(Field("timeout_multiplier", .uint(UInt64(p.timeoutMultiplier))))
        case .connectionParameterUpdateResponse(_, let result):
            f.append(Field("result", named(result.rawValue, result.name)))
        case .leCreditBasedConnectionRequest(_, let p):
            f.append(Field("spsm", .uint(UInt64(p.spsm))))
            f.append(Field("source_cid", cid(p.sourceCID)))
            f.append(Field("mtu", .uint(UInt64(p.mtu))))
            f.append(Field("mps", .uint(UInt64(p.mps))))
            f.append(Field("initial_credits", .uint(UInt64(p.initialCredits))))
        case .leCreditBasedConnectionResponse(_, let p):
            f.append(Field("destination_cid", cid(p.destinationCID)))
            f.append(Field("mtu", .uint(UInt64(p.mtu))))
            f.append(Field("mps", .uint(UInt64(p.mps))))
            f.append(Field("initial_credits", .uint(UInt64(p.initialCredits))))
            f.append(Field("result", named(p.result.rawValue, p.result.name)))
        case .flowControlCreditIndication(_, let c, let credits):
            f.append(Field("cid", cid(c)))
            f.append(Field("credits", .uint(UInt64(credits))))
        case .creditBasedConnectionRequest(_, let p):
            f.append(Field("spsm", .uint(UInt64(p.spsm))))
            f.append(Field("mtu", .uint(UInt64(p.mtu))))
            f.append(Field("mps", .uint(UInt64(p.mps))))
            f.append(Field("initial_credits", .uint(UInt64(p.initialCredits))))
            f.append(Field("source_cids", cids(p.sourceCIDs)))
        case .creditBasedConnectionResponse(_, let p):
            f.append(Field("mtu", .uint(UInt64(p.mtu))))
            f.append(Field("mps", .uint(UInt64(p.mps))))
            f.append(Field("initial_credits", .uint(UInt64(p.initialCredits))))
            f.append(Field("result", named(p.result.rawValue, p.result.name)))
            f.append(Field("destination_cids", cids(p.destinationCIDs)))
        case .creditBasedReconfigureRequest(_, let p):
            f.append(Field("mtu", .uint(UInt64(p.mtu))))
            f.append(Field("mps", .uint(UInt64(p.mps))))
            f.append(Field("destination_cids", cids(p.destinationCIDs)))
        case .creditBasedReconfigureResponse(_, let result):
            f.append(Field("result", named(result.rawValue, result.name)))
        case .unknown(_, _, let data):
            f.append(Field("data", .bytes(data)))
        }
        return f
    }
}
