import BluetoothWire
import Synchronization
@testable import BluetoothGATT

/// One attribute of the fake server's database.
struct FakeAttribute: Sendable {
    var handle: UInt16
    var type: BluetoothUUID
    var value: [UInt8]
    var readable = true
    var writable = false
    /// Service declarations: the last handle of the service.
    var groupEnd: UInt16 = 0
}

/// Builds a GATT database (Core Vol 3 Part G §3) as attributes, and the database a client
/// should discover from it.
struct FakeDatabaseBuilder {
    var attributes: [FakeAttribute] = []
    var services: [GATTService] = []
    var nextHandle: UInt16 = 1

    init(startHandle: UInt16 = 1) { nextHandle = startHandle }

    private mutating func add(_ type: BluetoothUUID, _ value: [UInt8], readable: Bool = true, writable: Bool = false,
                              declaresService: Bool = false) -> UInt16 {
        let h = nextHandle
        nextHandle += 1
        attributes.append(FakeAttribute(handle: h, type: type, value: value, readable: readable, writable: writable))
        if !declaresService, !services.isEmpty { services[services.count - 1].endHandle = h }
        return h
    }

    @discardableResult
    mutating func service(_ uuid: BluetoothUUID, primary: Bool = true) -> UInt16 {
        let h = add(primary ? GATTAttributeType.primaryService : GATTAttributeType.secondaryService, uuidBytes(uuid), declaresService: true)
        services.append(GATTService(startHandle: h, endHandle: h, uuid: uuid, isPrimary: primary))
        return h
    }

    mutating func include(_ s: GATTService) {
        var v = le(s.startHandle) + le(s.endHandle)
        if let u = s.uuid.uuid16 { v += le(u) }
        let h = add(GATTAttributeType.include, v)
        services[services.count - 1].includedServices.append(
            GATTIncludedService(declarationHandle: h, startHandle: s.startHandle, endHandle: s.endHandle, uuid: s.uuid))
    }

    @discardableResult
    mutating func characteristic(_ uuid: BluetoothUUID, _ props: GATTCharacteristicProperties, value: [UInt8] = [],
                                 readable: Bool = true, writable: Bool = false) -> UInt16 {
        let decl = nextHandle
        _ = add(GATTAttributeType.characteristic, [props.rawValue] + le(decl + 1) + uuidBytes(uuid))
        let vh = add(uuid, value, readable: readable, writable: writable)
        services[services.count - 1].characteristics.append(
            GATTCharacteristic(declarationHandle: decl, valueHandle: vh, endHandle: vh, uuid: uuid, properties: props))
        return vh
    }

    @discardableResult
    mutating func descriptor(_ uuid: BluetoothUUID, value: [UInt8] = [], writable: Bool = false) -> UInt16 {
        let h = add(uuid, value, writable: writable)
        let s = services.count - 1
        let c = services[s].characteristics.count - 1
        services[s].characteristics[c].endHandle = h
        services[s].characteristics[c].descriptors.append(GATTDescriptor(handle: h, uuid: uuid))
        return h
    }

    @discardableResult
    mutating func cccd() -> UInt16 {
        descriptor(GATTAttributeType.clientCharacteristicConfiguration, value: [0, 0], writable: true)
    }

    /// The attributes with service group ends filled in, and the expected database
    /// (characteristic ends per §4.6.1: the last one ends at the service end).
    func build() -> ([FakeAttribute], GATTDatabase) {
        var attrs = attributes
        var expected = services
        for s in services.indices {
            if let i = attrs.firstIndex(where: { $0.handle == services[s].startHandle }) {
                attrs[i].groupEnd = services[s].endHandle
            }
            if let last = expected[s].characteristics.indices.last {
                expected[s].characteristics[last].endHandle = services[s].endHandle
            }
        }
        return (attrs, GATTDatabase(services: expected))
    }
}

func le(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }

func uuidBytes(_ uuid: BluetoothUUID) -> [UInt8] {
    if let v = uuid.uuid16 { return le(v) }
    var out: [UInt8] = []
    for i in 0 ..< 8 { out.append(UInt8(truncatingIfNeeded: uuid.low >> (8 * UInt64(i)))) }
    for i in 0 ..< 8 { out.append(UInt8(truncatingIfNeeded: uuid.high >> (8 * UInt64(i)))) }
    return out
}

/// An in-memory ATT bearer whose peer is a small GATT server (Core Vol 3 Part F §3.4).
/// Responses are delivered in order from a task, never from inside `send`.
final class FakeATTServer: ATTBearer, Sendable {
    enum Fault: Sendable {
        case none
        /// Requests are swallowed, never answered.
        case neverAnswer
        /// The next response is corrupted (a list response loses its last byte; others
        /// become a truncated Error Response).
        case malformNext
        /// After this many more requests, the next one closes the bearer instead.
        case closeAfter(Int)
        /// The next request gets an Error Response with this code.
        case errorNext(ATTErrorCode)
        /// Prepare Write Responses echo the value with its first byte changed.
        case corruptEcho
    }

    enum Delivery: Sendable {
        case pdu([UInt8])
        case close(ATTBearerClosed)
    }

    struct State {
        var attributes: [FakeAttribute]
        var mtu = ATT.defaultMTU
        var prepareQueue: [(UInt16, UInt16, [UInt8])] = []
        var fault: Fault = .none
        var closed = false
        /// Every PDU the client sent, in order.
        var received: [[UInt8]] = []
        var confirmations = 0
    }

    let maximumMTU: UInt16
    let description = "fake ATT server"
    let state: Mutex<State>
    let deliveries: AsyncStream<Delivery>
    let deliver: AsyncStream<Delivery>.Continuation
    static let peerTerminated = ATTBearerClosed(reason: .remoteUserTerminatedConnection,
                                                message: "disconnected by the peer: Remote User Terminated Connection (0x13)")

    init(attributes: [FakeAttribute], maximumMTU: UInt16 = 517) {
        self.maximumMTU = maximumMTU
        state = Mutex(State(attributes: attributes))
        (deliveries, deliver) = AsyncStream.makeStream(of: Delivery.self)
    }

    func start(received: @escaping @Sendable (UnsafeRawBufferPointer) -> Void, closed: @escaping @Sendable (ATTBearerClosed) -> Void) {
        let deliveries = self.deliveries
        Task {
            for await d in deliveries {
                switch d {
                case .pdu(let p): p.withUnsafeBytes { received($0) }
                case .close(let r):
                    closed(r)
                    return
                }
            }
        }
    }

    func send(_ pdu: [UInt8]) throws(ATTBearerClosed) {
        let out: [Delivery]? = state.withLock { s in
            if s.closed { return nil }
            s.received.append(pdu)
            return handle(pdu, &s)
        }
        guard let out else { throw ATTBearerClosed(message: "fake bearer closed") }
        for d in out { deliver.yield(d) }
    }

    func close() {
        let first = state.withLock { s in
            defer { s.closed = true }
            return !s.closed
        }
        if first { deliver.yield(.close(ATTBearerClosed(message: "closed by the client"))) }
    }

    // MARK: Test controls

    func setFault(_ f: Fault) { state.withLock { $0.fault = f } }
    var confirmations: Int { state.withLock { $0.confirmations } }
    var receivedPDUs: [[UInt8]] { state.withLock { $0.received } }
    var mtu: Int { state.withLock { $0.mtu } }
    func value(_ handle: UInt16) -> [UInt8]? { state.withLock { s in s.attributes.first { $0.handle == handle }?.value } }
    /// Write Requests the client made to `handle`.
    func writes(to handle: UInt16) -> [[UInt8]] {
        receivedPDUs.filter { $0.count >= 3 && $0[0] == 0x12 && UInt16($0[1]) | UInt16($0[2]) << 8 == handle }
            .map { Array($0[3...]) }
    }
    func requests(_ opcode: ATTOpcode) -> Int { receivedPDUs.filter { $0.first == opcode.rawValue }.count }

