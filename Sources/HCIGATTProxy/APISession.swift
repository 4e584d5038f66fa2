import BluetoothCrypto

// One client of the proxy's ESPHome native API, sans-I/O: bytes and time in; bytes to send,
// the client's Bluetooth requests and the reason it ended out. The session answers what is
// the API's own (Hello, authentication, Ping, DeviceInfo, entities, subscriptions the
// proxy has nothing for) and hands the rest on as ``APIRequest``s.

/// What the proxy says about itself (HelloResponse, DeviceInfoResponse, the Noise hello).
struct APIServerInfo: Sendable, Equatable {
    /// The node name (HA's device name; the mDNS instance and the Noise hello's name).
    var name: String
    var friendlyName: String
    /// The proxy's stable identity as HA keys it: "AA:BB:CC:DD:EE:FF".
    var macAddress: String
    /// The controller's address, the scanner's source in HA ("" if unknown).
    var bluetoothAddress: String
    /// hcigatt's version (project_version, server_info).
    var version: String
    var model: String
    var features: BluetoothProxyFeatures

    init(name: String, friendlyName: String, macAddress: String, bluetoothAddress: String, version: String,
                model: String = "Linux", features: BluetoothProxyFeatures) {
        self.name = name
        self.friendlyName = friendlyName
        self.macAddress = macAddress
        self.bluetoothAddress = bluetoothAddress
        self.version = version
        self.model = model
        self.features = features
    }

    /// The API version we speak: 1.14, as ESPHome 2026.6 (1.15 and later add a capability
    /// exchange the proxy has nothing to say in).
    static let apiMajor: UInt32 = 1
    static let apiMinor: UInt32 = 14
    /// The ESPHome release whose API behaviour the proxy follows (HA compares it to its
    /// lowest Bluetooth-proxy version when `project_name` is its own).
    static let esphomeVersion = "2026.6.0"
    /// Our own project name: HA raises no "firmware outdated" repair for it.
    static let projectName = "hcigatt.bluetooth-proxy"

    /// The MAC as the Noise hello carries it: 12 lowercase hex digits.
    var macHex: String { String(macAddress.lowercased().filter { $0 != ":" }) }
}

/// How a session ended.
enum APICloseReason: Sendable, Equatable, CustomStringConvertible {
    /// The client sent DisconnectRequest.
    case clientDisconnected
    /// We sent DisconnectRequest (stopping, or the client is replaced).
    case serverClosing
    /// The Noise handshake failed its MAC: the client has another key.
    case wrongKey
    /// A plaintext client at our encrypted API (told: "requires encryption").
    case plaintextClient
    /// An encrypted client at our plaintext API (told: "the device is using plaintext").
    case encryptedClient
    /// Another handshake failure (`reason` is what the client was told).
    case handshakeFailed(String)
    case frame(APIFrameError)
    /// An encrypted frame did not decrypt.
    case decryptFailed
    case malformedMessage(type: UInt16, ProtoError)
    /// No Hello within 60 s of connecting.
    case helloTimeout
    /// Silent for the keepalive time and did not answer our Ping.
    case keepaliveTimeout
    /// A request other than Hello, Ping or Disconnect before Hello.
    case requestBeforeHello(type: UInt16)

    var description: String {
        switch self {
        case .clientDisconnected: "client disconnected"
        case .serverClosing: "closed by the proxy"
        case .wrongKey: "wrong encryption key (the client's key is not the proxy's)"
        case .plaintextClient: "client without encryption (the proxy requires its key)"
        case .encryptedClient: "client with encryption (the proxy runs without: --insecure-plaintext)"
        case .handshakeFailed(let r): "encryption handshake failed: \(r)"
        case .frame(let e): "bad frame: \(e)"
        case .decryptFailed: "an encrypted frame did not decrypt"
        case .malformedMessage(let t, let e): "message type \(t) malformed: \(e)"
        case .helloTimeout: "no Hello within 60 s"
        case .keepaliveTimeout: "client stopped answering (no reply to Ping)"
        case .requestBeforeHello(let t): "message type \(t) before Hello"
        }
    }
}

/// The session's answer to what came in.
struct APISessionOutput: Sendable, Equatable {
    /// To write to the client, in order.
    var bytes: [UInt8] = []
    /// The client's Bluetooth requests, in order.
    var requests: [APIRequest] = []
    /// Set when the session ended: write `bytes`, then close the socket.
    var closed: APICloseReason?
    init() {}
}

