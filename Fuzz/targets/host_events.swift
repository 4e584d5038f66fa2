// Fuzz target: the host's state machines (command flow, LE connection manager, advertiser,
// ACL flow control, L2CAP reassembly and signaling) driven by a hostile controller: random
// HCI events and ACL packets interleaved with API calls and time. The glue below does what
// HostDriver does with their actions; a trap anywhere is a bug (a controller cannot crash us).
// fuzz-modules: BluetoothWire BluetoothTransport BluetoothCrypto BluetoothSecurity BluetoothHost

struct Glue {
    var flow = HCICommandFlow(defaultTimeout: 5_000_000_000)
    var connections = LEConnectionManager()
    var advertiser = Advertiser()
    var acl = ACLFlowControl(bufferLength: 27, bufferCount: 4)
    var reassembler = L2CAPReassembler(maximumFrameLength: 1024, maximumPendingBytes: 4096)
    var purposes: [CommandToken: Purpose] = [:]
    var nextToken: UInt64 = 1
    var nextConnect: UInt64 = 1
    var now: UInt64 = 0
    var links: Set<UInt16> = []

    enum Purpose {
        case connection(ConnectionCommandPurpose)
        case advertising(AdvertisingCommandPurpose)
    }

    mutating func submit(_ command: any HCICommandEncodable, _ purpose: Purpose) {
        guard let packet = try? command.encodedH4() else { return }
        let token = CommandToken(rawValue: nextToken)
        nextToken += 1
        purposes[token] = purpose
        run(flow.submit(packet, opcode: type(of: command).opcode, token: token, now: now, timeout: nil))
    }

    mutating func run(_ actions: [FlowAction]) {
        for a in actions {
            guard case .complete(let token, let result) = a, let p = purposes.removeValue(forKey: token) else { continue }
            switch p {
            case .connection(let c): run(connections.commandAnswered(c, result, now: now))
            case .advertising(let a): run(advertiser.commandAnswered(a, result))
            }
        }
    }

    mutating func run(_ actions: [ConnectionAction]) {
        for a in actions {
            switch a {
            case .sendCommand(let c, let p): submit(c, .connection(p))
            case .sendL2CAP(let h, let frame):
                if acl.hasLink(h) { _ = try? acl.enqueue(frame, handle: h) }
            case .connected(_, let s):
                precondition(s.handle <= 0x0EFF, "a link with an invalid handle was opened")
                open(s.handle)
            case .linkOpened(let s):
                precondition(s.handle <= 0x0EFF, "a link with an invalid handle was opened")
                open(s.handle)
                run(advertiser.peripheralLinkOpened(handle: s.handle))
            case .linkClosed(let s, _):
                if links.remove(s.handle) != nil, s.role == .peripheral { run(advertiser.peripheralLinkClosed(handle: s.handle)) }
                _ = acl.removeLink(s.handle)
                reassembler.removeLink(s.handle)
            case .connectFailed, .linkUpdated, .disconnectFailed, .parametersUpdated, .phyUpdated, .dataLengthSet: break
            }
        }
    }

    mutating func run(_ actions: [AdvertisingAction]) {
        for a in actions {
            if case .send(let c, let p) = a { submit(c, .advertising(p)) }
        }
    }

    mutating func open(_ handle: UInt16) {
        links.insert(handle)
        acl.addLink(handle)
        reassembler.removeLink(handle)
    }

    mutating func event(_ bytes: UnsafeRawBufferPointer) {
        guard let e = try? HCIEvent(parsing: bytes) else { return }
        switch e {
        case .commandComplete, .commandStatus: run(flow.handleEvent(e, now: now))
        case .leMeta(.advertisingSetTerminated(let t)): run(advertiser.advertisingSetTerminated(t))
        case .leMeta(let meta): run(connections.handle(meta, now: now))
        case .disconnectionComplete: run(connections.handle(e, now: now))
        case .numberOfCompletedPackets(let n): _ = acl.handle(n)
        default: break
        }
    }

