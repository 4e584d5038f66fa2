// fuzz-modules: BluetoothWire BluetoothCrypto BluetoothTransport BluetoothSecurity BluetoothProfiles BluetoothHost BluetoothGATT BluetoothLE HCIGATTProxy
// Fuzz target: one client of the proxy's ESPHome API, hostile or broken, over plaintext or
// Noise. The first byte picks the framing; then each record is an input: raw bytes, a
// well-formed message built from the record (encrypted under the client's key once the
// fixed handshake went through), time passing, or a response the proxy sends. Checked on
// the session's own output: it is well-framed (and decrypts in order under the server's
// key); no request before Hello; nothing out, nothing handed on after the end; a live
// session always has a deadline.
@testable import HCIGATTProxy

func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}

func hexBytes(_ s: String) -> [UInt8] {
    let d = Array(s.utf8)
    return stride(from: 0, to: d.count - 1, by: 2).map { i in
        func v(_ c: UInt8) -> UInt8 { c <= 57 ? c - 48 : c - 87 }
        return v(d[i]) << 4 | v(d[i + 1])
    }
}

// The handshake vector of the tests (aioesphomeapi's own handshake code agrees).
let psk = (0 ..< 32).map { UInt8($0) }
let ephemeral = (0x40 ... 0x5F).map { UInt8($0) }
let clientHandshake = hexBytes("01003100358072d6365880d1aeea329adf9121383851ed21a28e3b75e965d0d2cd1662548b18e980a5463f4f4ed6a227d01eebb1")
let k1 = hexBytes("810cde8f99b1a2a5a863e41b93fd1c11b29ab8fee3f3edcb662e163b245164ca")
let k2 = hexBytes("f8ca9cf382ec15ac3609fa976595baafec96af6729b05edab8e41839ed09f6cd")
let info = APIServerInfo(name: "fz", friendlyName: "fz", macAddress: "AA:BB:CC:DD:EE:FF", bluetoothAddress: "", version: "0",
                         features: [.passiveScan, .activeConnections, .remoteCaching])

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let mode = bytes.first else { return 0 }
    let noise = mode & 1 == 1
    var session = APISession(info: info, psk: noise ? psk : nil, now: 0, ephemeral: ephemeral)
    var now: UInt64 = 0
    var ended = false
    var handshaken = false
    var clientSend = NoiseCipher(key: k1)
    var serverSend = NoiseCipher(key: k2)
    var mirror = APIFrameReader()
    var sawServerHello = false, sawHandshakeReply = false
    var said = false  // the session knows the client (Hello went through)

    func take(_ out: [UInt8], closed: APICloseReason?, requests: [APIRequest]) {
        if ended { check(out.isEmpty && requests.isEmpty, "output after the end") }
        if !requests.isEmpty { check(session.client != nil || closed != nil, "a request before Hello") }
        mirror.append(out)
        if noise {
            while true {
                // ESPHome's unframed plaintext answer never comes from a Noise session.
                let frame: [UInt8]?
                do { frame = try mirror.nextNoise(limit: 65535) } catch { check(false, "badly framed output: \(error)"); return }
                guard let frame else { break }
                if !sawServerHello { sawServerHello = true; check(frame.first == 1, "server hello not protocol 1"); continue }
                if !sawHandshakeReply {
                    sawHandshakeReply = true
                    if frame.first == 1 { check(closed != nil, "a reject without the end"); continue }
                    check(frame.count == 49, "handshake reply of \(frame.count) bytes")
                    continue
                }
                guard let inner = serverSend.open(frame) else { check(false, "output that does not decrypt in order"); return }
                do { _ = try APIFrameWriter.message(fromInner: inner) } catch { check(false, "bad inner message") }
            }
        } else if !(out.first == 0 && out.count == 19 && closed == .encryptedClient) {
            while true {
                let m: APIMessage?
                do { m = try mirror.nextPlaintext() } catch { check(false, "badly framed output: \(error)"); return }
                if m == nil { break }
            }
        }
        if closed != nil { ended = true }
        if !ended { check(session.nextDeadline != nil, "a live session without a deadline") }
        said = session.client != nil
    }

    var i = 1
    while i + 1 < bytes.count {
        let kind = bytes[i] % 5
        let n = Int(bytes[i + 1]) % 64
        i += 2
        let chunk = Array(bytes[i ..< min(bytes.count, i + n)])
        i += chunk.count
        switch kind {
        case 0:
            let o = session.receive(chunk, now: now)
            take(o.bytes, closed: o.closed, requests: o.requests)
        case 1:
            // A well-formed message: type from the chunk, payload the rest.
            let type = UInt16(chunk.first ?? 0) | (chunk.count > 1 && chunk[1] & 1 == 1 ? 0x80 : 0)
            let m = APIMessage(type == 0 ? 1 : type, Array(chunk.dropFirst(2)))
            var wire: [UInt8] = []
            if noise {
                if !handshaken {
                    handshaken = true
                    wire = [0x01, 0x00, 0x00] + clientHandshake
                }
                if let sealed = clientSend.seal(APIFrameWriter.inner(m)) { APIFrameWriter.noise(sealed, into: &wire) }
            } else {
                APIFrameWriter.plaintext(m, into: &wire)
            }
            let o = session.receive(wire, now: now)
            take(o.bytes, closed: o.closed, requests: o.requests)
        case 2:
            now += UInt64(chunk.first ?? 1) * 1_000_000_000
            let o = session.tick(now: now)
            take(o.bytes, closed: o.closed, requests: [])
        case 3:
            let r: APIResponse = chunk.count % 3 == 0 ? .rawAdvertisements([APIRawAdvertisement(address: 1, rssi: -1, addressType: 1, data: chunk)])
                : chunk.count % 3 == 1 ? .notification(address: 2, handle: 3, data: chunk) : .servicesDone(address: 4)
            let out = session.send(r)
            if !said { check(out.isEmpty, "a response before Hello") }
            take(out, closed: nil, requests: [])
        default:
            let out = session.disconnect()
            take(out, closed: .serverClosing, requests: [])
        }
    }
    return 0
}
