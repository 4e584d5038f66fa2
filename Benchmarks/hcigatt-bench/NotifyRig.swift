import BluetoothGATT
import BluetoothHost
import BluetoothWire
import Dispatch
import FakeController
import Synchronization

/// The GATT server's notification path on a live host (issue 26): `GATTServer.notify` →
/// the link's ATT queue → the host's driver thread → ACL packet → the transport's write.
/// The controller is the tests' fake behind a socketpair, answering each ACL packet with
/// Number Of Completed Packets at once (a controller that keeps up), so the figure is the
/// host's own cost with no radio in the way. Built on first use: a host, a peripheral-role
/// link from a central that enabled notifications of one characteristic.
final class NotifyRig: @unchecked Sendable {
    static let shared: NotifyRig = NotifyRig()

    let transport: FakeControllerTransport
    let host: HCIHost
    let server: GATTServer
    let handle: UInt16
    /// ACL packets written, and the count `run` waits for.
    private final class Written: Sendable {
        let state = Mutex<(count: Int, target: Int)>((0, Int.max))
        let reached = DispatchSemaphore(value: 0)
    }
    private let written = Written()

    private init() {
        let subscribed = DispatchSemaphore(value: 0)
        let written = self.written
        transport = FakeControllerTransport(keepsACL: false, onACL: { packet, _ in
            let now = written.state.withLock { w -> Bool in
                w.count += 1
                return w.count == w.target
            }
            if now { written.reached.signal() }
            // The Write Response to the central's CCCD write: the link is subscribed (after
            // the count, so that `run` starts from a count that includes it).
            if packet.count >= 10, packet[9] == 0x13 { subscribed.signal() }
        })
        let made = Mutex<(HCIHost, GATTServer, UInt16)?>(nil)
        let opened = DispatchSemaphore(value: 0)
        let transport = self.transport
        Task {
            do {
                let host = try await HCIHost.open(transport: transport)
                let server = try GATTServer(services: [
                    .genericAccess(deviceName: "bench"), .genericAttribute(),
                    GATTLocalService(uuid: BluetoothUUID(0x180D), characteristics: [
                        GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A37), properties: [.notify], value: .stored([0x06, 72])),
                    ]),
                ])
                guard let handle = server.valueHandle(of: BluetoothUUID(0x2A37)) else { fatalError("no value handle") }
                Task { for await link in host.incomingConnections { server.attach(link) } }
                _ = try await host.startAdvertising(AdvertisingConfiguration(advertisingData: [2, 0x01, 0x06]))
                made.withLock { $0 = (host, server, handle) }
            } catch {
                fatalError("hcigatt-bench: the notify rig did not start: \(error)")
            }
            opened.signal()
        }
        opened.wait()
        guard let (host, server, handle) = made.withLock({ $0 }) else { fatalError("no rig") }
        (self.host, self.server, self.handle) = (host, server, handle)
        // A central connects and writes 0x0001 to the CCCD (the handle after the value).
        transport.injectEvent(connectionCompleteEvent(handle: 0x40, role: .peripheral))
        let cccd = handle + 1
        transport.injectACL(handle: 0x40, [5, 0, 4, 0, 0x12, UInt8(cccd & 0xFF), UInt8(cccd >> 8), 0x01, 0x00])
        subscribed.wait()
    }

    /// Sends `n` notifications (each value differs), waiting for room in the link's queue
    /// when it is full, then until the last has been written to the transport.
    func run(_ n: Int) -> UInt64 {
        written.state.withLock { $0.target = $0.count + n }
        let server = self.server, handle = self.handle
        Task {
            var value: [UInt8] = [0x06, 0]
            for i in 0 ..< n {
                value[1] = UInt8(truncatingIfNeeded: i)
                // One ACL packet each (ATT_MTU 23, a 2-byte value); one lost would leave `run`
                // waiting for ever, so a failure ends the benchmark instead.
                if server.notify(handle, value: value).sent.isEmpty,
                   await server.notifyWhenReady(handle, value: value).sent.isEmpty {
                    fatalError("hcigatt-bench: a notification was not sent")
                }
            }
        }
        written.reached.wait()
        return UInt64(n)
    }
}
