// The gateway's TLS, on BearSSL: the certificates and key read from PEM files, and the
// client engine as a byte stream the MQTT driver polls. TLS 1.2 only (what BearSSL has);
// the broker's chain is checked against the trust anchors and its name against the host
// of the URI (SNI carries it), unless told not to.
import BluetoothWire
import CBearSSL
#if canImport(Glibc)
import Glibc
#endif

/// Trust anchors, and a client certificate chain with its key, read once from PEM files
/// and kept (BearSSL keeps pointers into them for every connection).
final class MQTTTLSCredentials: @unchecked Sendable {
    /// The CA certificates trusted for the broker's chain.
    let anchors: UnsafeMutableBufferPointer<br_x509_trust_anchor>
    /// The client certificate chain (empty: none).
    let chain: UnsafeMutableBufferPointer<br_x509_certificate>
    /// The client certificate's key.
    enum Key {
        case none
        case rsa(UnsafeMutablePointer<br_rsa_private_key>)
        case ec(UnsafeMutablePointer<br_ec_private_key>)
    }
    let key: Key
    /// Every byte buffer the structures above point into.
    private var buffers: [UnsafeMutableRawBufferPointer] = []

    /// The system's CA bundle (Debian's ca-certificates), used without `--ca-file`.
    static let systemBundle = "/etc/ssl/certs/ca-certificates.crt"

    /// Reads `caFile` (else the system bundle), and `certFile` with `keyFile` (the key may be
    /// in `certFile`). Errors name the file and what is wrong with it.
    init(caFile: String?, certFile: String?, keyFile: String?) throws(MQTTError) {
        var buffers: [UnsafeMutableRawBufferPointer] = []
        func copy(_ p: UnsafePointer<UInt8>?, _ n: Int) -> UnsafeMutablePointer<UInt8> {
            let b = UnsafeMutableRawBufferPointer.allocate(byteCount: max(n, 1), alignment: 8)
            if let p, n > 0 { b.copyMemory(from: UnsafeRawBufferPointer(start: p, count: n)) }
            buffers.append(b)
            return b.baseAddress!.assumingMemoryBound(to: UInt8.self)
        }
        let caPath = caFile ?? Self.systemBundle
        let caObjects = try Self.pemObjects(caPath, what: caFile == nil ? "the system's CA bundle" : "--ca-file")
        var anchors: [br_x509_trust_anchor] = []
        for object in caObjects where object.name == "CERTIFICATE" || object.name == "X509 CERTIFICATE" {
            guard let anchor = Self.anchor(object.der, copy: copy) else { continue }
            anchors.append(anchor)
        }
        guard !anchors.isEmpty else {
            for b in buffers { b.deallocate() }
            throw MQTTError("TLS: \(caPath) holds no CA certificate BearSSL can use (PEM, RSA or EC keys)")
        }
        var chain: [br_x509_certificate] = []
        var key = Key.none
        if let certFile {
            let objects = try Self.pemObjects(certFile, what: "--cert-file")
            for object in objects where object.name == "CERTIFICATE" || object.name == "X509 CERTIFICATE" {
                let p = copy(object.der, object.der.count)
                chain.append(br_x509_certificate(data: p, data_len: object.der.count))
            }
            guard !chain.isEmpty else { throw MQTTError("TLS: --cert-file \(certFile) holds no certificate") }
            var keyObjects = objects.filter { $0.name.hasSuffix("PRIVATE KEY") }
            if let keyFile { keyObjects = try Self.pemObjects(keyFile, what: "--key-file").filter { $0.name.hasSuffix("PRIVATE KEY") } }
            let keyPath = keyFile ?? certFile
            guard let object = keyObjects.first else {
                throw MQTTError("TLS: \(keyPath) holds no private key (PEM: RSA, EC or PKCS#8, not encrypted): give it with --key-file")
            }
            guard let k = Self.privateKey(object.der, copy: copy) else {
                throw MQTTError("TLS: the key in \(keyPath) cannot be read (BearSSL takes RSA and EC keys, not encrypted ones)")
            }
            key = k
        } else if keyFile != nil {
            throw MQTTError("TLS: --key-file needs --cert-file")
        }
        self.anchors = .allocate(capacity: anchors.count)
        _ = self.anchors.initialize(from: anchors)
        self.chain = .allocate(capacity: max(chain.count, 1))
        _ = self.chain.initialize(from: chain)
        self.key = key
        self.buffers = buffers
    }

