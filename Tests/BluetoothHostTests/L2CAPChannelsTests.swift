import FakeController
import BluetoothWire
import Testing
@testable import BluetoothHost

/// The L2CAP layer: frames reassembled and routed by the channels the layers above registered.
@Suite struct L2CAPChannelsTests {
    func feed(_ c: inout L2CAPChannels, _ handle: UInt16, _ boundary: ACLPacketBoundaryFlag, _ bytes: [UInt8])
        -> [(UInt16, L2CAPChannelConsumer, [UInt8])] {
        var got: [(UInt16, L2CAPChannelConsumer, [UInt8])] = []
        let failures = bytes.withUnsafeBytes { b in
            c.receive(handle: handle, boundary: boundary, fragment: b) { h, consumer, p in got.append((h, consumer, Array(p))) }
        }
        #expect(failures.isEmpty)
        return got
    }

    @Test func framesGoToTheRegisteredConsumerAndOthersAreCounted() throws {
        var c = L2CAPChannels()
        c.register(.att, to: .att)
        c.register(.leSignaling, to: .leSignaling)
        let att = try L2CAPChannels.frame(.att, [0x0A, 0x03, 0x00])
        #expect(att == [3, 0, 4, 0, 0x0A, 0x03, 0x00])
        var got = feed(&c, 0x40, .firstFlushable, att)
        #expect(got.count == 1 && got[0].0 == 0x40 && got[0].1 == .att && got[0].2 == [0x0A, 0x03, 0x00])
        // SMP is not registered here: dropped and counted, not delivered.
        got = feed(&c, 0x40, .firstFlushable, try L2CAPChannels.frame(.smp, [0x01]))
        #expect(got.isEmpty && c.unroutedFrames == 1)
        // A frame in two fragments arrives whole.
        let sig = try L2CAPChannels.frame(.leSignaling, [0x12, 0x01, 0x08, 0x00, 6, 0, 12, 0, 0, 0, 0x48, 0])
        #expect(feed(&c, 0x41, .firstFlushable, Array(sig[0 ..< 5])).isEmpty)
        got = feed(&c, 0x41, .continuing, Array(sig[5...]))
        #expect(got.count == 1 && got[0].1 == .leSignaling && got[0].2.count == 12)
        // Registrations can be replaced and withdrawn.
        c.register(.att, to: .smp)
        #expect(c.consumer(of: .att) == .smp)
        c.unregister(.att)
        #expect(c.consumer(of: .att) == nil)
        #expect(feed(&c, 0x40, .firstFlushable, att).isEmpty && c.unroutedFrames == 2)
    }

    @Test func aPayloadTooLongForOneFrameIsAnError() {
        #expect(throws: HostError.self) { try L2CAPChannels.frame(.att, [UInt8](repeating: 0, count: 65536)) }
    }
}
