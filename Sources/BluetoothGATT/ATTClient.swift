import BluetoothCrypto
import BluetoothTransport
import BluetoothWire

/// What an ``ATTClient`` asks its driver to do.
public enum ATTClientAction: Sendable {
    /// Send this PDU (opcode first) on the bearer.
    case send([UInt8])
    /// The request is finished.
    case complete(ATTRequestID, Result<ATTResponse, GATTError>)
    /// ATT_HANDLE_VALUE_NTF (or one value of ATT_MULTIPLE_HANDLE_VALUE_NTF), in arrival order.
    case notification(handle: UInt16, value: [UInt8])
    /// ATT_HANDLE_VALUE_IND. Call ``ATTClient/confirmIndication()`` once the value has been
    /// handed to its consumer; the confirmation is sent then (Core Vol 3 Part F §3.4.7.2).
    case indication(handle: UInt16, value: [UInt8])
    /// ATT_MTU changed (Exchange MTU, either direction).
    case mtuChanged(Int)
    /// The bearer is dead (transaction timeout, protocol violation, closed). Every request
    /// that was pending got its own `.complete` with this error; later ones fail with it.
    case failed(GATTError)
    /// The peer sent a PDU that was malformed or unexpected and was ignored (reported, not fatal).
    case peerFault(String)
}

/// The client side of the Attribute Protocol on one bearer, sans-I/O.
/// Core Vol 3 Part F §3.3 (PDUs, sequential protocol, transaction timeout) and §3.4.
///
/// - One request outstanding at a time; later ones wait in a FIFO queue (§3.3.2).
///   Commands (Write Command) and Handle Value Confirmations go out at once.
/// - Every sent request has a deadline (``transactionTimeout``, 30 s by default). When it
///   passes, the transaction has timed out: the bearer is dead, no more PDUs are sent
///   (§3.3.3), and every pending and later request fails with `.transactionTimeout`.
/// - An Error Response to the outstanding request fails it with `.attError`.
/// - A malformed response to the outstanding request (bad parameters, or another response
///   opcode) fails just that request with `.malformedResponse`; the bearer stays usable.
///   A response with no request outstanding kills the bearer (`.protocolViolation`): the
///   two sides no longer agree on which response answers which request.
/// - Notifications are reported in order; indications are reported and confirmed only
///   when ``confirmIndication()`` is called, one confirmation per indication.
/// - Requests the peer makes as a client are answered with Error Response Request Not
///   Supported (we serve no attributes), except Exchange MTU, which is answered and sets
///   the MTU (§3.4.2).
///
/// Time is an input: `now` is a monotonic clock in nanoseconds.
public struct ATTClient: Sendable {
    struct Queued: Sendable {
        var id: ATTRequestID
        var request: ATTRequest
        var pdu: [UInt8]
    }

    struct Outstanding: Sendable {
        var id: ATTRequestID
        var request: ATTRequest
        var deadline: UInt64
    }

    enum State: Sendable {
        case open
        case dead(GATTError)
    }

    /// Nanoseconds a request may wait for its response (Core: 30 s).
    public let transactionTimeout: Duration
    /// The same in the nanoseconds `now` comes in.
    private let timeoutNanoseconds: UInt64
    /// The largest ATT_MTU this side can receive (offered in Exchange MTU).
    public let maximumMTU: UInt16
    /// The most indications the peer may leave unconfirmed before the bearer is declared
    /// dead (the spec allows one; a little slack for peers that pipeline).
    public static let unconfirmedIndicationLimit = 8

    private var state: State = .open
    private var queue: [Queued] = []
    private var queueHead = 0
    private var outstanding: Outstanding?
    private var nextID: UInt64 = 1

    /// The current ATT_MTU (23 until an exchange says otherwise).
    public private(set) var mtu: Int = ATT.defaultMTU
    /// True once an Exchange MTU (either direction) has completed.
    public private(set) var mtuExchanged = false
    /// Requests sent on the bearer (round trips).
    public private(set) var requestsSent = 0
    /// Indications reported and not yet confirmed.
    public private(set) var unconfirmedIndications = 0
    /// PDUs from the peer that were malformed or unexpected and were ignored.
    public private(set) var peerFaults = 0

    /// A client offering `maximumMTU` (at least 23; the host takes 517 at most) with `transactionTimeout` per request.
    public init(maximumMTU: UInt16 = 517, transactionTimeout: Duration = .seconds(30)) {
        precondition(transactionTimeout > .zero, "transaction timeout must be positive")
        self.maximumMTU = max(maximumMTU, UInt16(ATT.defaultMTU))
        self.transactionTimeout = transactionTimeout
        self.timeoutNanoseconds = max(1, transactionTimeout.nanoseconds)
    }

