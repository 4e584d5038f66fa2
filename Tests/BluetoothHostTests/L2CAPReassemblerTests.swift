import FakeController
import Testing
@testable import BluetoothHost
import BluetoothWire

@Suite struct L2CAPReassemblerTests {
    struct Delivered: Equatable {
        var handle: UInt16
        var cid: UInt16
        var payload: [UInt8]
    }

    /// Feeds one fragment; returns delivered frames and errors.
    func feed(_ r: inout L2CAPReassembler, _ handle: UInt16, _ pb: ACLPacketBoundaryFlag, _ bytes: [UInt8])
        -> ([Delivered], [L2CAPReassemblyError]) {
        var out: [Delivered] = []
        let errors = bytes.withUnsafeBytes { b in
            r.append(handle: handle, boundary: pb, fragment: b) { h, cid, payload in
                out.append(Delivered(handle: h, cid: cid.rawValue, payload: Array(payload)))
            }
        }
        return (out, errors)
    }

    @Test func completeStartIsDeliveredAsIs() {
        var r = L2CAPReassembler()
        let frame = l2capFrame(payloadLength: 10)
        let (d, e) = feed(&r, 1, .firstFlushable, frame)
        #expect(e.isEmpty)
        #expect(d == [Delivered(handle: 1, cid: 4, payload: Array(frame[4...]))])
        // PB 0b00 is accepted as a start too.
        #expect(feed(&r, 1, .firstNonFlushable, frame).0.count == 1)
        // An empty frame.
        #expect(feed(&r, 1, .firstFlushable, l2capFrame(cid: 6, payloadLength: 0)).0 == [Delivered(handle: 1, cid: 6, payload: [])])
    }

    @Test func threeFragmentsOnTwoInterleavedLinks() {
        var r = L2CAPReassembler()
        let a = l2capFrame(payloadLength: 60)   // 64 bytes
        let b = l2capFrame(cid: 5, payloadLength: 46)  // 50 bytes
        #expect(feed(&r, 1, .firstFlushable, Array(a[0 ..< 27])).0.isEmpty)
        #expect(feed(&r, 2, .firstFlushable, Array(b[0 ..< 20])).0.isEmpty)
        #expect(feed(&r, 1, .continuing, Array(a[27 ..< 54])).0.isEmpty)
        #expect(feed(&r, 2, .continuing, Array(b[20 ..< 40])).0.isEmpty)
        #expect(r.isReassembling(1) && r.isReassembling(2))
        #expect(r.pendingBytes == 64 + 50)
        let (d1, e1) = feed(&r, 1, .continuing, Array(a[54...]))
        #expect(e1.isEmpty && d1 == [Delivered(handle: 1, cid: 4, payload: Array(a[4...]))])
        let (d2, _) = feed(&r, 2, .continuing, Array(b[40...]))
        #expect(d2 == [Delivered(handle: 2, cid: 5, payload: Array(b[4...]))])
        #expect(r.pendingBytes == 0 && r.framesDelivered == 2 && r.errors == 0)
    }

    @Test func headerSplitAcrossFragments() {
        var r = L2CAPReassembler()
        let a = l2capFrame(payloadLength: 5)
        #expect(feed(&r, 1, .firstFlushable, [a[0]]).0.isEmpty)
        #expect(feed(&r, 1, .continuing, Array(a[1 ..< 3])).0.isEmpty)
        let (d, e) = feed(&r, 1, .continuing, Array(a[3...]))
        #expect(e.isEmpty && d.first?.payload == Array(a[4...]))
    }

    @Test func continuationWithoutStart() {
        var r = L2CAPReassembler()
        let (d, e) = feed(&r, 3, .continuing, [1, 2, 3])
        #expect(d.isEmpty && e == [.continuationWithoutStart(handle: 3, length: 3)])
        #expect(r.errors == 1 && r.lastError == .continuationWithoutStart(handle: 3, length: 3))
    }

