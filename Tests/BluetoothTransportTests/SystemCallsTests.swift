import Glibc
import Testing
@testable import BluetoothTransport

@Suite struct SystemCallsTests {
    @Test func errnoNamesAndMessages() {
        #expect(Errno.busy.name == "EBUSY")
        #expect(Errno(EAFNOSUPPORT) == .addressFamilyNotSupported)
        #expect(Errno.busy.description == "Device or resource busy (EBUSY)")
        #expect(Errno(9999).name == nil)
        #expect(Errno(9999).description.contains("errno 9999"))
        Errno.current = .timedOut
        #expect(errno == ETIMEDOUT)
    }

    @Test func valueOrErrnoRetriesOnlyEINTR() {
        let s = SystemCalls.live
        var calls = 0
        let r = s.valueOrErrno { () -> Int32 in
            calls += 1
            if calls < 3 { Errno.current = .interrupted; return -1 }
            return 7
        }
        #expect(r == .success(7) && calls == 3)
        calls = 0
        let busy = s.valueOrErrno { () -> Int32 in
            calls += 1
            Errno.current = .busy
            return -1
        }
        #expect(busy == .failure(.busy) && calls == 1)
        calls = 0
        let once = s.valueOrErrno(retryOnInterrupt: false) { () -> Int32 in
            calls += 1
            Errno.current = .interrupted
            return -1
        }
        #expect(once == .failure(.interrupted) && calls == 1)
    }

    @Test func writeAllContinuesOverPartialWritesAndEAGAIN() {
        let k = FakeKernel()
        var s = k.system
        nonisolated(unsafe) var step = 0
        nonisolated(unsafe) var written: [UInt8] = []
        s.write = { _, buffer, count in
            step += 1
            switch step {
            case 2: Errno.current = .wouldBlock; return -1
            case 4: Errno.current = .interrupted; return -1
            default:
                let n = min(count, 3)
                written += UnsafeRawBufferPointer(start: buffer, count: n)
                return n
            }
        }
        let data = Array(UInt8(0) ..< 10)
        let r = data.withUnsafeBytes { s.writeAll(1, $0, timeoutMilliseconds: 100) }
        guard case .success = r else { Issue.record("\(r)"); return }
        #expect(written == data)
        #expect(k.polls == 1)
    }

    @Test func writeAllTimesOutWhenNeverWritable() {
        let k = FakeKernel()
        var s = k.system
        s.write = { _, _, _ in Errno.current = .wouldBlock; return -1 }
        nonisolated(unsafe) var timeouts: [Int32] = []
        s.poll = { _, _, t in timeouts.append(t); return 0 }
        let r = [UInt8](repeating: 1, count: 4).withUnsafeBytes { s.writeAll(1, $0, timeoutMilliseconds: 250) }
        guard case .failure(.timedOut) = r else { Issue.record("\(r)"); return }
        #expect(timeouts == [250])
    }

    @Test func streamWriteTimeoutHasAClearMessage() throws {
        let listener = try TestListener()
        let k = FakeKernel()
        var s = SystemCalls.live
        s.send = { _, _, _, _ in Errno.current = .wouldBlock; return -1 }
        s.poll = { fds, n, t in
            // Let connect's wait through; the write's wait times out.
            if fds.pointee.events & Int16(POLLOUT) != 0 && k.polls > 0 { return 0 }
            k.polls += 1
            return Glibc.poll(fds, n, t)
        }
        let t = try TCPTransport(host: "127.0.0.1", port: listener.port, options: TransportOptions(writeTimeout: .milliseconds(50), system: s))
        defer { t.close() }
        do {
            try h("01 03 0c 00").withUnsafeBytes { try t.write($0) }
            Issue.record("wrote")
        } catch let error as TransportError {
            #expect(error.kind == .io)
            #expect(error.message.contains("could not write for 50 ms"))
        }
    }
}
