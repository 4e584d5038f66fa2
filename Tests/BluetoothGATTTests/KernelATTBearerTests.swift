import BluetoothTransport
import BluetoothWire
import CBluetooth
import Glibc
import Synchronization
import Testing
@testable import BluetoothGATT

/// True when this kernel has no AF_BLUETOOTH (containers, CI).
private let kernelLacksBluetooth: Bool = {
    let fd = socket(AF_BLUETOOTH, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), BTPROTO_L2CAP)
    if fd >= 0 { close(fd); return false }
    return errno == EAFNOSUPPORT || errno == EPROTONOSUPPORT
}()

private let noBluetoothMessage =
    "the kernel has no Bluetooth support (AF_BLUETOOTH): load the bluetooth module (modprobe bluetooth) or use --transport tcp:HOST:PORT"

private let ownAddress = BluetoothAddress(0x00, 0x1A, 0x7D, 0xDA, 0x71, 0x13)
private let peerAddress = LEAddress(BluetoothAddress(0xF0, 0xF1, 0xF2, 0xF3, 0xF4, 0x01), type: .random)

/// A scripted kernel behind the SystemCalls shim. The HCI socket is a fake descriptor;
/// the L2CAP socket is one end of a real AF_UNIX SOCK_SEQPACKET pair, so reads and
/// sends keep packet boundaries like an L2CAP socket, and `peerEnd` plays the remote
/// ATT server.
private final class FakeBluetoothKernel: @unchecked Sendable {
    static let hciFD: Int32 = 900
    var socketErrno: Int32?
    var deviceErrno: Int32?
    var adapterUp = true
    var deviceUpErrno: Int32?
    var deviceUpCalls: [Int] = []
    var address = ownAddress
    var binds: [sockaddr_l2] = []
    var connects: [sockaddr_l2] = []
    var socketTypes: [(type: Int32, proto: Int32)] = []
    /// connect()'s errno (EINPROGRESS: wait for POLLOUT, then SO_ERROR).
    var connectErrno: Int32 = EINPROGRESS
    var soError: Int32 = 0
    /// poll for POLLOUT never succeeds (a peer that never answers).
    var neverConnects = false
    /// After BT_SECURITY is set, poll for POLLOUT never succeeds (pairing never finishes).
    var securityNeverCompletes = false
    /// Raising security hangs the socket up (pairing failed: the kernel drops the link).
    var securityFails = false
    /// POLLOUT polls after BT_SECURITY was set.
    var securityWaits = 0
    var imtu: UInt16 = 672
    var securityLevel: UInt8 = 1
    var securitySets: [bt_security] = []
    var closed: [Int32] = []
    var peerEnd: Int32 = -1
    var bearerEnd: Int32 = -1

    deinit {
        if peerEnd >= 0 { Glibc.close(peerEnd) }
    }

