import BluetoothCrypto
import BluetoothHost
import BluetoothWire

/// The request handlers of ``ATTServer``, one per ATT method (Core Vol 3 Part F §3.4).
extension ATTServer {
    /// Where a value is read from: the table (no copy) or bytes made for this read.
    enum ValueSource {
        case stored(Int)
        case owned([UInt8])
    }

    func withValue<R>(_ source: ValueSource, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        switch source {
        case .stored(let i): table.attributes[i].value.withUnsafeBytes(body)
        case .owned(let bytes): bytes.withUnsafeBytes(body)
        }
    }

    /// The value of the attribute at index `i` as `client` sees it, after the read permission check.
    /// The attribute's fields are read in place: binding `table.attributes[i]` to a constant
    /// copies it (its value, UUID and handlers retained and released) on every read.
    func readValue(_ i: Int, _ client: ATTServerClientID, _ s: ClientState, offset: Int) -> Result<ValueSource, ATTErrorCode> {
        if let e = check(table.attributes[i].permissions, write: false, s.security) { return .failure(e) }
        switch table.attributes[i].role {
        case .cccd:
            let bits = s.cccd[table.attributes[i].handle] ?? 0
            return .success(.owned([UInt8(bits & 0xFF), UInt8(bits >> 8)]))
        case .clientSupportedFeatures:
            return .success(.owned([s.features.rawValue]))
        case .databaseHash:
            return .success(.owned(table.hash.reversed()))  // least significant octet first
        case .service, .include, .characteristicDeclaration, .value, .descriptor:
            guard let handler = table.attributes[i].read else { return .success(.stored(i)) }
            let ctx = GATTRequestContext(client: client, handle: table.attributes[i].handle, offset: offset, security: s.security,
                                         configurations: s.cccd)
            switch handler(ctx) {
            case .success(let v): return .success(.owned(Array(v.prefix(ATT.maximumAttributeValueLength))))
            case .failure(let e): return .failure(e)
            }
        }
    }

    // MARK: Exchange MTU (§3.4.2)

    mutating func exchangeMTU(_ client: ATTServerClientID, _ clientRx: UInt16,
                              _ respond: inout ATTServerOutput) -> [ATTServerEvent] {
        let ours = options.maximumMTU
        emit(&respond, capacity: 3) { (w) throws(WireError) in try ATTExchangeMTUResponse(serverRxMTU: ours).encode(into: &w) }
        guard var s = clientStates[client] else { return [] }
        // Only the first exchange sets ATT_MTU; it cannot change on a bearer afterwards
        // (a client sending it twice gets the same answer and the same MTU).
        guard !s.mtuExchanged else { return [] }
        s.mtuExchanged = true
        let before = s.mtu
        s.mtu = max(s.mtu, Int(min(clientRx, ours)))
        clientStates[client] = s
        return s.mtu == before ? [] : [.mtuChanged(client, mtu: s.mtu)]
    }

    // MARK: Find Information (§3.4.3.1)

    mutating func findInformation(_ client: ATTServerClientID, _ start: UInt16, _ end: UInt16,
                                  _ respond: inout ATTServerOutput) -> [ATTServerEvent] {
        guard Self.validRange(start, end) else { return error(.findInformationRequest, rangeErrorHandle(start, end), .invalidHandle, &respond) }
        let range = indices(start, end)
        guard let first = range.first else { return error(.findInformationRequest, start, .attributeNotFound, &respond) }
        let mtu = clientStates[client]?.mtu ?? ATT.defaultMTU
        let short = table.attributes[first].type.uuid16 != nil
        emit(&respond, capacity: mtu) { (w) throws(WireError) in
            try w.u8(ATTOpcode.findInformationResponse.rawValue)
            try w.u8(short ? ATTFindInformationFormat.uuid16.rawValue : ATTFindInformationFormat.uuid128.rawValue)
            for i in range {
                let a = table.attributes[i]
                guard (a.type.uuid16 != nil) == short, w.remaining >= (short ? 4 : 18) else { break }
                try w.u16(a.handle)
                try a.type.write(&w, width: short ? 2 : 16)
            }
        }
        return []
    }

    /// The handle an Invalid Handle error names for a bad range: 0 when either end is 0
    /// (as BlueZ answers), else the starting handle.
    func rangeErrorHandle(_ start: UInt16, _ end: UInt16) -> UInt16 { start == 0 || end == 0 ? 0 : start }

    // MARK: Find By Type Value (§3.4.3.3)