    mutating func aclPacket(_ bytes: UnsafeRawBufferPointer) {
        guard let p = try? ACLPacket(parsing: bytes) else { return }
        var signaling: [(UInt16, [UInt8])] = []
        _ = reassembler.append(handle: p.header.handle, boundary: p.header.packetBoundary, fragment: p.payload) { h, cid, payload in
            if cid == .leSignaling { signaling.append((h, Array(payload))) }
        }
        for (h, s) in signaling where links.contains(h) {
            // The credit channels' commands are l2cap_channels' to fuzz; the rest is answered here.
            let route = s.withUnsafeBytes { p -> [ConnectionAction] in
                if case .handled(let a) = connections.receivedSignaling(handle: h, payload: p) { return a }
                return []
            }
            run(route)
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = UnsafeRawBufferPointer(start: data, count: size)[...]
    var g = Glue()
    // The first byte picks legacy or extended advertising (4 sets, 300 bytes).
    if let first = input.popFirst(), first & 1 == 1 {
        g.advertiser = Advertiser(capabilities: AdvertisingCapabilities(extendedCommands: true, sets: 4, maximumDataLength: 300))
    }
    func take(_ n: Int) -> [UInt8] {
        let b = Array(input.prefix(n))
        input = input.dropFirst(min(n, input.count))
        return b
    }
    while let step = input.popFirst() {
        switch step % 10 {
        case 0, 1, 2:
            let n = Int(input.popFirst() ?? 0)
            take(n).withUnsafeBytes { g.event($0) }
        case 3:
            let n = Int(input.popFirst() ?? 0)
            take(n).withUnsafeBytes { g.aclPacket($0) }
        case 4:
            let b = take(1).first ?? 0
            let id = ConnectRequestID(rawValue: g.nextConnect)
            g.nextConnect += 1
            g.run(g.connections.connect(id, to: LEAddress(BluetoothAddress(rawValue: UInt64(b)), type: .public),
                                        timeout: UInt64(step) * 100_000_000, now: g.now))
        case 5:
            g.run(g.connections.cancelConnect(ConnectRequestID(rawValue: UInt64(step >> 4)), now: g.now))
        case 6:
            if let h = g.links.sorted().first { g.run(g.connections.disconnect(h)) }
        case 7:
            g.now &+= UInt64(step) * 50_000_000
            g.run(g.flow.timerFired(now: g.now))
            g.run(g.connections.timerFired(now: g.now))
        case 8:
            if step & 0x10 != 0 {
                let long = step & 0x20 != 0
                let config = AdvertisingConfiguration(advertisingData: [UInt8](repeating: 0, count: long ? 280 : 3),
                                                      maximumConnections: Int(step >> 6) + 1,
                                                      advertisingSet: step >> 6)
                if let actions = try? g.advertiser.start(config) { g.run(actions) }
            } else {
                g.run(g.advertiser.stop(step & 0x20 != 0 ? nil : step >> 6))
            }
        default:
            if let h = g.links.sorted().first {
                switch step & 0x30 {
                case 0x10:
                    let p = L2CAPConnectionParameters(intervalMin: 24, intervalMax: 40, peripheralLatency: 0, timeoutMultiplier: 400)
                    if let actions = try? g.connections.updateParameters(h, p, now: g.now) { g.run(actions) }
                case 0x20:
                    // A PHY request (LE PHY Update Complete or the timer ends it) or a data length.
                    if step & 0x40 != 0 {
                        let phys = LEPHYSet(rawValue: (step >> 6) | 1)
                        if let actions = try? g.connections.setPHY(h, tx: phys, rx: phys, now: g.now) { g.run(actions) }
                    } else if let actions = try? g.connections.setDataLength(h, txOctets: 27 + UInt16(step), txTime: 2120) {
                        g.run(actions)
                    }
                default:
                    _ = try? g.acl.enqueue([UInt8](repeating: 0, count: Int(step)), handle: h)
                }
            }
        }
        precondition(g.advertiser.peripheralLinks >= 0)
    }
    return 0
}