    var system: SystemCalls {
        var s = SystemCalls.live
        s.socket = { _, type, proto in
            self.socketTypes.append((type, proto))
            if let e = self.socketErrno { Errno.current = Errno(e); return -1 }
            if proto == BTPROTO_HCI { return Self.hciFD }
            var pair: [Int32] = [-1, -1]
            let r = pair.withUnsafeMutableBufferPointer {
                socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, $0.baseAddress)
            }
            guard r == 0 else { return -1 }
            _ = fcntl(pair[0], F_SETFL, fcntl(pair[0], F_GETFL) | O_NONBLOCK)
            self.bearerEnd = pair[0]
            self.peerEnd = pair[1]
            return pair[0]
        }
        s.ioctl = { _, request, argument in
            switch request {
            case LinuxBluetooth.ioctlGetDeviceInfo:
                if let e = self.deviceErrno { Errno.current = Errno(e); return -1 }
                guard let p = UnsafeMutableRawPointer(bitPattern: argument) else { return -1 }
                let info = p.assumingMemoryBound(to: hci_dev_info.self)
                info.pointee.flags = self.adapterUp ? LinuxBluetooth.flagUp : 0
                let v = self.address.rawValue
                info.pointee.bdaddr = bdaddr_t(b: (UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8),
                                                   UInt8(truncatingIfNeeded: v >> 16), UInt8(truncatingIfNeeded: v >> 24),
                                                   UInt8(truncatingIfNeeded: v >> 32), UInt8(truncatingIfNeeded: v >> 40)))
                return 0
            case LinuxBluetooth.ioctlDeviceUp:
                self.deviceUpCalls.append(argument)
                if let e = self.deviceUpErrno { Errno.current = Errno(e); return -1 }
                self.adapterUp = true
                return 0
            default:
                Errno.current = .invalidArgument
                return -1
            }
        }
        s.bind = { _, address, _ in
            self.binds.append(address.load(as: sockaddr_l2.self))
            return 0
        }
        s.connect = { _, address, _ in
            self.connects.append(address.load(as: sockaddr_l2.self))
            if self.connectErrno != 0 { Errno.current = Errno(self.connectErrno); return -1 }
            return 0
        }
        s.poll = { fds, count, timeout in
            if count == 1 && fds.pointee.events == Int16(POLLOUT) {
                if self.neverConnects { return 0 }
                if !self.securitySets.isEmpty {
                    self.securityWaits += 1
                    if self.securityNeverCompletes { return 0 }
                }
            }
            return Glibc.poll(fds, count, timeout)
        }
        s.getsockopt = { _, level, name, value, length in
            switch (level, name) {
            case (SOL_SOCKET, SO_ERROR):
                value.storeBytes(of: self.soError, as: Int32.self)
            case (SOL_L2CAP, L2CAP_OPTIONS):
                var o = l2cap_options()
                o.imtu = self.imtu
                o.omtu = 23
                value.storeBytes(of: o, as: l2cap_options.self)
                length.pointee = socklen_t(MemoryLayout<l2cap_options>.size)
            case (SOL_BLUETOOTH, BT_SECURITY):
                value.storeBytes(of: bt_security(level: self.securityLevel, key_size: 16), as: bt_security.self)
            default:
                Errno.current = Errno(ENOPROTOOPT)
                return -1
            }
            return 0
        }
        s.setsockopt = { _, level, name, value, _ in
            guard level == SOL_BLUETOOTH, name == BT_SECURITY else { Errno.current = Errno(ENOPROTOOPT); return -1 }
            let sec = value.load(as: bt_security.self)
            self.securitySets.append(sec)
            self.securityLevel = sec.level
            if self.securityFails {
                self.soError = ECONNREFUSED
                Glibc.close(self.peerEnd)
                self.peerEnd = -1
            }
            return 0
        }
        s.close = { fd in
            self.closed.append(fd)
            return fd == Self.hciFD ? 0 : Glibc.close(fd)
        }
        return s
    }

    func open(peer: LEAddress = peerAddress, connectTimeout: Int32 = 1000) throws(TransportError) -> KernelATTBearer {
        try KernelATTBearer(adapter: 1, peer: peer, options: KernelATTBearerOptions(
            system: system, connectTimeout: .milliseconds(Int64(connectTimeout)), securityTimeout: .milliseconds(200)))
    }
}

private func addressBytes(_ a: bdaddr_t) -> [UInt8] { withUnsafeBytes(of: a.b) { Array($0) } }

private func expectError(_ kind: TransportError.Kind, containing text: String, _ body: () throws(TransportError) -> KernelATTBearer,
                         sourceLocation: SourceLocation = #_sourceLocation) {
    do {
        let b = try body()
        Issue.record("opened \(b.description)", sourceLocation: sourceLocation)
    } catch {
        #expect(error.kind == kind, "\(error.message)", sourceLocation: sourceLocation)
        #expect(error.message.contains(text), "\(error.message)", sourceLocation: sourceLocation)
    }
}

@Suite struct KernelATTBearerTests {
    @Test(.enabled(if: kernelLacksBluetooth)) func withoutKernelSupport() {
        do {
            _ = try KernelATTBearer(adapter: 0, peer: peerAddress)
            Issue.record("opened an L2CAP bearer without AF_BLUETOOTH")
        } catch {
            #expect(error.kind == .noBluetoothSupport)
            #expect(error.message == noBluetoothMessage)
        }
    }

    @Test func socketEAFNOSUPPORTFromTheShim() {
        let k = FakeBluetoothKernel()
        k.socketErrno = EAFNOSUPPORT
        expectError(.noBluetoothSupport, containing: "AF_BLUETOOTH") { () throws(TransportError) in try k.open() }
    }

