// The mDNS responder's I/O: one UDP socket on 5353 in the IPv4 group 224.0.0.251, polled on
// its own thread with a wake pipe. It announces at start (twice, a second apart, RFC 6762
// §8.3), answers queries, and says goodbye at stop. Our addresses are read from the
// interfaces for each answer (DHCP may change them).
import BluetoothTransport
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

final class MDNSServer: Sendable {
    let responder: MDNSResponder
    private let fd: Int32
    private let wakeFD: Int32
    private let wakeWriteFD: Int32
    private let stopping = Mutex<(requested: Bool, done: [CheckedContinuation<Void, Never>], finished: Bool)>((false, [], false))

    /// Joins the group and starts answering; throws when the port or the group cannot be had.
    init(service: MDNSService) throws(APIServerError) {
        responder = MDNSResponder(service: service)
        let s = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard s >= 0 else { throw APIServerError("mDNS: cannot create a UDP socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        _ = setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        _ = setsockopt(s, SOL_SOCKET, SO_REUSEPORT, &one, socklen_t(MemoryLayout<Int32>.size))
        var sa = sockaddr_in()
        sa.sin_family = sa_family_t(AF_INET)
        sa.sin_port = UInt16(5353).bigEndian
        sa.sin_addr.s_addr = 0
        let bound = withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        var ttl: UInt8 = 255, loop: UInt8 = 1
        guard bound == 0 else {
            let e = String(cString: strerror(errno))
            close(s)
            throw APIServerError("mDNS: cannot bind port 5353: \(e)")
        }
        // The group on every interface that takes multicast (HA may sit on any of them).
        var joined: [[UInt8]] = []
        for a in Self.addresses(multicastOnly: true) {
            var group = ip_mreq()
            group.imr_multiaddr.s_addr = Self.group.bigEndian
            group.imr_interface.s_addr = Self.inAddr(a)
            if setsockopt(s, Int32(IPPROTO_IP), IP_ADD_MEMBERSHIP, &group, socklen_t(MemoryLayout<ip_mreq>.size)) == 0 || errno == EADDRINUSE {
                joined.append(a)
            }
        }
        guard !joined.isEmpty else {
            close(s)
            throw APIServerError("mDNS: no interface with an IPv4 address takes multicast")
        }
        _ = setsockopt(s, Int32(IPPROTO_IP), IP_MULTICAST_TTL, &ttl, 1)
        _ = setsockopt(s, Int32(IPPROTO_IP), IP_MULTICAST_LOOP, &loop, 1)
        APIServer.nonblocking(s)
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else {
            close(s)
            throw APIServerError("mDNS: cannot create a wake pipe")
        }
        for f in fds { APIServer.nonblocking(f) }
        fd = s
        wakeFD = fds[0]
        wakeWriteFD = fds[1]
        Task.detached { await runOnOwnThread { self.run() } }
    }

    deinit {
        close(wakeFD)
        close(wakeWriteFD)
    }

    /// 224.0.0.251.
    static let group: UInt32 = 0xE000_00FB

    /// Sends the goodbye and stops.
    func stop() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let finished = stopping.withLock { s -> Bool in
                if s.finished { return true }
                s.requested = true
                s.done.append(c)
                return false
            }
            if finished { c.resume() } else {
                var b: UInt8 = 1
                _ = write(wakeWriteFD, &b, 1)
            }
        }
    }

    /// The IPv4 addresses of the interfaces that are up (loopback only when there is
    /// nothing else: a test's network namespace).
    static func inAddr(_ a: [UInt8]) -> UInt32 {
        (UInt32(a[0]) << 24 | UInt32(a[1]) << 16 | UInt32(a[2]) << 8 | UInt32(a[3])).bigEndian
    }

