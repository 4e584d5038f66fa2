// The MQTT client: Eclipse Paho C's asynchronous API (libpaho-mqtt3as) behind a small Swift
// interface whose callbacks become one AsyncStream of events. Paho runs its own two threads
// and calls back with its global lock held, so callbacks only hand events over.
import CPaho
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// How to reach the broker.
public struct MQTTOptions: Sendable {
    /// `mqtt://HOST[:PORT]` (1883) or `mqtts://HOST[:PORT]` (8883, TLS).
    public var uri: String
    /// The client identifier: stable, so the broker keeps the session across restarts.
    public var clientID: String
    /// MQTT 5 (else 3.1.1).
    public var version5 = false
    /// User name, if the broker wants one.
    public var username: String?
    /// Password, if the broker wants one.
    public var password: String?
    /// TLS: the CA certificates (PEM) to trust; nil: the system's.
    public var caFile: String?
    /// TLS: a client certificate (PEM), and its key when not in the same file.
    public var certFile: String?
    /// TLS: the client certificate's key (PEM), when not in `certFile`.
    public var keyFile: String?
    /// TLS: do not check the broker's name against its certificate.
    public var noHostnameCheck = false
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

    /// The broker's host as the URI names it ("[::1]" → "::1").
    public var host: String {
        var rest = Substring(uri)
        if let colon = rest.firstIndex(of: ":"), rest[colon...].hasPrefix("://") { rest = rest[rest.index(colon, offsetBy: 3)...] }
        if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
        if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") { return String(rest[rest.index(after: rest.startIndex) ..< close]) }
        return String(rest.prefix { $0 != ":" && $0 != "/" })
    }

    /// A password would cross the network unencrypted: given, no TLS, and a broker that is
    /// not on this machine. What the gateway warns about once.
    public var passwordInClear: Bool {
        guard let password, !password.isEmpty, !tls else { return false }
        let h = host.lowercased()
        return !(h == "localhost" || h.hasPrefix("127.") || h == "::1")
    }
}

/// An MQTT client error with Paho's return code.
public struct MQTTError: Error, Sendable, CustomStringConvertible {
    /// Paho's return code.
    public var code: Int32
    /// What was attempted (create, connect ...).
    public var operation: String
    public var description: String {
        let reason: String = switch code {
        case -3: "not connected"
        case -6: "a required parameter is missing"
        case -12: "too many messages waiting"
        case -14: "the URI's scheme is not mqtt://, mqtts://, tcp:// or ssl://"
        case -15: "bad option for this MQTT version"
        default: "code \(code)"
        }
        return "MQTT \(operation): \(reason)"
    }
}

/// What a connect failure code means, in words: a refusal names the reason.
public func mqttConnectFailureText(_ code: Int32, _ message: String) -> String {
    switch code {
    case 1, 0x84: "the broker does not accept this MQTT version"
    case 2, 0x85: "the broker refused the client identifier"
    case 3, 0x88: "the broker is unavailable"
    case 4, 0x86: "the broker refused the user name or password"
    case 5, 0x87: "not authorized: the broker refused the credentials"
    case -1: "cannot connect (TCP or TLS failed: broker down, wrong port, or its certificate not trusted)"
    default: message.isEmpty ? "code \(code)" : "\(message) (code \(code))"
    }
}

/// True when a connect failure will not go away by retrying (credentials, identifier,
/// protocol version).
public func mqttConnectFailureIsPermanent(_ code: Int32) -> Bool {
    [1, 2, 4, 5, 0x84, 0x85, 0x86, 0x87, 0x8C].contains(code)
}

/// An asynchronous MQTT client (Paho).
public final class MQTTClient: @unchecked Sendable {
    /// Events, in the order Paho reports them.
    public let events: AsyncStream<MQTTEvent>
    let options: MQTTOptions
    private let box: Box
    private var handle: MQTTAsync?
    /// C strings Paho may keep pointers to: freed with the client.
    private var cStrings: [UnsafeMutablePointer<CChar>] = []

    /// Routes Paho's callbacks to the event stream.
    final class Box: @unchecked Sendable {
        let continuation: AsyncStream<MQTTEvent>.Continuation
        let firstConnect = Mutex(true)
        init(_ c: AsyncStream<MQTTEvent>.Continuation) { continuation = c }
    }

    /// One published message's context: its tag.
    final class Publication {
        let box: Box
        let tag: UInt64
        init(_ box: Box, _ tag: UInt64) {
            self.box = box
            self.tag = tag
        }
    }

    private static let globalInit: Void = {
        var o = hcigatt_mqtt_init_options()
        o.do_openssl_init = 1
        MQTTAsync_global_init(&o)
    }()