    @Test func bindsToTheAdaptersOwnAddressOnTheATTChannel() throws {
        let k = FakeBluetoothKernel()
        let bearer = try k.open()
        #expect(k.binds.count == 1)
        let local = try #require(k.binds.first)
        #expect(local.l2_family == sa_family_t(AF_BLUETOOTH))
        #expect(UInt16(littleEndian: local.l2_cid) == 4)
        #expect(local.l2_psm == 0)
        #expect(local.l2_bdaddr_type == UInt8(BDADDR_LE_PUBLIC))
        // bdaddr_t is least significant byte first: 00:1A:7D:DA:71:13 → 13 71 DA 7D 1A 00.
        #expect(addressBytes(local.l2_bdaddr) == [0x13, 0x71, 0xDA, 0x7D, 0x1A, 0x00])
        #expect(bearer.adapterAddress == ownAddress)

        let remote = try #require(k.connects.first)
        #expect(UInt16(littleEndian: remote.l2_cid) == 4)
        #expect(remote.l2_bdaddr_type == UInt8(BDADDR_LE_RANDOM))
        #expect(addressBytes(remote.l2_bdaddr) == [0x01, 0xF4, 0xF3, 0xF2, 0xF1, 0xF0])

        // SEQPACKET, close-on-exec, non-blocking, BTPROTO_L2CAP.
        let l2 = try #require(k.socketTypes.last)
        #expect(l2.proto == BTPROTO_L2CAP)
        #expect(l2.type == Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue))
        #expect(k.closed.contains(FakeBluetoothKernel.hciFD))
        #expect(k.deviceUpCalls.isEmpty, "an adapter that is up is not brought up again")
        #expect(bearer.description == "F0:F1:F2:F3:F4:01 (random) via l2cap:hci1")
        bearer.close()
    }

    @Test func publicPeerAddressType() throws {
        let k = FakeBluetoothKernel()
        let bearer = try k.open(peer: LEAddress(peerAddress.address, type: .public))
        #expect(k.connects.first?.l2_bdaddr_type == UInt8(BDADDR_LE_PUBLIC))
        bearer.close()
    }

    @Test func maximumMTUIsTheSocketsIMTUCappedAt517() throws {
        let k = FakeBluetoothKernel()
        k.imtu = 672
        let big = try k.open()
        #expect(big.socketMTU == 672)
        #expect(big.maximumMTU == 517)
        big.close()
        let k2 = FakeBluetoothKernel()
        k2.imtu = 100
        let small = try k2.open()
        #expect(small.maximumMTU == 100)
        small.close()
    }

    @Test func downAdapterIsBroughtUp() throws {
        let k = FakeBluetoothKernel()
        k.adapterUp = false
        let bearer = try k.open()
        #expect(k.deviceUpCalls == [1])
        bearer.close()
    }

    @Test func ealreadyMeansAlreadyUp() throws {
        let k = FakeBluetoothKernel()
        k.adapterUp = false
        k.deviceUpErrno = EALREADY
        let bearer = try k.open()
        #expect(k.deviceUpCalls == [1])
        #expect(k.binds.count == 1)
        bearer.close()
    }

    @Test func downAdapterWithoutPermission() {
        let k = FakeBluetoothKernel()
        k.adapterUp = false
        k.deviceUpErrno = EPERM
        expectError(.permissionDenied, containing: "btmgmt --index 1 power on") { () throws(TransportError) in try k.open() }
        #expect(k.binds.isEmpty)
    }

    @Test func downAdapterBlockedByRfkill() {
        let k = FakeBluetoothKernel()
        k.adapterUp = false
        k.deviceUpErrno = ERFKILL
        expectError(.adapterDown, containing: "rfkill unblock") { () throws(TransportError) in try k.open() }
    }

    @Test func noSuchAdapter() {
        let k = FakeBluetoothKernel()
        k.deviceErrno = ENODEV
        expectError(.notFound, containing: "no adapter hci1") { () throws(TransportError) in try k.open() }
    }

    @Test func adapterWithoutAddress() {
        let k = FakeBluetoothKernel()
        k.address = BluetoothAddress(rawValue: 0)
        expectError(.adapterDown, containing: "no public address") { () throws(TransportError) in try k.open() }
        #expect(k.binds.isEmpty, "never binds BDADDR_ANY")
    }

    @Test func connectionRefused() {
        let k = FakeBluetoothKernel()
        k.soError = ECONNREFUSED
        expectError(.connectionFailed, containing: "refused the connection") { () throws(TransportError) in try k.open() }
        #expect(k.closed.contains(k.bearerEnd), "the socket is closed after a failed connect")
    }