    deinit {
        for b in buffers {
            b.initializeMemory(as: UInt8.self, repeating: 0)  // key material among them
            b.deallocate()
        }
        anchors.deallocate()
        chain.deallocate()
        switch key {
        case .none: break
        case .rsa(let k): k.deallocate()
        case .ec(let k): k.deallocate()
        }
    }

    struct PEMObject {
        var name: String
        var der: [UInt8]
    }

    /// The PEM objects of the file at `path` (`what`: the option that named it).
    static func pemObjects(_ path: String, what: String) throws(MQTTError) -> [PEMObject] {
        guard let text = Spool.readFile(path) else {
            throw MQTTError("TLS: cannot read \(what) \(path): \(String(cString: strerror(errno)))")
        }
        guard let objects = pemObjects(text) else { throw MQTTError("TLS: \(what) \(path) is not valid PEM") }
        return objects
    }

    /// The PEM objects in `text` (nil: malformed).
    static func pemObjects(_ text: [UInt8]) -> [PEMObject]? {
        final class Sink {
            var bytes: [UInt8] = []
        }
        let sink = Sink()
        // BearSSL's decoders point into themselves (their T0 stacks): a fixed address.
        let decoder = UnsafeMutablePointer<br_pem_decoder_context>.allocate(capacity: 1)
        defer { decoder.deallocate() }
        br_pem_decoder_init(decoder)
        var objects: [PEMObject] = []
        var name = ""
        var offset = 0
        // A PEM file need not end with a newline; the decoder needs one to close the last line.
        let input = text.last == 10 ? text : text + [10]
        return withExtendedLifetime(sink) { input.withUnsafeBytes { raw -> [PEMObject]? in
            while offset < raw.count {
                guard let base = raw.baseAddress else { return objects }
                let used = br_pem_decoder_push(decoder, base + offset, raw.count - offset)
                offset += used
                switch br_pem_decoder_event(decoder) {
                case Int32(BR_PEM_BEGIN_OBJ):
                    name = String(cString: br_pem_decoder_name(decoder))
                    sink.bytes = []
                    br_pem_decoder_setdest(decoder, { context, data, length in
                        guard let context, let data else { return }
                        let s = Unmanaged<Sink>.fromOpaque(context).takeUnretainedValue()
                        s.bytes.append(contentsOf: UnsafeRawBufferPointer(start: data, count: length))
                    }, Unmanaged.passUnretained(sink).toOpaque())
                case Int32(BR_PEM_END_OBJ):
                    objects.append(PEMObject(name: name, der: sink.bytes))
                    sink.bytes = []
                case Int32(BR_PEM_ERROR):
                    return nil
                default:
                    if used == 0 { return objects }
                }
            }
            return objects
        } }
    }

    /// A trust anchor from a DER certificate, its name and key copied out of the decoder
    /// (nil: not a certificate BearSSL can decode).
    static func anchor(_ der: [UInt8], copy: (UnsafePointer<UInt8>?, Int) -> UnsafeMutablePointer<UInt8>) -> br_x509_trust_anchor? {
        final class Name {
            var bytes: [UInt8] = []
        }
        let name = Name()
        let decoder = UnsafeMutablePointer<br_x509_decoder_context>.allocate(capacity: 1)
        defer { decoder.deallocate() }
        br_x509_decoder_init(decoder, { context, data, length in
            guard let context, let data else { return }
            Unmanaged<Name>.fromOpaque(context).takeUnretainedValue().bytes
                .append(contentsOf: UnsafeRawBufferPointer(start: data, count: length))
        }, Unmanaged.passUnretained(name).toOpaque())
        withExtendedLifetime(name) {
            der.withUnsafeBytes { br_x509_decoder_push(decoder, $0.baseAddress, $0.count) }
        }
        guard br_x509_decoder_last_error(decoder) == 0, let pk = br_x509_decoder_get_pkey(decoder) else { return nil }
        var anchor = br_x509_trust_anchor()
        anchor.dn.data = name.bytes.withUnsafeBufferPointer { copy($0.baseAddress, $0.count) }
        anchor.dn.len = name.bytes.count
        // Every certificate of the file is a CA to trust; one that is not a CA is trusted as
        // the broker's own (BearSSL matches it directly).
        anchor.flags = br_x509_decoder_isCA(decoder) != 0 ? UInt32(BR_X509_TA_CA) : 0
        anchor.pkey.key_type = pk.pointee.key_type
        switch Int32(pk.pointee.key_type) {
        case BR_KEYTYPE_RSA:
            let rsa = pk.pointee.key.rsa
            anchor.pkey.key.rsa = br_rsa_public_key(n: copy(rsa.n, rsa.nlen), nlen: rsa.nlen, e: copy(rsa.e, rsa.elen), elen: rsa.elen)
        case BR_KEYTYPE_EC:
            let ec = pk.pointee.key.ec
            anchor.pkey.key.ec = br_ec_public_key(curve: ec.curve, q: copy(ec.q, ec.qlen), qlen: ec.qlen)
        default:
            return nil
        }
        return anchor
    }

