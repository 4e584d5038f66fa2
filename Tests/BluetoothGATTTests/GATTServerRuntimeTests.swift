import BluetoothWire
import Synchronization
import Testing
@testable import BluetoothGATT

/// A bearer that records what the server sends and has room or not, as a test says.
final class RoomBearer: ATTBearer, @unchecked Sendable {
    let sent = Mutex<[[UInt8]]>([])
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
