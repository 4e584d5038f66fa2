// The proxy's TCP server: one I/O driver (a poll(2) loop on its own thread) runs an
// APISession per client. The listening socket, the clients' sockets and a wake pipe are
// polled; the timeout is the nearest deadline (a session's keepalive, the advertisement
// batch). Callers (the Bluetooth side) hand responses in under the lock and wake the loop,
// which alone touches the sockets.
import BluetoothTransport
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A client of the proxy's API server, numbered from 1 in the order they connected.
public struct APIClientID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The number.
    public let rawValue: UInt64
    /// Earlier connected first.
    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
    public var description: String { "client \(rawValue)" }
}

/// What happens on the server, in order.
enum APIServerEvent: Sendable, Equatable {
    /// A TCP connection from `peer` ("192.0.2.4:51234").
    case connected(APIClientID, peer: String)
    /// The client said Hello (and, with Noise, had the key).
    case ready(APIClientID, APISession.Client)
    /// A Bluetooth request of the client.
    case request(APIClientID, APIRequest)
    /// The client is gone: why (nil: the connection dropped).
    case closed(APIClientID, APICloseReason?)
}

/// The server could not start (the port, the socket), in words for the user.
public struct APIServerError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ d: String) { description = d }
}

final class APIServer: Sendable {
    /// The most clients at once (HA and a few diagnostic ones); more are refused.
    static let maxClients = 16
    /// The most connections at once that have not said Hello; a newer one ends the oldest.
    static let maxUnidentified = 4
    /// Reads of one client in one round of the loop (a flooding client waits its turn).
    static let readsPerRound = 4
    /// A client whose unsent output passes this gets no more advertisements until it reads.
    static let slowClientBytes = 4 << 20
    /// ...and one past this is closed: it is not reading at all.
    static let stuckClientBytes = 32 << 20
    /// Undelivered events at which the driver stops reading clients, and where it reads again.
    static let eventHighWater = 512
    static let eventLowWater = 64

    /// The port listened on (the one the kernel chose for port 0).
    let port: UInt16
    /// The address listened on, as given ("::" for all).
    let address: String
    let info: APIServerInfo
    let events: Events

    struct Client {
        var fd: Int32
        var session: APISession
        var peer: String
        var output: [UInt8] = []
        var offset = 0
        /// Gets the raw advertisement batches.
        var subscribed = false
        /// Ready: it said Hello (reported once).
        var reportedReady = false
        /// Ended: write what is left, then close (by `closeBy` at the latest).
        var ending: (reason: APICloseReason?, closeBy: UInt64)?
        var droppedBatches = 0
        var pendingOutput: Int { output.count - offset }
    }

    struct Core {
        var clients: [UInt64: Client] = [:]
        var nextID: UInt64 = 1
        var psk: [UInt8]?
        var batcher = AdvertisingQueue()
        var stopping: (deadline: UInt64, done: [CheckedContinuation<Void, Never>])?
        var stopped = false
        /// Accepting paused until then (the process ran out of descriptors).
        var acceptPausedUntil: UInt64?

        /// Runs `body` on the client moved out of the table and back (no copy of its
        /// output: a client behind by megabytes is appended to in place).
        mutating func update<R>(_ id: UInt64, _ body: (inout Client) -> R) -> R? {
            guard var cl = clients.removeValue(forKey: id) else { return nil }
            defer { clients[id] = cl }
            return body(&cl)
        }
    }

    /// The batch and who gets it.
    struct AdvertisingQueue {
        var batcher = AdvertisementBatcher()
    }

    private let core: Mutex<Core>
    private let listenFD: Int32
    private let wakeFD: Int32
    private let wakeWriteFD: Int32
    private let continuation: AsyncStream<APIServerEvent>.Continuation
    private let backlog: Backlog

    /// Listens on `address` (an IPv4 or IPv6 literal; "::" all, IPv4 too) and `port` (0: any
    /// free one); `psk`: the Noise key (nil: plaintext).
    init(address: String = "::", port: UInt16, info: APIServerInfo, psk: [UInt8]?) throws(APIServerError) {
        self.info = info
        self.address = address
        let (fd, bound) = try Self.listen(address: address, port: port)
        listenFD = fd
        self.port = bound
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else {
            Glibc.close(fd)
            throw APIServerError("cannot create the server's wake pipe: \(String(cString: strerror(errno)))")
        }
        for f in fds { Self.nonblocking(f) }
        wakeFD = fds[0]
        wakeWriteFD = fds[1]
        let (stream, c) = AsyncStream<APIServerEvent>.makeStream()
        continuation = c
        let backlog = Backlog()
        self.backlog = backlog
        events = Events(base: stream, backlog: backlog)
        core = Mutex(Core(psk: psk))
        let writeFD = wakeWriteFD
        backlog.wake = { var b: UInt8 = 1; _ = Glibc.write(writeFD, &b, 1) }
        Task.detached { await runOnOwnThread { self.run() } }
    }

