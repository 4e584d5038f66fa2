// The MQTT client: the sans-I/O session (MQTT/MQTTSession.swift) run by one I/O driver,
// a poll(2) loop on the broker's socket and a wake pipe, whose timeout is the session's
// next deadline. The session sits under a lock: publish and subscribe run it on the
// caller's thread and leave bytes for the driver, which alone touches the socket.
// TCP connects (with their name lookup) block, so each attempt runs on a short thread of
// its own and hands the socket back; TLS (BearSSL) then shakes hands inside the loop.
//
// Its own loop rather than the host driver's: the gateway's broker and its controller
// fail and recover independently, and a TLS handshake's RSA work (milliseconds) must not
// hold up HCI events.
import BluetoothTransport
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// How to reach the broker.
public struct MQTTOptions: Sendable {
    /// `mqtt://HOST[:PORT]` (1883) or `mqtts://HOST[:PORT]` (8883, TLS); `tcp://` and
    /// `ssl://` are the same.
    public var uri: String
    /// The client identifier: stable, so the broker keeps the session across restarts.
    public var clientID: String
    /// MQTT 5 (else 3.1.1).
    public var version5 = false
    /// User name, if the broker wants one.
    public var username: String?
    /// Password, if the broker wants one.
    public var password: String?
    /// TLS: the CA certificates (PEM) to trust; nil: the system's
    /// (/etc/ssl/certs/ca-certificates.crt).
    public var caFile: String?
    /// TLS: a client certificate (PEM), and its key when not in the same file.
    public var certFile: String?
    /// TLS: the client certificate's key (PEM), when not in `certFile`.
    public var keyFile: String?
    /// TLS: do not check the broker's name against its certificate (and send no SNI). Only
    /// with ``caFile`` or ``pinSHA256``: with the system's CAs any public certificate for any
    /// name would pass.
    public var noHostnameCheck = false
    /// TLS: the SHA-256 of the broker's certificate (DER), the one accepted: no CA need
    /// sign it, and its names are not checked.
    public var pinSHA256: [UInt8]?
    /// Seconds between keep-alive pings.
    public var keepAlive: Int32 = 30
    /// Published by the broker when the connection is lost without a DISCONNECT.
    public var will: (topic: String, payload: String, retained: Bool)?
    /// MQTT 5: how long the broker keeps the session after a disconnect.
    public var sessionExpiry: Int32 = 7 * 24 * 3600

    /// Options for `uri` with the client identifier `clientID`; the rest defaulted.
    public init(uri: String, clientID: String) {
        self.uri = uri
        self.clientID = clientID
    }

    /// TLS is used (an `mqtts://` or `ssl://` URI).
    public var tls: Bool { uri.hasPrefix("mqtts://") || uri.hasPrefix("ssl://") }

    /// The URI's scheme is one of mqtt://, mqtts://, tcp://, ssl://.
    public var schemeIsKnown: Bool {
        ["mqtt://", "mqtts://", "tcp://", "ssl://"].contains { uri.hasPrefix($0) }
    }

    /// After the scheme: "HOST[:PORT]" (and whatever follows).
    private var authority: Substring {
        var rest = Substring(uri)
        let scheme = Array("://".utf8)
        if let i = rest.utf8.indices.first(where: { rest.utf8[$0...].starts(with: scheme) }) {
            rest = rest[rest.utf8.index(i, offsetBy: 3)...]
        }
        if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
        return rest.prefix { $0 != "/" }
    }

    /// The broker's host as the URI names it ("[::1]" → "::1").
    public var host: String {
        let a = authority
        if a.hasPrefix("["), let close = a.firstIndex(of: "]") { return String(a[a.index(after: a.startIndex) ..< close]) }
        return String(a.prefix { $0 != ":" })
    }

    /// The broker's port: the URI's, else 1883 (8883 with TLS); nil when the URI's is not
    /// a port number.
    public var port: UInt16? {
        var a = authority
        if a.hasPrefix("["), let close = a.firstIndex(of: "]") { a = a[a.index(after: close)...] }
        guard let colon = a.firstIndex(of: ":") else { return tls ? 8883 : 1883 }
        guard let p = UInt16(a[a.index(after: colon)...]), p > 0 else { return nil }
        return p
    }