    /// A private key from a DER object (RSA, EC or PKCS#8), copied out of the decoder.
    static func privateKey(_ der: [UInt8], copy: (UnsafePointer<UInt8>?, Int) -> UnsafeMutablePointer<UInt8>) -> Key? {
        let decoder = UnsafeMutablePointer<br_skey_decoder_context>.allocate(capacity: 1)
        defer {
            memset(decoder, 0, MemoryLayout<br_skey_decoder_context>.size)  // the key
            decoder.deallocate()
        }
        br_skey_decoder_init(decoder)
        der.withUnsafeBytes { br_skey_decoder_push(decoder, $0.baseAddress, $0.count) }
        guard br_skey_decoder_last_error(decoder) == 0 else { return nil }
        switch br_skey_decoder_key_type(decoder) {
        case Int32(BR_KEYTYPE_RSA):
            guard let k = br_skey_decoder_get_rsa(decoder)?.pointee else { return nil }
            let p = UnsafeMutablePointer<br_rsa_private_key>.allocate(capacity: 1)
            p.initialize(to: br_rsa_private_key(
                n_bitlen: k.n_bitlen, p: copy(k.p, k.plen), plen: k.plen, q: copy(k.q, k.qlen), qlen: k.qlen,
                dp: copy(k.dp, k.dplen), dplen: k.dplen, dq: copy(k.dq, k.dqlen), dqlen: k.dqlen,
                iq: copy(k.iq, k.iqlen), iqlen: k.iqlen))
            return .rsa(p)
        case Int32(BR_KEYTYPE_EC):
            guard let k = br_skey_decoder_get_ec(decoder)?.pointee else { return nil }
            let p = UnsafeMutablePointer<br_ec_private_key>.allocate(capacity: 1)
            p.initialize(to: br_ec_private_key(curve: k.curve, x: copy(k.x, k.xlen), xlen: k.xlen))
            return .ec(p)
        default:
            return nil
        }
    }
}

/// Why a broker stream ended or failed, in words for the log.
struct MQTTStreamFailure: Error, Sendable {
    var message: String
}

/// A connected byte stream to the broker, non-blocking: plain TCP or TLS over it.
protocol MQTTByteStream: AnyObject {
    /// The socket, for poll(2).
    var fileDescriptor: Int32 { get }
    /// The poll(2) events to wait for, given whether application bytes wait to be written.
    func pollEvents(haveOutput: Bool) -> Int16
    /// Ready for application bytes (TLS: the handshake is done).
    var isReady: Bool { get }
    /// Holds received application bytes the socket will not announce again (TLS: a
    /// record read while sending): ``receive(_:)`` should run without waiting.
    var hasPendingInput: Bool { get }
    /// Moves what it can between the socket and the stream without blocking, then hands
    /// the application bytes received to `body`.
    func receive(_ body: (UnsafeRawBufferPointer) -> Void) throws(MQTTStreamFailure)
    /// Takes what it can of `bytes` now (0: try when the socket is writable).
    func send(_ bytes: UnsafeRawBufferPointer) throws(MQTTStreamFailure) -> Int
    /// Holds bytes taken by ``send(_:)`` that the socket has not (TLS: records).
    var hasPendingOutput: Bool { get }
    /// Writes what ``hasPendingOutput`` says is held, as far as the socket takes it.
    func flush() throws(MQTTStreamFailure)
    /// Closes the socket (TLS: after a close_notify, if the socket takes it).
    func close()
}