    static func addresses(multicastOnly: Bool = false) -> [[UInt8]] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var out: [[UInt8]] = [], loopback: [[UInt8]] = []
        var p = list
        while let i = p {
            defer { p = i.pointee.ifa_next }
            guard let a = i.pointee.ifa_addr, a.pointee.sa_family == sa_family_t(AF_INET),
                  i.pointee.ifa_flags & UInt32(IFF_UP) != 0,
                  !multicastOnly || i.pointee.ifa_flags & UInt32(IFF_MULTICAST) != 0 else { continue }
            let bytes = a.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { s -> [UInt8] in
                let v = UInt32(bigEndian: s.pointee.sin_addr.s_addr)
                return [UInt8(v >> 24), UInt8(truncatingIfNeeded: v >> 16), UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v)]
            }
            if i.pointee.ifa_flags & UInt32(IFF_LOOPBACK) != 0 { loopback.append(bytes) } else { out.append(bytes) }
        }
        return out.isEmpty ? loopback : out
    }

    /// Sends to the group out of every multicast interface, each message with that
    /// interface's own address only (RFC 6762 §6.2: a docker bridge's or a VPN's address is
    /// no use to a client on the LAN).
    private func multicast(_ build: ([[UInt8]]) -> [UInt8]?) {
        var g = sockaddr_in()
        g.sin_family = sa_family_t(AF_INET)
        g.sin_port = UInt16(5353).bigEndian
        g.sin_addr.s_addr = Self.group.bigEndian
        for a in Self.addresses(multicastOnly: true) {
            guard let message = build([a]) else { continue }
            var interface = in_addr(s_addr: Self.inAddr(a))
            _ = setsockopt(fd, Int32(IPPROTO_IP), IP_MULTICAST_IF, &interface, socklen_t(MemoryLayout<in_addr>.size))
            send(message, to: g)
        }
    }

    /// Sends to `address`, or to the group out of every multicast interface.
    private func send(_ message: [UInt8], to address: sockaddr_in? = nil) {
        func sendTo(_ dest: sockaddr_in) {
            var d = dest
            _ = message.withUnsafeBytes { m in
                withUnsafePointer(to: &d) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, m.baseAddress, m.count, Int32(MSG_NOSIGNAL), $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                } }
            }
        }
        if let address { return sendTo(address) }
        var g = sockaddr_in()
        g.sin_family = sa_family_t(AF_INET)
        g.sin_port = UInt16(5353).bigEndian
        g.sin_addr.s_addr = Self.group.bigEndian
        for a in Self.addresses(multicastOnly: true) {
            var interface = in_addr(s_addr: Self.inAddr(a))
            _ = setsockopt(fd, Int32(IPPROTO_IP), IP_MULTICAST_IF, &interface, socklen_t(MemoryLayout<in_addr>.size))
            sendTo(g)
        }
    }

    private func run() {
        var buffer = [UInt8](repeating: 0, count: 9000)
        var announcements = [monotonicNow(), monotonicNow() + 1_000_000_000]
        while true {
            let now = monotonicNow()
            if stopping.withLock({ $0.requested }) { break }
            while let first = announcements.first, first <= now {
                announcements.removeFirst()
                multicast { responder.announcement(addresses: $0) }
            }
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
            let timeout: Int32 = announcements.first.map { Int32(clamping: ($0 - min($0, now)) / 1_000_000 + 1) } ?? -1
            _ = poll(&fds, 2, timeout)
            if fds[1].revents != 0 {
                while buffer.withUnsafeMutableBytes({ read(wakeFD, $0.baseAddress, $0.count) }) > 0 {}
            }
            guard fds[0].revents != 0 else { continue }
            while true {
                var from = sockaddr_in()
                var len = socklen_t(MemoryLayout<sockaddr_in>.size)
                let n = buffer.withUnsafeMutableBytes { b in
                    withUnsafeMutablePointer(to: &from) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, b.baseAddress, b.count, 0, $0, &len) } }
                }
                guard n > 0 else { break }
                guard let query = try? DNSQuery.parse(Array(buffer[..<n])) else { continue }
                // A query from another port than 5353 is a one-shot (legacy) resolver: it is
                // answered directly, with its id (§6.7).
                let legacy = UInt16(bigEndian: from.sin_port) != 5353
                guard let (message, unicast) = responder.answer(query, addresses: Self.addresses(), legacy: legacy) else { continue }
                if unicast { send(message, to: from) } else { multicast { responder.answer(query, addresses: $0, legacy: false)?.message } }
            }
        }
        multicast { responder.announcement(addresses: $0, goodbye: true) }
        close(fd)
        let waiters = stopping.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.finished = true
            let w = s.done
            s.done = []
            return w
        }
        for w in waiters { w.resume() }
    }
}
