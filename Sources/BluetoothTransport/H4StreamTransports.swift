import BluetoothWire
import Glibc

/// The byte-stream half shared by the TCP and serial transports: a non-blocking
/// descriptor carrying H4, framed with ``H4Deframer``.
final class H4Stream {
    let system: SystemCalls
    private(set) var fd: Int32
    let label: String
    /// send(MSG_NOSIGNAL) instead of write (sockets: no SIGPIPE).
    let useSend: Bool
    let writeTimeoutMilliseconds: Int32
    private var deframer: H4Deframer
    private let readBuffer: UnsafeMutableRawPointer
    private let readBufferSize = 16 * 1024
    /// One packet with its indicator, copied out of the deframer for `body`.
    private let packetBuffer: UnsafeMutableRawPointer
    private let packetBufferSize = 1 + H4Deframer.defaultMaximumPacketLength

    init(fd: Int32, label: String, useSend: Bool, options: TransportOptions) {
        self.system = options.system
        self.fd = fd
        self.label = label
        self.useSend = useSend
        self.writeTimeoutMilliseconds = options.writeTimeout.milliseconds
        self.deframer = H4Deframer(initialCapacity: 2 * readBufferSize)
        self.readBuffer = UnsafeMutableRawPointer.allocate(byteCount: readBufferSize, alignment: 16)
        self.packetBuffer = UnsafeMutableRawPointer.allocate(byteCount: packetBufferSize, alignment: 16)
    }

    deinit {
        close()
        readBuffer.deallocate()
        packetBuffer.deallocate()
    }

    func readAvailable(_ body: (UnsafeRawBufferPointer) -> Void, stoppingWhen stop: () -> Bool = { false }) throws(TransportError) -> Bool {
        guard fd >= 0 else { throw TransportError(.closed, "\(label): the transport is closed") }
        while true {
            // Between reads only: the deframer holds no whole packet here, so nothing
            // read waits for a readiness that poll would not report.
            if stop() { return true }
            let fd = self.fd
            let buffer = readBuffer
            let size = readBufferSize
            switch system.valueOrErrno({ system.read(fd, buffer, size) }) {
            case .success(0):
                return false
            case .success(let n):
                deframer.append(UnsafeRawBufferPointer(start: readBuffer, count: n))
                try drain(body)
            case .failure(let e) where e == .wouldBlock:
                return true
            case .failure(let e):
                throw streamError(e, reading: true)
            }
        }
    }

    private func drain(_ body: (UnsafeRawBufferPointer) -> Void) throws(TransportError) {
        while true {
            let frame: H4Frame
            do throws(WireError) {
                guard let f = try deframer.next() else { return }
                frame = f
            } catch {
                var e = TransportError(
                    .malformedStream,
                    "\(label): the H4 byte stream is out of sync at byte \(error.offset) (\(error.reason)); the transport must be reopened")
                e.streamOffset = error.offset
                throw e
            }
            // The packet is at most defaultMaximumPacketLength bytes (the deframer's cap).
            packetBuffer.storeBytes(of: frame.type.rawValue, as: UInt8.self)
            if let base = frame.packet.baseAddress, frame.packet.count > 0 {
                (packetBuffer + 1).copyMemory(from: base, byteCount: frame.packet.count)
            }
            body(UnsafeRawBufferPointer(start: packetBuffer, count: 1 + frame.packet.count))
        }
    }

    func write(_ packet: UnsafeRawBufferPointer) throws(TransportError) {
        guard fd >= 0 else { throw TransportError(.closed, "\(label): the transport is closed") }
        switch system.writeAll(fd, packet, useSend: useSend, timeoutMilliseconds: writeTimeoutMilliseconds) {
        case .success:
            return
        case .failure(.timedOut):
            throw TransportError(
                .io,
                "\(label): could not write for \(writeTimeoutMilliseconds) ms: the other side is not reading"
                    + (useSend ? "" : " (check the baud rate and whether the device needs rtscts flow control)"))
        case .failure(.errno(let e)):
            throw streamError(e, reading: false)
        }
    }

