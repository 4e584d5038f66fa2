import CBluetooth
import Glibc
import Testing
@testable import BluetoothTransport

/// A listening TCP socket on 127.0.0.1 with a kernel-chosen port.
final class TestListener {
    let fd: Int32
    let port: UInt16

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        self.fd = fd
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        a.sin_port = 0
        var size = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &a) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sp in
                Glibc.bind(fd, sp, size) == 0 && listen(fd, 4) == 0 && getsockname(fd, sp, &size) == 0
            }
        }
        guard ok else {
            port = 0
            throw Errno.current
        }
        port = UInt16(bigEndian: a.sin_port)
    }

    /// Accepts one connection (blocking, 2 s at most).
    func accept() -> Int32 {
        guard waitReadable(fd) else { return -1 }
        return Glibc.accept(fd, nil, nil)
    }

    deinit { Glibc.close(fd) }
}

@Suite struct TCPTransportTests {
    static let packets: [[UInt8]] = [
        h("04 0e 04 01 03 0c 00"),
        h("04 3e 0c 02 01 00 00 01 02 03 04 05 06 00 c5"),
        h("02 40 20 07 00 03 00 04 00 0a 03 00"),
        h("04 0f 04 00 01 06 20"),
        h("02 41 00 00 00"),
    ]

    /// Back-pressure: asked to stop, the transport stops between reads of the socket, having
    /// handed out every whole packet it read; the rest stays in the socket, in order.
    @Test func stopsBetweenReadsAndLeavesTheRestInTheSocket() throws {
        let (listener, t, peer) = try Self.connected()
        defer { t.close(); close(peer); _ = listener }
        #expect(t.holdsUnreadData)
        // 6000 numbered events of 9 bytes: 54 000 bytes, more than one 16 KiB read, and one
        // cut by each read's end (16 384 is no multiple of 9): the rest of it comes later.
        let total = 6000
        var bytes: [UInt8] = []
        for i in 0..<total { bytes += [0x04, 0xFF, 0x06, 0x00, UInt8(i & 0xFF), UInt8(i >> 8), 0, 0, 0] }
        writeFully(peer, bytes)
        _ = waitReadable(t.fileDescriptor, milliseconds: 500)
        var got: [Int] = []
        _ = try t.readAvailable({ p in got.append(Int(p[4]) | Int(p[5]) << 8) }, stoppingWhen: { !got.isEmpty })
        #expect(!got.isEmpty && got.count < total, "stopped after the first read")
        #expect(got == Array(0..<got.count), "in order, none skipped")
        while got.count < total {
            guard waitReadable(t.fileDescriptor, milliseconds: 2000) else { break }
            _ = try t.readAvailable { p in got.append(Int(p[4]) | Int(p[5]) << 8) }
        }
        #expect(got.count == total)
        #expect(got == Array(0..<total), "the rest came from the socket, in order")
    }

    /// A transport connected to a listener on loopback, and the accepted socket.
    static func connected() throws -> (TestListener, TCPTransport, Int32) {
        let listener = try TestListener()
        let t = try TCPTransport(host: "127.0.0.1", port: listener.port)
        let peer = listener.accept()
        #expect(peer >= 0)
        return (listener, t, peer)
    }

    @Test func deframesPacketsCutAtOddPoints() throws {
        let (listener, t, peer) = try Self.connected()
        defer { t.close(); close(peer) }
        #expect(t.description == "tcp:127.0.0.1:\(listener.port)")

        // Nothing sent yet: readAvailable returns at once, stream open, no packets.
        let idle = try readPackets(t)
        #expect(idle.packets.isEmpty && idle.open)

        let stream = Self.packets.flatMap { $0 }
        var got: [[UInt8]] = []
        var i = 0
        for cut in [1, 2, 5, 3, 9, 1, 17, 4, 100] where i < stream.count {
            let end = min(i + cut, stream.count)
            writeFully(peer, Array(stream[i ..< end]))
            i = end
            // Give the bytes time to arrive, then take what is complete.
            _ = waitReadable(t.fileDescriptor, milliseconds: 500)
            usleep(2000)
            let (p, open) = try readPackets(t)
            #expect(open)
            got += p
        }
        if got.count < Self.packets.count { got += try collect(t, count: Self.packets.count - got.count).packets }
        #expect(got == Self.packets)
    }

