import BluetoothWire

// GATT procedures (Core Vol 3 Part G §4.4–4.9): discovery, reads and writes, on the
// request path of GATTClient.swift.
extension GATTClient {
    // MARK: Discovery

    /// Discover All Primary Services (Core Vol 3 Part G §4.4.1): Read By Group Type.
    public func discoverPrimaryServices() async throws(GATTError) -> [GATTService] {
        try await exchangeMTU()
        return try await primaryServices(in: 0x0001 ... 0xFFFF)
    }

    /// Discover Primary Service by Service UUID (§4.4.2): Find By Type Value.
    public func discoverPrimaryServices(uuid: BluetoothUUID) async throws(GATTError) -> [GATTService] {
        try await exchangeMTU()
        let value = uuidBytes(uuid)
        var services: [GATTService] = []
        var start: UInt16 = 0x0001
        while true {
            let ranges: [ATTHandleRange]
            do throws(GATTError) {
                let r = try await request(.findByTypeValue(start: start, end: 0xFFFF, type: 0x2800, value: value))
                guard case .findByTypeValue(let list) = r else { throw wrongResponse(.findByTypeValueRequest) }
                ranges = list
            } catch {
                if error.attErrorCode == .attributeNotFound { break }
                throw error
            }
            var last = start
            for r in ranges {
                guard r.start >= start, r.end >= r.start else {
                    throw .malformedResponse(request: .findByTypeValueRequest, detail: "handle range 0x\(hex(r.start, 4))-0x\(hex(r.end, 4)) out of order")
                }
                services.append(GATTService(startHandle: r.start, endHandle: r.end, uuid: uuid))
                last = r.end
            }
            if last == 0xFFFF { break }
            start = last + 1
        }
        return services
    }

    /// Find Included Services (§4.5.1): Read By Type «Include» over the service; a 128-bit
    /// included service UUID is read from its declaration.
    public func discoverIncludedServices(of service: GATTService) async throws(GATTError) -> [GATTIncludedService] {
        try await exchangeMTU()
        return try await includes(in: service.startHandle ... service.endHandle)
    }

    /// Discover All Characteristics of a Service (§4.6.1): Read By Type «Characteristic»;
    /// each ends one before the next declaration, the last at the service end.
    public func discoverCharacteristics(of service: GATTService) async throws(GATTError) -> [GATTCharacteristic] {
        try await exchangeMTU()
        var chars = try await characteristicDeclarations(in: service.startHandle ... service.endHandle)
        for i in chars.indices {
            chars[i].endHandle = i + 1 < chars.count ? chars[i + 1].declarationHandle - 1 : service.endHandle
        }
        return chars
    }

    /// Discover All Characteristic Descriptors (§4.7.1): Find Information after the value.
    public func discoverDescriptors(of characteristic: GATTCharacteristic) async throws(GATTError) -> [GATTDescriptor] {
        try await exchangeMTU()
        guard characteristic.valueHandle < characteristic.endHandle else { return [] }
        let found = try await findInformation(in: characteristic.valueHandle + 1 ... characteristic.endHandle)
        return found.map { GATTDescriptor(handle: $0.handle, uuid: $0.uuid) }
    }

    /// Discovers the whole database: primary services, included (and secondary) services,
    /// characteristics and descriptors, in as few round trips as the MTU allows (one
    /// Read By Type over all services for includes and for characteristics; Find Information
    /// over merged descriptor ranges). Enables Service Changed indications when the server
    /// has them (``Options/handleServiceChanged``) and caches the result in ``database``.
    public func discoverAll() async throws(GATTError) -> GATTDatabase {
        try await exchangeMTU()
        let db = GATTDatabase(services: try await discoverDatabase(in: 0x0001 ... 0xFFFF))
        locked { s, _ in
            s.database = db
            s.earlyIndications.prune(to: db)
        }
        if options.handleServiceChanged,
           let sc = db.service(uuid: BluetoothUUID(0x1801))?.characteristics.first(where: { $0.uuid == GATTAttributeType.serviceChanged }),
           sc.properties.contains(.indicate), let cccd = sc.cccdHandle {
            try await enableServiceChanged(valueHandle: sc.valueHandle, cccdHandle: cccd)
        }
        return db
    }