    /// The error that killed the bearer, or nil while it is usable.
    public var deadReason: GATTError? {
        switch state {
        case .open: nil
        case .dead(let e): e
        }
    }

    /// The request waiting for its response.
    public var outstandingRequest: ATTRequest? { outstanding?.request }
    /// Requests waiting behind the outstanding one.
    public var queuedCount: Int { queue.count - queueHead }
    /// When ``timerFired(now:)`` has something to do, or nil.
    public var nextDeadline: UInt64? { outstanding?.deadline }

    // MARK: Inputs

    /// Queues a request; it is sent when no other request is outstanding.
    public mutating func submit(_ request: ATTRequest, now: UInt64) -> (ATTRequestID, [ATTClientAction]) {
        let id = ATTRequestID(rawValue: nextID)
        nextID &+= 1
        if case .dead(let e) = state { return (id, [.complete(id, .failure(e))]) }
        let pdu: [UInt8]
        do throws(WireError) {
            pdu = try request.encoded()
        } catch {
            return (id, [.complete(id, .failure(.invalidRequest("cannot encode \(request.opcode): \(error)")))])
        }
        guard pdu.count <= mtu else {
            return (id, [.complete(id, .failure(.invalidRequest(
                "\(request.opcode) of \(pdu.count) bytes exceeds ATT_MTU \(mtu)")))])
        }
        queue.append(Queued(id: id, request: request, pdu: pdu))
        var actions: [ATTClientAction] = []
        pump(now: now, into: &actions)
        return (id, actions)
    }

    /// ATT_WRITE_CMD (§3.4.5.3): sent at once, no response.
    public mutating func writeCommand(handle: UInt16, value: [UInt8]) throws(GATTError) -> [ATTClientAction] {
        if case .dead(let e) = state { throw e }
        guard value.count <= mtu - 3 else {
            throw .invalidRequest("Write Without Response value of \(value.count) bytes exceeds ATT_MTU-3 (\(mtu - 3))")
        }
        do throws(WireError) {
            return [.send(try ATTWriteCommand(handle: handle, value: value).encoded())]
        } catch {
            throw .invalidRequest("cannot encode Write Command: \(error)")
        }
    }

    /// ATT_SIGNED_WRITE_CMD (§3.4.5.4): the value signed with `csrk` (most significant
    /// octet first) and `signCounter` (Core Vol 3 Part H §2.4.5); at most MTU−15 bytes.
    public mutating func signedWriteCommand(handle: UInt16, value: [UInt8], csrk: [UInt8], signCounter: UInt32) throws(GATTError) -> [ATTClientAction] {
        if case .dead(let e) = state { throw e }
        guard value.count <= mtu - 3 - ATT.signatureLength else {
            throw .invalidRequest("Signed Write value of \(value.count) bytes exceeds ATT_MTU-15 (\(mtu - 3 - ATT.signatureLength))")
        }
        let unsigned = [ATTOpcode.signedWriteCommand.rawValue, UInt8(truncatingIfNeeded: handle), UInt8(truncatingIfNeeded: handle >> 8)] + value
        do throws(BluetoothCrypto.Failure) {
            return [.send(unsigned + (try SecurityFunctions.signature(csrk: csrk, message: unsigned, signCounter: signCounter)))]
        } catch {
            throw .invalidRequest("cannot sign the write: \(error)")
        }
    }

    /// The consumer took an indication: sends ATT_HANDLE_VALUE_CFM (§3.4.7.3).
    public mutating func confirmIndication() -> [ATTClientAction] {
        precondition(unconfirmedIndications > 0, "confirmIndication() without an unconfirmed indication")
        unconfirmedIndications -= 1
        if case .dead = state { return [] }
        return [.send([ATTOpcode.handleValueConfirmation.rawValue])]
    }

    /// Time passed: fails the outstanding request if its transaction timed out.
    public mutating func timerFired(now: UInt64) -> [ATTClientAction] {
        guard let o = outstanding, now >= o.deadline else { return [] }
        return kill(.transactionTimeout(request: o.request.opcode, timeout: transactionTimeout))
    }

    /// The bearer closed: everything pending fails with the reason.
    public mutating func bearerClosed(_ reason: ATTBearerClosed) -> [ATTClientAction] {
        if case .dead = state { return [] }
        return kill(.bearerClosed(reason))
    }

    /// One PDU from the peer (opcode first).
    public mutating func receive(_ pdu: [UInt8], now: UInt64) -> [ATTClientAction] {
        pdu.withUnsafeBytes { receive(bytes: $0, now: now) }
    }