struct APISession: Sendable {
    /// A key of 32 bytes: Noise with it; nil: plaintext.
    let psk: [UInt8]?
    let info: APIServerInfo
    /// Nanoseconds: no Hello by then closes.
    static let helloTimeout: UInt64 = 60_000_000_000
    /// Silent this long: we ping (ESPHome's 60 s).
    static let pingAfter: UInt64 = 60_000_000_000
    /// ...and close when the ping gets nothing for this long after it.
    static let pingTimeout: UInt64 = 90_000_000_000

    /// What is known of the client once it said Hello.
    struct Client: Sendable, Equatable {
        var info: String
        var apiMajor: UInt32
        var apiMinor: UInt32
    }

    enum Phase: Sendable {
        case awaitingHello(since: UInt64)
        case ready(Client)
    }

    /// A framed, and if need be encrypted, link to the client.
    struct Link: Sendable {
        var phase: Phase
        var lastHeard: UInt64
        var pingSent: UInt64?
    }

    enum State: Sendable {
        case plaintext(Link)
        /// Noise: waiting for the client's hello frame.
        case noiseHello(since: UInt64)
        /// Noise: the server hello sent, waiting for the client's handshake message.
        case noiseHandshake(prologue: [UInt8], since: UInt64)
        case noise(Link, receive: NoiseCipher, send: NoiseCipher)
        case closed(APICloseReason)
    }

    var state: State
    var reader = APIFrameReader()
    let ephemeral: [UInt8]

    /// A session for a client that connected at `now`; `ephemeral`: our Noise key for it.
    init(info: APIServerInfo, psk: [UInt8]?, now: UInt64, ephemeral: [UInt8]? = nil) {
        self.info = info
        self.psk = psk
        self.ephemeral = ephemeral ?? BluetoothCrypto.randomBytes(32)
        state = psk == nil ? .plaintext(Link(phase: .awaitingHello(since: now), lastHeard: now)) : .noiseHello(since: now)
    }

    /// The client, once it said Hello.
    var client: Client? {
        switch state {
        case .plaintext(let l), .noise(let l, _, _): if case .ready(let c) = l.phase { return c }
        default: break
        }
        return nil
    }

    var isEncrypted: Bool { psk != nil }

    /// Why it ended, once it has.
    var closeReason: APICloseReason? {
        if case .closed(let r) = state { return r }
        return nil
    }

    /// When ``tick(now:)`` has something to do.
    var nextDeadline: UInt64? {
        switch state {
        case .noiseHello(let since), .noiseHandshake(_, let since): return since + Self.helloTimeout
        case .plaintext(let l), .noise(let l, _, _):
            if case .awaitingHello(let since) = l.phase { return since + Self.helloTimeout }
            if let p = l.pingSent { return p + Self.pingTimeout }
            return l.lastHeard + Self.pingAfter
        case .closed: return nil
        }
    }

    // MARK: Input

    /// Bytes from the client.
    mutating func receive(_ bytes: [UInt8], now: UInt64) -> APISessionOutput {
        var out = APISessionOutput()
        if case .closed = state { return out }
        reader.append(bytes)
        while out.closed == nil, step(now: now, &out) {}
        return out
    }

    /// Time passed: the hello deadline, our keepalive Ping.
    mutating func tick(now: UInt64) -> APISessionOutput {
        var out = APISessionOutput()
        guard let deadline = nextDeadline, now >= deadline else { return out }
        switch state {
        case .noiseHello, .noiseHandshake:
            close(.helloTimeout, &out)
        case .plaintext(var l), .noise(var l, _, _):
            if case .awaitingHello = l.phase {
                close(.helloTimeout, &out)
            } else if l.pingSent != nil {
                close(.keepaliveTimeout, &out)
            } else {
                l.pingSent = now
                setLink(l)
                emit(APIMessage(APIMessageType.pingRequest), &out)
            }
        case .closed: break
        }
        return out
    }