/// Plain TCP.
final class MQTTTCPStream: MQTTByteStream {
    let fileDescriptor: Int32
    private var buffer = [UInt8](repeating: 0, count: 16384)
    private var closed = false

    init(fd: Int32) { fileDescriptor = fd }
    deinit { close() }

    func pollEvents(haveOutput: Bool) -> Int16 { Int16(POLLIN) | (haveOutput ? Int16(POLLOUT) : 0) }
    var isReady: Bool { true }
    var hasPendingInput: Bool { false }
    var hasPendingOutput: Bool { false }
    func flush() {}


    func receive(_ body: (UnsafeRawBufferPointer) -> Void) throws(MQTTStreamFailure) {
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fileDescriptor, $0.baseAddress, $0.count) }
            if n > 0 {
                buffer.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[..<n])) }
                if n < buffer.count { return }
            } else if n == 0 {
                throw MQTTStreamFailure(message: "the broker closed the connection")
            } else {
                switch errno {
                case EINTR: continue
                case EAGAIN, EWOULDBLOCK: return
                case let e: throw MQTTStreamFailure(message: "read failed: \(String(cString: strerror(e)))")
                }
            }
        }
    }

    func send(_ bytes: UnsafeRawBufferPointer) throws(MQTTStreamFailure) -> Int {
        guard bytes.count > 0 else { return 0 }
        while true {
            let n = Glibc.send(fileDescriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
            if n >= 0 { return n }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return 0
            case let e: throw MQTTStreamFailure(message: "write failed: \(String(cString: strerror(e)))")
            }
        }
    }

    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fileDescriptor)
    }
}

/// What is checked in the broker's own certificate besides what BearSSL checks: an IP
/// literal against its iPAddress names, or the certificate itself against a pin (SHA-256
/// of its DER; then no CA need vouch for it).
final class BrokerCertificateCheck {
    /// The broker's address (4 or 16 bytes) its certificate must name.
    let address: [UInt8]?
    /// The SHA-256 of the one certificate accepted.
    let pin: [UInt8]?
    /// Why the certificate was refused, once it was.
    var refusal: String?

    init(address: [UInt8]?, pin: [UInt8]?) {
        self.address = address
        self.pin = pin
    }

    /// 0 to accept `der`, else the BearSSL error to end the handshake with.
    func check(_ der: UnsafeRawBufferPointer) -> UInt32 {
        if let pin {
            var digest = [UInt8](repeating: 0, count: 32)
            digest.withUnsafeMutableBufferPointer { hcigatt_sha256(der.baseAddress?.assumingMemoryBound(to: UInt8.self), der.count, $0.baseAddress) }
            guard digest == pin else {
                refusal = "the broker's certificate is not the pinned one (--pin-sha256; it is \(digest.map { hex($0, 2) }.joined()))"
                return UInt32(BR_ERR_X509_NOT_TRUSTED)
            }
            return 0
        }
        guard let address else { return 0 }
        do throws(CertificateNames.Failure) {
            guard try CertificateNames.ipAddresses(der).contains(address) else {
                refusal = "the broker's certificate names no IP address \(Self.text(address)) (subjectAltName IP:); use the host name it has"
                return UInt32(BR_ERR_X509_BAD_SERVER_NAME)
            }
            return 0
        } catch {
            refusal = "the broker's certificate cannot be read for its names (\(error))"
            return UInt32(BR_ERR_X509_BAD_SERVER_NAME)
        }
    }

    static func text(_ a: [UInt8]) -> String {
        if a.count == 4 { return a.map { String($0) }.joined(separator: ".") }
        return stride(from: 0, to: a.count, by: 2).map { String(UInt16(a[$0]) << 8 | UInt16(a[$0 + 1]), radix: 16) }.joined(separator: ":")
    }

