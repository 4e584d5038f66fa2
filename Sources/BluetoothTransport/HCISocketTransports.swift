import BluetoothWire
import CBluetooth
import Glibc

/// The kernel socket half shared by the user-channel and raw-channel transports:
/// each read returns one packet with its H4 indicator, each write sends one.
final class HCIPacketSocket {
    let system: SystemCalls
    private(set) var fd: Int32
    let label: String
    let index: UInt16
    let writeTimeoutMilliseconds: Int32
    /// What a write EPERM means on this channel.
    let permissionHint: String
    private let buffer: UnsafeMutableRawPointer
    /// An indicator + the largest ACL packet.
    private let bufferSize = 1 + 4 + 65535

    init(fd: Int32, index: UInt16, label: String, permissionHint: String, options: TransportOptions) {
        self.system = options.system
        self.fd = fd
        self.index = index
        self.label = label
        self.permissionHint = permissionHint
        self.writeTimeoutMilliseconds = options.writeTimeout.milliseconds
        self.buffer = UnsafeMutableRawPointer.allocate(byteCount: bufferSize, alignment: 16)
        // The default receive buffer (rmem_default, ~208 KiB) holds only a few hundred
        // small packets, each charged at its skb's true size: a crowd's burst of reports
        // overflows it while the host is busy. Ask for more; SO_RCVBUFFORCE passes
        // rmem_max with CAP_NET_ADMIN (which the user channel needs anyway).
        var size: Int32 = Self.receiveBufferBytes
        let length = socklen_t(MemoryLayout<Int32>.size)
        if system.setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, length) != 0 {
            _ = system.setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, length)
        }
    }

    /// What the receive buffer is set to (the kernel doubles it for its bookkeeping).
    static let receiveBufferBytes: Int32 = 4 << 20

    /// Packets the kernel dropped because the receive buffer was full: SO_MEMINFO's
    /// SK_MEMINFO_DROPS (index 8; Linux 4.12+), nil where the kernel does not say.
    func receiveDrops() -> Int? {
        guard fd >= 0 else { return nil }
        var info: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) = (0, 0, 0, 0, 0, 0, 0, 0, 0)
        var length = socklen_t(MemoryLayout.size(ofValue: info))
        guard system.getsockopt(fd, SOL_SOCKET, SO_MEMINFO, &info, &length) == 0,
              Int(length) >= MemoryLayout.size(ofValue: info) else { return nil }
        return Int(info.8)
    }

    deinit {
        close()
        buffer.deallocate()
    }

    func readAvailable(_ body: (UnsafeRawBufferPointer) -> Void) throws(TransportError) -> Bool {
        guard fd >= 0 else { throw TransportError(.closed, "\(label): the transport is closed") }
        while true {
            let fd = self.fd
            let buffer = self.buffer
            let size = bufferSize
            switch system.valueOrErrno({ system.read(fd, buffer, size) }) {
            case .success(0):
                // The kernel closed the socket (adapter unregistered).
                return false
            case .success(let n):
                body(UnsafeRawBufferPointer(start: buffer, count: n))
            case .failure(let e) where e == .wouldBlock:
                return true
            case .failure(let e):
                throw error(e, reading: true)
            }
        }
    }

    /// One write(2) of a whole packet: its length, or 0 when the socket is full.
    func writeAvailable(_ packet: UnsafeRawBufferPointer) throws(TransportError) -> Int {
        guard fd >= 0 else { throw TransportError(.closed, "\(label): the transport is closed") }
        guard let base = packet.baseAddress, packet.count > 0 else { return 0 }
        let fd = self.fd
        switch system.valueOrErrno({ system.write(fd, base, packet.count) }) {
        case .success(let n) where n == packet.count: return n
        case .success(let n):
            throw TransportError(.io, "\(label): the kernel took \(n) of \(packet.count) bytes of a packet")
        case .failure(let e) where e == .wouldBlock: return 0
        case .failure(let e): throw error(e, reading: false)
        }
    }

    func write(_ packet: UnsafeRawBufferPointer) throws(TransportError) {
        guard fd >= 0 else { throw TransportError(.closed, "\(label): the transport is closed") }
        guard let base = packet.baseAddress, packet.count > 0 else { return }
        let fd = self.fd
        while true {
            switch system.valueOrErrno({ system.write(fd, base, packet.count) }) {
            case .success(let n) where n == packet.count:
                return
            case .success(let n):
                // A packet socket never writes part of a packet; if it did, the rest
                // cannot be sent as a separate packet.
                throw TransportError(.io, "\(label): the kernel took \(n) of \(packet.count) bytes of a packet")
            case .failure(let e) where e == .wouldBlock:
                switch system.waitFor(fd, events: Int16(POLLOUT), timeoutMilliseconds: writeTimeoutMilliseconds) {
                case .success(0):
                    throw TransportError(.io, "\(label): the socket stayed full for \(writeTimeoutMilliseconds) ms (the controller is not taking packets)")
                case .success:
                    continue
                case .failure(let e):
                    throw error(e, reading: false)
                }
            case .failure(let e):
                throw error(e, reading: false)
            }
        }
    }

    private func error(_ e: Errno, reading: Bool) -> TransportError {
        switch e {
        case .noSuchDevice, .networkDown, Errno(EPIPE):
            TransportError(.closed, "\(label): the adapter hci\(index) went away or down (\(e))", errno: e.rawValue)
        case .permissionDenied, .accessDenied:
            TransportError(.permissionDenied, "\(label): \(permissionHint) (\(e))", errno: e.rawValue)
        case .invalidArgument where !reading:
            TransportError(.io, "\(label): the kernel rejected the packet as malformed (\(e))", errno: e.rawValue)
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

/// What the kernel told us about an adapter (HCIGETDEVINFO).
struct HCIDeviceInfo {
    var index: UInt16
    var name: String
    var address: BluetoothAddress
    var flags: UInt32
    var type: UInt8
    var isUp: Bool { flags & LinuxBluetooth.flagUp != 0 }
}

extension SystemCalls {
    /// A non-blocking HCI socket, or the error to show when there is none.
    func openHCISocket(label: String) -> Result<Int32, TransportError> {
        let type = Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        switch valueOrErrno({ socket(LinuxBluetooth.addressFamily, type, LinuxBluetooth.protocolHCI) }) {
        case .success(let fd):
            return .success(fd)
        case .failure(let e) where e == .addressFamilyNotSupported || e == .protocolNotSupported:
            return .failure(TransportError.noBluetooth(errno: e))
        case .failure(let e) where e == .permissionDenied || e == .accessDenied:
            return .failure(TransportError(.permissionDenied, "\(label): not allowed to open an HCI socket (\(e))", errno: e.rawValue))
        case .failure(let e):
            return .failure(TransportError(.io, "\(label): cannot open an HCI socket: \(e)", errno: e.rawValue))
        }
    }

    /// HCIGETDEVINFO for adapter `index` on any HCI socket.
    func deviceInfo(_ fd: Int32, index: UInt16) -> Result<HCIDeviceInfo, Errno> {
        var di = hci_dev_info()
        di.dev_id = index
        let r = withUnsafeMutablePointer(to: &di) { p in
            valueOrErrno { ioctl(fd, LinuxBluetooth.ioctlGetDeviceInfo, Int(bitPattern: UnsafeMutableRawPointer(p))) }
        }
        switch r {
        case .failure(let e): return .failure(e)
        case .success: break
        }
        let name = withUnsafeBytes(of: di.name) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        // bdaddr_t holds the address least significant byte first, as on the wire.
        let address = withUnsafeBytes(of: di.bdaddr) { raw in
            raw.reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        }
        return .success(HCIDeviceInfo(
            index: di.dev_id, name: name.isEmpty ? "hci\(index)" : name,
            address: BluetoothAddress(rawValue: address), flags: di.flags, type: di.type))
    }
}

extension TransportError {
    /// The kernel has no AF_BLUETOOTH.
    static func noBluetooth(errno e: Errno) -> TransportError {
        TransportError(
            .noBluetoothSupport,
            "the kernel has no Bluetooth support (AF_BLUETOOTH): load the bluetooth module (modprobe bluetooth) or use --transport tcp:HOST:PORT",
            errno: e.rawValue)
    }

    static func noAdapter(_ index: UInt16, label: String, errno e: Errno) -> TransportError {
        TransportError(.notFound, "\(label): no adapter hci\(index) (hcigatt list shows the adapters)", errno: e.rawValue)
    }
}

/// The HCI user channel: exclusive access to a controller the kernel's host has let go
/// of (the adapter must be down). Each read is one packet with its H4 indicator, each
/// write sends one.
///
/// Opening it: the kernel answers EBUSY while the adapter is up and for a few seconds
/// after an adapter appears (while it initialises it). We retry every
/// `busyRetryInterval` for `busyRetryDuration`; if it is still busy and the adapter is
/// up, `options.bringDown` brings it down with HCIDEVDOWN and tries again, otherwise
/// the error says what holds it and how to free it. Needs CAP_NET_ADMIN.
public final class UserChannelTransport: HCITransport {
    private let socket: HCIPacketSocket
    /// The adapter index (hciN).
    public let index: UInt16

    /// Opens the user channel of adapter `index` (see above for busy adapters).
    public init(index: UInt16, options: TransportOptions = TransportOptions()) throws(TransportError) {
        self.index = index
        let label = TransportSpec.userChannel(index: index).description
        let system = options.system
        let fd: Int32
        switch system.openHCISocket(label: label) {
        case .success(let f): fd = f
        case .failure(let e): throw e
        }
        do throws(TransportError) {
            try UserChannelTransport.bind(fd, index: index, label: label, options: options)
        } catch {
            system.closeOnce(fd)
            throw error
        }
        self.socket = HCIPacketSocket(
            fd: fd, index: index, label: label,
            permissionHint: "the kernel refused the packet; the user channel needs CAP_NET_ADMIN",
            options: options)
    }

    /// Binds, with the EBUSY retry and the optional bring-down.
    static func bind(_ fd: Int32, index: UInt16, label: String, options: TransportOptions) throws(TransportError) {
        let system = options.system
        var broughtDown = false
        while true {
            let result = retryWhileBusy(fd, index: index, channel: LinuxBluetooth.hciChannelUser, options: options)
            let e: Errno
            switch result {
            case .success: return
            case .failure(let err): e = err
            }
            switch e {
            case .busy:
                let info = system.deviceInfo(fd, index: index)
                guard case .success(let di) = info, di.isUp else {
                    throw TransportError(
                        .busy,
                        "\(label): hci\(index) stayed busy for \(options.busyRetryDuration) although it is down: the kernel is still setting it up or another program holds it; try again in a few seconds",
                        errno: e.rawValue)
                }
                if broughtDown {
                    throw TransportError(
                        .busy,
                        "\(label): hci\(index) was brought down but something powered it up again (probably bluetoothd): stop it (systemctl stop bluetooth) or run `btmgmt --index \(index) power off`, then retry",
                        errno: e.rawValue)
                }
                guard options.bringDown else {
                    throw TransportError(
                        .busy,
                        "\(label): hci\(index) is up: the kernel's Bluetooth host (bluetoothd) is using it, and the user channel needs it down. Pass hcigatt's --bring-down option to take it over, or run `btmgmt --index \(index) power off` (or `hciconfig hci\(index) down`) first",
                        errno: e.rawValue)
                }
                switch system.valueOrErrno({ system.ioctl(fd, LinuxBluetooth.ioctlDeviceDown, Int(index)) }) {
                case .success:
                    broughtDown = true
                case .failure(let d) where d == .permissionDenied || d == .accessDenied:
                    throw TransportError(
                        .permissionDenied,
                        "\(label): bringing hci\(index) down needs CAP_NET_ADMIN: run as root or `sudo setcap cap_net_admin+ep` on the hcigatt binary",
                        errno: d.rawValue)
                case .failure(let d):
                    throw TransportError(.busy, "\(label): hci\(index) is up and could not be brought down: \(d)", errno: d.rawValue)
                }
            case .tooManyUsers, .alreadyInProgress:
                throw TransportError(
                    .busy,
                    "\(label): hci\(index) is held by another program's HCI user channel (another hcigatt, Bumble, btproxy...); stop it first",
                    errno: e.rawValue)
            case .permissionDenied, .accessDenied:
                throw TransportError(
                    .permissionDenied,
                    "\(label): the HCI user channel needs CAP_NET_ADMIN: run as root or `sudo setcap cap_net_admin+ep` on the hcigatt binary",
                    errno: e.rawValue)
            case .noSuchDevice:
                throw TransportError.noAdapter(index, label: label, errno: e)
            case .rfkill:
                throw TransportError(.busy, "\(label): hci\(index) is blocked by rfkill: run `rfkill unblock bluetooth`", errno: e.rawValue)
            case .addressFamilyNotSupported, .protocolNotSupported:
                throw TransportError.noBluetooth(errno: e)
            default:
                throw TransportError(.io, "\(label): binding the HCI user channel failed: \(e)", errno: e.rawValue)
            }
        }
    }

    /// bind() repeated while it fails with EBUSY, up to the configured duration.
    static func retryWhileBusy(_ fd: Int32, index: UInt16, channel: UInt16, options: TransportOptions) -> Result<Void, Errno> {
        let system = options.system
        var address = LinuxBluetooth.hciAddress(device: index, channel: channel)
        let size = socklen_t(LinuxBluetooth.sockaddrHCISize)
        let deadline = system.monotonicNanoseconds() &+ options.busyRetryDuration.nanoseconds
        while true {
            let r = withUnsafePointer(to: &address) { p in system.valueOrErrno { system.bind(fd, p, size) } }
            switch r {
            case .success:
                return .success(())
            case .failure(let e) where e == .busy && system.monotonicNanoseconds() < deadline:
                system.sleepNanoseconds(options.busyRetryInterval.nanoseconds)
            case .failure(let e):
                return .failure(e)
            }
        }
    }

    /// The HCI socket (for poll).
    public var fileDescriptor: Int32 { socket.fd }
    public var description: String { socket.label }
    /// Reads the packets the socket has (one per read) and hands each to `body`; false when it closed.
    public func readAvailable(_ body: (UnsafeRawBufferPointer) -> Void) throws(TransportError) -> Bool {
        try socket.readAvailable(body)
    }
    /// Writes one H4 packet.
    public func write(_ packet: UnsafeRawBufferPointer) throws(TransportError) { try socket.write(packet) }
    /// Writes one H4 packet if the socket takes it now; returns the bytes written (0: try later).
    public func writeAvailable(_ bytes: UnsafeRawBufferPointer) throws(TransportError) -> Int { try socket.writeAvailable(bytes) }
    /// Closes the socket (the kernel gets the adapter back, down).
    public func close() { socket.close() }
    /// Packets the kernel dropped because the socket's receive buffer was full.
    public var receiveDrops: Int? { socket.receiveDrops() }
}

/// The HCI raw channel: sees the controller's events and ACL data beside the kernel's
/// own host (the adapter stays up). The socket filter (event + ACL packets, all
/// events) is set once at open. Reads return the H4 indicator as the first byte, like
/// the user channel. Sending commands the kernel does not allow for unprivileged raw
/// sockets needs CAP_NET_RAW.
public final class RawChannelTransport: HCITransport {
    private let socket: HCIPacketSocket
    /// The adapter index (hciN).
    public let index: UInt16

    /// Opens the raw channel of adapter `index` (it must be up).
    public init(index: UInt16, options: TransportOptions = TransportOptions()) throws(TransportError) {
        self.index = index
        let label = TransportSpec.rawChannel(index: index).description
        let system = options.system
        let fd: Int32
        switch system.openHCISocket(label: label) {
        case .success(let f): fd = f
        case .failure(let e): throw e
        }
        func fail(_ error: TransportError) -> TransportError {
            system.closeOnce(fd)
            return error
        }
        var address = LinuxBluetooth.hciAddress(device: index, channel: LinuxBluetooth.hciChannelRaw)
        let size = socklen_t(LinuxBluetooth.sockaddrHCISize)
        let bound = withUnsafePointer(to: &address) { p in system.valueOrErrno { system.bind(fd, p, size) } }
        if case .failure(let e) = bound {
            switch e {
            case .noSuchDevice: throw fail(.noAdapter(index, label: label, errno: e))
            case .permissionDenied, .accessDenied:
                throw fail(TransportError(.permissionDenied, "\(label): binding the HCI raw channel was refused (\(e)): run as root or grant CAP_NET_RAW", errno: e.rawValue))
            default: throw fail(TransportError(.io, "\(label): binding the HCI raw channel failed: \(e)", errno: e.rawValue))
            }
        }
        switch system.deviceInfo(fd, index: index) {
        case .success(let di) where !di.isUp:
            throw fail(TransportError(
                .adapterDown,
                "\(label): hci\(index) is down; the raw channel works beside the kernel's host, which must have it up: run `btmgmt --index \(index) power on`, or use user:hci\(index) to drive the controller alone"))
        case .success:
            break
        case .failure(let e) where e == .noSuchDevice:
            throw fail(.noAdapter(index, label: label, errno: e))
        case .failure(let e):
            throw fail(TransportError(.io, "\(label): reading the state of hci\(index) failed: \(e)", errno: e.rawValue))
        }
        var filter = LinuxBluetooth.rawChannelFilter()
        let filterSize = socklen_t(MemoryLayout<hci_filter>.size)
        let set = withUnsafePointer(to: &filter) { p in
            system.valueOrErrno { system.setsockopt(fd, LinuxBluetooth.solHCI, LinuxBluetooth.hciFilterOption, p, filterSize) }
        }
        if case .failure(let e) = set {
            throw fail(TransportError(.io, "\(label): setting the HCI socket filter failed: \(e)", errno: e.rawValue))
        }
        self.socket = HCIPacketSocket(
            fd: fd, index: index, label: label,
            permissionHint: "the kernel refused the packet: raw-channel commands outside its safe list need CAP_NET_RAW (run as root or `sudo setcap cap_net_raw,cap_net_admin+ep` on hcigatt)",
            options: options)
    }

    /// The HCI socket (for poll).
    public var fileDescriptor: Int32 { socket.fd }
    public var description: String { socket.label }
    /// Reads the packets the socket has (one per read) and hands each to `body`; false when it closed.
    public func readAvailable(_ body: (UnsafeRawBufferPointer) -> Void) throws(TransportError) -> Bool {
        try socket.readAvailable(body)
    }
    /// Writes one H4 packet.
    public func write(_ packet: UnsafeRawBufferPointer) throws(TransportError) { try socket.write(packet) }
    /// Writes one H4 packet if the socket takes it now; returns the bytes written (0: try later).
    public func writeAvailable(_ bytes: UnsafeRawBufferPointer) throws(TransportError) -> Int { try socket.writeAvailable(bytes) }
    /// Closes the socket.
    public func close() { socket.close() }
    /// Packets the kernel dropped because the socket's receive buffer was full.
    public var receiveDrops: Int? { socket.receiveDrops() }
}