    mutating func findByTypeValue(_ client: ATTServerClientID, _ r: ATTFindByTypeValueRequestView,
                                  _ respond: inout ATTServerOutput) -> [ATTServerEvent] {
        guard Self.validRange(r.startHandle, r.endHandle) else {
            return error(.findByTypeValueRequest, rangeErrorHandle(r.startHandle, r.endHandle), .invalidHandle, &respond)
        }
        guard let s = clientStates[client] else { return [] }
        let type = BluetoothUUID(r.attributeType)
        var found: [(UInt16, UInt16)] = []
        let capacity = (s.mtu - 1) / 4
        for i in indices(r.startHandle, r.endHandle) where table.attributes[i].type == type {
            guard found.count < capacity else { break }
            guard case .success(let source) = readValue(i, client, s, offset: 0) else { continue }
            guard withValue(source, { $0.elementsEqual(r.value) }) else { continue }
            let a = table.attributes[i]
            var groupEnd = a.handle
            if case .service(let end) = a.role { groupEnd = end }
            found.append((a.handle, groupEnd))
        }
        guard !found.isEmpty else { return error(.findByTypeValueRequest, r.startHandle, .attributeNotFound, &respond) }
        emit(&respond, capacity: 1 + 4 * found.count) { (w) throws(WireError) in
            try w.u8(ATTOpcode.findByTypeValueResponse.rawValue)
            for (h, e) in found {
                try w.u16(h)
                try w.u16(e)
            }
        }
        return []
    }

    // MARK: Read By Type (§3.4.4.1)

    mutating func readByType(_ client: ATTServerClientID, _ start: UInt16, _ end: UInt16, _ type: BluetoothUUID,
                             _ respond: inout ATTServerOutput) -> [ATTServerEvent] {
        guard Self.validRange(start, end) else { return error(.readByTypeRequest, rangeErrorHandle(start, end), .invalidHandle, &respond) }
        guard var s = clientStates[client] else { return [] }
        // The value length is the first value's (capped at ATT_MTU−4 and 253); the list
        // stops at the first value of another length, or at one the client may not read.
        var matches: [(Int, ValueSource)] = []
        var length = -1
        var used = 2
        for i in indices(start, end) where table.attributes[i].type == type {
            switch readValue(i, client, s, offset: 0) {
            case .failure(let code):
                if matches.isEmpty { return error(.readByTypeRequest, table.attributes[i].handle, code, &respond) }
            case .success(let source):
                let n = min(withValue(source) { $0.count }, s.mtu - 4, 253)
                if length < 0 { length = n }
                guard n == length, used + 2 + n <= s.mtu else { break }
                matches.append((i, source))
                used += 2 + n
                continue
            }
            break
        }
        guard !matches.isEmpty else { return error(.readByTypeRequest, start, .attributeNotFound, &respond) }
        if type == GATTServerUUID.databaseHash, !s.changeAware {
            s.changeAware = true  // reading the hash makes a client change-aware (Part G §2.5.2.1)
            clientStates[client] = s
        }
        let n = length
        emit(&respond, capacity: used) { (w) throws(WireError) in
            try w.u8(ATTOpcode.readByTypeResponse.rawValue)
            try w.u8(UInt8(2 + n))
            for (i, source) in matches {
                try w.u16(table.attributes[i].handle)
                withValue(source) { v in _ = try? w.bytes(UnsafeRawBufferPointer(rebasing: v[0 ..< n])) }
            }
        }
        return []
    }

    // MARK: Read By Group Type (§3.4.4.9)

    mutating func readByGroupType(_ client: ATTServerClientID, _ start: UInt16, _ end: UInt16, _ type: BluetoothUUID,
                                  _ respond: inout ATTServerOutput) -> [ATTServerEvent] {
        guard Self.validRange(start, end) else {
            return error(.readByGroupTypeRequest, rangeErrorHandle(start, end), .invalidHandle, &respond)
        }
        guard type == GATTAttributeType.primaryService || type == GATTAttributeType.secondaryService else {
            return error(.readByGroupTypeRequest, start, .unsupportedGroupType, &respond)
        }
        let mtu = clientStates[client]?.mtu ?? ATT.defaultMTU
        var matches: [Int] = []
        var length = -1
        var used = 2
        for i in indices(start, end) where table.attributes[i].type == type {
            let a = table.attributes[i]
            let n = a.value.count
            if length < 0 { length = n }
            guard n == length, used + 4 + n <= mtu else { break }
            matches.append(i)
            used += 4 + n
        }
        guard !matches.isEmpty else { return error(.readByGroupTypeRequest, start, .attributeNotFound, &respond) }
        let n = length
        emit(&respond, capacity: used) { (w) throws(WireError) in
            try w.u8(ATTOpcode.readByGroupTypeResponse.rawValue)
            try w.u8(UInt8(4 + n))
            for i in matches {
                let a = table.attributes[i]
                guard case .service(let groupEnd) = a.role else { continue }
                try w.u16(a.handle)
                try w.u16(groupEnd)
                try w.bytes(a.value)
            }
        }
        return []
    }