    /// The receive hot path: when `bytes` is a well-formed Handle Value Notification,
    /// returns its handle and a copy of the value (the only allocation) without building
    /// an action list; otherwise nil, and the PDU goes through ``receive(bytes:now:)``.
    @inlinable
    public mutating func receiveNotification(bytes: UnsafeRawBufferPointer) -> (handle: UInt16, value: [UInt8])? {
        guard bytes.count >= 3, bytes[0] == ATTOpcode.handleValueNotification.rawValue, !isDead else { return nil }
        let handle = UInt16(bytes[1]) | UInt16(bytes[2]) << 8
        guard handle != 0 else { return nil }
        return (handle, Array(UnsafeRawBufferPointer(rebasing: bytes[3...])))
    }

    @usableFromInline var isDead: Bool {
        if case .dead = state { return true }
        return false
    }

    /// One PDU from the peer (opcode first); the bytes are copied where kept.
    public mutating func receive(bytes: UnsafeRawBufferPointer, now: UInt64) -> [ATTClientAction] {
        if case .dead = state { return [] }
        guard let first = bytes.first else { return fault("empty ATT PDU") }
        let opcode = ATTOpcode(rawValue: first)
        let parsed: ATTPDU
        do throws(WireError) {
            parsed = try ATTPDU(parsing: bytes)
        } catch {
            return malformed(opcode: opcode, detail: "\(error)", now: now)
        }
        var actions: [ATTClientAction] = []
        switch parsed {
        case .handleValueNotification(let n):
            actions.append(.notification(handle: n.handle, value: Array(n.value)))
        case .multipleHandleValueNotification(let m):
            for e in m { actions.append(.notification(handle: e.handle, value: Array(e.value))) }
        case .handleValueIndication(let i):
            guard unconfirmedIndications < ATTClient.unconfirmedIndicationLimit else {
                return kill(.protocolViolation("\(unconfirmedIndications + 1) indications without a confirmation"))
            }
            unconfirmedIndications += 1
            actions.append(.indication(handle: i.handle, value: Array(i.value)))
        case .exchangeMTURequest(let r):
            // The peer's client asks (§3.4.2): answer with our Rx MTU and apply the minimum.
            actions.append(.send([ATTOpcode.exchangeMTUResponse.rawValue, UInt8(maximumMTU & 0xFF), UInt8(maximumMTU >> 8)]))
            setMTU(clientRx: maximumMTU, serverRx: r.clientRxMTU, into: &actions)
        case .findInformationRequest, .findByTypeValueRequest, .readByTypeRequest, .readRequest, .readBlobRequest,
             .readMultipleRequest, .readMultipleVariableRequest, .readByGroupTypeRequest, .writeRequest,
             .prepareWriteRequest, .executeWriteRequest:
            // A client-only bearer has no database to answer from.
            actions.append(notSupported(opcode))
        case .writeCommand, .signedWriteCommand:
            break // commands we do not support are ignored (§3.4.5.3)
        case .handleValueConfirmation:
            return fault("Handle Value Confirmation received, but we sent no indication")
        case .unknown(let op, _):
            if op.isCommand { return fault("unknown command \(op) ignored") }
            actions.append(notSupported(op))
        case .errorResponse, .exchangeMTUResponse, .findInformationResponse, .findByTypeValueResponse,
             .readByTypeResponse, .readResponse, .readBlobResponse, .readMultipleResponse,
             .readByGroupTypeResponse, .readMultipleVariableResponse, .writeResponse,
             .prepareWriteResponse, .executeWriteResponse:
            return response(parsed, now: now)
        }
        return actions
    }

    // MARK: Internals

    private mutating func pump(now: UInt64, into actions: inout [ATTClientAction]) {
        guard outstanding == nil, case .open = state, queueHead < queue.count else { return }
        let next = queue[queueHead]
        queueHead += 1
        if queueHead > 32, queueHead * 2 > queue.count {
            queue.removeFirst(queueHead)
            queueHead = 0
        }
        outstanding = Outstanding(id: next.id, request: next.request, deadline: now &+ timeoutNanoseconds)
        requestsSent += 1
        actions.append(.send(next.pdu))
    }

    private mutating func kill(_ error: GATTError) -> [ATTClientAction] {
        state = .dead(error)
        var actions: [ATTClientAction] = []
        if let o = outstanding { actions.append(.complete(o.id, .failure(error))) }
        outstanding = nil
        for q in queue[queueHead...] { actions.append(.complete(q.id, .failure(error))) }
        queue = []
        queueHead = 0
        actions.append(.failed(error))
        return actions
    }