    /// The C engine's call into ``check(_:)``.
    static let callback: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<UInt8>?, Int) -> UInt32 = { arg, der, length in
        guard let arg else { return UInt32(BR_ERR_X509_BAD_SERVER_NAME) }
        let me = Unmanaged<BrokerCertificateCheck>.fromOpaque(arg).takeUnretainedValue()
        return me.check(UnsafeRawBufferPointer(start: der, count: length))
    }
}

/// TLS 1.2 over a TCP socket: BearSSL's client engine, pumped by hand (records out when
/// it has them, in when it wants them), so it never blocks the driver.
final class MQTTTLSStream: MQTTByteStream {
    let fileDescriptor: Int32
    private let client: UnsafeMutablePointer<br_ssl_client_context>
    private let x509: UnsafeMutablePointer<br_x509_minimal_context>
    private let io: UnsafeMutableRawBufferPointer
    private let credentials: MQTTTLSCredentials
    /// The engine around BearSSL's minimal one, when there is more to check.
    private let wrapper: UnsafeMutableRawPointer?
    private let certificateCheck: BrokerCertificateCheck?
    private var closed = false

    private var engine: UnsafeMutablePointer<br_ssl_engine_context> {
        UnsafeMutableRawPointer(client).advanced(by: MemoryLayout<br_ssl_client_context>.offset(of: \.eng) ?? 0)
            .assumingMemoryBound(to: br_ssl_engine_context.self)
    }

    /// Starts the handshake on the connected socket `fd`; `serverName`: the broker's name
    /// for SNI and the certificate check (nil: neither); `check`: what else the broker's
    /// certificate must pass (its IP address, a pin).
    init(fd: Int32, serverName: String?, check: BrokerCertificateCheck? = nil, credentials: MQTTTLSCredentials) throws(MQTTStreamFailure) {
        fileDescriptor = fd
        self.credentials = credentials
        client = .allocate(capacity: 1)
        x509 = .allocate(capacity: 1)
        io = .allocate(byteCount: hcigatt_tls_buffer_size(), alignment: 16)
        certificateCheck = check
        wrapper = check == nil ? nil : .allocate(byteCount: hcigatt_x509_check_size(), alignment: 16)
        br_ssl_client_init_full(client, x509, credentials.anchors.baseAddress, credentials.anchors.count)
        if let wrapper, let check {
            hcigatt_x509_check_install(wrapper, engine, x509, BrokerCertificateCheck.callback,
                                       Unmanaged.passUnretained(check).toOpaque(), check.pin == nil ? 0 : 1)
        }
        br_ssl_engine_set_versions(engine, UInt32(BR_TLS12), UInt32(BR_TLS12))
        // A broker's HelloRequest would mean a whole handshake (and a signature with the
        // client key) inside a send: refused, as TLS 1.2 allows.
        br_ssl_engine_add_flags(engine, UInt32(BR_OPT_NO_RENEGOTIATION))
        switch credentials.key {
        case .none: break
        case .rsa(let k):
            br_ssl_client_set_single_rsa(client, credentials.chain.baseAddress, credentials.chain.count, k,
                                         br_rsa_pkcs1_sign_get_default())
        case .ec(let k):
            br_ssl_client_set_single_ec(client, credentials.chain.baseAddress, credentials.chain.count, k,
                                        UInt32(BR_KEYTYPE_SIGN), 0, br_ec_get_default(), br_ecdsa_sign_asn1_get_default())
        }
        br_ssl_engine_set_buffer(engine, io.baseAddress, io.count, 1)
        let started = serverName.map { br_ssl_client_reset(client, $0, 0) } ?? br_ssl_client_reset(client, nil, 0)
        guard started != 0 else {
            let e = br_ssl_engine_last_error(engine)
            closed = true  // the socket stays the caller's to close (deinit runs on this throw)
            throw MQTTStreamFailure(message: "TLS: cannot start (BearSSL error \(e))")
        }
    }

    deinit {
        close()
        memset(client, 0, MemoryLayout<br_ssl_client_context>.size)  // session keys
        client.deallocate()
        x509.deallocate()
        wrapper?.deallocate()
        io.initializeMemory(as: UInt8.self, repeating: 0)
        io.deallocate()
    }