    /// A client for `options` (not connected yet).
    public init(_ options: MQTTOptions) throws(MQTTError) {
        _ = Self.globalInit
        self.options = options
        let (stream, continuation) = AsyncStream<MQTTEvent>.makeStream()
        events = stream
        box = Box(continuation)
        var create = hcigatt_mqtt_create_options(options.version5 ? 1 : 0)
        create.MQTTVersion = options.version5 ? MQTTVERSION_5 : MQTTVERSION_3_1_1
        create.sendWhileDisconnected = 0
        // Paho counts messages waiting to be written against this even while connected: room
        // for the publish window, the status and every discovery config of a large site.
        create.maxBufferedMessages = 8192
        var h: MQTTAsync?
        let rc = MQTTAsync_createWithOptions(&h, options.uri, options.clientID, MQTTCLIENT_PERSISTENCE_NONE, nil, &create)
        guard rc == MQTTASYNC_SUCCESS, let h else { throw MQTTError(code: rc, operation: "create") }
        handle = h
        let context = Unmanaged.passUnretained(box).toOpaque()
        MQTTAsync_setCallbacks(h, context, { context, cause in
            let why = cause.map { String(cString: $0) } ?? ""
            MQTTClient.box(context).continuation.yield(.connectionLost(cause: why.isEmpty ? "the connection ended" : why))
        }, { context, topic, topicLength, message in
            let b = MQTTClient.box(context)
            let name: String
            if let topic {
                name = topicLength > 0
                    ? String(decoding: UnsafeRawBufferPointer(start: topic, count: Int(topicLength)), as: UTF8.self)
                    : String(cString: topic)
            } else {
                name = ""
            }
            var payload: [UInt8] = []
            if let m = message?.pointee, let p = m.payload, m.payloadlen > 0 {
                payload = Array(UnsafeRawBufferPointer(start: p, count: Int(m.payloadlen)))
            }
            let retained = (message?.pointee.retained ?? 0) != 0
            b.continuation.yield(.message(topic: name, payload: payload, retained: retained))
            var msg = message
            MQTTAsync_freeMessage(&msg)
            MQTTAsync_free(topic)
            return 1
        }, nil)
        MQTTAsync_setConnected(h, context) { context, _ in
            MQTTClient.box(context).continuation.yield(.connected)
        }
    }

    deinit {
        var h: MQTTAsync? = handle
        if h != nil { MQTTAsync_destroy(&h) }
        box.continuation.finish()
        for s in cStrings { free(s) }
    }

    static func box(_ context: UnsafeMutableRawPointer?) -> Box {
        Unmanaged<Box>.fromOpaque(context!).takeUnretainedValue()
    }

    private func keep(_ s: String?) -> UnsafeMutablePointer<CChar>? {
        guard let s, let c = strdup(s) else { return nil }
        cStrings.append(c)
        return c
    }

    /// Starts connecting; the client keeps reconnecting (1 s doubling to 30 s) until
    /// ``disconnect(timeout:)``. Outcomes arrive as events.
    public func connect() throws(MQTTError) {
        guard let h = handle else { throw MQTTError(code: -1, operation: "connect") }
        var c = hcigatt_mqtt_connect_options(options.version5 ? 1 : 0)
        c.keepAliveInterval = options.keepAlive
        c.MQTTVersion = options.version5 ? MQTTVERSION_5 : MQTTVERSION_3_1_1
        if options.version5 { c.cleanstart = 0 } else { c.cleansession = 0 }
        c.automaticReconnect = 1
        c.minRetryInterval = 1
        c.maxRetryInterval = 30
        c.connectTimeout = 10
        c.username = UnsafePointer(keep(options.username))
        if let password = options.password {
            c.password = UnsafePointer(keep(password))
        }
        var will = hcigatt_mqtt_will_options()
        if let w = options.will {
            will.topicName = UnsafePointer(keep(w.topic))
            will.message = UnsafePointer(keep(w.payload))
            will.retained = w.retained ? 1 : 0
            will.qos = 1
        }
        var ssl = hcigatt_mqtt_ssl_options()
        ssl.trustStore = UnsafePointer(keep(options.caFile))
        ssl.keyStore = UnsafePointer(keep(options.certFile))
        ssl.privateKey = UnsafePointer(keep(options.keyFile))
        ssl.enableServerCertAuth = 1
        ssl.verify = options.noHostnameCheck ? 0 : 1
        var props = hcigatt_mqtt_properties()
        defer { MQTTProperties_free(&props) }
        if options.version5 {
            _ = hcigatt_mqtt_add_int_property(&props, MQTTPROPERTY_CODE_SESSION_EXPIRY_INTERVAL, options.sessionExpiry)
        }
        c.context = Unmanaged.passUnretained(box).toOpaque()
        if options.version5 {
            c.onFailure5 = { context, response in
                let code = response?.pointee.code ?? -1
                let message = response?.pointee.message.map { String(cString: $0) } ?? ""
                MQTTClient.connectFailed(context, code == 0 ? Int32(response?.pointee.reasonCode.rawValue ?? 0) : code, message)
            }
        } else {
            c.onFailure = { context, response in
                let code = response?.pointee.code ?? -1
                let message = response?.pointee.message.map { String(cString: $0) } ?? ""
                MQTTClient.connectFailed(context, code, message)
            }
        }
        let rc: Int32 = withUnsafeMutablePointer(to: &will) { w in
            withUnsafeMutablePointer(to: &ssl) { s in
                withUnsafeMutablePointer(to: &props) { p in
                    if options.will != nil { c.will = w }
                    if options.tls { c.ssl = s }
                    if options.version5 { c.connectProperties = p }
                    return MQTTAsync_connect(h, &c)
                }
            }
        }
        guard rc == MQTTASYNC_SUCCESS else { throw MQTTError(code: rc, operation: "connect") }
    }