    /// The host's address bytes (4 or 16) when it is an IP literal.
    var hostAddressBytes: [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    /// The host is an IPv4 or IPv6 address, not a name.
    public var hostIsAddress: Bool {
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v6) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    /// Why these options cannot work, in words for the user (nil: they can).
    public var problem: String? {
        if !schemeIsKnown { return "\(uri): the scheme is not mqtt://, mqtts://, tcp:// or ssl://" }
        if host.isEmpty { return "\(uri): no broker host" }
        if port == nil { return "\(uri): the port is not a number from 1 to 65535" }
        if tls, noHostnameCheck, caFile == nil, pinSHA256 == nil {
            return "--no-hostname-check with the system's CAs would take any public certificate for any name: give the broker's CA with --ca-file, or its certificate with --pin-sha256"
        }
        if !tls, pinSHA256 != nil { return "--pin-sha256 is for TLS: use an mqtts:// URI" }
        if !tls, caFile != nil || certFile != nil || keyFile != nil { return "--ca-file, --cert-file and --key-file are for TLS: use an mqtts:// URI" }
        return sessionSettings.connect.problem
    }

    /// A password would cross the network unencrypted: given, no TLS, and a broker that is
    /// not on this machine. What the gateway warns about once.
    public var passwordInClear: Bool {
        guard let password, !password.isEmpty, !tls else { return false }
        let h = host.lowercased()
        return !(h == "localhost" || h.hasPrefix("127.") || h == "::1")
    }

    /// The session's settings: a persistent session (Clean Session / Clean Start off, so
    /// the broker keeps subscriptions and QoS 1 in flight across reconnects), the will at
    /// QoS 1.
    public var sessionSettings: MQTTSessionSettings {
        var c = MQTTConnect(version: version5 ? .v5 : .v311, clientID: clientID, cleanStart: false,
                            keepAlive: UInt16(clamping: keepAlive))
        c.username = username
        c.password = password.map { Array($0.utf8) }
        if let w = will { c.will = MQTTWill(topic: w.topic, payload: Array(w.payload.utf8), retain: w.retained, qos: 1) }
        if version5 { c.sessionExpiry = UInt32(clamping: sessionExpiry) }
        return MQTTSessionSettings(connect: c)
    }
}

/// Why the MQTT client cannot be made: bad options, unreadable certificates.
public struct MQTTError: Error, Sendable, CustomStringConvertible {
    /// What is wrong, for the user.
    public var message: String
    /// An error saying `message`.
    public init(_ message: String) { self.message = message }
    public var description: String { "MQTT: \(message)" }
}

/// What a connect failure code means, in words: a refusal names the reason.
public func mqttConnectFailureText(_ code: Int32, _ message: String) -> String {
    switch code {
    case 1, 0x84: "the broker does not accept this MQTT version"
    case 2, 0x85: "the broker refused the client identifier"
    case 3, 0x88: "the broker is unavailable"
    case 4, 0x86: "the broker refused the user name or password"
    case 5, 0x87: "not authorized: the broker refused the credentials"
    case -1: message.isEmpty ? "cannot connect" : "cannot connect: \(message)"
    default: message.isEmpty ? "code \(code)" : "\(message) (code \(code))"
    }
}

/// True when a connect failure will not go away by retrying (credentials, identifier,
/// protocol version).
public func mqttConnectFailureIsPermanent(_ code: Int32) -> Bool {
    [1, 2, 4, 5, 0x84, 0x85, 0x86, 0x87, 0x8C].contains(code)
}

/// An MQTT 3.1.1 or 5 client: connects, keeps the session, reconnects with back-off, and
/// reports what happens as ``events``.
public final class MQTTClient: @unchecked Sendable {
    /// Events, in the order they happened.
    public let events: AsyncStream<MQTTEvent>
    /// What it was made with.
    public let options: MQTTOptions
    private let continuation: AsyncStream<MQTTEvent>.Continuation
    private let credentials: MQTTTLSCredentials?
    private let core: Mutex<Core>
    /// Wake pipe: the driver polls `wakeFD`; API calls write `wakeWriteFD`.
    private let wakeFD: Int32
    private let wakeWriteFD: Int32

    /// Transport work the session asked for, and events to report after it, in order.
    enum Chore {
        case open(attempt: Int)
        /// Close the transport; `flush`: after writing what waits (DISCONNECT), for at
        /// most the disconnect timeout.
        case close(flush: Bool)
        case event(MQTTEvent)
    }