    private var state: UInt32 { br_ssl_engine_current_state(engine) }

    func pollEvents(haveOutput: Bool) -> Int16 {
        let s = state
        var events = Int16(POLLIN)
        if s & UInt32(BR_SSL_SENDREC) != 0 { events |= Int16(POLLOUT) }
        return events
    }

    var isReady: Bool { state & UInt32(BR_SSL_SENDAPP) != 0 }
    var hasPendingInput: Bool { state & UInt32(BR_SSL_RECVAPP | BR_SSL_CLOSED) != 0 }
    var hasPendingOutput: Bool { state & UInt32(BR_SSL_SENDREC) != 0 }
    func flush() throws(MQTTStreamFailure) { try pump() }

    /// Writes the records the engine has and reads the ones it wants, until neither moves.
    private func pump() throws(MQTTStreamFailure) {
        while true {
            let s = state
            if s & UInt32(BR_SSL_CLOSED) != 0 { throw failure() }
            if s & UInt32(BR_SSL_SENDREC) != 0 {
                var length = 0
                let buf = br_ssl_engine_sendrec_buf(engine, &length)
                let n = Glibc.send(fileDescriptor, buf, length, Int32(MSG_NOSIGNAL))
                if n > 0 {
                    br_ssl_engine_sendrec_ack(engine, n)
                    continue
                }
                if n < 0, errno == EINTR { continue }
                if n < 0, errno != EAGAIN, errno != EWOULDBLOCK {
                    let cause = "write failed: \(String(cString: strerror(errno)))"
                    // A broker that refuses the handshake sends its alert and closes; our
                    // next record then meets EPIPE. The alert, if it came, says why.
                    if let refusal = alertAlreadyReceived() { throw refusal }
                    throw MQTTStreamFailure(message: cause)
                }
                // The socket is full; records wait, but received ones can still be read.
            }
            // While the application has not taken what was decrypted, the engine wants no
            // more records.
            guard s & UInt32(BR_SSL_RECVREC) != 0 else { return }
            var length = 0
            let buf = br_ssl_engine_recvrec_buf(engine, &length)
            let n = Glibc.read(fileDescriptor, buf, length)
            if n > 0 {
                br_ssl_engine_recvrec_ack(engine, n)
                continue
            }
            if n == 0 { throw MQTTStreamFailure(message: "the broker closed the connection") }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { return }
            throw MQTTStreamFailure(message: "read failed: \(String(cString: strerror(errno)))")
        }
    }

    /// Reads what the socket still holds into the engine, without waiting; the failure it
    /// names if that was a fatal alert (or the end of the session).
    private func alertAlreadyReceived() -> MQTTStreamFailure? {
        while state & UInt32(BR_SSL_RECVREC) != 0 {
            var length = 0
            let buf = br_ssl_engine_recvrec_buf(engine, &length)
            let n = Glibc.recv(fileDescriptor, buf, length, Int32(MSG_DONTWAIT))
            guard n > 0 else { break }
            br_ssl_engine_recvrec_ack(engine, n)
        }
        return state & UInt32(BR_SSL_CLOSED) != 0 && br_ssl_engine_last_error(engine) != BR_ERR_OK ? failure() : nil
    }

    /// Why the engine closed, in words.
    private func failure() -> MQTTStreamFailure {
        let e = br_ssl_engine_last_error(engine)
        let reason: String = switch e {
        case BR_ERR_OK: "the broker closed the TLS session"
        case BR_ERR_X509_NOT_TRUSTED where certificateCheck?.refusal != nil, BR_ERR_X509_BAD_SERVER_NAME where certificateCheck?.refusal != nil:
            certificateCheck?.refusal ?? ""
        case BR_ERR_X509_NOT_TRUSTED: "the broker's certificate is not signed by a trusted CA (give its CA with --ca-file)"
        case BR_ERR_X509_BAD_SERVER_NAME: "the broker's certificate is not for this host name (use the name it has, or --no-hostname-check with --ca-file)"
        case BR_ERR_X509_EXPIRED: "the broker's certificate has expired or is not valid yet"
        case BR_ERR_BAD_VERSION, BR_ERR_UNSUPPORTED_VERSION: "the broker does not speak TLS 1.2"
        case BR_ERR_BAD_CIPHER_SUITE, BR_ERR_BAD_CCS, BR_ERR_BAD_FINISHED: "the TLS handshake failed (BearSSL error \(e))"
        default:
            if e >= Int32(BR_ERR_SEND_FATAL_ALERT) {
                "hcigatt ended the handshake (\(Self.alertName(e - Int32(BR_ERR_SEND_FATAL_ALERT))) sent)"
            } else if e >= Int32(BR_ERR_RECV_FATAL_ALERT) {
                received(alert: e - Int32(BR_ERR_RECV_FATAL_ALERT))
            } else {
                "TLS failed (BearSSL error \(e))"
            }
        }
        return MQTTStreamFailure(message: "TLS: " + reason)
    }

