import BluetoothTransport
import BluetoothWire

/// Identifies one request submitted to an ``ATTClient``.
public struct ATTRequestID: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { "#\(rawValue)" }
}

/// A client request (a PDU that the server answers). Core Vol 3 Part F §3.4.
public enum ATTRequest: Sendable, Hashable {
    /// ATT_EXCHANGE_MTU_REQ (§3.4.2.1).
    case exchangeMTU(clientRxMTU: UInt16)
    /// ATT_FIND_INFORMATION_REQ (§3.4.3.1).
    case findInformation(start: UInt16, end: UInt16)
    /// ATT_FIND_BY_TYPE_VALUE_REQ (§3.4.3.3).
    case findByTypeValue(start: UInt16, end: UInt16, type: UInt16, value: [UInt8])
    /// ATT_READ_BY_TYPE_REQ (§3.4.4.1).
    case readByType(start: UInt16, end: UInt16, type: BluetoothUUID)
    /// ATT_READ_REQ (§3.4.4.3).
    case read(handle: UInt16)
    /// ATT_READ_BLOB_REQ (§3.4.4.5).
    case readBlob(handle: UInt16, offset: UInt16)
    /// ATT_READ_MULTIPLE_REQ (§3.4.4.7).
    case readMultiple(handles: [UInt16])
    /// ATT_READ_MULTIPLE_VARIABLE_REQ (§3.4.4.11).
    case readMultipleVariable(handles: [UInt16])
    /// ATT_READ_BY_GROUP_TYPE_REQ (§3.4.4.9).
    case readByGroupType(start: UInt16, end: UInt16, type: BluetoothUUID)
    /// ATT_WRITE_REQ (§3.4.5.1).
    case write(handle: UInt16, value: [UInt8])
    /// ATT_PREPARE_WRITE_REQ (§3.4.6.1).
    case prepareWrite(handle: UInt16, offset: UInt16, value: [UInt8])
    /// ATT_EXECUTE_WRITE_REQ (§3.4.6.3).
    case executeWrite(ATTExecuteWriteFlags)

    /// The request opcode.
    public var opcode: ATTOpcode {
        switch self {
        case .exchangeMTU: .exchangeMTURequest
        case .findInformation: .findInformationRequest
        case .findByTypeValue: .findByTypeValueRequest
        case .readByType: .readByTypeRequest
        case .read: .readRequest
        case .readBlob: .readBlobRequest
        case .readMultiple: .readMultipleRequest
        case .readMultipleVariable: .readMultipleVariableRequest
        case .readByGroupType: .readByGroupTypeRequest
        case .write: .writeRequest
        case .prepareWrite: .prepareWriteRequest
        case .executeWrite: .executeWriteRequest
        }
    }

    /// The opcode of the response that answers this request (request + 1, §3.3.1).
    public var responseOpcode: ATTOpcode { ATTOpcode(rawValue: opcode.rawValue &+ 1) }

    /// The handle this request names first (for messages), or nil.
    public var handle: UInt16? {
        switch self {
        case .exchangeMTU, .executeWrite: nil
        case .findInformation(let s, _), .findByTypeValue(let s, _, _, _), .readByType(let s, _, _),
             .readByGroupType(let s, _, _): s
        case .read(let h), .readBlob(let h, _), .write(let h, _), .prepareWrite(let h, _, _): h
        case .readMultiple(let hs), .readMultipleVariable(let hs): hs.first
        }
    }

    /// The PDU bytes, opcode first.
    public func encoded() throws(WireError) -> [UInt8] {
        switch self {
        case .exchangeMTU(let m): try ATTExchangeMTURequest(clientRxMTU: m).encoded()
        case .findInformation(let s, let e): try ATTFindInformationRequest(startHandle: s, endHandle: e).encoded()
        case .findByTypeValue(let s, let e, let t, let v):
            try ATTFindByTypeValueRequest(startHandle: s, endHandle: e, attributeType: t, value: v).encoded()
        case .readByType(let s, let e, let t): try ATTReadByTypeRequest(startHandle: s, endHandle: e, attributeType: t).encoded()
        case .read(let h): try ATTReadRequest(handle: h).encoded()
        case .readBlob(let h, let o): try ATTReadBlobRequest(handle: h, offset: o).encoded()
        case .readMultiple(let hs): try ATTReadMultipleRequest(handles: hs).encoded()
        case .readMultipleVariable(let hs): try ATTReadMultipleVariableRequest(handles: hs).encoded()
        case .readByGroupType(let s, let e, let t):
            try ATTReadByGroupTypeRequest(startHandle: s, endHandle: e, attributeGroupType: t).encoded()
        case .write(let h, let v): try ATTWriteRequest(handle: h, value: v).encoded()
        case .prepareWrite(let h, let o, let v): try ATTPrepareWriteRequest(handle: h, offset: o, partValue: v).encoded()
        case .executeWrite(let f): try ATTExecuteWriteRequest(flags: f).encoded()
        }
    }
}

