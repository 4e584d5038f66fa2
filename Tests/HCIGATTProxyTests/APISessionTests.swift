import BluetoothCrypto
import Testing
@testable import HCIGATTProxy

/// The server side of the ESPHome native API as aioesphomeapi expects it: byte layouts from
/// its framing code, the Noise vector checked against its own handshake (NoiseTests).
@Suite struct APISessionTests {
    static let info = APIServerInfo(name: "myproxy", friendlyName: "My proxy", macAddress: "AA:BB:CC:DD:EE:FF",
                                    bluetoothAddress: "00:11:22:33:44:55", version: "0.9",
                                    features: [.passiveScan, .activeConnections, .remoteCaching, .rawAdvertisements, .stateAndMode])
    static let psk = (0 ..< 32).map { UInt8($0) }

    static func plain(_ type: UInt16, _ build: (inout ProtoWriter) -> Void = { _ in }) -> [UInt8] {
        var w = ProtoWriter()
        build(&w)
        var out: [UInt8] = []
        APIFrameWriter.plaintext(APIMessage(type, w.bytes), into: &out)
        return out
    }

    /// The messages in plaintext bytes from the server.
    static func messages(_ bytes: [UInt8]) throws -> [APIMessage] {
        var r = APIFrameReader()
        r.append(bytes)
        var out: [APIMessage] = []
        while let m = try r.nextPlaintext() { out.append(m) }
        #expect(r.pending == 0)
        return out
    }

    static func fields(_ payload: [UInt8]) throws -> [UInt32: ProtoValue] {
        var r = ProtoReader(payload)
        var out: [UInt32: ProtoValue] = [:]
        while let (f, v) = try r.next() { out[f] = v }
        return out
    }

    static func string(_ payload: [UInt8], _ field: UInt32) throws -> String? {
        guard case .bytes(let range)? = try fields(payload)[field] else { return nil }
        return String(decoding: payload[range], as: UTF8.self)
    }

    static let hello = plain(APIMessageType.helloRequest) {
        $0.string(1, "aioesphomeapi")
        $0.uint(2, UInt32(1))
        $0.uint(3, UInt32(19))
    }

    @Test("Plaintext: Hello, the deprecated login, DeviceInfo, entities, Ping, then Disconnect")
    func plaintextSession() throws {
        var s = APISession(info: Self.info, psk: nil, now: 0)
        var out = s.receive(Self.hello + Self.plain(APIMessageType.authenticationRequest), now: 1)
        var m = try Self.messages(out.bytes)
        #expect(m.map(\.type) == [2, 4])
        #expect(try Self.fields(m[0].payload)[1] == .varint(1))
        #expect(try Self.fields(m[0].payload)[2] == .varint(14))
        #expect(try Self.string(m[0].payload, 4) == "myproxy")
        #expect(m[1].payload.isEmpty, "no invalid_password")
        #expect(s.client == APISession.Client(info: "aioesphomeapi", apiMajor: 1, apiMinor: 19))

        out = s.receive(Self.plain(9) + Self.plain(11) + Self.plain(20) + Self.plain(34) + Self.plain(38) + Self.plain(7), now: 2)
        m = try Self.messages(out.bytes)
        #expect(m.map(\.type) == [10, 19, 8])
        let info = m[0].payload
        #expect(try Self.string(info, 2) == "myproxy")
        #expect(try Self.string(info, 3) == "AA:BB:CC:DD:EE:FF")
        #expect(try Self.string(info, 8) == "hcigatt.bluetooth-proxy")
        #expect(try Self.string(info, 18) == "00:11:22:33:44:55")
        #expect(try Self.fields(info)[15] == .varint(0x67))
        #expect(try Self.fields(info)[19] == nil, "no encryption offered on a plaintext API")
        #expect(out.requests.isEmpty && out.closed == nil)

        out = s.receive(Self.plain(5), now: 3)
        #expect(try Self.messages(out.bytes).map(\.type) == [6])
        #expect(out.closed == .clientDisconnected)
        #expect(s.send(.servicesDone(address: 1)).isEmpty, "nothing after the end")
    }