    @Test func startWhilePendingDropsTheOldFrameAndKeepsTheNew() {
        var r = L2CAPReassembler()
        let a = l2capFrame(payloadLength: 60)
        _ = feed(&r, 1, .firstFlushable, Array(a[0 ..< 27]))
        let b = l2capFrame(payloadLength: 3)
        let (d, e) = feed(&r, 1, .firstFlushable, b)
        #expect(e == [.startWhilePending(handle: 1, received: 27)])
        #expect(d.map(\.payload) == [Array(b[4...])])
        #expect(r.pendingBytes == 0)
    }

    @Test func lengthOverrunInStartAndInContinuation() {
        var r = L2CAPReassembler()
        // Start carries more than the Length says.
        var bad = l2capFrame(payloadLength: 4)
        bad.append(0xFF)
        #expect(feed(&r, 1, .firstFlushable, bad).1 == [.lengthOverrun(handle: 1, expected: 8, received: 9)])
        // Continuation goes past the end.
        let a = l2capFrame(payloadLength: 20)  // 24
        _ = feed(&r, 1, .firstFlushable, Array(a[0 ..< 20]))
        let (d, e) = feed(&r, 1, .continuing, [1, 2, 3, 4, 5])
        #expect(d.isEmpty && e == [.lengthOverrun(handle: 1, expected: 24, received: 25)])
        #expect(!r.isReassembling(1) && r.pendingBytes == 0)
        // The next frame is fine.
        #expect(feed(&r, 1, .firstFlushable, a).0.count == 1)
    }

    @Test func frameTooLongIsRefusedAndItsContinuationsSkipped() {
        var r = L2CAPReassembler(maximumFrameLength: 100)
        let a = l2capFrame(payloadLength: 200)
        #expect(feed(&r, 1, .firstFlushable, Array(a[0 ..< 27])).1 == [.frameTooLong(handle: 1, length: 204)])
        #expect(r.pendingBytes == 0)
        // The rest of it is dropped quietly (one error for the whole frame).
        for start in stride(from: 27, to: 204, by: 27) {
            let (d, e) = feed(&r, 1, .continuing, Array(a[start ..< min(start + 27, 204)]))
            #expect(d.isEmpty && e.isEmpty)
        }
        // Then a stray continuation is an error again.
        #expect(feed(&r, 1, .continuing, [0]).1 == [.continuationWithoutStart(handle: 1, length: 1)])
        #expect(r.errors == 2)
    }

    @Test func pendingBytesAreBoundedOverAllLinks() {
        var r = L2CAPReassembler(maximumPendingBytes: 100)
        let a = l2capFrame(payloadLength: 60)  // 64 reserved
        #expect(feed(&r, 1, .firstFlushable, Array(a[0 ..< 27])).1.isEmpty)
        #expect(feed(&r, 2, .firstFlushable, Array(a[0 ..< 27])).1 == [.pendingLimitExceeded(handle: 2, length: 64)])
        // Link 1 still completes; then link 2 has room.
        _ = feed(&r, 1, .continuing, Array(a[27...]))
        #expect(r.pendingBytes == 0)
        #expect(feed(&r, 2, .firstFlushable, Array(a[0 ..< 27])).1.isEmpty)
        r.removeLink(2)
        #expect(r.pendingBytes == 0 && !r.isReassembling(2))
    }

    @Test func maximumSizeFrameReassembles() {
        var r = L2CAPReassembler()
        let a = l2capFrame(payloadLength: 65535)
        var delivered = 0
        var offset = 0
        while offset < a.count {
            let n = min(251, a.count - offset)
            let (d, e) = feed(&r, 7, offset == 0 ? .firstFlushable : .continuing, Array(a[offset ..< offset + n]))
            #expect(e.isEmpty)
            if let f = d.first { delivered += 1; #expect(f.payload.count == 65535) }
            offset += n
        }
        #expect(delivered == 1)
    }
}