    /// One write(2)/send(2): the bytes taken, 0 when the descriptor is full.
    func writeAvailable(_ bytes: UnsafeRawBufferPointer) throws(TransportError) -> Int {
        guard fd >= 0 else { throw TransportError(.closed, "\(label): the transport is closed") }
        guard let base = bytes.baseAddress, bytes.count > 0 else { return 0 }
        let fd = self.fd, useSend = self.useSend, system = self.system
        switch system.valueOrErrno({
            useSend ? system.send(fd, base, bytes.count, Int32(MSG_NOSIGNAL)) : system.write(fd, base, bytes.count)
        }) {
        case .success(let n): return n
        case .failure(let e) where e == .wouldBlock: return 0
        case .failure(let e): throw streamError(e, reading: false)
        }
    }

    private func streamError(_ e: Errno, reading: Bool) -> TransportError {
        switch e {
        case .connectionReset, .brokenPipe:
            TransportError(.closed, "\(label): the other side closed the connection (\(e))", errno: e.rawValue)
        case .ioError where !useSend:
            TransportError(.closed, "\(label): the serial device stopped working (unplugged?) (\(e))", errno: e.rawValue)
        default:
            TransportError(.io, "\(label): \(reading ? "read" : "write") failed: \(e)", errno: e.rawValue)
        }
    }

    func close() {
        if fd >= 0 {
            system.closeOnce(fd)
            fd = -1
        }
    }
}

/// H4 over TCP (virtual controllers such as Bumble, HCI bridges).
public final class TCPTransport: HCITransport {
    private let stream: H4Stream
    /// The host connected to.
    public let host: String
    /// The TCP port connected to.
    public let port: UInt16

    /// Resolves `host` (IPv4, IPv6 or a name), connects with `options.connectTimeout`
    /// to each address in turn, and sets TCP_NODELAY.
    public init(host: String, port: UInt16, options: TransportOptions = TransportOptions()) throws(TransportError) {
        self.host = host
        self.port = port
        let label = TransportSpec.tcp(host: host, port: port).description
        let fd = try TCPTransport.connect(host: host, port: port, label: label, options: options,
                                          refusedHint: "start the virtual controller or HCI bridge first")
        self.stream = H4Stream(fd: fd, label: label, useSend: true, options: options)
    }

    /// The connected socket (for poll).
    public var fileDescriptor: Int32 { stream.fd }
    public var description: String { stream.label }
    /// Reads what the socket has and hands each whole H4 packet to `body`; false at end of stream.
    public func readAvailable(_ body: (UnsafeRawBufferPointer) -> Void) throws(TransportError) -> Bool {
        try stream.readAvailable(body)
    }
    /// Reads until `stop` says so, between reads of the socket.
    public func readAvailable(_ body: (UnsafeRawBufferPointer) -> Void, stoppingWhen stop: () -> Bool) throws(TransportError) -> Bool {
        try stream.readAvailable(body, stoppingWhen: stop)
    }
    /// True: what is not read stays in the socket buffers, and TCP makes the sender wait.
    public var holdsUnreadData: Bool { true }
    /// Writes one H4 packet whole (waiting up to the write timeout).
    public func write(_ packet: UnsafeRawBufferPointer) throws(TransportError) { try stream.write(packet) }
    /// Writes what the socket takes now; returns the bytes written.
    public func writeAvailable(_ bytes: UnsafeRawBufferPointer) throws(TransportError) -> Int { try stream.writeAvailable(bytes) }
    /// Closes the socket.
    public func close() { stream.close() }