    // MARK: Reads

    /// Read Characteristic Value (§4.8.1), continued with Read Blob (§4.8.3) while parts
    /// fill the MTU, so long values come back whole.
    public func read(handle: UInt16) async throws(GATTError) -> [UInt8] {
        try await exchangeMTU()
        guard case .read(var value) = try await request(.read(handle: handle)) else { throw wrongResponse(.readRequest) }
        var partSize = currentMTU() - 1
        var lastPart = value.count
        while lastPart >= partSize {
            guard value.count < Int(UInt16.max) else {
                throw .malformedResponse(request: .readBlobRequest, detail: "value longer than 65535 bytes")
            }
            let part: [UInt8]
            do throws(GATTError) {
                let r = try await request(.readBlob(handle: handle, offset: UInt16(value.count)))
                guard case .readBlob(let p) = r else { throw wrongResponse(.readBlobRequest) }
                part = p
            } catch {
                // Attribute Not Long: the value fitted after all (§4.8.3).
                if error.attErrorCode == .attributeNotLong { break }
                throw error
            }
            value += part
            lastPart = part.count
            partSize = currentMTU() - 1
        }
        return value
    }

    /// Read Using Characteristic UUID (§4.8.2): Read By Type over `range`, continued to the
    /// end of the range. Values longer than the response allows come back truncated.
    public func read(uuid: BluetoothUUID, range: ClosedRange<UInt16> = 0x0001 ... 0xFFFF) async throws(GATTError) -> [ATTHandleValue] {
        try await exchangeMTU()
        var out: [ATTHandleValue] = []
        var start = range.lowerBound
        while true {
            // Attribute Not Found ends the read once something was found; at first it is the answer.
            guard let list = try await readByTypePage(from: start, to: range.upperBound, type: uuid, notFoundEnds: !out.isEmpty) else { break }
            guard let last = list.last?.handle, last >= start, list.allSatisfy({ range.contains($0.handle) }) else {
                throw .malformedResponse(request: .readByTypeRequest, detail: "handles outside 0x\(hex(start, 4))-0x\(hex(range.upperBound, 4))")
            }
            out += list
            if last >= range.upperBound { break }
            start = last + 1
        }
        return out
    }

    /// Read Multiple Characteristic Values (§4.8.4): the values concatenated.
    public func readMultiple(handles: [UInt16]) async throws(GATTError) -> [UInt8] {
        try await exchangeMTU()
        guard handles.count >= 2 else { throw .invalidRequest("Read Multiple needs at least two handles") }
        guard case .readMultiple(let v) = try await request(.readMultiple(handles: handles)) else {
            throw wrongResponse(.readMultipleRequest)
        }
        return v
    }

    /// Read Multiple Variable Length Characteristic Values (§4.8.5).
    public func readMultipleVariable(handles: [UInt16]) async throws(GATTError) -> [[UInt8]] {
        try await exchangeMTU()
        guard handles.count >= 2 else { throw .invalidRequest("Read Multiple Variable needs at least two handles") }
        guard case .readMultipleVariable(let v) = try await request(.readMultipleVariable(handles: handles)) else {
            throw wrongResponse(.readMultipleVariableRequest)
        }
        return v
    }

    // MARK: Writes

    /// Write Characteristic Value (§4.9.3), or Write Long Characteristic Values (§4.9.4:
    /// Prepare Write in MTU−5 parts, then Execute Write) when the value exceeds MTU−3.
    /// Long and reliable writes never interleave with each other.
    public func write(handle: UInt16, value: [UInt8]) async throws(GATTError) {
        try await exchangeMTU()
        if value.count <= currentMTU() - 3 {
            guard case .write = try await request(.write(handle: handle, value: value)) else { throw wrongResponse(.writeRequest) }
            return
        }
        try await preparedWrite([ATTHandleValue(handle: handle, value: value)])
    }