    static func connectFailed(_ context: UnsafeMutableRawPointer?, _ code: Int32, _ message: String) {
        let b = box(context)
        let first = b.firstConnect.withLock { f in
            defer { f = false }
            return f
        }
        if first { b.continuation.yield(.connectFailed(code: code, message: message)) }
    }

    /// Publishes `payload` on `topic`. With `tag`, the outcome arrives as ``MQTTEvent``
    /// `.acknowledged`/`.failed` (QoS 1). A non-zero Paho code when it was not taken
    /// (-3: not connected).
    @discardableResult
    public func publish(topic: String, payload: UnsafeRawBufferPointer, qos: Int32 = 1, retained: Bool = false,
                        tag: UInt64? = nil) -> Int32 {
        guard let h = handle else { return -3 }
        var message = hcigatt_mqtt_message()
        message.payload = UnsafeMutableRawPointer(mutating: payload.baseAddress)
        message.payloadlen = Int32(payload.count)
        message.qos = qos
        message.retained = retained ? 1 : 0
        var response = hcigatt_mqtt_response_options()
        var context: Unmanaged<Publication>?
        if let tag {
            let c = Unmanaged.passRetained(Publication(box, tag))
            context = c
            response.context = c.toOpaque()
            if options.version5 {
                response.onSuccess5 = { ctx, _ in MQTTClient.published(ctx, ok: true, code: 0) }
                response.onFailure5 = { ctx, r in
                    MQTTClient.published(ctx, ok: false, code: r.map { $0.pointee.code != 0 ? $0.pointee.code : Int32($0.pointee.reasonCode.rawValue) } ?? -1)
                }
            } else {
                response.onSuccess = { ctx, _ in MQTTClient.published(ctx, ok: true, code: 0) }
                response.onFailure = { ctx, r in MQTTClient.published(ctx, ok: false, code: r?.pointee.code ?? -1) }
            }
        }
        let rc = MQTTAsync_sendMessage(h, topic, &message, &response)
        if rc != MQTTASYNC_SUCCESS { context?.release() }
        return rc
    }

    /// Publishes a text payload.
    @discardableResult
    public func publish(topic: String, text: String, qos: Int32 = 1, retained: Bool = false) -> Int32 {
        var t = text
        return t.withUTF8 { publish(topic: topic, payload: UnsafeRawBufferPointer($0), qos: qos, retained: retained) }
    }

    static func published(_ context: UnsafeMutableRawPointer?, ok: Bool, code: Int32) {
        guard let context else { return }
        let p = Unmanaged<Publication>.fromOpaque(context).takeRetainedValue()
        p.box.continuation.yield(ok ? .acknowledged(tag: p.tag) : .failed(tag: p.tag, code: code))
    }

    /// Subscribes to `topic` (QoS 1); messages arrive as `.message` events.
    @discardableResult
    public func subscribe(_ topic: String) -> Int32 {
        guard let h = handle else { return -3 }
        var response = hcigatt_mqtt_response_options()
        return MQTTAsync_subscribe(h, topic, 1, &response)
    }

    /// Sends DISCONNECT after what was handed over is written (waiting at most `timeout`
    /// ms for acknowledgements) and stops reconnecting; `.disconnected` follows.
    public func disconnect(timeout: Int32 = 2000) {
        guard let h = handle else { return }
        var d = hcigatt_mqtt_disconnect_options(options.version5 ? 1 : 0)
        d.timeout = timeout
        d.context = Unmanaged.passUnretained(box).toOpaque()
        if options.version5 {
            d.onSuccess5 = { ctx, _ in MQTTClient.box(ctx).continuation.yield(.disconnected) }
            d.onFailure5 = { ctx, _ in MQTTClient.box(ctx).continuation.yield(.disconnected) }
        } else {
            d.onSuccess = { ctx, _ in MQTTClient.box(ctx).continuation.yield(.disconnected) }
            d.onFailure = { ctx, _ in MQTTClient.box(ctx).continuation.yield(.disconnected) }
        }
        if MQTTAsync_disconnect(h, &d) != MQTTASYNC_SUCCESS { box.continuation.yield(.disconnected) }
    }
}