    /// A connected, non-blocking TCP socket (TCP_NODELAY, close-on-exec) to `host`: each
    /// address it resolves to is tried in turn with `options.connectTimeout`. Errors start
    /// with `label`; a refusal ends with `refusedHint` (what to start first). Blocks the
    /// calling thread while resolving and connecting. Also what the gateway's MQTT client
    /// opens its broker connection with.
    public static func connect(host: String, port: UInt16, label: String, options: TransportOptions,
                               refusedHint: String) throws(TransportError) -> Int32 {
        let system = options.system
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_ADDRCONFIG | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else {
            let why = gai_strerror(rc).map { String(cString: $0) } ?? "error \(rc)"
            if rc == EAI_NONAME || rc == EAI_AGAIN || rc == EAI_FAIL {
                throw TransportError(.notFound, "\(label): cannot resolve \"\(host)\": \(why)")
            }
            throw TransportError(.connectionFailed, "\(label): cannot resolve \"\(host)\": \(why)")
        }
        defer { freeaddrinfo(list) }
        var lastError = TransportError(.connectionFailed, "\(label): no usable address for \"\(host)\"")
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let ai = next {
            next = ai.pointee.ai_next
            guard let address = ai.pointee.ai_addr else { continue }
            let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
            let family = ai.pointee.ai_family
            let proto = ai.pointee.ai_protocol
            let fd: Int32
            switch system.valueOrErrno({ system.socket(family, type, proto) }) {
            case .success(let s): fd = s
            case .failure(let e):
                lastError = TransportError(.io, "\(label): socket failed: \(e)", errno: e.rawValue)
                continue
            }
            switch connectOne(fd, address, ai.pointee.ai_addrlen, system: system, timeout: options.connectTimeout) {
            case .success:
                var one: Int32 = 1
                _ = system.setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                return fd
            case .failure(let e):
                system.closeOnce(fd)
                if e == .timedOut {
                    lastError = TransportError(
                        .connectionFailed,
                        "\(label): no answer within \(options.connectTimeout) (is the host reachable and the port open?)",
                        errno: e.rawValue)
                } else if e == .connectionRefused {
                    lastError = TransportError(
                        .connectionFailed,
                        "\(label): connection refused: nothing listens on port \(port) (\(refusedHint))",
                        errno: e.rawValue)
                } else {
                    lastError = TransportError(.connectionFailed, "\(label): cannot connect: \(e)", errno: e.rawValue)
                }
            }
        }
        throw lastError
    }

    /// Non-blocking connect with a timeout. EINTR from connect means the connection
    /// continues in the background: never call connect again (EALREADY), wait instead.
    static func connectOne(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t, system: SystemCalls, timeout: Duration) -> Result<Void, Errno> {
        if system.connect(fd, address, length) == 0 { return .success(()) }
        let e = Errno.current
        guard e == .inProgress || e == .interrupted else { return .failure(e) }
        switch system.waitFor(fd, events: Int16(POLLOUT), timeoutMilliseconds: timeout.milliseconds) {
        case .success(0):
            return .failure(.timedOut)
        case .success:
            var soError: Int32 = 0
            var size = socklen_t(MemoryLayout<Int32>.size)
            if system.getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &size) != 0 { return .failure(Errno.current) }
            return soError == 0 ? .success(()) : .failure(Errno(soError))
        case .failure(let e):
            return .failure(e)
        }
    }
}

/// H4 over a UART (termios raw mode).
public final class SerialTransport: HCITransport {
    private let stream: H4Stream
    /// The device path (/dev/ttyX).
    public let path: String
    /// The baud rate set.
    public let baudRate: Int
    /// RTS/CTS hardware flow control is on.
    public let flowControl: Bool