    @Test("Requests are handed on typed; byte by byte the same as in one read")
    func bluetoothRequests() throws {
        let requests = Self.hello
            + Self.plain(APIMessageType.subscribeBluetoothLEAdvertisementsRequest) { $0.uint(1, UInt32(1)) }
            + Self.plain(APIMessageType.subscribeBluetoothConnectionsFreeRequest)
            + Self.plain(APIMessageType.bluetoothDeviceRequest) { $0.uint(1, UInt64(0xAABBCCDDEEFF)); $0.uint(2, UInt32(5)); $0.bool(3, true); $0.uint(4, UInt32(1)) }
            + Self.plain(APIMessageType.bluetoothDeviceRequest) { $0.uint(1, UInt64(7)); $0.uint(2, UInt32(1)) }
            + Self.plain(APIMessageType.bluetoothGATTWriteRequest) { $0.uint(1, UInt64(7)); $0.uint(2, UInt32(0x2A)); $0.bool(3, true); $0.bytes(4, [1, 2]) }
            + Self.plain(APIMessageType.bluetoothGATTWriteDescriptorRequest) { $0.uint(1, UInt64(7)); $0.uint(2, UInt32(0x2B)); $0.bytes(3, [1, 0]) }
            + Self.plain(APIMessageType.bluetoothGATTNotifyRequest) { $0.uint(1, UInt64(7)); $0.uint(2, UInt32(0x2A)); $0.bool(3, true) }
            + Self.plain(APIMessageType.bluetoothGATTReadRequest) { $0.uint(1, UInt64(7)); $0.uint(2, UInt32(3)) }
            + Self.plain(APIMessageType.bluetoothScannerSetModeRequest) { $0.uint(1, UInt32(1)) }
            + Self.plain(APIMessageType.bluetoothSetConnectionParamsRequest) { $0.uint(1, UInt64(7)); $0.uint(2, UInt32(6)); $0.uint(3, UInt32(70_000)); $0.uint(5, UInt32(400)) }
            + Self.plain(999) { $0.string(1, "an entity message the proxy has no part in") }
        let expected: [APIRequest] = [
            .subscribeAdvertisements(flags: 1), .subscribeConnectionsFree,
            .device(address: 0xAABBCCDDEEFF, kind: .connectWithoutCache, addressType: 1),
            .device(address: 7, kind: .disconnect, addressType: nil),
            .write(address: 7, handle: 0x2A, data: [1, 2], withResponse: true),
            .writeDescriptor(address: 7, handle: 0x2B, data: [1, 0]),
            .notify(address: 7, handle: 0x2A, enable: true), .read(address: 7, handle: 3), .setScannerMode(active: true),
            .setConnectionParams(address: 7, minInterval: 6, maxInterval: 0xFFFF, latency: 0, timeout: 400),
        ]
        var whole = APISession(info: Self.info, psk: nil, now: 0)
        #expect(whole.receive(requests, now: 1).requests == expected)
        var bytewise = APISession(info: Self.info, psk: nil, now: 0)
        var got: [APIRequest] = []
        for b in requests { got += bytewise.receive([b], now: 1).requests }
        #expect(got == expected)
    }

    @Test("Before Hello only Hello, Ping and Disconnect; a malformed message ends the session")
    func misbehavingClients() {
        var s = APISession(info: Self.info, psk: nil, now: 0)
        #expect(s.receive(Self.plain(9), now: 1).closed == .requestBeforeHello(type: 9))
        var t = APISession(info: Self.info, psk: nil, now: 0)
        let broken = Self.hello + [0x00, 0x02, UInt8(APIMessageType.bluetoothGATTReadRequest), 0x08, 0xFF]
        #expect(t.receive(broken, now: 1).closed == .malformedMessage(type: 73, ProtoError(offset: 1, .truncated)))
        var u = APISession(info: Self.info, psk: nil, now: 0)
        #expect(u.receive([0x00, 0xFF, 0xFF, 0x7F], now: 1).closed == .frame(.tooLong(0x1FFFFF)))
    }

    @Test("A key pushed over plaintext is refused, and never handed on")
    func setKeyOverPlaintext() throws {
        var s = APISession(info: Self.info, psk: nil, now: 0)
        let key = Array(Base64.encode(BluetoothCrypto.randomBytes(32)).utf8)
        let out = s.receive(Self.hello + Self.plain(APIMessageType.noiseEncryptionSetKeyRequest) { $0.bytes(1, key) }, now: 1)
        #expect(out.requests.isEmpty)
        let m = try Self.messages(out.bytes)
        #expect(m.map(\.type) == [2, 125])
        #expect(m[1].payload.isEmpty, "success=false")
    }

    @Test("An encrypted client at the plaintext API gets ESPHome's raw answer")
    func noiseClientAtPlaintext() {
        var s = APISession(info: Self.info, psk: nil, now: 0)
        let out = s.receive([0x01, 0x00, 0x00], now: 1)
        #expect(out.bytes == [0x00] + Array("Bad indicator byte".utf8))
        #expect(out.closed == .encryptedClient)
    }

    @Test("Keepalive: a Ping after 60 s of silence, the end 90 s later without an answer")
    func keepalive() throws {
        var s = APISession(info: Self.info, psk: nil, now: 0)
        _ = s.receive(Self.hello, now: 0)
        #expect(s.nextDeadline == 60_000_000_000)
        #expect(s.tick(now: 59_000_000_000).bytes.isEmpty)
        #expect(try Self.messages(s.tick(now: 60_000_000_000).bytes).map(\.type) == [7])
        #expect(s.nextDeadline == 150_000_000_000)
        #expect(s.tick(now: 150_000_000_000).closed == .keepaliveTimeout)
        var quiet = APISession(info: Self.info, psk: nil, now: 0)
        #expect(quiet.tick(now: 60_000_000_000).closed == .helloTimeout)
    }