/// One (handle, UUID) pair of an ATT_FIND_INFORMATION_RSP.
public struct ATTHandleUUID: Sendable, Hashable {
    /// The attribute handle.
    public var handle: UInt16
    /// The attribute type.
    public var uuid: BluetoothUUID
    /// A pair as given.
    public init(handle: UInt16, uuid: BluetoothUUID) {
        self.handle = handle
        self.uuid = uuid
    }
}

/// A handle range: an entry of ATT_FIND_BY_TYPE_VALUE_RSP (found handle, group end).
public struct ATTHandleRange: Sendable, Hashable {
    /// The found attribute's handle.
    public var start: UInt16
    /// The end of its group.
    public var end: UInt16
    /// A range as given.
    public init(start: UInt16, end: UInt16) {
        self.start = start
        self.end = end
    }
}

/// An attribute handle with a value (ATT_READ_BY_TYPE_RSP entries, reads by UUID).
public struct ATTHandleValue: Sendable, Hashable {
    /// The attribute handle.
    public var handle: UInt16
    /// Its value (as much as the response carried).
    public var value: [UInt8]
    /// A pair as given.
    public init(handle: UInt16, value: [UInt8]) {
        self.handle = handle
        self.value = value
    }
}

/// An entry of ATT_READ_BY_GROUP_TYPE_RSP.
public struct ATTGroupValue: Sendable, Hashable {
    /// The group's first handle (the service declaration).
    public var handle: UInt16
    /// The group's last handle.
    public var endGroupHandle: UInt16
    /// The attribute value (a service declaration's: its UUID).
    public var value: [UInt8]
    /// An entry as given.
    public init(handle: UInt16, endGroupHandle: UInt16, value: [UInt8]) {
        self.handle = handle
        self.endGroupHandle = endGroupHandle
        self.value = value
    }
}

/// A server's answer to an ``ATTRequest``, copied out of the received PDU.
public enum ATTResponse: Sendable, Hashable {
    case exchangeMTU(serverRxMTU: UInt16)
    case findInformation([ATTHandleUUID])
    case findByTypeValue([ATTHandleRange])
    case readByType([ATTHandleValue])
    case read([UInt8])
    case readBlob([UInt8])
    case readMultiple([UInt8])
    /// Values of ATT_READ_MULTIPLE_VARIABLE_RSP; a value may be truncated by the MTU.
    case readMultipleVariable([[UInt8]])
    case readByGroupType([ATTGroupValue])
    case write
    case prepareWrite(handle: UInt16, offset: UInt16, value: [UInt8])
    case executeWrite
}

/// Why an ATT or GATT operation failed.
public enum GATTError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The server answered with ATT_ERROR_RSP (Core Vol 3 Part F §3.4.1.1).
    case attError(ATTErrorCode, request: ATTOpcode, handle: UInt16)
    /// No response within the transaction timeout (Core Vol 3 Part F §3.3.3). The bearer is
    /// dead: this request and every pending and later one fails with this error.
    case transactionTimeout(request: ATTOpcode, timeout: Duration)
    /// The bearer closed (link lost, disconnected, socket error).
    case bearerClosed(ATTBearerClosed)
    /// The response to the request could not be parsed or made no sense; only that
    /// request failed, the bearer is still usable.
    case malformedResponse(request: ATTOpcode, detail: String)
    /// The peer broke the protocol in a way that leaves the bearer unusable (a response
    /// with no request outstanding, too many unconfirmed indications).
    case protocolViolation(String)
    /// The request cannot be made (too long for the MTU, no CCCD, unsupported property).
    case invalidRequest(String)

    public var description: String {
        switch self {
        case .attError(let code, let request, let handle):
            "ATT error \(code) (0x\(hex(code.rawValue, 2))) for \(request), handle 0x\(hex(handle, 4))"
        case .transactionTimeout(let request, let timeout):
            "ATT transaction timeout: no response to \(request) within \(Self.seconds(timeout.nanoseconds)); the ATT bearer is dead (Core Vol 3 Part F §3.3.3)"
        case .bearerClosed(let reason): "ATT bearer closed: \(reason)"
        case .malformedResponse(let request, let detail): "malformed response to \(request): \(detail)"
        case .protocolViolation(let detail): "ATT protocol violation by the peer: \(detail); the ATT bearer is dead"
        case .invalidRequest(let detail): "invalid request: \(detail)"
        }
    }

    /// The link (or the bearer on it) went away: reconnecting may help, retrying on this
    /// client will not.
    public var isLinkLoss: Bool {
        if case .bearerClosed = self { return true }
        return false
    }

    /// The ATT error code when the server answered with an Error Response.
    public var attErrorCode: ATTErrorCode? {
        if case .attError(let code, _, _) = self { return code }
        return nil
    }

    static func seconds(_ ns: UInt64) -> String {
        if ns % 1_000_000_000 == 0 { return "\(ns / 1_000_000_000) s" }
        return "\(ns / 1_000_000) ms"
    }
}

