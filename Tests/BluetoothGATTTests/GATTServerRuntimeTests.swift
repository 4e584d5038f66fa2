import BluetoothHost
import BluetoothWire
import Glibc
import Synchronization
import Testing
@testable import BluetoothGATT

/// A bearer that records what the server sends and has room or not, as a test says.
final class RoomBearer: ATTBearer, @unchecked Sendable {
    let sent = Mutex<[[UInt8]]>([])
    let security: LinkSecurity
    let peerIdentity: LEAddress?
    init(security: LinkSecurity = .unencrypted, peerIdentity: LEAddress? = nil) {
        self.security = security
        self.peerIdentity = peerIdentity
    }
    private let room = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((true, []))
    private let receiver = Mutex<(@Sendable (UnsafeRawBufferPointer) -> Void)?>(nil)

    var maximumMTU: UInt16 { 517 }
    var description: String { "room bearer" }
    var sendsWithoutBlocking: Bool { true }
    func start(received: @escaping @Sendable (UnsafeRawBufferPointer) -> Void, closed: @escaping @Sendable (ATTBearerClosed) -> Void) {
        receiver.withLock { $0 = received }
    }
    func send(_ pdu: [UInt8]) throws(ATTBearerClosed) { sent.withLock { $0.append(pdu) } }
    func close() {}
    func hasRoom(for bytes: Int) -> Bool { room.withLock { $0.open } }
    func waitForRoom(for bytes: Int) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = room.withLock { r -> Bool in
                if r.open { return true }
                r.waiters.append(c)
                return false
            }
            if now { c.resume() }
        }
    }
    var waiting: Int { room.withLock { $0.waiters.count } }
    func setRoom(_ open: Bool) {
        let ready = room.withLock { r -> [CheckedContinuation<Void, Never>] in
            r.open = open
            guard open else { return [] }
            defer { r.waiters = [] }
            return r.waiters
        }
        for c in ready { c.resume() }
    }
    func deliver(_ pdu: [UInt8]) {
        let r = receiver.withLock { $0 }
        pdu.withUnsafeBytes { r?($0) }
    }
}

@Suite struct GATTServerRuntimeTests {
    let level = BluetoothUUID(0x2A19)

    @Test func notificationsWaitForRoomOrReportAFullQueueInsteadOfGrowingMemory() async throws {
        let server = try GATTServer(services: [
            GATTLocalService(uuid: BluetoothUUID(0x180F), characteristics: [
                GATTLocalCharacteristic(uuid: level, properties: [.read, .notify], value: .stored([100])),
            ]),
        ])
        let bearer = RoomBearer()
        let client = server.attach(bearer)
        guard let value = server.valueHandle(of: level) else { Issue.record("no handle"); return }
        // The client enables notifications (CCCD right after the value).
        bearer.deliver([0x12, UInt8(value + 1), 0x00, 0x01, 0x00])
        #expect(bearer.sent.withLock { $0 } == [[0x13]])

        // The link's queue is full: notify refuses and sends nothing.
        bearer.setRoom(false)
        let refused = server.notify(value, value: [99])
        #expect(refused.sent.isEmpty)
        #expect(refused.failed.map { $0.1 } == [GATTServerError.sendQueueFull(client.id)])
        #expect(bearer.sent.withLock { $0.count } == 1)

        // notifyWhenReady waits for room, then sends.
        let waiter = Task { await server.notifyWhenReady(value, value: [98]) }
        while bearer.waiting == 0 { await Task.yield() }
        #expect(bearer.sent.withLock { $0.count } == 1, "nothing sent while the queue is full")
        bearer.setRoom(true)
        let done = await waiter.value
        #expect(done.sent == [client.id] && done.failed.isEmpty)
        #expect(bearer.sent.withLock { $0.last } == [0x1B, UInt8(value), 0x00, 98])
    }