    /// What the session and the callers share, under the lock.
    struct Core {
        var session: MQTTSession
        /// Bytes for the transport, in order; the first `outputOffset` are written.
        var output: [UInt8] = []
        var outputOffset = 0
        var chores: [Chore] = []
        /// Transports opened by connect threads: the attempt and its socket or error.
        var opened: [(attempt: Int, result: Result<Int32, TransportError>)] = []
        var attempts = 0
        /// How long a DISCONNECT may take to leave (nanoseconds).
        var linger: UInt64 = 2_000_000_000
        var haveOutput: Bool { outputOffset < output.count }
    }

    /// The broker link as the driver sees it (driver thread only).
    enum Link {
        case none
        /// A connect thread works on `attempt`.
        case opening(attempt: Int)
        /// TLS shakes hands.
        case handshaking(any MQTTByteStream)
        case open(any MQTTByteStream)
        /// Writing the last bytes before closing, until `deadline`.
        case closing(any MQTTByteStream, deadline: UInt64)

        var stream: (any MQTTByteStream)? {
            switch self {
            case .none, .opening: nil
            case .handshaking(let s), .open(let s), .closing(let s, _): s
            }
        }
    }

    /// A client for `options`, not connected yet (``connect()`` starts it). Throws when the
    /// options cannot work or the TLS files cannot be read.
    public init(_ options: MQTTOptions) throws(MQTTError) {
        if let problem = options.problem { throw MQTTError(problem) }
        credentials = options.tls
            ? try MQTTTLSCredentials(caFile: options.caFile, certFile: options.certFile, keyFile: options.keyFile)
            : nil
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else {
            throw MQTTError("cannot create the client's wake pipe: \(String(cString: strerror(errno)))")
        }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakeFD = fds[0]
        wakeWriteFD = fds[1]
        self.options = options
        (events, continuation) = AsyncStream<MQTTEvent>.makeStream()
        core = Mutex(Core(session: MQTTSession(options.sessionSettings)))
    }

    deinit {
        Glibc.close(wakeFD)
        Glibc.close(wakeWriteFD)
        continuation.finish()
    }

    /// Starts connecting; the client keeps reconnecting (1 s doubling to 30 s) until
    /// ``disconnect(timeout:)``. Outcomes arrive as events. Once only.
    public func connect() {
        let first = core.withLock { c in
            guard c.attempts == 0, c.session.isRunning else { return false }
            apply(c.session.start(now: monotonicNow()), &c)
            return true
        }
        guard first else { return }
        Task.detached { await runOnOwnThread { self.run() } }
    }

    /// Publishes `payload` on `topic`. With `tag`, the outcome arrives as ``MQTTEvent``
    /// `.acknowledged`/`.failed`. Not taken: not connected, too many waiting, a bad topic.
    @discardableResult
    public func publish(topic: String, payload: UnsafeRawBufferPointer, qos: UInt8 = 1, retained: Bool = false,
                        tag: UInt64? = nil) -> MQTTSession.PublishResult {
        core.withLock { c in
            let (result, actions) = c.session.publish(topic: topic, payload: payload, qos: qos, retain: retained,
                                                      tag: tag, now: monotonicNow())
            apply(actions, &c)
            return result
        }
    }

    /// Publishes a text payload.
    @discardableResult
    public func publish(topic: String, text: String, qos: UInt8 = 1, retained: Bool = false) -> MQTTSession.PublishResult {
        var t = text
        return t.withUTF8 { publish(topic: topic, payload: UnsafeRawBufferPointer($0), qos: qos, retained: retained) }
    }

    /// Subscribes to `filter` (QoS 1); messages arrive as `.message` events, a refusal as
    /// `.subscriptionRefused`.
    @discardableResult
    public func subscribe(_ filter: String) -> MQTTSession.PublishResult {
        core.withLock { c in
            let (result, actions) = c.session.subscribe(filter, now: monotonicNow())
            apply(actions, &c)
            return result
        }
    }

    /// Sends DISCONNECT (waiting at most `timeout` ms for it to be written), closes and
    /// stops reconnecting; `.disconnected` follows.
    public func disconnect(timeout: Int32 = 2000) {
        core.withLock { c in
            c.linger = UInt64(max(timeout, 0)) * 1_000_000
            let started = c.attempts > 0
            apply(c.session.disconnect(now: monotonicNow()), &c)
            // Never started: no driver runs to report the events.
            if !started { flushEvents(&c) }
        }
    }

    // MARK: - Under the lock