    func notify(_ handle: UInt16, _ value: [UInt8]) { deliver.yield(.pdu([0x1B] + le(handle) + value)) }
    func indicate(_ handle: UInt16, _ value: [UInt8]) { deliver.yield(.pdu([0x1D] + le(handle) + value)) }
    func inject(_ pdu: [UInt8]) { deliver.yield(.pdu(pdu)) }
    func disconnect(_ reason: ATTBearerClosed = FakeATTServer.peerTerminated) {
        state.withLock { $0.closed = true }
        deliver.yield(.close(reason))
    }
    func replaceAttributes(_ a: [FakeAttribute]) { state.withLock { $0.attributes = a } }

    // MARK: Server

    private func handle(_ pdu: [UInt8], _ s: inout State) -> [Delivery] {
        guard let op = pdu.first else { return [] }
        if op == 0x1E {
            s.confirmations += 1
            return []
        }
        let isRequest = op & 0x40 == 0
        if isRequest {
            switch s.fault {
            case .neverAnswer: return []
            case .closeAfter(let n):
                if n == 0 {
                    s.closed = true
                    s.fault = .none
                    return [.close(FakeATTServer.peerTerminated)]
                }
                s.fault = .closeAfter(n - 1)
            case .errorNext(let code):
                s.fault = .none
                return [.pdu(error(op, 0, code))]
            case .none, .malformNext, .corruptEcho: break
            }
        }
        guard var response = respond(pdu, &s) else { return [] }
        if case .corruptEcho = s.fault, response[0] == 0x17, response.count > 5 { response[5] ^= 0xFF }
        if case .malformNext = s.fault {
            s.fault = .none
            if [0x05, 0x07, 0x09, 0x11].contains(response[0]) { response.removeLast() } else { response = [0x01, op] }
        }
        return [.pdu(response)]
    }

    private func error(_ op: UInt8, _ handle: UInt16, _ code: ATTErrorCode) -> [UInt8] {
        [0x01, op] + le(handle) + [code.rawValue]
    }