    /// Write Without Response (§4.9.1): a Write Command, at most MTU−3 bytes.
    public func writeWithoutResponse(handle: UInt16, value: [UInt8]) async throws(GATTError) {
        try await exchangeMTU()
        let result: Result<Void, GATTError> = locked { s, fx in
            if let e = s.terminal { return .failure(e) }
            do throws(GATTError) {
                let actions = try s.att.writeCommand(handle: handle, value: value)
                apply(actions, &s, &fx)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
    }

    /// Signed Write Without Response (§4.9.2): a Signed Write Command authenticated with
    /// `csrk` (the key this side distributed when bonding, most significant octet first)
    /// and `signCounter` (one more than the last used with this peer). Meant for links that
    /// are not encrypted; on an encrypted link use ``writeWithoutResponse(handle:value:)``.
    public func writeSigned(handle: UInt16, value: [UInt8], csrk: [UInt8], signCounter: UInt32) async throws(GATTError) {
        try await exchangeMTU()
        let result: Result<Void, GATTError> = locked { s, fx in
            if let e = s.terminal { return .failure(e) }
            do throws(GATTError) {
                let actions = try s.att.signedWriteCommand(handle: handle, value: value, csrk: csrk, signCounter: signCounter)
                apply(actions, &s, &fx)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
    }

    /// Reliable Writes (§4.9.5): every value prepared (in parts when long), each echo
    /// checked, then executed; on a mismatch or error the queue is cancelled.
    public func reliableWrite(_ writes: [ATTHandleValue]) async throws(GATTError) {
        try await exchangeMTU()
        guard !writes.isEmpty else { return }
        try await preparedWrite(writes)
    }

    // MARK: Internals: discovery steps

    func primaryServices(in range: ClosedRange<UInt16>) async throws(GATTError) -> [GATTService] {
        var services: [GATTService] = []
        var start = range.lowerBound
        while true {
            let list: [ATTGroupValue]
            do throws(GATTError) {
                let r = try await request(.readByGroupType(start: start, end: range.upperBound, type: GATTAttributeType.primaryService))
                guard case .readByGroupType(let l) = r else { throw wrongResponse(.readByGroupTypeRequest) }
                list = l
            } catch {
                if error.attErrorCode == .attributeNotFound { break }
                throw error
            }
            var last = start
            for e in list {
                guard e.handle >= start, e.endGroupHandle >= e.handle, e.value.count == 2 || e.value.count == 16 else {
                    throw .malformedResponse(request: .readByGroupTypeRequest,
                                             detail: "bad service entry at 0x\(hex(e.handle, 4)) (end 0x\(hex(e.endGroupHandle, 4)), \(e.value.count)-byte UUID)")
                }
                let uuid = e.value.withUnsafeBytes { try? BluetoothUUID(wire: $0) } ?? BluetoothUUID(0)
                services.append(GATTService(startHandle: e.handle, endHandle: e.endGroupHandle, uuid: uuid))
                last = e.endGroupHandle
            }
            if last >= range.upperBound { break }
            start = last + 1
        }
        return services
    }

    /// One Read By Type request from `start` to `end` (Core Vol 3 Part G §4.5.1, §4.6.1,
    /// §4.8.2); nil when the server answers Attribute Not Found and `notFoundEnds` (no more
    /// attributes of that type), else that error is thrown like any other.
    func readByTypePage(from start: UInt16, to end: UInt16, type: BluetoothUUID,
                                notFoundEnds: Bool = true) async throws(GATTError) -> [ATTHandleValue]? {
        do throws(GATTError) {
            let r = try await request(.readByType(start: start, end: end, type: type))
            guard case .readByType(let list) = r else { throw wrongResponse(.readByTypeRequest) }
            return list
        } catch {
            if notFoundEnds, error.attErrorCode == .attributeNotFound { return nil }
            throw error
        }
    }

    func includes(in range: ClosedRange<UInt16>) async throws(GATTError) -> [GATTIncludedService] {
        var out: [GATTIncludedService] = []
        var start = range.lowerBound
        while true {
            guard let list = try await readByTypePage(from: start, to: range.upperBound, type: GATTAttributeType.include) else { break }
            var last = start
            for e in list {
                let v = e.value
                guard e.handle >= start, v.count == 6 || v.count == 4 else {
                    throw .malformedResponse(request: .readByTypeRequest, detail: "bad «Include» declaration at 0x\(hex(e.handle, 4))")
                }
                let s = UInt16(v[0]) | UInt16(v[1]) << 8
                let end = UInt16(v[2]) | UInt16(v[3]) << 8
                var uuid = BluetoothUUID(0)
                if v.count == 6 {
                    uuid = BluetoothUUID(UInt16(v[4]) | UInt16(v[5]) << 8)
                } else {
                    // 128-bit UUID: read the included service's declaration (§4.5.1).
                    guard case .read(let u) = try await request(.read(handle: s)), u.count == 16 else {
                        throw .malformedResponse(request: .readRequest, detail: "included service declaration at 0x\(hex(s, 4)) is not a 128-bit UUID")
                    }
                    uuid = u.withUnsafeBytes { try? BluetoothUUID(wire: $0) } ?? uuid
                }
                out.append(GATTIncludedService(declarationHandle: e.handle, startHandle: s, endHandle: end, uuid: uuid))
                last = e.handle
            }
            if last >= range.upperBound { break }
            start = last + 1
        }
        return out
    }

    /// Characteristic declarations in `range`, with `endHandle` left at the range end.
    func characteristicDeclarations(in range: ClosedRange<UInt16>) async throws(GATTError) -> [GATTCharacteristic] {
        var out: [GATTCharacteristic] = []
        var start = range.lowerBound
        while true {
            guard let list = try await readByTypePage(from: start, to: range.upperBound, type: GATTAttributeType.characteristic) else { break }
            var last = start
            for e in list {
                let v = e.value
                guard e.handle >= start, v.count == 5 || v.count == 19 else {
                    throw .malformedResponse(request: .readByTypeRequest, detail: "bad «Characteristic» declaration at 0x\(hex(e.handle, 4))")
                }
                let valueHandle = UInt16(v[1]) | UInt16(v[2]) << 8
                let uuid = v[3...].withUnsafeBytes { try? BluetoothUUID(wire: $0) } ?? BluetoothUUID(0)
                guard valueHandle > e.handle else {
                    throw .malformedResponse(request: .readByTypeRequest, detail: "characteristic value handle 0x\(hex(valueHandle, 4)) not after its declaration 0x\(hex(e.handle, 4))")
                }
                out.append(GATTCharacteristic(declarationHandle: e.handle, valueHandle: valueHandle, endHandle: range.upperBound,
                                              uuid: uuid, properties: GATTCharacteristicProperties(rawValue: v[0])))
                last = e.handle
            }
            if last >= range.upperBound { break }
            start = last + 1
        }
        return out
    }

    func findInformation(in range: ClosedRange<UInt16>) async throws(GATTError) -> [ATTHandleUUID] {
        var out: [ATTHandleUUID] = []
        var start = range.lowerBound
        while true {
            let list: [ATTHandleUUID]
            do throws(GATTError) {
                let r = try await request(.findInformation(start: start, end: range.upperBound))
                guard case .findInformation(let l) = r else { throw wrongResponse(.findInformationRequest) }
                list = l
            } catch {
                if error.attErrorCode == .attributeNotFound { break }
                throw error
            }
            guard let last = list.last?.handle, last >= start, list.allSatisfy({ range.contains($0.handle) }) else {
                throw .malformedResponse(request: .findInformationRequest, detail: "handles outside 0x\(hex(start, 4))-0x\(hex(range.upperBound, 4))")
            }
            out += list
            if last >= range.upperBound { break }
            start = last + 1
        }
        return out
    }

    /// Services, includes, characteristics and descriptors in `range`.
    func discoverDatabase(in range: ClosedRange<UInt16>) async throws(GATTError) -> [GATTService] {
        var services = try await primaryServices(in: range)
        guard let first = services.first?.startHandle, let last = services.map(\.endHandle).max() else { return [] }
        let span = first ... last

        // Included services (one Read By Type over every service), and the secondary
        // services they reach.
        for inc in try await includes(in: span) {
            if let i = services.firstIndex(where: { $0.contains(handle: inc.declarationHandle) }) {
                services[i].includedServices.append(inc)
            }
            if !services.contains(where: { $0.startHandle == inc.startHandle }) {
                services.append(GATTService(startHandle: inc.startHandle, endHandle: inc.endHandle, uuid: inc.uuid, isPrimary: false))
            }
        }
        services.sort { $0.startHandle < $1.startHandle }
        let all = (services.map(\.startHandle).min() ?? first) ... (services.map(\.endHandle).max() ?? last)

        // Characteristics (one Read By Type over everything), ends per §4.6.1.
        let decls = try await characteristicDeclarations(in: all)
        for (i, var c) in decls.enumerated() {
            guard let si = services.firstIndex(where: { $0.contains(handle: c.declarationHandle) }) else { continue }
            let serviceEnd = services[si].endHandle
            c.endHandle = i + 1 < decls.count ? min(decls[i + 1].declarationHandle - 1, serviceEnd) : serviceEnd
            services[si].characteristics.append(c)
        }

        // Descriptors: Find Information over the gaps after each value, neighbouring gaps
        // merged while one response could cover them; declarations and values found in
        // between are known and skipped. A gap holding a value with a 128-bit type is not
        // merged over: the response format would change there and cost a request anyway.
        let capacity = max(1, (currentMTU() - 2) / 4)
        var spans: [ClosedRange<UInt16>] = []
        var wideSinceLastSpan = false
        for s in services {
            for c in s.characteristics {
                if c.uuid.uuid16 == nil { wideSinceLastSpan = true }
                guard c.valueHandle < c.endHandle else { continue }
                let r = c.valueHandle + 1 ... c.endHandle
                if let lastSpan = spans.last, !wideSinceLastSpan,
                   Int(r.upperBound) - Int(lastSpan.lowerBound) + 1 <= capacity {
                    spans[spans.count - 1] = lastSpan.lowerBound ... r.upperBound
                } else {
                    spans.append(r)
                }
                wideSinceLastSpan = false
            }
        }
        for span in spans {
            for info in try await findInformation(in: span) {
                for si in services.indices where services[si].contains(handle: info.handle) {
                    if let ci = services[si].characteristics.firstIndex(where: { $0.valueHandle < info.handle && info.handle <= $0.endHandle }) {
                        services[si].characteristics[ci].descriptors.append(GATTDescriptor(handle: info.handle, uuid: info.uuid))
                    }
                }
            }
        }
        return services
    }

    // MARK: Internals: prepared writes

    func acquireLongWrite() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            locked { s, fx in
                if s.longWriteBusy {
                    s.longWriteWaiters.append(c)
                } else {
                    s.longWriteBusy = true
                    fx.append { c.resume() }
                }
            }
        }
    }

    func releaseLongWrite() {
        locked { s, fx in
            if s.longWriteWaiters.isEmpty {
                s.longWriteBusy = false
            } else {
                let next = s.longWriteWaiters.removeFirst()
                fx.append { next.resume() }
            }
        }
    }

    func preparedWrite(_ writes: [ATTHandleValue]) async throws(GATTError) {
        await acquireLongWrite()
        defer { releaseLongWrite() }
        do throws(GATTError) {
            for w in writes {
                guard w.value.count <= Int(UInt16.max) else { throw .invalidRequest("value longer than 65535 bytes") }
                var offset = 0
                repeat {
                    let part = Array(w.value[offset ..< min(w.value.count, offset + currentMTU() - 5)])
                    let r = try await request(.prepareWrite(handle: w.handle, offset: UInt16(offset), value: part))
                    guard case .prepareWrite(let h, let o, let echoed) = r, h == w.handle, Int(o) == offset, echoed == part else {
                        throw .malformedResponse(request: .prepareWriteRequest,
                                                 detail: "Prepare Write Response does not echo handle 0x\(hex(w.handle, 4)) offset \(offset)")
                    }
                    offset += part.count
                } while offset < w.value.count
            }
            guard case .executeWrite = try await request(.executeWrite(.write)) else { throw wrongResponse(.executeWriteRequest) }
        } catch {
            switch error {
            case .attError, .malformedResponse, .invalidRequest:
                _ = try? await request(.executeWrite(.cancel))
            case .transactionTimeout, .bearerClosed, .protocolViolation:
                break
            }
            throw error
        }
    }
}