    /// Opens `path` non-blocking, sets raw mode, `baudRate` (one of
    /// ``TransportSpec/standardBaudRates``) and RTS/CTS flow control when asked, and
    /// discards bytes already queued.
    public init(path: String, baudRate: Int = TransportSpec.defaultBaudRate, flowControl: Bool = false, options: TransportOptions = TransportOptions()) throws(TransportError) {
        self.path = path
        self.baudRate = baudRate
        self.flowControl = flowControl
        let label = TransportSpec.serial(path: path, baudRate: baudRate, flowControl: flowControl).description
        let system = options.system
        guard let speed = SerialTransport.speed(baudRate) else {
            throw TransportError(.invalidSpec, "\(label): \(baudRate) is not a standard baud rate")
        }
        let flags = O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC
        let fd: Int32
        switch system.valueOrErrno({ path.withCString { system.open($0, flags, 0) } }) {
        case .success(let f): fd = f
        case .failure(let e):
            switch e {
            case .noSuchFile, .noSuchDevice, Errno(ENXIO):
                throw TransportError(.notFound, "\(label): no such serial device \(path) (\(e))", errno: e.rawValue)
            case .accessDenied, .permissionDenied:
                throw TransportError(
                    .permissionDenied,
                    "\(label): no permission to open \(path): add your user to the device's group (usually dialout) or run as root",
                    errno: e.rawValue)
            case .busy:
                throw TransportError(.busy, "\(label): \(path) is in use by another program", errno: e.rawValue)
            default:
                throw TransportError(.io, "\(label): cannot open \(path): \(e)", errno: e.rawValue)
            }
        }
        var t = termios()
        func fail(_ what: String) -> TransportError {
            let e = Errno.current
            system.closeOnce(fd)
            if e == .notATerminal {
                return TransportError(.invalidSpec, "\(label): \(path) is not a serial device (terminal)", errno: e.rawValue)
            }
            return TransportError(.io, "\(label): \(what) failed: \(e)", errno: e.rawValue)
        }
        if system.tcgetattr(fd, &t) != 0 { throw fail("tcgetattr") }
        cfmakeraw(&t)
        if cfsetspeed(&t, speed) != 0 { throw fail("setting the baud rate") }
        t.c_cflag |= tcflag_t(CLOCAL | CREAD)
        if flowControl { t.c_cflag |= tcflag_t(CRTSCTS) } else { t.c_cflag &= ~tcflag_t(CRTSCTS) }
        // VMIN 1: with O_NONBLOCK an empty read fails with EAGAIN, so a read of 0 means
        // hangup. (VMIN 0 would make every empty read return 0, which looks like EOF.)
        withUnsafeMutableBytes(of: &t.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        if case .failure = system.valueOrErrno({ system.tcsetattr(fd, TCSANOW, &t) }) { throw fail("tcsetattr") }
        _ = system.tcflush(fd, TCIOFLUSH)
        self.stream = H4Stream(fd: fd, label: label, useSend: false, options: options)
    }

    /// The termios constant for a baud rate.
    static func speed(_ baud: Int) -> speed_t? {
        switch baud {
        case 1200: speed_t(B1200)
        case 2400: speed_t(B2400)
        case 4800: speed_t(B4800)
        case 9600: speed_t(B9600)
        case 19200: speed_t(B19200)
        case 38400: speed_t(B38400)
        case 57600: speed_t(B57600)
        case 115_200: speed_t(B115200)
        case 230_400: speed_t(B230400)
        case 460_800: speed_t(B460800)
        case 500_000: speed_t(B500000)
        case 576_000: speed_t(B576000)
        case 921_600: speed_t(B921600)
        case 1_000_000: speed_t(B1000000)
        case 1_152_000: speed_t(B1152000)
        case 1_500_000: speed_t(B1500000)
        case 2_000_000: speed_t(B2000000)
        case 2_500_000: speed_t(B2500000)
        case 3_000_000: speed_t(B3000000)
        case 3_500_000: speed_t(B3500000)
        case 4_000_000: speed_t(B4000000)
        default: nil
        }
    }

    /// The open device (for poll).
    public var fileDescriptor: Int32 { stream.fd }
    public var description: String { stream.label }
    /// Reads what the UART has and hands each whole H4 packet to `body`; false at end of stream.
    public func readAvailable(_ body: (UnsafeRawBufferPointer) -> Void) throws(TransportError) -> Bool {
        try stream.readAvailable(body)
    }
    /// Reads until `stop` says so, between reads of the device.
    public func readAvailable(_ body: (UnsafeRawBufferPointer) -> Void, stoppingWhen stop: () -> Bool) throws(TransportError) -> Bool {
        try stream.readAvailable(body, stoppingWhen: stop)
    }
    /// With RTS/CTS only: the UART then holds the controller off when the tty buffer fills;
    /// without flow control the bytes past it would be lost (and H4 framing with them).
    public var holdsUnreadData: Bool { flowControl }
    /// Writes one H4 packet whole (waiting up to the write timeout).
    public func write(_ packet: UnsafeRawBufferPointer) throws(TransportError) { try stream.write(packet) }
    /// Writes what the device takes now; returns the bytes written.
    public func writeAvailable(_ bytes: UnsafeRawBufferPointer) throws(TransportError) -> Int { try stream.writeAvailable(bytes) }
    /// Closes the device.
    public func close() { stream.close() }
}