    // MARK: Read, Read Blob (§3.4.4.3, §3.4.4.5)

    /// `s`: the client's state as the dispatch read it (one copy per PDU, not one per step).
    mutating func read(_ client: ATTServerClientID, _ s: ClientState, _ opcode: ATTOpcode, _ handle: UInt16, offset: Int,
                       _ respond: inout ATTServerOutput) -> [ATTServerEvent] {
        guard let i = table.index(of: handle) else { return error(opcode, handle, .invalidHandle, &respond) }
        let source: ValueSource
        switch readValue(i, client, s, offset: offset) {
        case .failure(let code): return error(opcode, handle, code, &respond)
        case .success(let v): source = v
        }
        let count = withValue(source) { $0.count }
        guard offset <= count else { return error(opcode, handle, .invalidOffset, &respond) }
        let n = min(count - offset, s.mtu - 1)
        let responseOpcode = opcode == .readRequest ? ATTOpcode.readResponse : .readBlobResponse
        withValue(source) { v in
            emit(&respond, capacity: 1 + n) { (w) throws(WireError) in
                try w.u8(responseOpcode.rawValue)
                try w.bytes(UnsafeRawBufferPointer(rebasing: v[offset ..< offset + n]))
            }
        }
        return []
    }

    // MARK: Read Multiple, Read Multiple Variable (§3.4.4.7, §3.4.4.11)

    mutating func readMultiple(_ client: ATTServerClientID, _ opcode: ATTOpcode, _ handles: ATTHandleList, variable: Bool,
                               _ respond: inout ATTServerOutput) -> [ATTServerEvent] {
        guard let s = clientStates[client] else { return [] }
        var sources: [ValueSource] = []
        sources.reserveCapacity(handles.count)
        for h in handles {
            guard let i = table.index(of: h) else { return error(opcode, h, .invalidHandle, &respond) }
            switch readValue(i, client, s, offset: 0) {
            case .failure(let code): return error(opcode, h, code, &respond)
            case .success(let v): sources.append(v)
            }
        }
        // The response is cut at ATT_MTU; in the variable form the last tuple keeps its
        // full Value Length so the client sees it was truncated.
        emit(&respond, capacity: s.mtu) { (w) throws(WireError) in
            try w.u8(variable ? ATTOpcode.readMultipleVariableResponse.rawValue : ATTOpcode.readMultipleResponse.rawValue)
            for source in sources {
                guard w.remaining > 0 else { break }
                if variable {
                    guard w.remaining >= 2 else { break }
                    try w.u16(UInt16(withValue(source) { $0.count }))
                }
                withValue(source) { v in _ = try? w.bytes(UnsafeRawBufferPointer(rebasing: v[0 ..< min(v.count, w.remaining)])) }
            }
        }
        return []
    }

    // MARK: Write Request, Write Command (§3.4.5)

    mutating func write(_ client: ATTServerClientID, _ handle: UInt16, _ value: UnsafeRawBufferPointer, withResponse: Bool,
                        _ respond: inout ATTServerOutput) -> [ATTServerEvent] {
        let opcode: ATTOpcode = withResponse ? .writeRequest : .writeCommand
        switch store(client, handle, Array(value), withResponse: withResponse) {
        case .failure(let code):
            if withResponse { return error(opcode, handle, code, &respond) }
            return fault(client, "Write Command to 0x\(hex(handle, 4)) dropped: \(code)")
        case .success(let events):
            if withResponse { emit(&respond, capacity: 1) { (w) throws(WireError) in try w.u8(ATTOpcode.writeResponse.rawValue) } }
            return events
        }
    }