    @Test func writesReachThePeer() throws {
        let listener = try TestListener()
        let t = try TCPTransport(host: "localhost", port: listener.port)
        defer { t.close() }
        let peer = listener.accept()
        defer { close(peer) }
        let reset = h("01 03 0c 00")
        try reset.withUnsafeBytes { try t.write($0) }
        #expect(readExactly(peer, 4) == reset)
    }

    @Test func writeAvailableNeverWaitsForAPeerThatDoesNotRead() throws {
        let (listener, t, peer) = try Self.connected()
        defer { t.close(); close(peer); _ = listener }
        // Fill the socket buffers: writes take less and less, then nothing, and return at once.
        let chunk = [UInt8](repeating: 0x5A, count: 1 << 20)
        var total = 0
        var sawFull = false
        for _ in 0 ..< 64 {
            let n = try chunk.withUnsafeBytes { try t.writeAvailable($0) }
            total += n
            if n == 0 { sawFull = true; break }
        }
        #expect(sawFull && total > 0)
        // The peer drains some; the transport takes more again.
        #expect(readExactly(peer, min(total, 65536)).count == min(total, 65536))
        usleep(10_000)
        #expect(try chunk.withUnsafeBytes { try t.writeAvailable($0) } > 0)
    }

    @Test func peerCloseEndsTheStream() throws {
        let listener = try TestListener()
        let t = try TCPTransport(host: "127.0.0.1", port: listener.port)
        defer { t.close() }
        let peer = listener.accept()
        writeFully(peer, Self.packets[0])
        close(peer)
        let (packets, open) = try collect(t, count: 2)
        #expect(packets == [Self.packets[0]])
        #expect(!open)
    }

    @Test func garbageIndicatorIsMalformedStream() throws {
        let (listener, t, peer) = try Self.connected()
        defer { t.close(); close(peer); _ = listener }
        writeFully(peer, Self.packets[0] + [0x07, 0x01, 0x02])
        var got: [[UInt8]] = []
        do {
            for _ in 0 ..< 10 {
                guard waitReadable(t.fileDescriptor) else { break }
                _ = try t.readAvailable { got.append(Array($0)) }
            }
            Issue.record("no error")
        } catch {
            #expect(error.kind == .malformedStream)
            #expect(error.streamOffset == Self.packets[0].count)
            #expect(error.message.contains("out of sync at byte 7"))
        }
        #expect(got == [Self.packets[0]])
    }

    @Test func connectionRefusedSaysSo() throws {
        let port: UInt16
        do {
            let listener = try TestListener()
            port = listener.port
        } // closed: nothing listens there now
        do {
            _ = try TCPTransport(host: "127.0.0.1", port: port)
            Issue.record("connected to a closed port")
        } catch {
            #expect(error.kind == .connectionFailed)
            #expect(error.errno == ECONNREFUSED)
            #expect(error.message.contains("connection refused"))
        }
    }

    @Test func unknownHostIsNotFound() {
        do {
            _ = try TCPTransport(host: "no-such-host.invalid", port: 9000)
            Issue.record("resolved an .invalid name")
        } catch {
            #expect(error.kind == .notFound || error.kind == .connectionFailed)
            #expect(error.message.contains("no-such-host.invalid"))
        }
    }

    @Test func openTransportPicksTCP() throws {
        let listener = try TestListener()
        let t = try openTransport(TransportSpec(parsing: "tcp:127.0.0.1:\(listener.port)"))
        #expect(t is TCPTransport)
        t.close()
        t.close() // idempotent
        #expect(t.fileDescriptor == -1)
        #expect(throws: TransportError.self) { try readPackets(t) }
    }
}

/// A pseudo-terminal pair: the transport opens the slave, the test plays the controller on the master.
final class PseudoTerminal {
    let master: Int32
    let slavePath: String