    @Test("indicate(confirmed:): the hook runs as the confirmation is handled, once, before the next PDU")
    func theConfirmationHookRunsInsideTheServer() async throws {
        let server = try GATTServer(services: [
            GATTLocalService(uuid: BluetoothUUID(0x1808), characteristics: [
                GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A52), properties: [.write, .indicate]),
            ]),
        ])
        let bearer = RoomBearer()
        let client = server.attach(bearer)
        let racp = try #require(server.valueHandle(of: BluetoothUUID(0x2A52)))
        bearer.deliver([0x12, UInt8(racp + 1), 0x00, 0x02, 0x00])
        let hooked = Mutex(0)
        let sent = Task { try await server.indicate(racp, value: [6, 0, 1, 1], to: client.id, store: false) { hooked.withLock { $0 += 1 } } }
        #expect(await soon { bearer.sent.withLock { $0.last?.first == 0x1D } })
        #expect(hooked.withLock { $0 } == 0, "not before the confirmation")
        bearer.deliver([0x1E])
        #expect(hooked.withLock { $0 } == 1, "already when the confirmation was handled")
        try await sent.value
        // An indication without a hook, confirmed: the earlier hook is not called again.
        let plain = Task { try await server.indicate(racp, value: [6, 0, 4, 1], to: client.id, store: false) }
        #expect(await soon { bearer.sent.withLock { $0.filter { $0.first == 0x1D }.count == 2 } })
        bearer.deliver([0x1E])
        try await plain.value
        #expect(hooked.withLock { $0 } == 1)
    }

    /// Polls `condition` every 5 ms for up to 2 s.
    func soon(_ condition: () -> Bool) async -> Bool {
        for _ in 0 ..< 400 {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return condition()
    }

    @Test("An update held for a change-unaware client goes out with the value stored when it is sent")
    func heldUpdatesNeverFollowANewerValue() async throws {
        var template = Array("/tmp/hcigatt-held-XXXXXX".utf8CString)
        let dir = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
        defer {
            unlink(dir + "/D0D1D2D3D401-public.gatt-server")
            rmdir(dir)
        }
        let identity = LEAddress(BluetoothAddress(rawValue: 0xD0D1_D2D3_D401), type: .public)
        let bonded = GATTBondedClients(store: BondStore(directory: dir))
        let server = try GATTServer(services: [
            .genericAccess(deviceName: "held"), .genericAttribute(),
            GATTLocalService(uuid: BluetoothUUID(0x1809), characteristics: [
                GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A1E), properties: .notify, value: .stored([1])),
            ]),
        ], bondedClients: bonded)
        let sc = try #require(server.valueHandle(of: GATTServerUUID.serviceChanged))
        let b = try #require(server.valueHandle(of: BluetoothUUID(0x2A1E)))
        // The client was bonded under another database, with Service Changed indications on.
        bonded.update(ATTBondedClientState(databaseHash: [UInt8](repeating: 0, count: 16), configurations: [sc + 1: 0x0002],
                                           serviceChanged: 0x0002, features: [], changeAware: true), for: identity)
        let bearer = RoomBearer(security: LinkSecurity(encrypted: true, keySize: 16, authenticated: false, secureConnections: true, bonded: true),
                                peerIdentity: identity)
        let client = server.attach(bearer)
        let indication: [UInt8] = [0x1D, UInt8(sc & 0xFF), UInt8(sc >> 8), 0x01, 0x00, 0xFF, 0xFF]
        #expect(await soon { bearer.sent.withLock { $0.contains(indication) } }, "Service Changed is due")
        // Change-unaware, it subscribes; the update is held.
        bearer.deliver([0x12, UInt8(b + 1), 0x00, 0x01, 0x00])
        #expect(server.notify(b, value: [10]).failed.map(\.1) == [.server(.changeUnaware(client.id, handle: b))])
        // Confirming Service Changed makes it aware; the release waits for room on the link.
        bearer.setRoom(false)
        bearer.deliver([0x1E])
        #expect(await soon { bearer.waiting == 1 })
        // Meanwhile the application updates the value (stored; the link has no room for it).
        #expect(server.notify(b, value: [11]).failed.map(\.1) == [.sendQueueFull(client.id)])
        bearer.setRoom(true)
        let ofB: ([[UInt8]]) -> [[UInt8]] = { $0.filter { $0.count == 4 && $0[0] == 0x1B && $0[1] == UInt8(b) } }
        #expect(await soon { !ofB(bearer.sent.withLock { $0 }).isEmpty }, "the held update is released")
        #expect(ofB(bearer.sent.withLock { $0 }) == [[0x1B, UInt8(b), 0x00, 11]], "the value stored now, not the one held")
    }

    @Test func severalValuesGoInOneMultipleHandleValueNotificationWhenTheClientSupportsIt() throws {
        let a = BluetoothUUID(0x2A37), b = BluetoothUUID(0x2A38)
        let server = try GATTServer(services: [
            .genericAttribute(),
            GATTLocalService(uuid: BluetoothUUID(0x180D), characteristics: [
                GATTLocalCharacteristic(uuid: a, properties: [.notify], value: .stored([0])),
                GATTLocalCharacteristic(uuid: b, properties: [.read, .notify], value: .stored([0])),
            ]),
        ])
        guard let ha = server.valueHandle(of: a), let hb = server.valueHandle(of: b),
              let features = server.valueHandle(of: BluetoothUUID(0x2B29)) else { Issue.record("handles"); return }
        func subscribe(_ bearer: RoomBearer) {
            for h in [ha, hb] { bearer.deliver([0x12, UInt8(h + 1), 0x00, 0x01, 0x00]) }
        }
        // Without the feature: one notification per value.
        let plain = RoomBearer()
        let c1 = server.attach(plain)
        subscribe(plain)
        #expect(try server.notify([(ha, [1]), (hb, [2])], to: c1.id) == 2)
        #expect(plain.sent.withLock { Array($0.suffix(2)) } == [[0x1B, UInt8(ha), 0, 1], [0x1B, UInt8(hb), 0, 2]])
        // With it (Client Supported Features bit 2): one PDU, handle-length-value tuples.
        let modern = RoomBearer()
        let c2 = server.attach(modern)
        subscribe(modern)
        modern.deliver([0x12, UInt8(features), 0x00, 0x04])
        #expect(modern.sent.withLock { $0.last } == [0x13])
        #expect(try server.notify([(ha, [3]), (hb, [4, 5])], to: c2.id) == 2)
        #expect(modern.sent.withLock { $0.last } == [0x23, UInt8(ha), 0, 1, 0, 3, UInt8(hb), 0, 2, 0, 4, 5])
        // Not subscribed: refused, nothing sent.
        let other = RoomBearer()
        let c3 = server.attach(other)
        #expect(throws: GATTServerError.self) { try server.notify([(ha, [6])], to: c3.id) }
        #expect(other.sent.withLock { $0.isEmpty })
    }
}