    private func respond(_ pdu: [UInt8], _ s: inout State) -> [UInt8]? {
        func u16(_ i: Int) -> UInt16 { UInt16(pdu[i]) | UInt16(pdu[i + 1]) << 8 }
        let op = pdu[0]
        let mtu = s.mtu
        func range() -> (UInt16, UInt16)? {
            guard pdu.count >= 5 else { return nil }
            let a = u16(1), b = u16(3)
            return a == 0 || a > b ? nil : (a, b)
        }
        func uuid(from i: Int) -> BluetoothUUID? {
            Array(pdu[i...]).withUnsafeBytes { try? BluetoothUUID(wire: $0) }
        }
        switch op {
        case 0x02: // Exchange MTU
            s.mtu = max(ATT.defaultMTU, Int(min(u16(1), maximumMTU)))
            return [0x03] + le(maximumMTU)
        case 0x04: // Find Information
            guard let (a, b) = range() else { return error(op, pdu.count >= 3 ? u16(1) : 0, .invalidHandle) }
            var builder = ATTFindInformationResponseBuilder(mtu: mtu)
            for attr in s.attributes where attr.handle >= a && attr.handle <= b {
                if !builder.append(handle: attr.handle, type: attr.type) { break }
            }
            return builder.isEmpty ? error(op, a, .attributeNotFound) : try? builder.encoded()
        case 0x06: // Find By Type Value
            guard let (a, b) = range(), pdu.count >= 7 else { return error(op, 0, .invalidHandle) }
            let type = BluetoothUUID(u16(5))
            let value = Array(pdu[7...])
            var builder = ATTFindByTypeValueResponseBuilder(mtu: mtu)
            for attr in s.attributes where attr.handle >= a && attr.handle <= b && attr.type == type && attr.value == value {
                if !builder.append(foundHandle: attr.handle, groupEndHandle: max(attr.groupEnd, attr.handle)) { break }
            }
            return builder.isEmpty ? error(op, a, .attributeNotFound) : try? builder.encoded()
        case 0x08: // Read By Type
            guard let (a, b) = range(), let type = uuid(from: 5) else { return error(op, 0, .invalidHandle) }
            var builder = ATTReadByTypeResponseBuilder(mtu: mtu)
            for attr in s.attributes where attr.handle >= a && attr.handle <= b && attr.type == type {
                if !attr.readable {
                    if builder.isEmpty { return error(op, attr.handle, .readNotPermitted) }
                    break
                }
                if !builder.append(handle: attr.handle, value: attr.value) { break }
            }
            return builder.isEmpty ? error(op, a, .attributeNotFound) : try? builder.encoded()
        case 0x10: // Read By Group Type
            guard let (a, b) = range(), let type = uuid(from: 5) else { return error(op, 0, .invalidHandle) }
            guard type == GATTAttributeType.primaryService || type == GATTAttributeType.secondaryService else {
                return error(op, a, .unsupportedGroupType)
            }
            var builder = ATTReadByGroupTypeResponseBuilder(mtu: mtu)
            for attr in s.attributes where attr.handle >= a && attr.handle <= b && attr.type == type {
                if !builder.append(handle: attr.handle, endGroupHandle: attr.groupEnd, value: attr.value) { break }
            }
            return builder.isEmpty ? error(op, a, .attributeNotFound) : try? builder.encoded()
        case 0x0A, 0x0C: // Read, Read Blob
            let h = u16(1)
            guard let attr = s.attributes.first(where: { $0.handle == h }) else { return error(op, h, .invalidHandle) }
            guard attr.readable else { return error(op, h, .readNotPermitted) }
            let offset = op == 0x0C ? Int(u16(3)) : 0
            guard offset <= attr.value.count else { return error(op, h, .invalidOffset) }
            return [op + 1] + attr.value[offset ..< min(attr.value.count, offset + mtu - 1)]
        case 0x0E: // Read Multiple
            var out: [UInt8] = [0x0F]
            var i = 1
            while i + 1 < pdu.count {
                let h = u16(i)
                guard let attr = s.attributes.first(where: { $0.handle == h }) else { return error(op, h, .invalidHandle) }
                out += attr.value
                i += 2
            }
            return Array(out.prefix(mtu))
        case 0x20: // Read Multiple Variable: Length + value for each, cut at the MTU
            var out: [UInt8] = [0x21]
            var i = 1
            while i + 1 < pdu.count {
                let h = u16(i)
                guard let attr = s.attributes.first(where: { $0.handle == h }) else { return error(op, h, .invalidHandle) }
                guard attr.readable else { return error(op, h, .readNotPermitted) }
                out += le(UInt16(attr.value.count)) + attr.value
                i += 2
            }
            return Array(out.prefix(mtu))
        case 0x12, 0x52: // Write Request, Write Command
            let h = u16(1)
            guard let i = s.attributes.firstIndex(where: { $0.handle == h }) else {
                return op == 0x12 ? error(op, h, .invalidHandle) : nil
            }
            guard s.attributes[i].writable else { return op == 0x12 ? error(op, h, .writeNotPermitted) : nil }
            s.attributes[i].value = Array(pdu[3...])
            return op == 0x12 ? [0x13] : nil
        case 0x16: // Prepare Write
            let h = u16(1)
            guard let attr = s.attributes.first(where: { $0.handle == h }) else { return error(op, h, .invalidHandle) }
            guard attr.writable else { return error(op, h, .writeNotPermitted) }
            s.prepareQueue.append((h, u16(3), Array(pdu[5...])))
            return [0x17] + pdu[1...]
        case 0x18: // Execute Write
            if pdu.count >= 2, pdu[1] == 1 {
                for (h, offset, part) in s.prepareQueue {
                    guard let i = s.attributes.firstIndex(where: { $0.handle == h }) else { continue }
                    var v = s.attributes[i].value
                    if v.count < Int(offset) { v += [UInt8](repeating: 0, count: Int(offset) - v.count) }
                    v = Array(v[0 ..< Int(offset)]) + part
                    s.attributes[i].value = v
                }
            }
            s.prepareQueue = []
            return [0x19]
        default:
            return op & 0x40 == 0 ? error(op, 0, .requestNotSupported) : nil
        }
    }
}