    private mutating func fault(_ detail: String) -> [ATTClientAction] {
        peerFaults += 1
        return [.peerFault(detail)]
    }

    /// Core Vol 3 Part F §3.4.1.1: for a request not supported, the Attribute Handle In
    /// Error is 0x0000 (not the handle the request named; GATT/SR/UNS/BI-01-C).
    private func notSupported(_ request: ATTOpcode) -> ATTClientAction {
        .send([ATTOpcode.errorResponse.rawValue, request.rawValue, 0x00, 0x00, ATTErrorCode.requestNotSupported.rawValue])
    }

    private mutating func setMTU(clientRx: UInt16, serverRx: UInt16, into actions: inout [ATTClientAction]) {
        let new = max(ATT.defaultMTU, Int(min(clientRx, serverRx)))
        mtuExchanged = true
        if new != mtu {
            mtu = new
            actions.append(.mtuChanged(new))
        }
    }

    /// A PDU that failed to parse: fails the outstanding request when it is (or claims to
    /// be) its answer, else is reported and ignored.
    private mutating func malformed(opcode: ATTOpcode, detail: String, now: UInt64) -> [ATTClientAction] {
        if let o = outstanding, opcode == o.request.responseOpcode || opcode == .errorResponse {
            return finish(o, .failure(.malformedResponse(request: o.request.opcode, detail: "\(opcode): \(detail)")), now: now)
        }
        return fault("malformed \(opcode): \(detail)")
    }

    private mutating func finish(_ o: Outstanding, _ result: Result<ATTResponse, GATTError>, now: UInt64) -> [ATTClientAction] {
        outstanding = nil
        var actions: [ATTClientAction] = [.complete(o.id, result)]
        pump(now: now, into: &actions)
        return actions
    }

    private mutating func response(_ pdu: ATTPDU, now: UInt64) -> [ATTClientAction] {
        guard let o = outstanding else {
            return kill(.protocolViolation("\(pdu.opcode) received with no request outstanding"))
        }
        let request = o.request
        if case .errorResponse(let e) = pdu {
            guard e.requestOpcode == request.opcode else {
                return finish(o, .failure(.malformedResponse(request: request.opcode,
                    detail: "Error Response names \(e.requestOpcode), not the outstanding request")), now: now)
            }
            return finish(o, .failure(.attError(e.error, request: e.requestOpcode, handle: e.handle)), now: now)
        }
        guard pdu.opcode == request.responseOpcode else {
            return finish(o, .failure(.malformedResponse(request: request.opcode,
                detail: "answered with \(pdu.opcode), expected \(request.responseOpcode)")), now: now)
        }
        let result: ATTResponse
        switch pdu {
        case .exchangeMTUResponse(let r):
            var actions: [ATTClientAction] = []
            if case .exchangeMTU(let clientRx) = request {
                setMTU(clientRx: clientRx, serverRx: r.serverRxMTU, into: &actions)
            }
            outstanding = nil
            actions.append(.complete(o.id, .success(.exchangeMTU(serverRxMTU: r.serverRxMTU))))
            pump(now: now, into: &actions)
            return actions
        case .findInformationResponse(let r):
            result = .findInformation(r.map { ATTHandleUUID(handle: $0.handle, uuid: $0.type) })
        case .findByTypeValueResponse(let r):
            result = .findByTypeValue(r.map { ATTHandleRange(start: $0.foundHandle, end: $0.groupEndHandle) })
        case .readByTypeResponse(let r):
            result = .readByType(r.map { ATTHandleValue(handle: $0.handle, value: Array($0.value)) })
        case .readResponse(let r): result = .read(Array(r.value))
        case .readBlobResponse(let r): result = .readBlob(Array(r.partValue))
        case .readMultipleResponse(let r): result = .readMultiple(Array(r.values))
        case .readMultipleVariableResponse(let r): result = .readMultipleVariable(r.map { Array($0.value) })
        case .readByGroupTypeResponse(let r):
            result = .readByGroupType(r.map { ATTGroupValue(handle: $0.handle, endGroupHandle: $0.endGroupHandle, value: Array($0.value)) })
        case .writeResponse: result = .write
        case .prepareWriteResponse(let r):
            result = .prepareWrite(handle: r.handle, offset: r.offset, value: Array(r.partValue))
        case .executeWriteResponse: result = .executeWrite
        default:
            // Only response opcodes reach here (see `receive`), and the opcode matched.
            return finish(o, .failure(.malformedResponse(request: request.opcode, detail: "unexpected \(pdu.opcode)")), now: now)
        }
        return finish(o, .success(result), now: now)
    }
}
