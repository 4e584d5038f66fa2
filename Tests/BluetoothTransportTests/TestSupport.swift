import CBluetooth
import Glibc
@testable import BluetoothTransport

/// Hex literal: `h("04 0e 04")`.
func h(_ s: String) -> [UInt8] {
    var out: [UInt8] = []
    var digits = s.filter(\.isHexDigit)[...]
    while digits.count >= 2 {
        out.append(UInt8(digits.prefix(2), radix: 16) ?? 0)
        digits = digits.dropFirst(2)
    }
    return out
}

/// Every packet `readAvailable` hands out in one call, and its return value.
func readPackets(_ t: any HCITransport) throws(TransportError) -> (packets: [[UInt8]], open: Bool) {
    var packets: [[UInt8]] = []
    let open = try t.readAvailable { packets.append(Array($0)) }
    return (packets, open)
}

/// Waits until `fd` is readable (tests only; the host uses its own loop).
func waitReadable(_ fd: Int32, milliseconds: Int32 = 2000) -> Bool {
    var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    return poll(&p, 1, milliseconds) > 0
}

/// Reads packets until `count` have arrived, the stream ends, or 2 s pass.
func collect(_ t: any HCITransport, count: Int) throws(TransportError) -> (packets: [[UInt8]], open: Bool) {
    var all: [[UInt8]] = []
    while all.count < count {
        guard waitReadable(t.fileDescriptor) else { break }
        let (p, open) = try readPackets(t)
        all += p
        if !open { return (all, false) }
    }
    return (all, true)
}

/// Writes all of `bytes` to a blocking descriptor.
func writeFully(_ fd: Int32, _ bytes: [UInt8]) {
    bytes.withUnsafeBytes { b in
        var done = 0
        while done < b.count {
            let n = Glibc.write(fd, b.baseAddress! + done, b.count - done)
            if n <= 0 { return }
            done += n
        }
    }
}

/// Reads exactly `count` bytes from a blocking descriptor (or fewer at EOF / timeout).
func readExactly(_ fd: Int32, _ count: Int) -> [UInt8] {
    var out: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: count)
    while out.count < count {
        guard waitReadable(fd) else { break }
        let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, count - out.count) }
        if n <= 0 { break }
        out += chunk[0 ..< n]
    }
    return out
}

/// A scripted kernel for the SystemCalls shim: records calls, fails on purpose, and
/// keeps a fake monotonic clock that `sleep` advances (so retry tests take no time).
final class FakeKernel: @unchecked Sendable {
    var now: UInt64 = 1_000_000_000
    var binds: [(fd: Int32, dev: UInt16, channel: UInt16)] = []
    var sleeps: [UInt64] = []
    var ioctls: [(request: UInt, argument: Int)] = []
    var closed: [Int32] = []
    /// Decides each bind: nil = success, else the errno.
    var bindResult: (FakeKernel) -> Int32? = { _ in nil }
    var socketErrno: Int32?
    /// hci_dev_info.flags reported by HCIGETDEVINFO.
    var deviceFlags: UInt32 = 0
    var deviceDownErrno: Int32?
    var deviceIsDown = false
    var writes: [[UInt8]] = []
    var writeResults: [Int32] = [] // errnos to return first, then success
    var polls = 0
    /// Socket options set, and what SO_MEMINFO reports as SK_MEMINFO_DROPS (nil: ENOPROTOOPT).
    var socketOptions: [(level: Int32, name: Int32)] = []
    var meminfoDrops: UInt32? = 0

    var system: SystemCalls {
        var s = SystemCalls.live
        s.setsockopt = { _, level, name, _, _ in
            self.socketOptions.append((level, name))
            return 0
        }
        s.getsockopt = { _, level, name, value, length in
            guard level == SOL_SOCKET, name == SO_MEMINFO, let drops = self.meminfoDrops else {
                Errno.current = Errno(ENOPROTOOPT)
                return -1
            }
            let words = Int(length.pointee) / 4
            for i in 0..<words { value.storeBytes(of: i == 8 ? drops : 0, toByteOffset: 4 * i, as: UInt32.self) }
            return 0
        }
        s.socket = { _, _, _ in
            if let e = self.socketErrno { Errno.current = Errno(e); return -1 }
            return 42
        }
        s.bind = { fd, address, _ in
            let a = address.load(as: sockaddr_hci.self)
            self.binds.append((fd, a.hci_dev, a.hci_channel))
            if let e = self.bindResult(self) { Errno.current = Errno(e); return -1 }
            return 0
        }
        s.ioctl = { _, request, argument in
            self.ioctls.append((request, argument))
            switch request {
            case LinuxBluetooth.ioctlGetDeviceInfo:
                guard let p = UnsafeMutableRawPointer(bitPattern: argument) else { return -1 }
                let info = p.assumingMemoryBound(to: hci_dev_info.self)
                info.pointee.flags = self.deviceIsDown ? 0 : self.deviceFlags
                return 0
            case LinuxBluetooth.ioctlDeviceDown:
                if let e = self.deviceDownErrno { Errno.current = Errno(e); return -1 }
                self.deviceIsDown = true
                return 0
            default:
                Errno.current = .invalidArgument
                return -1
            }
        }
        s.write = { _, buffer, count in
            if !self.writeResults.isEmpty {
                Errno.current = Errno(self.writeResults.removeFirst())
                return -1
            }
            self.writes.append(Array(UnsafeRawBufferPointer(start: buffer, count: count)))
            return count
        }
        s.poll = { fds, _, _ in
            self.polls += 1
            fds.pointee.revents = fds.pointee.events
            return 1
        }
        s.close = { fd in self.closed.append(fd); return 0 }
        s.monotonicNanoseconds = { self.now }
        s.sleepNanoseconds = { ns in self.sleeps.append(ns); self.now += ns }
        return s
    }
}