    @Test func absentPeerTimesOut() {
        let k = FakeBluetoothKernel()
        k.neverConnects = true
        expectError(.connectionFailed, containing: "is it in range, advertising and connectable") { () throws(TransportError) in
            try k.open(connectTimeout: 10)
        }
        #expect(k.closed.contains(k.bearerEnd))
    }

    @Test func connectPermission() {
        let k = FakeBluetoothKernel()
        k.connectErrno = EACCES
        expectError(.permissionDenied, containing: "refused the connection") { () throws(TransportError) in try k.open() }
    }

    @Test func raiseSecuritySetsBTSecurityAndWaitsForTheSocket() throws {
        let k = FakeBluetoothKernel()
        let bearer = try k.open()
        defer { bearer.close() }
        try bearer.raiseSecurity(level: .high)
        #expect(k.securitySets.count == 1)
        #expect(k.securitySets.first?.level == UInt8(BT_SECURITY_HIGH))
        #expect(k.securitySets.first?.key_size == 0)
        // It returned only once the socket was writable again (the kernel's BT_CONFIG over).
        #expect(k.securityWaits == 1)
    }

    @Test func pairingThatNeverFinishesTimesOut() throws {
        let k = FakeBluetoothKernel()
        let bearer = try k.open()
        defer { bearer.close() }
        k.securityNeverCompletes = true
        #expect(throws: TransportError.self) { try bearer.raiseSecurity(level: .medium) }
        do { try bearer.raiseSecurity(level: .medium) } catch {
            #expect(error.kind == .timedOut)
            #expect(error.message.contains("security level medium (encrypted) not reached within 200 ms (pairing did not finish)"))
        }
    }

    @Test func pairingFailureHangsUpAndSaysSo() throws {
        let k = FakeBluetoothKernel()
        let bearer = try k.open()
        defer { bearer.close() }
        k.securityFails = true
        do {
            try bearer.raiseSecurity(level: .medium)
            Issue.record("expected a failure")
        } catch {
            #expect(error.kind == .io)
            #expect(error.message.contains("the link dropped while raising security to medium (encrypted)"))
            #expect(error.message.contains("Connection refused"))
        }
    }

    @Test func raiseSecurityAfterATTErrors() throws {
        let k = FakeBluetoothKernel()
        let bearer = try k.open()
        defer { bearer.close() }
        k.securityLevel = UInt8(BT_SECURITY_LOW)
        #expect(try bearer.raiseSecurity(after: .insufficientEncryption) == .medium)
        #expect(k.securitySets.last?.level == UInt8(BT_SECURITY_MEDIUM))
        // Encrypted but unauthenticated: authentication needs the next level.
        #expect(try bearer.raiseSecurity(after: .insufficientAuthentication) == .high)
        #expect(k.securitySets.last?.level == UInt8(BT_SECURITY_HIGH))
        // Already authenticated and encrypted: nothing more to ask for.
        #expect(try bearer.raiseSecurity(after: .insufficientAuthentication) == nil)
        #expect(try bearer.raiseSecurity(after: .insufficientEncryption) == nil)
        #expect(try bearer.raiseSecurity(after: .readNotPermitted) == nil)
        #expect(k.securitySets.count == 2)
    }