    /// ATT_SIGNED_WRITE_CMD (Core Vol 3 Part F §3.4.5.4, Part G §4.9.2): verified with the
    /// client's CSRK, its SignCounter above every one seen before (a replay is refused),
    /// then written as a Write Command with the bond's strength for the permission checks,
    /// to a characteristic that takes authenticated signed writes. Anything else is dropped
    /// (a command gets no answer).
    mutating func signedWrite(_ client: ATTServerClientID, _ c: ATTSignedWriteCommandView,
                              signed: UnsafeRawBufferPointer) -> [ATTServerEvent] {
        let target = "Signed Write Command to 0x\(hex(c.handle, 4))"
        guard var s = clientStates[client], var key = s.signing else {
            return fault(client, "\(target) dropped: no CSRK for this client (not bonded, or it distributed none)")
        }
        let sig = c.signature
        let counter = UInt32(sig[0]) | UInt32(sig[1]) << 8 | UInt32(sig[2]) << 16 | UInt32(sig[3]) << 24
        if let last = key.lastCounter, counter <= last {
            return fault(client, "\(target) dropped: SignCounter \(counter) replayed (the last was \(last))")
        }
        guard let expected = try? SecurityFunctions.signature(csrk: key.csrk, message: Array(signed), signCounter: counter),
              expected.elementsEqual(sig) else {
            return fault(client, "\(target) dropped: the signature does not verify with the client's CSRK")
        }
        key.lastCounter = counter
        s.signing = key
        clientStates[client] = s
        var events: [ATTServerEvent] = [.signCounterAdvanced(client, counter)]
        guard let i = table.index(of: c.handle), case .value(let properties, _, _) = table[i].role,
              properties.contains(.authenticatedSignedWrites) else {
            return events + fault(client, "\(target) dropped: not a characteristic that takes signed writes")
        }
        // The signature stands for the bond: its strength meets the permission checks.
        let linkSecurity = s.security
        clientStates[client]?.security = key.security
        defer { clientStates[client]?.security = linkSecurity }
        switch store(client, c.handle, Array(c.value), withResponse: false) {
        case .failure(let code): events += fault(client, "\(target) dropped: \(code)")
        case .success(let more): events += more
        }
        return events
    }

    /// Checks and stores one whole value (offset 0); what writes and executed prepared writes share.
    /// `validateOnly`: check everything (the application's handler included) and store
    /// nothing; `validated`: the checks passed already, store without asking again.
    mutating func store(_ client: ATTServerClientID, _ handle: UInt16, _ value: [UInt8],
                        withResponse: Bool, check validateOnly: Bool = false, validated: Bool = false) -> Result<[ATTServerEvent], ATTErrorCode> {
        guard let i = table.index(of: handle) else { return .failure(.invalidHandle) }
        guard var s = clientStates[client] else { return .success([]) }
        let a = table.attributes[i]
        if let e = check(a.permissions, write: true, s.security) { return .failure(e) }
        guard value.count <= ATT.maximumAttributeValueLength else { return .failure(.invalidAttributeValueLength) }
        switch a.role {
        case .service, .include, .characteristicDeclaration, .databaseHash:
            return .failure(.writeNotPermitted)
        case .cccd(let valueHandle, let properties):
            guard value.count == 2 else { return .failure(.invalidAttributeValueLength) }
            let bits = (UInt16(value[0]) | UInt16(value[1]) << 8) & 0x0003
            // Subscribing needs what reading the value needs (Core Vol 3 Part G §3.3.3.3
            // leaves it to the server; BlueZ and Zephyr ask the same), in PTS order.
            if bits != 0, let code = valueSecurityError(valueHandle, s.security) { return .failure(code) }
            if bits & 1 != 0 && !properties.contains(.notify) || bits & 2 != 0 && !properties.contains(.indicate) {
                return .failure(.cccdImproperlyConfigured)
            }
            if validateOnly { return .success([]) }
            let old = s.cccd[a.handle] ?? 0
            s.cccd[a.handle] = bits
            clientStates[client] = s
            return .success(old == bits ? [] : [.subscriptionChanged(client, valueHandle: valueHandle, GATTClientConfiguration(rawValue: bits))])
        case .clientSupportedFeatures:
            guard !value.isEmpty else { return .failure(.invalidAttributeValueLength) }
            let new = GATTClientFeatures(rawValue: value[0]).intersection(.defined)
            // A client may not clear a feature it has set (Core Vol 3 Part G §7.2).
            guard new.isSuperset(of: s.features) else { return .failure(.valueNotAllowed) }
            if validateOnly { return .success([]) }
            s.features = new
            clientStates[client] = s
            return .success([])
        case .value(_, let maximumLength, _):
            guard value.count <= maximumLength else { return .failure(.invalidAttributeValueLength) }
        case .descriptor(let maximumLength):
            guard value.count <= maximumLength else { return .failure(.invalidAttributeValueLength) }
        }
        if let handler = a.onWrite, !validated {
            let ctx = GATTRequestContext(client: client, handle: handle, offset: 0, security: s.security, configurations: s.cccd,
                                         withResponse: withResponse, prepared: validateOnly)
            if let code = handler(ctx, value) { return .failure(code) }
        }
        if validateOnly { return .success([]) }
        if a.read == nil { table.setStoredValue(value, at: i) }
        return .success([.wrote(client, handle: handle, value: value, withResponse: withResponse)])
    }