    /// Turns the session's actions into chores for the driver (and events, in order).
    private func apply(_ actions: [MQTTSession.Action], _ c: inout Core) {
        guard !actions.isEmpty else { return }
        for action in actions {
            switch action {
            case .open:
                c.attempts += 1
                c.chores.append(.open(attempt: c.attempts))
            case .send(let bytes):
                if c.outputOffset > 0, c.outputOffset == c.output.count {
                    c.output.removeAll(keepingCapacity: true)
                    c.outputOffset = 0
                }
                c.output += bytes
            case .close:
                // A stopped session's last bytes (DISCONNECT) go out first; a lost
                // connection's are stale.
                let flush = !c.session.isRunning
                if !flush {
                    c.output.removeAll(keepingCapacity: true)
                    c.outputOffset = 0
                }
                c.chores.append(.close(flush: flush))
            case .event(let e):
                if c.chores.isEmpty { continuation.yield(e) } else { c.chores.append(.event(e)) }
            }
        }
        var one: UInt8 = 1
        _ = Glibc.write(wakeWriteFD, &one, 1)
    }

    private func flushEvents(_ c: inout Core) {
        for case .event(let e) in c.chores { continuation.yield(e) }
        c.chores.removeAll()
    }

    // MARK: - The driver (its own thread)

    private func run() {
        var link = Link.none
        var todo: [Chore] = []
        var fds = [pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0), pollfd(fd: -1, events: 0, revents: 0)]
        var readBuffer = [UInt8](repeating: 0, count: 64)

        func fail(_ cause: String) {
            let was = link
            link.stream?.close()
            link = .none
            if case .closing = was { return }
            core.withLock { c in
                // What the lost connection did not take is stale: the next one starts
                // with CONNECT, and the session resends what needs it (with DUP).
                c.output.removeAll(keepingCapacity: true)
                c.outputOffset = 0
                apply(c.session.transportClosed(now: monotonicNow(), cause: cause), &c)
            }
        }

        while true {
            var now = monotonicNow()
            let (chores, opened, deadline, haveOutput, running) = core.withLock { c in
                defer {
                    c.chores.removeAll()
                    c.opened.removeAll()
                }
                return (c.chores, c.opened, c.session.nextDeadline, c.haveOutput, c.session.isRunning)
            }
            todo += chores
            // Chores in order; a flushing close holds back what follows until it is done.
            while !todo.isEmpty {
                if case .closing = link { break }
                switch todo.removeFirst() {
                case .open(let attempt):
                    link.stream?.close()
                    link = .opening(attempt: attempt)
                    startOpening(attempt)
                case .close(let flush):
                    if flush, haveOutput, let s = link.stream, case .open = link {
                        link = .closing(s, deadline: now &+ core.withLock { $0.linger })
                    } else {
                        link.stream?.close()
                        link = .none
                    }
                case .event(let e):
                    continuation.yield(e)
                }
            }
            for (attempt, result) in opened {
                guard case .opening(attempt) = link else {
                    if case .success(let fd) = result { Glibc.close(fd) }
                    continue
                }
                switch result {
                case .success(let fd):
                    if let credentials {
                        do {
                            // An IP literal is no server name (no SNI, RFC 6066 §3): it is
                            // checked against the certificate's iPAddress names instead.
                            let address = options.noHostnameCheck ? nil : options.hostAddressBytes
                            let check = address != nil || options.pinSHA256 != nil
                                ? BrokerCertificateCheck(address: address, pin: options.pinSHA256) : nil
                            // A pinned certificate is the broker whatever names it carries.
                            let name = options.noHostnameCheck || options.hostIsAddress || options.pinSHA256 != nil ? nil : options.host
                            let s = try MQTTTLSStream(fd: fd, serverName: name, check: check, credentials: credentials)
                            link = .handshaking(s)
                        } catch {
                            Glibc.close(fd)  // the stream that failed to start left it open
                            link = .none
                            core.withLock { apply($0.session.transportClosed(now: now, cause: error.message), &$0) }
                        }
                    } else {
                        link = .handshaking(MQTTTCPStream(fd: fd))
                    }
                case .failure(let e):
                    link = .none
                    core.withLock { apply($0.session.transportClosed(now: now, cause: e.message), &$0) }
                }
            }
            if case .none = link, !running, todo.isEmpty {
                // Stopped and closed: what the session still says is reported, and the
                // driver ends.
                core.withLock { flushEvents(&$0) }
                return
            }
            // Handshake, reading and writing: whatever the socket allows now.
            if case .handshaking(let s) = link, s.isReady {
                link = .open(s)
                core.withLock { c in
                    c.output.removeAll(keepingCapacity: true)
                    c.outputOffset = 0
                    apply(c.session.transportOpened(now: now), &c)
                }
            }
            if let s = link.stream, case .open = link {
                writeOutput(s, fail: fail)
            } else if case .closing(let s, let until) = link {
                writeOutput(s, fail: fail)
                if case .none = link { continue }  // the write failed: closed
                if s.hasPendingOutput {
                    do throws(MQTTStreamFailure) { try s.flush() } catch { s.close(); link = .none; continue }
                }
                // Done when the DISCONNECT has left the stream too (TLS: its record), or
                // the linger is over.
                if (!core.withLock({ $0.haveOutput }) && !s.hasPendingOutput) || now >= until {
                    s.close()
                    link = .none
                    continue
                }
            }
            // Wait: the socket (for what it wants), the wake pipe, the session's deadline.
            let outputWaits = core.withLock { $0.haveOutput }
            if let s = link.stream {
                fds[1].fd = s.fileDescriptor
                fds[1].events = s.pollEvents(haveOutput: outputWaits)
            } else {
                fds[1].fd = -1
            }
            var timeout: Int32 = -1
            var wakeAt = core.withLock { $0.session.nextDeadline } ?? deadline
            if case .closing(_, let until) = link { wakeAt = min(wakeAt ?? until, until) }
            if let wakeAt {
                timeout = wakeAt <= now ? 0 : Int32(clamping: (wakeAt - now + 999_999) / 1_000_000)
            }
            if link.stream?.hasPendingInput == true { timeout = 0 }
            fds[0].revents = 0
            fds[1].revents = 0
            if Glibc.poll(&fds, 2, timeout) < 0, errno != EINTR {
                // Only a bug gets here (EFAULT, EINVAL); waiting a little keeps it from spinning.
                usleep(10_000)
            }
            now = monotonicNow()
            if fds[0].revents != 0 {
                while readBuffer.withUnsafeMutableBytes({ Glibc.read(wakeFD, $0.baseAddress, $0.count) }) > 0 {}
            }
            if let s = link.stream, fds[1].revents != 0 || s.hasPendingInput {
                do {
                    try s.receive { bytes in
                        core.withLock { apply($0.session.received(bytes, now: now), &$0) }
                    }
                } catch {
                    fail(error.message)
                }
            }
            if core.withLock({ $0.session.nextDeadline }).map({ $0 <= now }) == true {
                core.withLock { apply($0.session.tick(now: now), &$0) }
            }
        }
    }