    // MARK: Noise

    /// The ephemeral key of vector B (checked against noiseprotocol and aioesphomeapi).
    static let ephemeral = (0x40 ... 0x5F).map { UInt8($0) }
    static let clientHandshake = hex("01003100358072d6365880d1aeea329adf9121383851ed21a28e3b75e965d0d2cd1662548b18e980a5463f4f4ed6a227d01eebb1")

    @Test("Noise: the server hello and handshake byte for byte, then an encrypted Hello answered")
    func noiseSession() throws {
        var s = APISession(info: Self.info, psk: Self.psk, now: 0, ephemeral: Self.ephemeral)
        // The client writes its hello and its handshake at once.
        let out = s.receive([0x01, 0x00, 0x00] + Self.clientHandshake, now: 1)
        #expect(out.bytes == hex("010016016d7970726f78790061616262636364646565666600")
            + hex("0100310079a631eede1bf9c98f12032cdeadd0e7a079398fc786b88cc846ec89af85a51a08d629a47626962aacde23c4ab9801ba"))
        #expect(out.closed == nil)
        // The HelloRequest of the vector, under k1; our answer under k2.
        let reply = s.receive(hex("01001eafbce0a526e7c549bf898458c65d4bf371e8a80f4ca0a0c54f47064c1b08"), now: 2)
        #expect(s.client?.info == "test" && s.client?.apiMinor == 10)
        var k2 = NoiseCipher(key: hex("f8ca9cf382ec15ac3609fa976595baafec96af6729b05edab8e41839ed09f6cd"))
        var r = APIFrameReader()
        r.append(reply.bytes)
        let frame = try #require(try r.nextNoise(limit: 65535))
        let innerBytes = k2.open(frame)
        let inner = try #require(innerBytes)
        let m = try APIFrameWriter.message(fromInner: inner)
        #expect(m.type == 2)
        #expect(try Self.string(m.payload, 4) == "myproxy")
        // Later messages use the next nonces.
        let ping = s.send(.servicesDone(address: 5))
        r.append(ping)
        let next = try #require(try r.nextNoise(limit: 65535))
        let openedBytes = k2.open(next)
        let opened = try #require(openedBytes)
        #expect(try APIFrameWriter.message(fromInner: opened).type == 72)
    }

    @Test("Noise: another key gets \"Handshake MAC failure\" after our hello (HA shows \"invalid encryption key\")")
    func wrongKey() {
        var s = APISession(info: Self.info, psk: (1 ... 32).map { UInt8($0) }, now: 0, ephemeral: Self.ephemeral)
        let out = s.receive([0x01, 0x00, 0x00] + Self.clientHandshake, now: 1)
        #expect(out.bytes == hex("010016016d7970726f78790061616262636364646565666600") + hex("0100160148616e647368616b65204d4143206661696c757265"))
        #expect(out.closed == .wrongKey)
    }

    @Test("Noise: a plaintext client is told \"Bad indicator byte\" in a Noise frame (it says \"requires encryption\")")
    func plaintextClientAtNoise() {
        var s = APISession(info: Self.info, psk: Self.psk, now: 0)
        let out = s.receive(Self.hello, now: 1)
        #expect(out.bytes == hex("0100130142616420696e64696361746f722062797465"))
        #expect(out.closed == .plaintextClient)
    }

    @Test("Noise: handshake frames over 128 bytes, empty, or with a nonzero status byte are refused by name")
    func handshakeRefusals() {
        func run(_ bytes: [UInt8]) -> APICloseReason? {
            var s = APISession(info: Self.info, psk: Self.psk, now: 0)
            return s.receive(bytes, now: 1).closed
        }
        #expect(run([0x01, 0x00, 0x81] + [UInt8](repeating: 0, count: 129)) == .frame(.tooLong(129)))
        #expect(run([0x01, 0x00, 0x00, 0x01, 0x00, 0x00]) == .handshakeFailed("Empty handshake message"))
        #expect(run([0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x05]) == .handshakeFailed("Bad handshake error byte"))
        #expect(run([0x01, 0x00, 0x00, 0x01, 0x00, 0x02, 0x00, 0x05]) == .handshakeFailed("Handshake error"))
        var s = APISession(info: Self.info, psk: Self.psk, now: 0, ephemeral: Self.ephemeral)
        _ = s.receive([0x01, 0x00, 0x00] + Self.clientHandshake, now: 1)
        var bad = hex("01001eafbce0a526e7c549bf898458c65d4bf371e8a80f4ca0a0c54f47064c1b08")
        bad[10] ^= 1
        #expect(s.receive(bad, now: 2).closed == .decryptFailed)
    }
}
