import FakeController
import Testing
@testable import BluetoothHost
import BluetoothWire

/// An L2CAP basic frame of `payloadLength` bytes 0, 1, 2, ... on `cid`.
func l2capFrame(cid: UInt16 = 4, payloadLength: Int) -> [UInt8] {
    [UInt8(payloadLength & 0xFF), UInt8(payloadLength >> 8), UInt8(cid & 0xFF), UInt8(cid >> 8)]
        + (0 ..< payloadLength).map { UInt8(truncatingIfNeeded: $0) }
}

@Suite struct ACLFlowControlTests {
    @Test(arguments: [27, 251])
    func fragmentsToTheBufferLength(length: Int) throws {
        var flow = ACLFlowControl(bufferLength: UInt16(length), bufferCount: 100)
        flow.addLink(0x40)
        let frame = l2capFrame(payloadLength: 600)
        let out = try flow.enqueue(frame, handle: 0x40)
        let expectedCount = (frame.count + length - 1) / length
        #expect(out.count == expectedCount)
        var joined: [UInt8] = []
        for (i, p) in out.enumerated() {
            #expect(p.packet[0] == 0x02)
            let (h, pb, data) = aclParts(p.packet)
            #expect(h == 0x40)
            #expect(pb == (i == 0 ? 0b00 : 0b01))
            #expect(data.count == (i < expectedCount - 1 ? length : frame.count - length * (expectedCount - 1)))
            joined += data
        }
        #expect(joined == frame)
        #expect(flow.freeBuffers == 100 - expectedCount)
    }

    @Test func aFrameThatFitsIsOnePacket() throws {
        var flow = ACLFlowControl(bufferLength: 27, bufferCount: 4)
        flow.addLink(1)
        let out = try flow.enqueue(l2capFrame(payloadLength: 23), handle: 1, accounted: true)
        #expect(out.count == 1)
        #expect(out[0].accountedBytes == 27)
        #expect(aclParts(out[0].packet).1 == 0)
    }

    @Test func sendsOnlyWhileBuffersAreFreeAndCreditsComeBackPerHandle() throws {
        var flow = ACLFlowControl(bufferLength: 27, bufferCount: 3)
        flow.addLink(1)
        flow.addLink(2)
        // Handle 1: 5 fragments; handle 2: 2 fragments. 3 buffers.
        var out = try flow.enqueue(l2capFrame(payloadLength: 27 * 5 - 4), handle: 1)
        #expect(out.count == 3)
        out = try flow.enqueue(l2capFrame(cid: 5, payloadLength: 40), handle: 2)
        #expect(out.isEmpty)
        #expect(flow.freeBuffers == 0)
        #expect(flow.inFlight(1) == 3 && flow.queuedPackets(1) == 2 && flow.queuedPackets(2) == 2)
        // Handles take turns: 1 (queued first), then 2, then 1, then 2.
        out = flow.completed(handle: 1, count: 1)
        #expect(out.map(\.handle) == [1])
        out = withEvent(nocpEvent([(1, 2)])) { e in
            guard case .numberOfCompletedPackets(let n) = e else { return [] }
            return flow.handle(n)
        }
        #expect(out.map(\.handle) == [2, 1])
        #expect(aclParts(out[0].packet).1 == 0b00 && aclParts(out[1].packet).1 == 0b01)
        out = flow.completed(handle: 2, count: 1)
        #expect(out.map(\.handle) == [2])
        #expect(flow.inFlight(1) == 2 && flow.inFlight(2) == 1)
        // Everything completes: all buffers free.
        out = withEvent(nocpEvent([(1, 2), (2, 1)])) { e in
            guard case .numberOfCompletedPackets(let n) = e else { return [] }
            return flow.handle(n)
        }
        #expect(out.isEmpty && flow.freeBuffers == 3)
        #expect(flow.unknownHandleCompletions == 0 && flow.excessCompletions == 0)
    }

    @Test func completionsForUnknownHandlesOrTooManyAreIgnored() throws {
        var flow = ACLFlowControl(bufferLength: 27, bufferCount: 2)
        flow.addLink(1)
        _ = try flow.enqueue(l2capFrame(payloadLength: 10), handle: 1)
        #expect(flow.completed(handle: 0x99, count: 5).isEmpty)
        #expect(flow.unknownHandleCompletions == 1)
        #expect(flow.freeBuffers == 1)
        _ = flow.completed(handle: 1, count: 4)
        #expect(flow.excessCompletions == 3)
        #expect(flow.freeBuffers == 2)  // never above the controller's count
    }

    @Test func disconnectReturnsTheLinksBuffersAndDropsItsQueue() throws {
        var flow = ACLFlowControl(bufferLength: 27, bufferCount: 2)
        flow.addLink(1)
        flow.addLink(2)
        _ = try flow.enqueue(l2capFrame(payloadLength: 27 * 3), handle: 1)  // 4 fragments, 2 sent
        #expect(try flow.enqueue(l2capFrame(payloadLength: 5), handle: 2).isEmpty)
        let out = flow.removeLink(1)
        #expect(out.map(\.handle) == [2])
        #expect(flow.freeBuffers == 1)
        #expect(!flow.hasLink(1))
        #expect(throws: ACLFlowError.unknownHandle(1)) { try flow.enqueue(l2capFrame(payloadLength: 1), handle: 1) }
        // A late completion for the removed handle is ignored, not counted as credit.
        _ = flow.completed(handle: 1, count: 2)
        #expect(flow.freeBuffers == 1 && flow.unknownHandleCompletions == 1)
    }

    @Test func queueIsBounded() throws {
        var flow = ACLFlowControl(bufferLength: 27, bufferCount: 1, maximumQueuedBytesPerLink: 100)
        flow.addLink(1)
        _ = try flow.enqueue(l2capFrame(payloadLength: 60), handle: 1)  // 64 bytes; 27 sent
        #expect(throws: ACLFlowError.queueFull(1)) { try flow.enqueue(l2capFrame(payloadLength: 60), handle: 1) }
        _ = try flow.enqueue(l2capFrame(payloadLength: 50), handle: 1)  // 37 + 54 = 91
        #expect(throws: ACLFlowError.frameTooLong(65540 + 4)) {
            var big = ACLFlowControl(bufferLength: 27, bufferCount: 1, maximumQueuedBytesPerLink: 1 << 20)
            big.addLink(1)
            _ = try big.enqueue([UInt8](repeating: 0, count: 65540 + 4), handle: 1)
        }
    }

    @Test func zeroBuffersFromTheControllerFallBackToTheMinimum() {
        let flow = ACLFlowControl(info: ControllerInfo(aclBufferLength: 0, aclBufferCount: 0))
        #expect(flow.bufferLength == 27 && flow.bufferCount == 1)
    }
}