    init() throws {
        // posix_openpt/unlockpt/ptsname are not visible through Swift's Glibc module; these
        // are what they do on Linux (grantpt is a no-op with devpts).
        master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard master >= 0 else { throw Errno.current }
        var unlock: Int32 = 0
        var number: UInt32 = 0
        let TIOCSPTLCK: UInt = 0x4004_5431, TIOCGPTN: UInt = 0x8004_5430
        let fd = master
        let unlocked = withUnsafeMutableBytes(of: &unlock) { cbluetooth_ioctl(fd, TIOCSPTLCK, Int(bitPattern: $0.baseAddress)) == 0 }
        let named = withUnsafeMutableBytes(of: &number) { cbluetooth_ioctl(fd, TIOCGPTN, Int(bitPattern: $0.baseAddress)) == 0 }
        guard unlocked, named else {
            let e = Errno.current
            close(master)
            throw e
        }
        slavePath = "/dev/pts/\(number)"
    }

    deinit { close(master) }
}

@Suite struct SerialTransportTests {
    /// Bytes a cooked terminal would change: CR, LF, ^C, ^D, XON/XOFF, DEL, ^Z, ^\ .
    static let packets: [[UInt8]] = [
        h("04 0e 0a 01 0d 0a 03 04 11 13 7f 1a 1c"),
        h("02 0d 0a 02 00 0a 0d"),
        h("04 0e 04 01 03 0c 00"),
    ]

    @Test func rawModeCarriesEveryByte() throws {
        let pty = try PseudoTerminal()
        let t = try SerialTransport(path: pty.slavePath, baudRate: 921_600, flowControl: false)
        defer { t.close() }
        #expect(t.description == "serial:\(pty.slavePath),921600")

        let stream = Self.packets.flatMap { $0 }
        writeFully(pty.master, Array(stream[0 ..< 5]))
        writeFully(pty.master, Array(stream[5...]))
        let (got, open) = try collect(t, count: Self.packets.count)
        #expect(open)
        #expect(got == Self.packets)

        // Output is not post-processed either (no LF → CR LF).
        let command = h("01 0a 0d 03 0d 0a 03")
        try command.withUnsafeBytes { try t.write($0) }
        #expect(readExactly(pty.master, command.count) == command)
    }

    @Test func termiosIsRawWithTheBaudRate() throws {
        let pty = try PseudoTerminal()
        let t = try SerialTransport(path: pty.slavePath, baudRate: 115_200)
        defer { t.close() }
        var tio = termios()
        #expect(tcgetattr(t.fileDescriptor, &tio) == 0)
        #expect(tio.c_lflag & tcflag_t(ICANON | ECHO | ISIG) == 0)
        #expect(tio.c_iflag & tcflag_t(ICRNL | IXON) == 0)
        #expect(tio.c_oflag & tcflag_t(OPOST) == 0)
        #expect(cfgetispeed(&tio) == speed_t(B115200))
        #expect(fcntl(t.fileDescriptor, F_GETFL) & O_NONBLOCK != 0)
        #expect(fcntl(t.fileDescriptor, F_GETFD) & FD_CLOEXEC != 0)
    }

    @Test func missingDeviceIsNotFound() {
        do {
            _ = try SerialTransport(path: "/dev/no-such-tty")
            Issue.record("opened a missing device")
        } catch {
            #expect(error.kind == .notFound)
            #expect(error.message.contains("/dev/no-such-tty"))
        }
    }

    @Test func notATerminalIsRejected() {
        do {
            _ = try SerialTransport(path: "/dev/null")
            Issue.record("opened /dev/null as a UART")
        } catch {
            #expect(error.kind == .invalidSpec)
            #expect(error.message.contains("not a serial device"))
        }
    }
}

extension SerialTransportTests {
    @Test func hangupEndsTheStreamWithAClearError() throws {
        var pty: PseudoTerminal? = try PseudoTerminal()
        let t = try SerialTransport(path: pty!.slavePath)
        defer { t.close() }
        pty = nil // closes the master: the line hangs up
        #expect(waitReadable(t.fileDescriptor))
        do {
            let (_, open) = try readPackets(t)
            #expect(!open) // a hangup read of 0 also counts as the end
        } catch {
            #expect(error.kind == .closed)
            #expect(error.message.contains("stopped working"))
        }
    }
}
