import BluetoothWire
import CBluetooth
import Glibc
import Synchronization

/// Options of a kernel L2CAP socket. `system` is the syscall shim (tests replace it).
public struct KernelL2CAPSocketOptions: Sendable {
    /// The system calls (tests replace them).
    public var system: SystemCalls
    /// How long to wait for the LE connection (the kernel's own LE connection attempt
    /// gives up after about 20 s).
    public var connectTimeout: Duration
    /// How long `send` waits for room in the socket.
    public var sendTimeout: Duration
    /// How long raising security may take (encryption, or pairing first): SMP's own
    /// timeout is 30 s (Core Vol 3 Part H §3.4).
    public var securityTimeout: Duration
    /// Bring the adapter up (HCIDEVUP) when it is down; needs CAP_NET_ADMIN.
    public var bringUp: Bool

    /// The defaults: 20 s to connect, 30 s to send or raise security, a down adapter brought up.
    public init(system: SystemCalls = .live, connectTimeout: Duration = .seconds(20),
                sendTimeout: Duration = .seconds(30), securityTimeout: Duration = .seconds(30), bringUp: Bool = true) {
        self.system = system
        self.connectTimeout = connectTimeout
        self.sendTimeout = sendTimeout
        self.securityTimeout = securityTimeout
        self.bringUp = bringUp
    }
}

/// A connected LE L2CAP socket of the kernel's host: `socket(AF_BLUETOOTH, SOCK_SEQPACKET,
/// BTPROTO_L2CAP)` on a fixed channel (CID 4 is ATT, Core Vol 3 Part A §2.1), where each
/// packet is one PDU of the channel. The kernel owns the link (the adapter stays up).
///
/// Opening: HCIGETDEVINFO reads the adapter's state and its own address; a down adapter
/// is brought up with HCIDEVUP (EALREADY: someone else just did); the socket is bound to
/// the adapter's own address (binding BDADDR_ANY picks the wrong adapter or trips a
/// kernel 6.1 bug when several adapters exist) and connected without blocking, with a
/// timeout.
///
/// Received packets are delivered on the socket's own reader thread, in order.
public final class KernelL2CAPSocket: @unchecked Sendable {
    /// Why the socket closed (the stack's one closed type).
    public typealias Closed = ChannelClosed

    /// BT_SECURITY levels (include/net/bluetooth/bluetooth.h).
    public struct SecurityLevel: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
        public var rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// No encryption.
        public static let low = SecurityLevel(rawValue: UInt8(BT_SECURITY_LOW))
        /// Encrypted, unauthenticated key (Just Works pairing).
        public static let medium = SecurityLevel(rawValue: UInt8(BT_SECURITY_MEDIUM))
        /// Encrypted with an authenticated (MITM-protected) key.
        public static let high = SecurityLevel(rawValue: UInt8(BT_SECURITY_HIGH))
        /// Authenticated LE Secure Connections key, 128-bit.
        public static let fips = SecurityLevel(rawValue: UInt8(BT_SECURITY_FIPS))

        /// Levels in increasing strength.
        public static func < (a: SecurityLevel, b: SecurityLevel) -> Bool { a.rawValue < b.rawValue }

