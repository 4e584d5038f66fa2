// fuzz-modules: BluetoothWire BluetoothCrypto BluetoothTransport BluetoothSecurity BluetoothProfiles BluetoothHost BluetoothGATT BluetoothLE HCIGATTProxy
// Fuzz target: what a network peer of the proxy sends before any session logic: the API's
// frames (both framings), its protobuf messages as requests, a Noise handshake message, and
// mDNS queries. Nothing may trap; frames read back re-encode to the same bytes.
@testable import HCIGATTProxy

let psk = (0 ..< 32).map { UInt8($0) }
let ephemeral = (0x40 ... 0x5F).map { UInt8($0) }
let prologue = Array("NoiseAPIInit".utf8) + [0, 0]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let mode = bytes.first else { return 0 }
    let rest = Array(bytes.dropFirst())
    switch mode % 4 {
    case 0:
        var r = APIFrameReader()
        r.append(rest)
        while let m = try? r.nextPlaintext() {
            var again: [UInt8] = []
            APIFrameWriter.plaintext(m, into: &again)
            var back = APIFrameReader()
            back.append(again)
            if (try? back.nextPlaintext()) != m { fatalError("plaintext frame does not round trip") }
            _ = try? APIRequest.decode(m)
        }
    case 1:
        var r = APIFrameReader()
        r.append(rest)
        while let f = try? r.nextNoise(limit: 65535) { _ = try? APIFrameWriter.message(fromInner: f) }
    case 2:
        _ = NoiseResponder.respond(to: rest, psk: psk, prologue: prologue, ephemeral: ephemeral)
    default:
        if let q = try? DNSQuery.parse(rest) {
            let r = MDNSResponder(service: MDNSService(instance: "fz", hostName: "fz", port: 1, txt: ["a=b"]))
            _ = r.answer(q, addresses: [[127, 0, 0, 1]], legacy: rest.count & 1 == 0)
        }
    }
    return 0
}