    @Test func theGATTClientRaisesSecurityOnceAndRetriesARefusedRead() async throws {
        let k = FakeBluetoothKernel()
        k.securityLevel = UInt8(BT_SECURITY_LOW)
        let bearer = try k.open()
        let peer = k.peerEnd
        // The server: Read of 0x0003 needs encryption until BT_SECURITY was raised.
        async let served = runOnOwnThread { () -> [[UInt8]] in
            var seen: [[UInt8]] = []
            var buffer = [UInt8](repeating: 0, count: 600)
            while true {
                let n = buffer.withUnsafeMutableBytes { Glibc.recv(peer, $0.baseAddress, 600, 0) }
                guard n > 0 else { return seen }
                let pdu = Array(buffer.prefix(n))
                seen.append(pdu)
                let answer: [UInt8]
                switch pdu[0] {
                case 0x02: answer = [0x03, 0x17, 0x00]
                case 0x0A where k.securitySets.isEmpty: answer = [0x01, 0x0A, 0x03, 0x00, 0x0F]
                case 0x0A: answer = [0x0B, 0x42]
                default: return seen
                }
                _ = answer.withUnsafeBytes { Glibc.send(peer, $0.baseAddress, $0.count, 0) }
                if answer == [0x0B, 0x42] { return seen }
            }
        }
        let events = Mutex<[GATTSecurityEvent]>([])
        let client = GATTClient(bearer: bearer, options: GATTClient.Options(securityObserver: { e in events.withLock { $0.append(e) } }))
        #expect(try await client.read(handle: 3) == [0x42])
        #expect(await served.count == 3, "MTU, the refused read, the read again")
        #expect(k.securitySets.map(\.level) == [UInt8(BT_SECURITY_MEDIUM)])
        #expect(events.withLock { $0 } == [.raising(error: .insufficientEncryption, level: "medium (encrypted)"),
                                             .raised(level: "medium (encrypted)")])
        client.close()
    }

    @Test func deliversEachPacketAsOnePDUAndSendsOnePacketPerPDU() async throws {
        let k = FakeBluetoothKernel()
        let bearer = try k.open()
        let (pdus, pduSink) = AsyncStream.makeStream(of: [UInt8].self)
        let (closes, closeSink) = AsyncStream.makeStream(of: ATTBearerClosed.self)
        bearer.start(received: { pduSink.yield(Array($0)) }, closed: { closeSink.yield($0); closeSink.finish() })

        // Two Handle Value Notifications back to back stay two PDUs.
        let first: [UInt8] = [0x1B, 0x10, 0x00, 0x06, 0x6C, 0x01, 0x00, 0xFF]
        let second: [UInt8] = [0x1B, 0x2E, 0x00, 0x16, 0x48]
        for p in [first, second] {
            _ = p.withUnsafeBytes { Glibc.send(k.peerEnd, $0.baseAddress, $0.count, 0) }
        }
        var iterator = pdus.makeAsyncIterator()
        #expect(await iterator.next() == first)
        #expect(await iterator.next() == second)

        // Exchange MTU Request out: one packet, exactly these bytes.
        try bearer.send([0x02, 0x05, 0x02])
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = buffer.withUnsafeMutableBytes { Glibc.recv(k.peerEnd, $0.baseAddress, 64, 0) }
        #expect(Array(buffer.prefix(max(n, 0))) == [0x02, 0x05, 0x02])

        // The peer goes away: `closed` once, then send fails.
        Glibc.close(k.peerEnd)
        k.peerEnd = -1
        var closeIterator = closes.makeAsyncIterator()
        let why = await closeIterator.next()
        #expect(why?.message.contains("closed") == true)
        #expect(await closeIterator.next() == nil)
        #expect(throws: ATTBearerClosed.self) { try bearer.send([0x0A, 0x01, 0x00]) }
        bearer.close()
    }

    @Test func closeStopsTheReaderAndReportsOnce() async throws {
        let k = FakeBluetoothKernel()
        let bearer = try k.open()
        let (closes, closeSink) = AsyncStream.makeStream(of: ATTBearerClosed.self)
        let count = Mutex(0)
        bearer.start(received: { _ in }, closed: { why in
            count.withLock { $0 += 1 }
            closeSink.yield(why)
            closeSink.finish()
        })
        bearer.close()
        bearer.close()
        var it = closes.makeAsyncIterator()
        #expect(await it.next()?.message == "F0:F1:F2:F3:F4:01 (random) via l2cap:hci1: closed")
        #expect(await it.next() == nil)
        #expect(count.withLock { $0 } == 1)
        #expect(k.closed.contains(k.bearerEnd))
        #expect(throws: ATTBearerClosed.self) { try bearer.send([0x02, 0x05, 0x02]) }
    }

    @Test func securityLevelsAfterErrors() {
        #expect(KernelATTBearer.SecurityLevel.after(.insufficientEncryption, current: .low) == .medium)
        #expect(KernelATTBearer.SecurityLevel.after(.insufficientAuthentication, current: .low) == .medium)
        #expect(KernelATTBearer.SecurityLevel.after(.insufficientAuthentication, current: .medium) == .high)
        #expect(KernelATTBearer.SecurityLevel.after(.insufficientAuthentication, current: .fips) == nil)
        #expect(KernelATTBearer.SecurityLevel.after(.invalidHandle, current: .low) == nil)
    }
}