        public var description: String {
            switch self {
            case .low: "low"
            case .medium: "medium (encrypted)"
            case .high: "high (authenticated)"
            case .fips: "FIPS (LE Secure Connections)"
            default: "level \(rawValue)"
            }
        }
    }

    /// The adapter (hciN) the socket is bound to.
    public let adapterIndex: UInt16
    /// The adapter's address.
    public let adapterAddress: BluetoothAddress
    /// The peer connected to.
    public let peer: LEAddress
    /// The fixed channel.
    public let cid: UInt16
    /// The socket's imtu as the kernel reported it, nil if unknown.
    public let socketMTU: UInt16?
    /// "hci0 -> F0:F1:F2:F3:F4:01 (public), CID 4".
    public let description: String

    private let system: SystemCalls
    private let sendTimeoutMilliseconds: Int32
    private let securityTimeoutMilliseconds: Int32
    private let fd: Int32

    private enum State: Sendable {
        case connected
        case running(received: @Sendable (UnsafeRawBufferPointer) -> Void, closed: @Sendable (Closed) -> Void)
        case closed(Closed)
    }

    private let state: Mutex<State> = Mutex(.connected)
    /// Wakes the reader thread for `close()`: (read end, write end).
    private let wake: (Int32, Int32)

    /// Connects to `peer` over adapter `hci<adapter>`. Throws a `TransportError` that
    /// says what to do: no Bluetooth in the kernel, no such adapter, adapter down and not
    /// allowed to bring it up, permission, peer refused or absent (timeout).
    public init(adapter index: UInt16, peer: LEAddress, cid: UInt16,
                options: KernelL2CAPSocketOptions = KernelL2CAPSocketOptions()) throws(TransportError) {
        let system = options.system
        let label = "l2cap:hci\(index)"
        self.adapterIndex = index
        self.peer = peer
        self.cid = cid
        self.system = system
        self.sendTimeoutMilliseconds = options.sendTimeout.milliseconds
        self.securityTimeoutMilliseconds = options.securityTimeout.milliseconds

        let own = try Self.prepareAdapter(index: index, label: label, system: system, bringUp: options.bringUp)
        self.adapterAddress = own

        let type = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        let fd: Int32
        switch retryingOnInterrupt({ system.socket(LinuxBluetooth.addressFamily, type, LinuxBluetooth.protocolL2CAP) }) {
        case .success(let f): fd = f
        case .failure(let e): throw Self.socketError(e, label: label, what: "an L2CAP socket")
        }
        func fail(_ error: TransportError) -> TransportError {
            _ = system.close(fd)
            return error
        }

        // Bind to the adapter's own address.
        var local = Self.l2Address(own, type: UInt8(BDADDR_LE_PUBLIC), cid: cid)
        let size = socklen_t(MemoryLayout<sockaddr_l2>.size)
        let bound = withUnsafePointer(to: &local) { p in retryingOnInterrupt { system.bind(fd, p, size) } }
        if case .failure(let e) = bound {
            switch e {
            case .permissionDenied, .accessDenied:
                throw fail(TransportError(.permissionDenied, "\(label): binding the L2CAP socket was refused (\(e))", errno: e.rawValue))
            default:
                throw fail(TransportError(.io, "\(label): binding the L2CAP socket to \(own) (the address of hci\(index)) failed: \(e)", errno: e.rawValue))
            }
        }

        let peerType = UInt8(peer.type == .public || peer.type == .publicIdentity ? BDADDR_LE_PUBLIC : BDADDR_LE_RANDOM)
        var remote = Self.l2Address(peer.address, type: peerType, cid: cid)
        let target = "\(peer.address) (\(peer.type == .public || peer.type == .publicIdentity ? "public" : "random"))"
        let connected = withUnsafePointer(to: &remote) { p in retryingOnInterrupt { system.connect(fd, p, size) } }
        switch connected {
        case .success:
            break
        case .failure(let e) where e == .inProgress || e == .wouldBlock || e == .alreadyInProgress:
            let ready = Self.waitFor(fd, events: Int16(POLLOUT), timeoutMilliseconds: options.connectTimeout.milliseconds, system: system)
            switch ready {
            case .failure(let pe):
                throw fail(TransportError(.io, "\(label): waiting for the connection to \(target) failed: \(pe)", errno: pe.rawValue))
            case .success(0):
                throw fail(TransportError(
                    .connectionFailed,
                    "\(label): no connection to \(target) within \(options.connectTimeout.milliseconds / 1000) s: is it in range, advertising and connectable?",
                    errno: ETIMEDOUT))
            case .success:
                let code: Int32
                switch Self.pendingError(fd, system: system) {
                case .success(let c): code = c
                case .failure(let ge):
                    throw fail(TransportError(.io, "\(label): reading the connection result failed: \(ge)", errno: ge.rawValue))
                }
                if code != 0 {
                    throw fail(Self.connectError(Errno(code), label: label, target: target))
                }
            }
        case .failure(let e):
            throw fail(Self.connectError(e, label: label, target: target))
        }

        self.socketMTU = Self.receiveMTU(fd, system: system)
        self.description = "\(target) via \(label)"

        guard let pipe = Self.wakePipe() else {
            throw fail(TransportError(.io, "\(label): cannot create the reader's wake pipe: \(Errno.current)"))
        }
        self.wake = pipe
        self.fd = fd
    }

    deinit {
        // The reader thread holds a reference while it runs, so here it has finished
        // (or never started) and the socket is ours to close.
        let needsClose = state.withLock { s -> Bool in
            if case .closed = s { return false }
            return true
        }
        if needsClose { _ = system.close(fd) }
        Glibc.close(wake.0)
        Glibc.close(wake.1)
    }

    // MARK: Packets

    /// Starts the reader thread: each packet goes to `received`, the end to `closed` (once).
    public func start(received: @escaping @Sendable (UnsafeRawBufferPointer) -> Void, closed: @escaping @Sendable (Closed) -> Void) {
        let early: Closed? = state.withLock { s in
            switch s {
            case .connected:
                s = .running(received: received, closed: closed)
                return nil
            case .running:
                preconditionFailure("KernelL2CAPSocket.start called twice")
            case .closed(let why):
                return why
            }
        }
        if let early {
            closed(early)
            return
        }
        let context = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let r = pthread_create(&thread, nil, { raw in
            guard let raw else { return nil }
            let bearer = Unmanaged<KernelL2CAPSocket>.fromOpaque(raw).takeRetainedValue()
            bearer.readLoop()
            return nil
        }, context)
        if r != 0 {
            Unmanaged<KernelL2CAPSocket>.fromOpaque(context).release()
            finish(Closed(message: "\(description): cannot start the reader thread: \(Errno(r))"))
            return
        }
        pthread_detach(thread)
    }

    /// Sends one PDU (waiting up to the send timeout for room).
    public func send(_ pdu: [UInt8]) throws(Closed) {
        if let why = closedReason() { throw why }
        let fd = self.fd
        let system = self.system
        let result: Result<Void, Errno> = pdu.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress else { return .success(()) }
            while true {
                switch retryingOnInterrupt({ system.send(fd, base, bytes.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }) {
                case .success:
                    // SEQPACKET: the whole PDU or nothing.
                    return .success(())
                case .failure(let e) where e == .wouldBlock:
                    switch Self.waitFor(fd, events: Int16(POLLOUT), timeoutMilliseconds: sendTimeoutMilliseconds, system: system) {
                    case .success(0): return .failure(.timedOut)
                    case .success: continue
                    case .failure(let pe): return .failure(pe)
                    }
                case .failure(let e):
                    return .failure(e)
                }
            }
        }
        switch result {
        case .success:
            return
        case .failure(let e) where e == .timedOut:
            throw Closed(message: "\(description): the kernel took no data for \(sendTimeoutMilliseconds / 1000) s (the link is stalled or pairing did not finish)")
        case .failure(let e):
            let why = Self.linkLost(e, description: description)
            throw why
        }
    }

    /// Closes the socket and stops the reader thread.
    public func close() {
        let wasRunning = state.withLock { s -> Bool? in
            switch s {
            case .connected:
                s = .closed(Closed(message: "\(description): closed"))
                return false
            case .running:
                return true
            case .closed:
                return nil
            }
        }
        switch wasRunning {
        case .some(true):
            // The reader closes the socket and reports `closed` as it exits.
            var one: UInt8 = 1
            _ = Glibc.write(wake.1, &one, 1)
        case .some(false):
            _ = system.close(fd)
        case .none:
            break
        }
    }

    // MARK: Security

    /// The socket's current BT_SECURITY level.
    public func securityLevel() throws(TransportError) -> SecurityLevel {
        var value = bt_security()
        var length = socklen_t(MemoryLayout<bt_security>.size)
        let fd = self.fd
        let system = self.system
        switch retryingOnInterrupt({ system.getsockopt(fd, SOL_BLUETOOTH, BT_SECURITY, &value, &length) }) {
        case .success: return SecurityLevel(rawValue: value.level)
        case .failure(let e):
            throw TransportError(.io, "\(description): reading the security level failed: \(e)", errno: e.rawValue)
        }
    }

    /// Asks the kernel for `level` on this link (setsockopt BT_SECURITY) and waits until it
    /// is done: it encrypts with a stored key or pairs (SMP) first. Meanwhile the
    /// socket is in BT_CONFIG and refuses writes (ENOTCONN); it becomes writable again
    /// when the link is encrypted, and hangs up when pairing fails. Then the failed request
    /// can be sent again. Pairing that asks for user input needs an agent (bluetoothd);
    /// without bluetoothd the kernel has SMP only on adapters powered on through its
    /// management interface (`btmgmt power on`), not with HCIDEVUP.
    public func raiseSecurity(level: SecurityLevel) throws(TransportError) {
        var value = bt_security(level: level.rawValue, key_size: 0)
        let length = socklen_t(MemoryLayout<bt_security>.size)
        let fd = self.fd
        let system = self.system
        let r = withUnsafePointer(to: &value) { p in retryingOnInterrupt { system.setsockopt(fd, SOL_BLUETOOTH, BT_SECURITY, p, length) } }
        switch r {
        case .success:
            try waitForSecurity(level)
        case .failure(let e) where e == .permissionDenied || e == .accessDenied:
            throw TransportError(.permissionDenied, "\(description): the kernel refused security level \(level) (\(e))", errno: e.rawValue)
        case .failure(let e) where e == .invalidArgument:
            // smp_conn_security() found no SMP channel on this link.
            throw TransportError(
                .io,
                "\(description): the kernel cannot encrypt this link (EINVAL: no SMP on hci\(adapterIndex)); without bluetoothd, power the adapter on through the kernel's management interface (`btmgmt --index \(adapterIndex) power on`), not HCIDEVUP",
                errno: e.rawValue)
        case .failure(let e):
            throw TransportError(.io, "\(description): raising security to \(level) failed: \(e)", errno: e.rawValue)
        }
    }

    private func ms(_ v: Int32) -> String { v % 1000 == 0 ? "\(v / 1000) s" : "\(v) ms" }

    /// Waits for the socket to leave BT_CONFIG: writable again (done) or hung up (failed).
    private func waitForSecurity(_ level: SecurityLevel) throws(TransportError) {
        switch Self.waitFor(fd, events: Int16(POLLOUT), timeoutMilliseconds: securityTimeoutMilliseconds, system: system) {
        case .success(0):
            throw TransportError(.timedOut, "\(description): security level \(level) not reached within \(ms(securityTimeoutMilliseconds)) (pairing did not finish)")
        case .success(let revents) where revents & Int16(POLLHUP | POLLERR) != 0:
            let soError = (try? Self.pendingError(fd, system: system).get()) ?? 0
            let why = soError != 0 ? ": \(Errno(soError))" : ""
            throw TransportError(.io, "\(description): the link dropped while raising security to \(level) (pairing or encryption failed\(why))",
                                 errno: soError != 0 ? soError : nil)
        case .success:
            return
        case .failure(let e):
            throw TransportError(.io, "\(description): waiting for security level \(level) failed: \(e)", errno: e.rawValue)
        }
    }

    // MARK: Reader

    private func readLoop() {
        let capacity = 65_536
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        defer { buffer.deallocate() }
        let fd = self.fd
        let system = self.system
        var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: wake.0, events: Int16(POLLIN), revents: 0)]
        while true {
            fds[0].revents = 0
            fds[1].revents = 0
            let r = fds.withUnsafeMutableBufferPointer { system.poll($0.baseAddress!, 2, -1) }
            if r < 0 {
                let e = Errno.current
                if e == .interrupted { continue }
                finish(Closed(message: "\(description): poll failed: \(e)"))
                return
            }
            if fds[1].revents != 0 {
                finish(Closed(message: "\(description): closed"))
                return
            }
            guard fds[0].revents != 0 else { continue }
            // Each read is one SEQPACKET, which is one PDU.
            readAll: while true {
                switch retryingOnInterrupt({ system.read(fd, buffer, capacity) }) {
                case .success(0):
                    finish(Closed(message: "\(description): the link was closed"))
                    return
                case .success(let n):
                    guard case .running(let received, _) = state.withLock({ $0 }) else { return finish(nil) }
                    received(UnsafeRawBufferPointer(start: buffer, count: n))
                case .failure(let e) where e == .wouldBlock:
                    break readAll
                case .failure(let e):
                    finish(Self.linkLost(e, description: description))
                    return
                }
            }
        }
    }

    /// Closes the socket and reports `closed` once (from the reader thread).
    private func finish(_ reason: Closed?) {
        let why = reason ?? Closed(message: "\(description): closed")
        let callback: (@Sendable (Closed) -> Void)? = state.withLock { s in
            switch s {
            case .running(_, let closed):
                s = .closed(why)
                return closed
            case .connected:
                s = .closed(why)
                return nil
            case .closed:
                return nil
            }
        }
        _ = system.close(fd)
        callback?(why)
    }

    private func closedReason() -> Closed? {
        state.withLock { s in
            if case .closed(let why) = s { return why }
            return nil
        }
    }

    // MARK: Opening helpers

    /// HCIGETDEVINFO, HCIDEVUP when down; returns the adapter's own address.
    static func prepareAdapter(index: UInt16, label: String, system: SystemCalls, bringUp: Bool) throws(TransportError) -> BluetoothAddress {
        let type = Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let hci: Int32
        switch retryingOnInterrupt({ system.socket(LinuxBluetooth.addressFamily, type, LinuxBluetooth.protocolHCI) }) {
        case .success(let f): hci = f
        case .failure(let e): throw socketError(e, label: label, what: "an HCI socket")
        }
        defer { _ = system.close(hci) }

        var info: (address: BluetoothAddress, up: Bool)
        switch deviceInfo(hci, index: index, system: system) {
        case .success(let i): info = i
        case .failure(let e) where e == .noSuchDevice:
            throw TransportError(.notFound, "\(label): no adapter hci\(index) (hcigatt list shows the adapters)", errno: e.rawValue)
        case .failure(let e):
            throw TransportError(.io, "\(label): reading the state of hci\(index) failed: \(e)", errno: e.rawValue)
        }
        if !info.up {
            guard bringUp else {
                throw TransportError(.adapterDown, "\(label): hci\(index) is down: run `btmgmt --index \(index) power on`", errno: nil)
            }
            switch retryingOnInterrupt({ system.ioctl(hci, LinuxBluetooth.ioctlDeviceUp, Int(index)) }) {
            case .success:
                break
            case .failure(let e) where e == .alreadyInProgress:
                break // already up
            case .failure(let e) where e == .permissionDenied || e == .accessDenied:
                throw TransportError(
                    .permissionDenied,
                    "\(label): hci\(index) is down and bringing it up needs CAP_NET_ADMIN: run `btmgmt --index \(index) power on` (or hcigatt as root)",
                    errno: e.rawValue)
            case .failure(let e) where e == .rfkill:
                throw TransportError(.adapterDown, "\(label): hci\(index) is blocked by rfkill: run `rfkill unblock bluetooth`", errno: e.rawValue)
            case .failure(let e) where e == .busy:
                throw TransportError(
                    .adapterDown,
                    "\(label): hci\(index) is down and busy: another program holds its HCI user channel (another hcigatt, Bumble...); stop it, or use user:hci\(index)",
                    errno: e.rawValue)
            case .failure(let e):
                throw TransportError(.adapterDown, "\(label): hci\(index) is down and cannot be brought up: \(e)", errno: e.rawValue)
            }
            if case .success(let i) = deviceInfo(hci, index: index, system: system) { info = i }
        }
        guard info.address != BluetoothAddress(rawValue: 0) else {
            throw TransportError(
                .adapterDown,
                "\(label): hci\(index) reports no public address (00:00:00:00:00:00), so an L2CAP socket cannot be bound to it")
        }
        return info.address
    }

    static func deviceInfo(_ fd: Int32, index: UInt16, system: SystemCalls) -> Result<(address: BluetoothAddress, up: Bool), Errno> {
        var di = hci_dev_info()
        di.dev_id = index
        let r = withUnsafeMutablePointer(to: &di) { p in
            retryingOnInterrupt { system.ioctl(fd, LinuxBluetooth.ioctlGetDeviceInfo, Int(bitPattern: UnsafeMutableRawPointer(p))) }
        }
        if case .failure(let e) = r { return .failure(e) }
        // bdaddr_t is least significant byte first.
        let address = withUnsafeBytes(of: di.bdaddr) { raw in raw.reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
        let up = di.flags & LinuxBluetooth.flagUp != 0
        return .success((BluetoothAddress(rawValue: address), up))
    }

    /// A `sockaddr_l2` for an LE address on fixed channel `cid`.
    static func l2Address(_ address: BluetoothAddress, type: UInt8, cid: UInt16) -> sockaddr_l2 {
        var a = sockaddr_l2()
        a.l2_family = sa_family_t(AF_BLUETOOTH)
        a.l2_psm = 0
        a.l2_cid = cid.littleEndian
        a.l2_bdaddr_type = type
        let v = address.rawValue
        a.l2_bdaddr = bdaddr_t(b: (UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8),
                                   UInt8(truncatingIfNeeded: v >> 16), UInt8(truncatingIfNeeded: v >> 24),
                                   UInt8(truncatingIfNeeded: v >> 32), UInt8(truncatingIfNeeded: v >> 40)))
        return a
    }

    /// The socket's imtu: L2CAP_OPTIONS (the fixed ATT channel answers it), else
    /// BT_RCVMTU, else nil.
    static func receiveMTU(_ fd: Int32, system: SystemCalls) -> UInt16? {
        var options = l2cap_options()
        var length = socklen_t(MemoryLayout<l2cap_options>.size)
        if case .success = retryingOnInterrupt({ system.getsockopt(fd, SOL_L2CAP, L2CAP_OPTIONS, &options, &length) }), options.imtu > 0 {
            return options.imtu
        }
        var mtu: UInt16 = 0
        length = socklen_t(MemoryLayout<UInt16>.size)
        if case .success = retryingOnInterrupt({ system.getsockopt(fd, SOL_BLUETOOTH, BT_RCVMTU, &mtu, &length) }), mtu > 0 {
            return mtu
        }
        return nil
    }

    static func socketError(_ e: Errno, label: String, what: String) -> TransportError {
        switch e {
        case .addressFamilyNotSupported, .protocolNotSupported:
            TransportError(
                .noBluetoothSupport,
                "the kernel has no Bluetooth support (AF_BLUETOOTH): load the bluetooth module (modprobe bluetooth) or use --transport tcp:HOST:PORT",
                errno: e.rawValue)
        case .permissionDenied, .accessDenied:
            TransportError(.permissionDenied, "\(label): not allowed to open \(what) (\(e))", errno: e.rawValue)
        default:
            TransportError(.io, "\(label): cannot open \(what): \(e)", errno: e.rawValue)
        }
    }

    static func connectError(_ e: Errno, label: String, target: String) -> TransportError {
        switch e.rawValue {
        case ECONNREFUSED:
            TransportError(.connectionFailed, "\(label): \(target) refused the connection (\(e))", errno: e.rawValue)
        case ETIMEDOUT, EHOSTDOWN, EHOSTUNREACH:
            TransportError(.connectionFailed, "\(label): no connection to \(target): is it in range, advertising and connectable? (\(e))", errno: e.rawValue)
        case EPERM, EACCES:
            TransportError(.permissionDenied, "\(label): the kernel refused the connection to \(target) (\(e))", errno: e.rawValue)
        case EBUSY, EALREADY:
            TransportError(.busy, "\(label): hci cannot start another LE connection now (\(e)): is a connection to \(target) already being made?", errno: e.rawValue)
        case ENETDOWN, ENODEV:
            TransportError(.adapterDown, "\(label): the adapter went down (\(e))", errno: e.rawValue)
        default:
            TransportError(.connectionFailed, "\(label): connecting to \(target) failed: \(e)", errno: e.rawValue)
        }
    }

    /// A read/send errno on a connected socket, as the reason the link went away.
    static func linkLost(_ e: Errno, description: String) -> Closed {
        switch e.rawValue {
        case ECONNRESET:
            Closed(reason: .remoteUserTerminatedConnection, message: "\(description): disconnected by the peer (\(e))")
        case ETIMEDOUT:
            Closed(reason: .connectionTimeout, message: "\(description): the link timed out (\(e))")
        case ECONNABORTED:
            Closed(reason: .connectionTerminatedByLocalHost, message: "\(description): the kernel closed the link (\(e))")
        default:
            Closed(message: "\(description): the link failed: \(e)")
        }
    }

    /// The socket's pending error (SO_ERROR): how a connect or the link ended; 0 for none.
    static func pendingError(_ fd: Int32, system: SystemCalls) -> Result<Int32, Errno> {
        var code: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return retryingOnInterrupt { system.getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length) }.map { _ in code }
    }

    /// poll for `events`; 0 after the timeout. EINTR restarts with the time left.
    static func waitFor(_ fd: Int32, events: Int16, timeoutMilliseconds: Int32, system: SystemCalls) -> Result<Int16, Errno> {
        let deadline = system.monotonicNanoseconds() &+ UInt64(max(timeoutMilliseconds, 0)) &* 1_000_000
        var remaining = timeoutMilliseconds
        while true {
            var p = pollfd(fd: fd, events: events, revents: 0)
            let r = system.poll(&p, 1, remaining)
            if r > 0 { return .success(p.revents) }
            if r == 0 { return .success(0) }
            let e = Errno.current
            guard e == .interrupted else { return .failure(e) }
            let now = system.monotonicNanoseconds()
            if now >= deadline { return .success(0) }
            remaining = Int32(clamping: (deadline - now + 999_999) / 1_000_000)
        }
    }

    /// A non-blocking close-on-exec pipe to wake the reader.
    static func wakePipe() -> (Int32, Int32)? {
        var fds: [Int32] = [-1, -1]
        let r = fds.withUnsafeMutableBufferPointer { Glibc.pipe($0.baseAddress) }
        guard r == 0 else { return nil }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        return (fds[0], fds[1])
    }
}