/// The test database: GAP, GATT (Service Changed), Health Thermometer (including
/// Battery), Device Information, Battery, a 128-bit service with long values that
/// includes a secondary 128-bit service.
struct TestDatabase {
    var attributes: [FakeAttribute]
    var expected: GATTDatabase
    static let vendorService = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF0")!
    static let longValueUUID = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF1")!
    static let writableUUID = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF2")!
    static let secondaryService = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF3")!
    static let longValue: [UInt8] = (0 ..< 600).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }

    static func make() -> TestDatabase {
        var b = FakeDatabaseBuilder()
        b.service(BluetoothUUID(0x1800))
        b.characteristic(BluetoothUUID(0x2A00), .read, value: Array("hcigatt fake".utf8))
        b.characteristic(BluetoothUUID(0x2A01), .read, value: [0x00, 0x03])

        b.service(BluetoothUUID(0x1801))
        b.characteristic(BluetoothUUID(0x2A05), .indicate, readable: false)
        b.cccd()

        // Battery first so Health Thermometer can include it.
        var battery = FakeDatabaseBuilder(startHandle: 0x0040)
        battery.service(BluetoothUUID(0x180F))
        battery.characteristic(BluetoothUUID(0x2A19), [.read, .notify], value: [87])
        battery.cccd()

        b.service(BluetoothUUID(0x1809))
        b.include(battery.services[0])
        b.characteristic(BluetoothUUID(0x2A1C), .indicate, readable: false)
        b.cccd()
        b.characteristic(BluetoothUUID(0x2A1D), .read, value: [0x02])
        b.characteristic(BluetoothUUID(0x2A1E), .notify, readable: false)
        b.cccd()
        b.characteristic(BluetoothUUID(0x2A21), [.read, .write, .indicate], value: le(60), writable: true)
        b.cccd()
        b.descriptor(BluetoothUUID(0x2906), value: le(1) + le(3600))

        b.service(BluetoothUUID(0x180A))
        b.characteristic(BluetoothUUID(0x2A29), .read, value: Array("Bumble".utf8))
        b.characteristic(BluetoothUUID(0x2A24), .read, value: Array("hcigatt-test".utf8))
        b.characteristic(BluetoothUUID(0x2A26), .read, value: Array("1.0".utf8))

        // Splice Battery in at 0x40.
        b.nextHandle = 0x0040
        b.attributes += battery.attributes
        b.services += battery.services
        b.nextHandle = battery.nextHandle

        var secondary = FakeDatabaseBuilder(startHandle: 0x0060)
        secondary.service(secondaryService, primary: false)
        secondary.characteristic(BluetoothUUID(0xFFE1), [.read, .notify], value: [1, 2, 3])
        secondary.cccd()

        b.nextHandle = 0x0050
        b.service(vendorService)
        b.include(secondary.services[0])
        b.characteristic(longValueUUID, .read, value: longValue)
        b.characteristic(writableUUID, [.read, .write, .writeWithoutResponse], value: [], writable: true)
        b.descriptor(BluetoothUUID(0x2901), value: Array("writable long value".utf8))

        b.attributes += secondary.attributes
        b.services += secondary.services
        let (attrs, db) = b.build()
        return TestDatabase(attributes: attrs, expected: db)
    }
}

/// A client on a fake server with the test database.
func makeClient(mtu: UInt16 = 517, timeout: Duration = .seconds(5),
                buffer: Int = 256, db: TestDatabase = .make()) -> (FakeATTServer, GATTClient, TestDatabase) {
    let server = FakeATTServer(attributes: db.attributes, maximumMTU: mtu)
    let client = GATTClient(bearer: server, options: .init(requestTimeout: timeout, notificationBufferSize: buffer))
    return (server, client, db)
}