    /// Frames one message out of what was received; false when nothing more can be done.
    private mutating func step(now: UInt64, _ out: inout APISessionOutput) -> Bool {
        switch state {
        case .closed:
            return false
        case .plaintext(var link):
            let message: APIMessage?
            do throws(APIFrameError) { message = try reader.nextPlaintext() } catch {
                if case .badIndicator(0x01) = error {
                    // ESPHome's answer, unframed: the leading 0 says "plaintext" to a Noise client.
                    out.bytes += [0x00] + Array("Bad indicator byte".utf8)
                    close(.encryptedClient, &out)
                } else {
                    close(.frame(error), &out)
                }
                return false
            }
            guard let message else { return false }
            link.lastHeard = now
            link.pingSent = nil
            state = .plaintext(link)
            handle(message, &out)
            return true
        case .noiseHello(let since):
            let frame: [UInt8]?
            do throws(APIFrameError) { frame = try reader.nextNoise(limit: APIFrameReader.maxHandshake) } catch {
                if case .badIndicator(0x00) = error {
                    reject("Bad indicator byte", .plaintextClient, &out)
                } else if case .tooLong = error {
                    reject("Bad handshake packet len", .frame(error), &out)
                } else {
                    reject("Bad indicator byte", .frame(error), &out)
                }
                return false
            }
            guard let frame else { return false }
            // The server hello: protocol 1, our name, our MAC.
            let hello = [0x01] + Array(info.name.utf8) + [0] + Array(info.macHex.utf8) + [0]
            APIFrameWriter.noise(hello, into: &out.bytes)
            let prologue = Array("NoiseAPIInit".utf8) + [UInt8(truncatingIfNeeded: frame.count >> 8), UInt8(truncatingIfNeeded: frame.count)] + frame
            state = .noiseHandshake(prologue: prologue, since: since)
            return true
        case .noiseHandshake(let prologue, let since):
            let frame: [UInt8]?
            do throws(APIFrameError) { frame = try reader.nextNoise(limit: APIFrameReader.maxHandshake) } catch {
                if case .tooLong = error { reject("Bad handshake packet len", .frame(error), &out) } else { reject("Bad indicator byte", .frame(error), &out) }
                return false
            }
            guard let frame else { return false }
            guard let first = frame.first else {
                reject("Empty handshake message", .handshakeFailed("Empty handshake message"), &out)
                return false
            }
            guard first == 0 else {
                reject("Bad handshake error byte", .handshakeFailed("Bad handshake error byte"), &out)
                return false
            }
            switch NoiseResponder.respond(to: Array(frame.dropFirst()), psk: psk ?? [], prologue: prologue, ephemeral: ephemeral) {
            case .failure(.macFailure):
                reject("Handshake MAC failure", .wrongKey, &out)
                return false
            case .failure:
                reject("Handshake error", .handshakeFailed("Handshake error"), &out)
                return false
            case .success(let done):
                APIFrameWriter.noise([0x00] + done.reply, into: &out.bytes)
                state = .noise(Link(phase: .awaitingHello(since: since), lastHeard: now), receive: done.receive, send: done.send)
                return true
            }
        case .noise(var link, var receive, let send):
            let frame: [UInt8]?
            do throws(APIFrameError) { frame = try reader.nextNoise(limit: APIFrameReader.maxMessage + 20) } catch {
                close(.frame(error), &out)
                return false
            }
            guard let frame else { return false }
            guard let inner = receive.open(frame) else {
                close(.decryptFailed, &out)
                return false
            }
            let message: APIMessage
            do throws(APIFrameError) { message = try APIFrameWriter.message(fromInner: inner) } catch {
                close(.frame(error), &out)
                return false
            }
            link.lastHeard = now
            link.pingSent = nil
            state = .noise(link, receive: receive, send: send)
            handle(message, &out)
            return true
        }
    }

    /// A handshake reject frame (0x01 then the text ESPHome sends; clients match the MAC
    /// failure's to say "invalid encryption key"), then the end.
    private mutating func reject(_ text: String, _ reason: APICloseReason, _ out: inout APISessionOutput) {
        APIFrameWriter.noise([0x01] + Array(text.utf8), into: &out.bytes)
        close(reason, &out)
    }

    private mutating func close(_ reason: APICloseReason, _ out: inout APISessionOutput) {
        state = .closed(reason)
        out.closed = reason
    }

    private mutating func setLink(_ l: Link) {
        switch state {
        case .plaintext: state = .plaintext(l)
        case .noise(_, let r, let s): state = .noise(l, receive: r, send: s)
        default: break
        }
    }

    private var link: Link? {
        switch state {
        case .plaintext(let l), .noise(let l, _, _): l
        default: nil
        }
    }

    // MARK: Messages