    // MARK: Prepare Write, Execute Write (§3.4.6)

    mutating func prepareWrite(_ client: ATTServerClientID, _ handle: UInt16, _ offset: Int, _ part: UnsafeRawBufferPointer,
                               _ respond: inout ATTServerOutput) -> [ATTServerEvent] {
        guard let i = table.index(of: handle) else { return error(.prepareWriteRequest, handle, .invalidHandle, &respond) }
        guard var s = clientStates[client] else { return [] }
        if let code = check(table.attributes[i].permissions, write: true, s.security) {
            return error(.prepareWriteRequest, handle, code, &respond)
        }
        guard s.prepared.count < options.prepareQueueLimit else { return error(.prepareWriteRequest, handle, .prepareQueueFull, &respond) }
        s.prepared.append(PreparedWrite(handle: handle, offset: offset, value: Array(part)))
        clientStates[client] = s
        emit(&respond, capacity: 5 + part.count) { (w) throws(WireError) in
            try w.u8(ATTOpcode.prepareWriteResponse.rawValue)
            try w.u16(handle)
            try w.u16(UInt16(offset))
            try w.bytes(part)
        }
        return []
    }

    mutating func executeWrite(_ client: ATTServerClientID, _ flags: ATTExecuteWriteFlags,
                               _ respond: inout ATTServerOutput) -> [ATTServerEvent] {
        guard var s = clientStates[client] else { return [] }
        guard flags == .cancel || flags == .write else { return error(.executeWriteRequest, 0, .invalidPDU, &respond) }
        let queue = s.prepared
        s.prepared = []
        clientStates[client] = s
        if flags == .cancel || queue.isEmpty {
            emit(&respond, capacity: 1) { (w) throws(WireError) in try w.u8(ATTOpcode.executeWriteResponse.rawValue) }
            return []
        }
        // Join the parts per handle in queue order, check everything, then store all or nothing.
        var order: [UInt16] = []
        var values: [UInt16: [UInt8]] = [:]
        for p in queue {
            var v: [UInt8]
            if let existing = values[p.handle] {
                v = existing
            } else {
                order.append(p.handle)
                guard let i = table.index(of: p.handle), let s2 = clientStates[client] else {
                    return error(.executeWriteRequest, p.handle, .invalidHandle, &respond)
                }
                switch readValue(i, client, s2, offset: 0) {
                case .success(let source): v = withValue(source) { Array($0) }
                case .failure: v = []  // write-only: the long write starts from nothing
                }
            }
            guard p.offset <= v.count else { return error(.executeWriteRequest, p.handle, .invalidOffset, &respond) }
            v = Array(v[0 ..< p.offset]) + p.value
            guard v.count <= ATT.maximumAttributeValueLength else {
                return error(.executeWriteRequest, p.handle, .invalidAttributeValueLength, &respond)
            }
            values[p.handle] = v
        }
        for h in order {
            if case .failure(let code) = store(client, h, values[h] ?? [], withResponse: true, check: true) {
                return error(.executeWriteRequest, h, code, &respond)
            }
        }
        var events: [ATTServerEvent] = []
        for h in order {
            if case .success(let e) = store(client, h, values[h] ?? [], withResponse: true, validated: true) { events += e }
        }
        emit(&respond, capacity: 1) { (w) throws(WireError) in try w.u8(ATTOpcode.executeWriteResponse.rawValue) }
        return events
    }

    // MARK: Handle Value Confirmation (§3.4.7.3)

    mutating func confirmation(_ client: ATTServerClientID) -> [ATTServerEvent] {
        guard var s = clientStates[client] else { return [] }
        guard let p = s.pendingIndication else {
            return fault(client, "Handle Value Confirmation without an indication outstanding")
        }
        s.pendingIndication = nil
        if p.handle == table.serviceChangedHandle { s.changeAware = true }
        clientStates[client] = s
        return [.indicationConfirmed(client, handle: p.handle)]
    }
}