    /// A fatal alert from the broker, with the likely cause where one is common: brokers
    /// that require a client certificate answer its absence with handshake_failure (TLS 1.2
    /// has no certificate_required) or bad_certificate.
    private func received(alert: Int32) -> String {
        let what = "the broker refused the handshake (\(Self.alertName(alert)))"
        let sentCertificate: Bool = if case .none = credentials.key { false } else { true }
        if !sentCertificate, [40, 42, 116].contains(alert) {
            return what + "; it may require a client certificate (--cert-file)"
        }
        if sentCertificate, (42 ... 46).contains(alert) || alert == 48 {
            return what + "; it does not accept the client certificate"
        }
        if alert == 70 { return what + "; it may not accept TLS 1.2 (hcigatt has no TLS 1.3)" }
        return what
    }

    /// TLS alert descriptions (RFC 5246 section 7.2).
    static func alertName(_ alert: Int32) -> String {
        switch alert {
        case 10: "unexpected_message"
        case 20: "bad_record_mac"
        case 40: "handshake_failure"
        case 42: "bad_certificate"
        case 43: "unsupported_certificate"
        case 44: "certificate_revoked"
        case 45: "certificate_expired"
        case 46: "certificate_unknown"
        case 47: "illegal_parameter"
        case 48: "unknown_ca"
        case 49: "access_denied"
        case 50: "decode_error"
        case 51: "decrypt_error"
        case 70: "protocol_version"
        case 71: "insufficient_security"
        case 80: "internal_error"
        case 112: "unrecognized_name"
        case 116: "certificate_required"
        default: "alert \(alert)"
        }
    }
    func receive(_ body: (UnsafeRawBufferPointer) -> Void) throws(MQTTStreamFailure) {
        while true {
            try pump()
            guard state & UInt32(BR_SSL_RECVAPP) != 0 else { return }
            var length = 0
            let buf = br_ssl_engine_recvapp_buf(engine, &length)
            body(UnsafeRawBufferPointer(start: buf, count: length))
            br_ssl_engine_recvapp_ack(engine, length)
        }
    }

    func send(_ bytes: UnsafeRawBufferPointer) throws(MQTTStreamFailure) -> Int {
        try pump()
        var taken = 0
        while taken < bytes.count, state & UInt32(BR_SSL_SENDAPP) != 0 {
            var length = 0
            let buf = br_ssl_engine_sendapp_buf(engine, &length)
            let n = min(length, bytes.count - taken)
            if n == 0 { break }
            guard let buf, let from = bytes.baseAddress else { break }
            memcpy(buf, from + taken, n)
            br_ssl_engine_sendapp_ack(engine, n)
            taken += n
            if taken < bytes.count { try pump() }
        }
        // One record for what was handed over, now.
        br_ssl_engine_flush(engine, 0)
        try pump()
        return taken
    }

    func close() {
        guard !closed else { return }
        closed = true
        // close_notify, if the socket takes it now; the driver does not wait for the reply.
        br_ssl_engine_close(engine)
        if state & UInt32(BR_SSL_SENDREC) != 0 {
            var length = 0
            let buf = br_ssl_engine_sendrec_buf(engine, &length)
            _ = Glibc.send(fileDescriptor, buf, length, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
        }
        Glibc.close(fileDescriptor)
    }
}