    /// Writes what waits while the stream takes it.
    private func writeOutput(_ s: any MQTTByteStream, fail: (String) -> Void) {
        let failure: String? = core.withLock { c in
            while c.haveOutput {
                let offset = c.outputOffset
                let sent = c.output.withUnsafeBytes { all -> Result<Int, MQTTStreamFailure> in
                    do throws(MQTTStreamFailure) {
                        return .success(try s.send(UnsafeRawBufferPointer(rebasing: all[offset...])))
                    } catch {
                        return .failure(error)
                    }
                }
                switch sent {
                case .success(0): return nil
                case .success(let n): c.outputOffset += n
                case .failure(let e): return e.message
                }
            }
            if !c.haveOutput, c.outputOffset > 0 {
                c.output.removeAll(keepingCapacity: c.output.count <= 1 << 16)
                c.outputOffset = 0
            }
            return nil
        }
        if let failure { fail(failure) }
    }

    /// Connects on a thread of its own (name lookup and connect block), then hands the
    /// socket to the driver.
    private func startOpening(_ attempt: Int) {
        let host = options.host
        let port = options.port ?? 1883
        let label = "\(host):\(port)"
        Task.detached {
            let result: Result<Int32, TransportError> = await runOnOwnThread {
                do throws(TransportError) {
                    return .success(try TCPTransport.connect(
                        // 4 s an address: a name whose first address is black-holed
                        // (broken IPv6) still gets to its second within the session's 10 s.
                        host: host, port: port, label: label, options: TransportOptions(connectTimeout: .seconds(4)),
                        refusedHint: "is the broker running?"))
                } catch {
                    return .failure(error)
                }
            }
            let handed = self.core.withLock { c -> Bool in
                // Stopped meanwhile: nobody will take the socket.
                guard c.session.isRunning else { return false }
                c.opened.append((attempt, result))
                var one: UInt8 = 1
                _ = Glibc.write(self.wakeWriteFD, &one, 1)
                return true
            }
            if !handed, case .success(let fd) = result { Glibc.close(fd) }
        }
    }
}