    private mutating func handle(_ m: APIMessage, _ out: inout APISessionOutput) {
        guard var l = link else { return }
        let T = APIMessageType.self
        if case .awaitingHello = l.phase, ![T.helloRequest, T.pingRequest, T.pingResponse, T.disconnectRequest].contains(m.type) {
            close(.requestBeforeHello(type: m.type), &out)
            return
        }
        switch m.type {
        case T.helloRequest:
            var client = Client(info: "", apiMajor: 0, apiMinor: 0)
            var r = ProtoReader(m.payload)
            do throws(ProtoError) {
                while let (f, v) = try r.next() {
                    switch f {
                    case 1: client.info = try r.string(v, f)
                    case 2: client.apiMajor = try r.uint32(v, f)
                    case 3: client.apiMinor = try r.uint32(v, f)
                    default: continue
                    }
                }
            } catch {
                close(.malformedMessage(type: m.type, error), &out)
                return
            }
            l.phase = .ready(client)
            setLink(l)
            var w = ProtoWriter()
            w.uint(1, APIServerInfo.apiMajor)
            w.uint(2, APIServerInfo.apiMinor)
            w.string(3, "hcigatt \(info.version)")
            w.string(4, info.name)
            emit(APIMessage(T.helloResponse, w.bytes), &out)
        case T.authenticationRequest:
            // No password: an empty response says it is not invalid (older clients wait for it).
            emit(APIMessage(T.authenticationResponse), &out)
        case T.disconnectRequest:
            emit(APIMessage(T.disconnectResponse), &out)
            close(.clientDisconnected, &out)
        case T.disconnectResponse:
            close(.serverClosing, &out)
        case T.pingRequest:
            emit(APIMessage(T.pingResponse), &out)
        case T.pingResponse:
            break
        case T.deviceInfoRequest:
            emit(APIMessage(T.deviceInfoResponse, deviceInfo()), &out)
        case T.listEntitiesRequest:
            emit(APIMessage(T.listEntitiesDoneResponse), &out)
        case T.subscribeStatesRequest, T.subscribeLogsRequest, T.subscribeHomeassistantServicesRequest,
             T.subscribeHomeAssistantStatesRequest, T.getTimeResponse, T.homeAssistantStateResponse:
            break  // the proxy has no entities, logs over the API, actions or clock to set
        default:
            let request: APIRequest?
            do throws(ProtoError) { request = try APIRequest.decode(m) } catch {
                close(.malformedMessage(type: m.type, error), &out)
                return
            }
            guard let request else { return }  // a type a Bluetooth proxy does not serve: ignored, as ESPHome does
            if case .setNoiseKey(let key) = request {
                // A key is taken only over an encrypted session (anyone could push one in
                // plaintext), and only a well-formed one.
                guard isEncrypted, key == nil || key?.count == 32 else {
                    emit(APIResponse.noiseKeySet(success: false).message(clientMinor: 0), &out)
                    return
                }
            }
            out.requests.append(request)
        }
    }

    func deviceInfo() -> [UInt8] {
        var w = ProtoWriter(capacity: 256)
        w.string(2, info.name)
        w.string(3, info.macAddress)
        w.string(4, APIServerInfo.esphomeVersion)
        w.string(5, "hcigatt \(info.version)")
        w.string(6, info.model)
        w.string(8, APIServerInfo.projectName)
        w.string(9, info.version)
        w.string(12, "hcigatt")
        w.string(13, info.friendlyName)
        w.uint(15, info.features.rawValue)
        w.string(18, info.bluetoothAddress)
        w.bool(19, isEncrypted)
        return w.bytes
    }

    // MARK: Output

    /// Frames (and encrypts) `m` into `out`.
    private mutating func emit(_ m: APIMessage, _ out: inout APISessionOutput) {
        out.bytes += frame(m)
    }

    private mutating func frame(_ m: APIMessage) -> [UInt8] {
        var bytes: [UInt8] = []
        switch state {
        case .plaintext:
            APIFrameWriter.plaintext(m, into: &bytes)
        case .noise(let l, let r, var s):
            guard let sealed = s.seal(APIFrameWriter.inner(m)) else { return [] }
            state = .noise(l, receive: r, send: s)
            APIFrameWriter.noise(sealed, into: &bytes)
        default:
            break
        }
        return bytes
    }

    /// The bytes that send `response` to the client; none before Hello or after the end.
    mutating func send(_ response: APIResponse) -> [UInt8] {
        guard let c = client else { return [] }
        return frame(response.message(clientMinor: c.apiMinor))
    }

    /// Ends the session from our side: DisconnectRequest (the client answers, then closes).
    mutating func disconnect() -> [UInt8] {
        guard client != nil else {
            if case .closed = state {} else { state = .closed(.serverClosing) }
            return []
        }
        let bytes = frame(APIMessage(APIMessageType.disconnectRequest))
        state = .closed(.serverClosing)
        return bytes
    }
}