    deinit {
        Glibc.close(wakeFD)
        Glibc.close(wakeWriteFD)
    }

    static func nonblocking(_ fd: Int32) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    }

    static func listen(address: String, port: UInt16) throws(APIServerError) -> (Int32, UInt16) {
        var v6 = in6_addr()
        var v4 = in_addr()
        let isV6 = inet_pton(AF_INET6, address, &v6) == 1
        guard isV6 || inet_pton(AF_INET, address, &v4) == 1 else {
            throw APIServerError("--listen: '\(address)' is not an IPv4 or IPv6 address")
        }
        let fd = socket(isV6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        if fd < 0, isV6, address == "::", errno == EAFNOSUPPORT {
            // A kernel without IPv6: every address is every IPv4 address.
            return try listen(address: "0.0.0.0", port: port)
        }
        guard fd >= 0 else { throw APIServerError("cannot create a TCP socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1, zero: Int32 = 0
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if isV6 { _ = setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &zero, socklen_t(MemoryLayout<Int32>.size)) }
        let r: Int32
        if isV6 {
            var sa = sockaddr_in6()
            sa.sin6_family = sa_family_t(AF_INET6)
            sa.sin6_port = port.bigEndian
            sa.sin6_addr = v6
            r = withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } }
        } else {
            var sa = sockaddr_in()
            sa.sin_family = sa_family_t(AF_INET)
            sa.sin_port = port.bigEndian
            sa.sin_addr = v4
            r = withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        }
        guard r == 0, Glibc.listen(fd, 16) == 0 else {
            let e = String(cString: strerror(errno))
            Glibc.close(fd)
            throw APIServerError("cannot listen on \(isV6 ? "[\(address)]" : address):\(port): \(e)")
        }
        var ss = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &ss) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        let bound: UInt16 = withUnsafePointer(to: &ss) { p in
            isV6 ? p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
                : p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
        return (fd, bound)
    }

    // MARK: The Bluetooth side's calls

    /// Sends `response` to `client` (nothing if it is gone or not ready).
    func send(_ response: APIResponse, to client: APIClientID) {
        core.withLock { c in
            _ = c.update(client.rawValue) { cl in
                guard cl.ending == nil else { return }
                cl.output += cl.session.send(response)
            }
        }
        wake()
    }

    /// Sends `response` to every ready client for which `include` holds.
    func broadcast(_ response: APIResponse, to include: (APIClientID) -> Bool = { _ in true }) {
        core.withLock { c in
            for id in Array(c.clients.keys) where include(APIClientID(rawValue: id)) {
                _ = c.update(id) { cl in
                    guard cl.ending == nil else { return }
                    cl.output += cl.session.send(response)
                }
            }
        }
        wake()
    }

    /// Queues an advertisement for the clients that subscribed; sent in batches.
    func advertise(_ a: APIRawAdvertisement) {
        let full: [APIRawAdvertisement]? = core.withLock { c in
            guard c.clients.values.contains(where: { $0.subscribed }) else { return nil }
            return c.batcher.batcher.add(a, now: monotonicNow())
        }
        if let full { sendBatch(full) }
        else { wake() }  // the loop's timeout moves to the batch's deadline
    }

    /// A request from ``events`` was carried out: it no longer counts against the backlog
    /// that holds the clients' reading back.
    func requestDone() { backlog.taken() }

    /// Whether any client gets advertisements.
    var hasAdvertisementSubscribers: Bool { core.withLock { $0.clients.values.contains { $0.subscribed } } }

    /// The key new sessions use (a key set by HA takes effect for the next connection).
    func setKey(_ psk: [UInt8]?) { core.withLock { $0.psk = psk } }

    /// Ends `client`'s session from our side.
    func disconnect(_ client: APIClientID) {
        core.withLock { c in
            _ = c.update(client.rawValue) { cl in
                guard cl.ending == nil else { return }
                cl.output += cl.session.disconnect()
                cl.ending = (.serverClosing, monotonicNow() + 1_000_000_000)
            }
        }
        wake()
    }

    /// Says goodbye to every client (DisconnectRequest), waits up to a second for it to
    /// leave, closes everything; ``events`` then ends.
    func stop() async {
        await withCheckedContinuation { (k: CheckedContinuation<Void, Never>) in
            let already = core.withLock { c -> Bool in
                if c.stopped { return true }
                let deadline = monotonicNow() + 1_000_000_000
                if c.stopping == nil { c.stopping = (deadline, []) }
                c.stopping?.done.append(k)
                for id in Array(c.clients.keys) {
                    _ = c.update(id) { cl in
                        guard cl.ending == nil else { return }
                        cl.output += cl.session.disconnect()
                        cl.ending = (.serverClosing, deadline)
                    }
                }
                return false
            }
            if already { k.resume() } else { wake() }
        }
    }

    private func sendBatch(_ batch: [APIRawAdvertisement]) {
        let message = APIResponse.rawAdvertisements(batch)
        core.withLock { c in
            for id in Array(c.clients.keys) {
                _ = c.update(id) { cl in
                    guard cl.subscribed, cl.ending == nil else { return }
                    if cl.pendingOutput > Self.slowClientBytes {
                        cl.droppedBatches += 1
                    } else {
                        cl.output += cl.session.send(message)
                    }
                }
            }
        }
        wake()
    }

    private func wake() {
        var b: UInt8 = 1
        _ = Glibc.write(wakeWriteFD, &b, 1)
    }

    // MARK: The driver

    private func run() {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var fds: [pollfd] = []
        var order: [UInt64] = []
        while true {
            let now = monotonicNow()
            // Deadlines: sessions, the batch, endings, the stop.
            var next: UInt64?
            func soonest(_ t: UInt64?) { if let t { next = min(next ?? t, t) } }
            let finished: Bool = core.withLock { c in
                for id in Array(c.clients.keys) {
                    let wake: UInt64? = c.update(id) { cl in
                        if let d = cl.session.nextDeadline, d <= now, cl.ending == nil {
                            apply(cl.session.tick(now: now), id: id, &cl, now: now)
                        }
                        return cl.ending?.closeBy ?? cl.session.nextDeadline
                    } ?? nil
                    soonest(wake)
                }
                soonest(c.batcher.batcher.deadline)
                soonest(c.acceptPausedUntil)
                if let s = c.stopping {
                    soonest(s.deadline)
                    if c.clients.isEmpty || now >= s.deadline { return true }
                }
                return false
            }
            if finished { break }
            if let batch = core.withLock({ $0.batcher.batcher.due(now: now) }) {
                sendBatch(batch)
                continue
            }
            // Write what waits; close what ended and has nothing left (or ran out of time).
            writeAndReap(now: now)

            let paused = backlog.shouldPause(high: Self.eventHighWater)
            fds.removeAll(keepingCapacity: true)
            order.removeAll(keepingCapacity: true)
            fds.append(pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0))
            let accepting = core.withLock { c -> Bool in
                if let until = c.acceptPausedUntil, now >= until { c.acceptPausedUntil = nil }
                return c.stopping == nil && c.acceptPausedUntil == nil
            }
            fds.append(pollfd(fd: accepting ? listenFD : -1, events: Int16(POLLIN), revents: 0))
            core.withLock { c in
                for (id, cl) in c.clients {
                    var ev: Int16 = 0
                    if cl.ending == nil, !paused { ev |= Int16(POLLIN) }
                    if cl.pendingOutput > 0 { ev |= Int16(POLLOUT) }
                    fds.append(pollfd(fd: cl.fd, events: ev, revents: 0))
                    order.append(id)
                }
            }
            var timeout: Int32 = -1
            if let next { timeout = next <= now ? 0 : Int32(clamping: (next - now + 999_999) / 1_000_000) }
            if Glibc.poll(&fds, nfds_t(fds.count), timeout) < 0, errno != EINTR { usleep(10_000) }
            let after = monotonicNow()
            if fds[0].revents != 0 {
                while buffer.withUnsafeMutableBytes({ Glibc.read(wakeFD, $0.baseAddress, $0.count) }) > 0 {}
            }
            if fds[1].revents != 0 { accept(now: after) }
            for (i, id) in order.enumerated() {
                let re = fds[i + 2].revents
                guard re & Int16(POLLIN | POLLHUP | POLLERR) != 0 else { continue }
                read(id, &buffer, now: after)
            }
        }
        // Everything closes; the stop's waiters go on.
        let waiters: [CheckedContinuation<Void, Never>] = core.withLock { c in
            for (id, cl) in c.clients {
                Glibc.close(cl.fd)
                report(.closed(APIClientID(rawValue: id), cl.ending?.reason ?? .serverClosing))
            }
            c.clients = [:]
            c.stopped = true
            let w = c.stopping?.done ?? []
            c.stopping = nil
            return w
        }
        Glibc.close(listenFD)
        continuation.finish()
        for w in waiters { w.resume() }
    }

    private func report(_ e: APIServerEvent) {
        backlog.added()
        continuation.yield(e)
    }

    /// Applies a session's output to its client.
    private func apply(_ out: APISessionOutput, id: UInt64, _ cl: inout Client, now: UInt64) {
        cl.output += out.bytes
        let cid = APIClientID(rawValue: id)
        if !cl.reportedReady, let client = cl.session.client {
            cl.reportedReady = true
            report(.ready(cid, client))
        }
        for r in out.requests {
            switch r {
            case .subscribeAdvertisements: cl.subscribed = true
            case .unsubscribeAdvertisements: cl.subscribed = false
            default: break
            }
            report(.request(cid, r))
        }
        if let reason = out.closed {
            cl.subscribed = false
            cl.ending = (reason, now + 1_000_000_000)
        }
    }

    private func accept(now: UInt64) {
        while true {
            var ss = sockaddr_storage()
            var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &ss) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.accept(listenFD, $0, &len) }
            }
            guard fd >= 0 else {
                // Out of descriptors (or memory): the listening socket stays readable, so
                // accepting pauses a moment instead of spinning.
                if errno != EAGAIN, errno != EWOULDBLOCK, errno != EINTR {
                    core.withLock { $0.acceptPausedUntil = now + 100_000_000 }
                }
                return
            }
            Self.nonblocking(fd)
            var one: Int32 = 1
            _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let peer = Self.describe(&ss)
            let admitted: UInt64? = core.withLock { c in
                // Connections that have not said Hello (or shaken hands) are few and go
                // first: idle sockets must not keep Home Assistant out.
                let waiting = c.clients.filter { $0.value.session.client == nil && $0.value.ending == nil }.keys.sorted()
                if waiting.count >= Self.maxUnidentified, let oldest = waiting.first {
                    _ = c.update(oldest) { $0.ending = (nil, now) }
                }
                guard c.clients.count < Self.maxClients else { return nil }
                let id = c.nextID
                c.nextID += 1
                c.clients[id] = Client(fd: fd, session: APISession(info: info, psk: c.psk, now: now), peer: peer)
                return id
            }
            guard let admitted else {
                Glibc.close(fd)
                continue
            }
            report(.connected(APIClientID(rawValue: admitted), peer: peer))
        }
    }

    private func read(_ id: UInt64, _ buffer: inout [UInt8], now: UInt64) {
        guard let fd = core.withLock({ $0.clients[id]?.fd }) else { return }
        for _ in 0 ..< Self.readsPerRound {
            let n = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                let bytes = Array(buffer[..<n])
                let ended: Bool = core.withLock { c in
                    c.update(id) { cl in
                        guard cl.ending == nil else { return true }
                        apply(cl.session.receive(bytes, now: now), id: id, &cl, now: now)
                        return cl.ending != nil
                    } ?? true
                }
                if ended || n < buffer.count { return }
                continue
            }
            if n < 0, errno == EINTR { continue }
            if n < 0, errno == EAGAIN || errno == EWOULDBLOCK { return }
            // EOF or an error: gone, nothing more to write.
            let reason: APICloseReason?? = core.withLock { c in
                guard let cl = c.clients.removeValue(forKey: id) else { return nil }
                Glibc.close(cl.fd)
                return .some(cl.ending?.reason ?? cl.session.closeReason)
            }
            if let reason { report(.closed(APIClientID(rawValue: id), reason)) }
            return
        }
    }

    private func writeAndReap(now: UInt64) {
        var closed: [(UInt64, APICloseReason?)] = []
        core.withLock { c in
            for id in Array(c.clients.keys) {
                let done: Bool = c.update(id) { cl in
                    var failed = false
                    while cl.pendingOutput > 0 {
                        let offset = cl.offset
                        let n = cl.output.withUnsafeBytes { Glibc.send(cl.fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
                        if n > 0 { cl.offset += n; continue }
                        if n < 0, errno == EINTR { continue }
                        if n < 0, errno == EAGAIN || errno == EWOULDBLOCK { break }
                        failed = true
                        break
                    }
                    if cl.pendingOutput == 0, cl.offset > 0 {
                        cl.output.removeAll(keepingCapacity: cl.output.count <= 1 << 16)
                        cl.offset = 0
                    } else if cl.offset > 1 << 16 {
                        // A client behind: what it has taken goes, not only once it caught up.
                        cl.output.removeFirst(cl.offset)
                        cl.offset = 0
                    }
                    if cl.pendingOutput > Self.stuckClientBytes { failed = true }
                    return failed || (cl.ending.map { cl.pendingOutput == 0 || now >= $0.closeBy } ?? false)
                } ?? false
                guard done, let cl = c.clients.removeValue(forKey: id) else { continue }
                // Shut the write side first, so what was written (a reject) is not lost
                // to a reset over unread input.
                shutdown(cl.fd, Int32(SHUT_WR))
                Glibc.close(cl.fd)
                closed.append((id, cl.ending?.reason ?? cl.session.closeReason))
            }
            if !c.clients.values.contains(where: { $0.subscribed }) { c.batcher.batcher.clear() }
        }
        for (id, reason) in closed { report(.closed(APIClientID(rawValue: id), reason)) }
    }

    static func describe(_ ss: inout sockaddr_storage) -> String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        if ss.ss_family == sa_family_t(AF_INET6) {
            return withUnsafePointer(to: &ss) { p in
                p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { a in
                    var addr = a.pointee.sin6_addr
                    inet_ntop(AF_INET6, &addr, &text, socklen_t(text.count))
                    var s = String(cString: text)
                    if s.hasPrefix("::ffff:") { s.removeFirst(7) } else { s = "[\(s)]" }
                    return "\(s):\(UInt16(bigEndian: a.pointee.sin6_port))"
                }
            }
        }
        return withUnsafePointer(to: &ss) { p in
            p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { a in
                var addr = a.pointee.sin_addr
                inet_ntop(AF_INET, &addr, &text, socklen_t(text.count))
                return "\(String(cString: text)):\(UInt16(bigEndian: a.pointee.sin_port))"
            }
        }
    }

    // MARK: Events with back-pressure

    /// Events not yet taken: past a high-water mark the driver stops reading clients, so
    /// a client that floods requests waits in its socket instead of growing memory.
    final class Backlog: @unchecked Sendable {
        private let count = Atomic<Int>(0)
        private let paused = Atomic<Bool>(false)
        var wake: @Sendable () -> Void = {}

        func added() { count.add(1, ordering: .sequentiallyConsistent) }

        func taken() {
            let left = count.subtract(1, ordering: .sequentiallyConsistent).newValue
            if left <= APIServer.eventLowWater, paused.compareExchange(expected: true, desired: false, ordering: .sequentiallyConsistent).exchanged {
                wake()
            }
        }

        /// Whether the driver should leave the clients unread now.
        func shouldPause(high: Int) -> Bool {
            let n = count.load(ordering: .sequentiallyConsistent)
            if n >= high || paused.load(ordering: .sequentiallyConsistent) {
                paused.store(true, ordering: .sequentiallyConsistent)
                // Taken down to the low mark meanwhile (its wake may have missed the flag).
                if count.load(ordering: .sequentiallyConsistent) <= APIServer.eventLowWater {
                    paused.store(false, ordering: .sequentiallyConsistent)
                    return false
                }
                return true
            }
            return false
        }
    }

    /// The server's events, one consumer.
    struct Events: AsyncSequence, Sendable {
        typealias Element = APIServerEvent
        let base: AsyncStream<APIServerEvent>
        let backlog: Backlog

        func makeAsyncIterator() -> Iterator { Iterator(base: base.makeAsyncIterator(), backlog: backlog) }

        struct Iterator: AsyncIteratorProtocol {
            var base: AsyncStream<APIServerEvent>.Iterator
            let backlog: Backlog
            /// The next event; a request stays counted until ``APIServer/requestDone()``.
            mutating func next() async -> APIServerEvent? {
                guard let e = await base.next() else { return nil }
                if case .request = e {} else { backlog.taken() }
                return e
            }
        }
    }
}
